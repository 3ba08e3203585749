/*
 * resize.c - Resize along rows and columns from compiler-built tap tables, band-aware.
 *
 * Defined by tigris/ops/resize.py: RIDX/CIDX hold KR/KC input indices per output row/column, RW/CW the weight of
 * each tap (MODE 1). A first index of -1 marks a tf_crop_and_resize row or column outside the input: EXTRAP there.
 *   nearest (MODE 0, KR = KC = 1): y[h, w] = x[RIDX[h], CIDX[w]]; int8: zo + requant_even(q - zi, MULT, SHIFT),
 *            halves to even (a copy for the identity)
 *   interpolating (MODE 1, float32): y = sum_i RW[h,i] * (sum_j CW[w,j] * x[RIDX[h,i], CIDX[w,j]]), both sums in
 *            float32 from 0 in tap order (the reference's order, so C and NumPy agree bit for bit)
 *   interpolating (MODE 1, int8): the same sums over taps dequantized as quant.c does ((float)(q - zi) * SI), the
 *            result quantized as quant.c does (clamp(rne(y / SO) + zo), the quotient limited to +-65536, NaN: zo):
 *            the bytes of DequantizeLinear -> Resize -> QuantizeLinear
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kview.h"
#include "requant.h"
#include "tgrs_op.h"

/* Taps per output coordinate are bounded so table lengths cannot overflow (an antialiased downscale by 1/64 with
 * the cubic kernel needs 256). */
#define RESIZE_MAX_TAPS 4096

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
    int32_t kr = ctx->p[TGRS_P_RESIZE_KR];
    int32_t kc = ctx->p[TGRS_P_RESIZE_KC];
    const int32_t *ridx = (const int32_t *)ctx->c[TGRS_C_RESIZE_RIDX];
    const int32_t *cidx = (const int32_t *)ctx->c[TGRS_C_RESIZE_CIDX];
    int32_t h, OH, OW, k;
    int is_f32;
    if (ctx->n_in != 1 || !tgrs_kv_sane(in) || !tgrs_kv_sane(out) || in->dims[0] != out->dims[0] ||
        in->dims[3] != out->dims[3]) {
        return TGRS_ERR_SHAPE;
    }
    if ((mode != 0 && mode != 1) || kr < 1 || kc < 1 || kr > RESIZE_MAX_TAPS || kc > RESIZE_MAX_TAPS ||
        (mode == 0 && (kr != 1 || kc != 1))) {
        return TGRS_ERR_PARAM;
    }
    is_f32 = out->dtype == TGRS_DT_F32;
    if (in->dtype != out->dtype || (!is_f32 && out->dtype != TGRS_DT_S8)) {
        return TGRS_ERR_DTYPE;
    }
    if (!is_f32 && mode == 1) { /* the dequantize and quantize scales: finite and positive */
        float si = tgrs_p_f32(ctx, TGRS_P_RESIZE_SI);
        float so = tgrs_p_f32(ctx, TGRS_P_RESIZE_SO);
        if (!(si > 0.0f && si <= 3.4028234e38f && so > 0.0f && so <= 3.4028234e38f)) {
            return TGRS_ERR_PARAM;
        }
    }
    OH = out->dims[1];
    OW = out->dims[2];
    if ((uint64_t)ctx->clen[TGRS_C_RESIZE_RIDX] != (uint64_t)OH * (uint64_t)kr * 4u ||
        (uint64_t)ctx->clen[TGRS_C_RESIZE_CIDX] != (uint64_t)OW * (uint64_t)kc * 4u) {
        return TGRS_ERR_PARAM;
    }
    if (mode == 1 && ((uint64_t)ctx->clen[TGRS_C_RESIZE_RW] != (uint64_t)OH * (uint64_t)kr * 4u ||
                      (uint64_t)ctx->clen[TGRS_C_RESIZE_CW] != (uint64_t)OW * (uint64_t)kc * 4u)) {
        return TGRS_ERR_PARAM;
    }
    /* an index is a column of the input, or -1 (outside: EXTRAP) in the first tap of a float resize */
    for (k = 0; cidx != NULL && k < OW * kc; ++k) {
        int edge = k % kc == 0 && cidx[k] == -1 && is_f32;
        if (!edge && (cidx[k] < 0 || cidx[k] >= in->dims[2])) {
            return TGRS_ERR_PARAM;
        }
    }
    for (h = out->row0; ridx != NULL && h < out->row0 + out->rows; ++h) {
        const int32_t *t = ridx + (size_t)h * (size_t)kr;
        if (t[0] == -1 && is_f32) {
            continue;
        }
        for (k = 0; k < kr; ++k) {
            if (t[k] < 0 || t[k] >= in->dims[1]) {
                return TGRS_ERR_PARAM;
            }
            if (!tgrs_kv_has_rows(in, t[k], t[k] + 1)) {
                return TGRS_ERR_TILE;
            }
        }
    }
    if (!is_f32 && ((mode == 0 && (mult < 0 || shift > TGRS_SHIFT_MAX)) || in->zero_point < -128 ||
                    in->zero_point > 127 || out->zero_point < -128 || out->zero_point > 127)) {
        return TGRS_ERR_PARAM;
    }
    return TGRS_OK;
}

int tgrs_check_resize(const tgrs_op_ctx *ctx)
{
    return resize_setup(ctx);
}

/* One output pixel of an interpolating float resize: C channels from kr x kc taps. */
static void resize_taps_f32(const tgrs_tview *in, int32_t n, const int32_t *rt, const float *rw, int32_t kr,
                            const int32_t *ct, const float *cw, int32_t kc, float *y, int32_t C)
{
    const float *x = (const float *)in->data;
    int32_t c, i, j;
    for (c = 0; c < C; ++c) {
        float acc = 0.0f;
        for (i = 0; i < kr; ++i) {
            const float *row = x + tgrs_kv_row_off(in, n, rt[i]) + (size_t)c;
            float racc = 0.0f;
            for (j = 0; j < kc; ++j) {
                racc = racc + cw[j] * row[(size_t)ct[j] * (size_t)C];
            }
            acc = acc + rw[i] * racc;
        }
        y[c] = acc;
    }
}

/* One output pixel of an interpolating int8 resize: resize_taps_f32's sums over dequantized taps, quantized. */
static void resize_taps_s8(const tgrs_tview *in, const tgrs_tview *out, int32_t n, const int32_t *rt, const float *rw,
                           int32_t kr, const int32_t *ct, const float *cw, int32_t kc, int8_t *y, int32_t C, float si,
                           float so)
{
    const int8_t *x = (const int8_t *)in->data;
    int32_t c, i, j;
    for (c = 0; c < C; ++c) {
        float acc = 0.0f;
        float v;
        int32_t q;
        for (i = 0; i < kr; ++i) {
            const int8_t *row = x + tgrs_kv_row_off(in, n, rt[i]) + (size_t)c;
            float racc = 0.0f;
            for (j = 0; j < kc; ++j) {
                const float d = (float)((int32_t)row[(size_t)ct[j] * (size_t)C] - in->zero_point) * si;
                racc = racc + cw[j] * d;
            }
            acc = acc + rw[i] * racc;
        }
        v = acc / so;
        if (v != v) {
            q = out->zero_point;
        } else {
            v = v > 65536.0f ? 65536.0f : (v < -65536.0f ? -65536.0f : v);
            q = tgrs_rne_small(v) + out->zero_point;
            q = q < -128 ? -128 : (q > 127 ? 127 : q);
        }
        y[c] = (int8_t)q;
    }
}

int tgrs_kernel_resize(const tgrs_op_ctx *ctx)
{
    const tgrs_tview *in = ctx->in[0];
    tgrs_tview *out = ctx->out;
    int32_t mode = ctx->p[TGRS_P_RESIZE_MODE];
    int32_t mult = ctx->p[TGRS_P_RESIZE_MULT];
    int32_t shift = ctx->p[TGRS_P_RESIZE_SHIFT];
    int32_t kr = ctx->p[TGRS_P_RESIZE_KR];
    int32_t kc = ctx->p[TGRS_P_RESIZE_KC];
    float extrap = tgrs_p_f32(ctx, TGRS_P_RESIZE_EXTRAP);
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
            const int32_t *rt = ridx + (size_t)h * (size_t)kr;
            size_t yo = tgrs_kv_row_off(out, n, h);
            for (w = 0; w < OW; ++w) {
                const int32_t *ct = cidx + (size_t)w * (size_t)kc;
                size_t o = yo + (size_t)w * (size_t)C;
                if (is_f32 && (rt[0] < 0 || ct[0] < 0)) {
                    float *y = (float *)out->data + o;
                    for (c = 0; c < C; ++c) {
                        y[c] = extrap;
                    }
                } else if (is_f32 && mode == 1) {
                    resize_taps_f32(in, n, rt, rw + (size_t)h * (size_t)kr, kr, ct, cw + (size_t)w * (size_t)kc,
                                    kc, (float *)out->data + o, C);
                } else if (mode == 1) {
                    resize_taps_s8(in, out, n, rt, rw + (size_t)h * (size_t)kr, kr, ct, cw + (size_t)w * (size_t)kc,
                                   kc, (int8_t *)out->data + o, C, tgrs_p_f32(ctx, TGRS_P_RESIZE_SI),
                                   tgrs_p_f32(ctx, TGRS_P_RESIZE_SO));
                } else {
                    size_t src = tgrs_kv_row_off(in, n, rt[0]) + (size_t)ct[0] * (size_t)C;
                    if (is_f32) {
                        memcpy((float *)out->data + o, (const float *)in->data + src, (size_t)C * 4u);
                    } else if (ident) {
                        memcpy((int8_t *)out->data + o, (const int8_t *)in->data + src, (size_t)C);
                    } else {
                        const int8_t *x = (const int8_t *)in->data + src;
                        int8_t *y = (int8_t *)out->data + o;
                        for (c = 0; c < C; ++c) {
                            y[c] = tgrs_requant_even_s8((int32_t)x[c] - in->zero_point, mult, shift,
                                                        out->zero_point, -128, 127);
                        }
                    }
                }
            }
        }
    }
    return TGRS_OK;
}
