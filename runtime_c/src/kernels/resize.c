/*
 * resize.c - Resize along rows and columns from compiler-built source tables, band-aware.
 *
 * Defined by tigris/ops/resize.py: RIDX/CIDX hold (i0, i1) per output row/column, RW/CW the weight of i1 (linear).
 *   nearest: y[h, w] = x[RIDX[2h], CIDX[2w]]; int8: zo + requant_even(q - zi, MULT, SHIFT), halves to even (a
 *            copy for the identity)
 *   linear (float32): top = a + (b - a) * wc; bot = c + (d - c) * wc; y = top + (bot - top) * wr
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kview.h"
#include "requant.h"
#include "tgrs_op.h"

/* Every check of the kind. The source tables' values (and so the rows a band needs) are checked when they are
 * visible (ctx->c non-NULL: always at run time, at load unless the unit is LZ4). The kernel and its load-time check
 * (tgrs_check_resize) share it. */
static int resize_setup(const tgrs_op_ctx *ctx)
{
    const tgrs_tview *in = ctx->in[0];
    const tgrs_tview *out = ctx->out;
    int32_t mode = ctx->p[TGRS_P_RESIZE_MODE];
    int32_t mult = ctx->p[TGRS_P_RESIZE_MULT];
    int32_t shift = ctx->p[TGRS_P_RESIZE_SHIFT];
    const int32_t *ridx = (const int32_t *)ctx->c[TGRS_C_RESIZE_RIDX];
    const int32_t *cidx = (const int32_t *)ctx->c[TGRS_C_RESIZE_CIDX];
    int32_t h, OH, OW, k;
    int is_f32;
    if (ctx->n_in != 1 || !tgrs_kv_sane(in) || !tgrs_kv_sane(out) || in->dims[0] != out->dims[0] ||
        in->dims[3] != out->dims[3]) {
        return TGRS_ERR_SHAPE;
    }
    if (mode != 0 && mode != 1) {
        return TGRS_ERR_PARAM;
    }
    is_f32 = out->dtype == TGRS_DT_F32;
    if (in->dtype != out->dtype || (!is_f32 && (out->dtype != TGRS_DT_S8 || mode != 0))) {
        return TGRS_ERR_DTYPE;
    }
    OH = out->dims[1];
    OW = out->dims[2];
    if (ctx->clen[TGRS_C_RESIZE_RIDX] != (uint32_t)OH * 8u ||
        ctx->clen[TGRS_C_RESIZE_CIDX] != (uint32_t)OW * 8u) {
        return TGRS_ERR_PARAM;
    }
    if (mode == 1 && (ctx->clen[TGRS_C_RESIZE_RW] != (uint32_t)OH * 4u ||
                      ctx->clen[TGRS_C_RESIZE_CW] != (uint32_t)OW * 4u)) {
        return TGRS_ERR_PARAM;
    }
    for (k = 0; cidx != NULL && k < 2 * OW; ++k) {
        if (cidx[k] < 0 || cidx[k] >= in->dims[2]) {
            return TGRS_ERR_PARAM;
        }
    }
    for (h = out->row0; ridx != NULL && h < out->row0 + out->rows; ++h) {
        int32_t a = ridx[2 * h], b = ridx[2 * h + 1];
        if (a < 0 || b < 0 || a >= in->dims[1] || b >= in->dims[1]) {
            return TGRS_ERR_PARAM;
        }
        if (!tgrs_kv_has_rows(in, a, a + 1) || !tgrs_kv_has_rows(in, b, b + 1)) {
            return TGRS_ERR_TILE;
        }
    }
    if (!is_f32 && (mult < 0 || shift > TGRS_SHIFT_MAX || in->zero_point < -128 || in->zero_point > 127 ||
                    out->zero_point < -128 || out->zero_point > 127)) {
        return TGRS_ERR_PARAM;
    }
    return TGRS_OK;
}

int tgrs_check_resize(const tgrs_op_ctx *ctx)
{
    return resize_setup(ctx);
}

int tgrs_kernel_resize(const tgrs_op_ctx *ctx)
{
    const tgrs_tview *in = ctx->in[0];
    tgrs_tview *out = ctx->out;
    int32_t mode = ctx->p[TGRS_P_RESIZE_MODE];
    int32_t mult = ctx->p[TGRS_P_RESIZE_MULT];
    int32_t shift = ctx->p[TGRS_P_RESIZE_SHIFT];
    const int32_t *ridx = (const int32_t *)ctx->c[TGRS_C_RESIZE_RIDX];
    const int32_t *cidx = (const int32_t *)ctx->c[TGRS_C_RESIZE_CIDX];
    const float *rw = (const float *)ctx->c[TGRS_C_RESIZE_RW];
    const float *cw = (const float *)ctx->c[TGRS_C_RESIZE_CW];
    int32_t n, h, w, c, C, OW;
    int is_f32 = out->dtype == TGRS_DT_F32;
    int ident;
    int st = resize_setup(ctx);
    if (st != TGRS_OK) {
        return st;
    }
    C = out->dims[3];
    OW = out->dims[2];
    ident = !is_f32 && mult == (1 << 30) && shift == 1 && in->zero_point == out->zero_point;
    for (n = 0; n < out->dims[0]; ++n) {
        for (h = out->row0; h < out->row0 + out->rows; ++h) {
            size_t yo = tgrs_kv_row_off(out, n, h);
            size_t r0 = tgrs_kv_row_off(in, n, ridx[2 * h]);
            size_t r1 = tgrs_kv_row_off(in, n, ridx[2 * h + 1]);
            for (w = 0; w < OW; ++w) {
                size_t c0 = (size_t)cidx[2 * w] * (size_t)C;
                size_t c1 = (size_t)cidx[2 * w + 1] * (size_t)C;
                size_t o = yo + (size_t)w * (size_t)C;
                if (is_f32 && mode == 1) {
                    const float *x = (const float *)in->data;
                    float *y = (float *)out->data + o;
                    float wr = rw[h], wc = cw[w];
                    for (c = 0; c < C; ++c) {
                        float top = x[r0 + c0 + (size_t)c];
                        float bot = x[r1 + c0 + (size_t)c];
                        top = top + (x[r0 + c1 + (size_t)c] - top) * wc;
                        bot = bot + (x[r1 + c1 + (size_t)c] - bot) * wc;
                        y[c] = top + (bot - top) * wr;
                    }
                } else if (is_f32) {
                    memcpy((float *)out->data + o, (const float *)in->data + r0 + c0, (size_t)C * 4u);
                } else if (ident) {
                    memcpy((int8_t *)out->data + o, (const int8_t *)in->data + r0 + c0, (size_t)C);
                } else {
                    const int8_t *x = (const int8_t *)in->data + r0 + c0;
                    int8_t *y = (int8_t *)out->data + o;
                    for (c = 0; c < C; ++c) {
                        y[c] = tgrs_requant_even_s8((int32_t)x[c] - in->zero_point, mult, shift, out->zero_point,
                                                    -128, 127);
                    }
                }
            }
        }
    }
    return TGRS_OK;
}
