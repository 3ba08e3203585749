/*
 * pad.c - constant Pad on rank-4 views, float32 and int8 (any 1- or 4-byte type), band-aware along the rows.
 *
 * Defined by tigris/ops/pad.py: output element o on view axis j reads input element o - B_j; outside the input it
 * is VALUE (float32 bits, or the int8 code of the value). Negative begins/ends crop.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kview.h"
#include "tgrs_op.h"

static void fill(void *dst, size_t count, size_t es, int32_t value)
{
    size_t k;
    if (es == 1u) {
        memset(dst, (int)(uint8_t)(int8_t)value, count);
        return;
    }
    for (k = 0; k < count; ++k) {
        memcpy((char *)dst + k * 4u, &value, 4u);
    }
}

static int32_t imax(int32_t a, int32_t b)
{
    return a > b ? a : b;
}

static int32_t imin(int32_t a, int32_t b)
{
    return a < b ? a : b;
}

/* The kind's check: the kernel and the loader (check.c, once per op and tile) call it. */
int tgrs_check_pad(const tgrs_op_ctx *ctx)
{
    const tgrs_tview *in = ctx->in[0];
    const tgrs_tview *out = ctx->out;
    int32_t b[4];
    int32_t value = ctx->p[TGRS_P_PAD_VALUE];
    int32_t j, r_lo, r_hi;
    size_t es;
    if (ctx->n_in != 1 || !tgrs_kv_sane(in) || !tgrs_kv_sane(out)) {
        return TGRS_ERR_SHAPE;
    }
    for (j = 0; j < 4; ++j) {
        int32_t e = ctx->p[TGRS_P_PAD_E0 + j];
        b[j] = ctx->p[TGRS_P_PAD_B0 + j];
        if (b[j] < -in->dims[j] || b[j] > out->dims[j] || e < -in->dims[j] || e > out->dims[j] ||
            in->dims[j] + b[j] + e != out->dims[j]) {
            return TGRS_ERR_PARAM;
        }
    }
    if (in->dtype != out->dtype) {
        return TGRS_ERR_DTYPE;
    }
    es = tgrs_dtype_size(out->dtype);
    if (es != 1u && es != 4u) {
        return TGRS_ERR_DTYPE;
    }
    if (es == 1u && (value < -128 || value > 255)) {
        return TGRS_ERR_PARAM;
    }
    /* input rows the output band reads */
    r_lo = imax(out->row0 - b[1], 0);
    r_hi = imin(out->row0 + out->rows - b[1], in->dims[1]);
    if (!tgrs_kv_has_rows(in, r_lo, r_hi)) {
        return TGRS_ERR_TILE;
    }
    return TGRS_OK;
}

int tgrs_kernel_pad(const tgrs_op_ctx *ctx)
{
    const tgrs_tview *in = ctx->in[0];
    tgrs_tview *out = ctx->out;
    int32_t b[4];
    int32_t value = ctx->p[TGRS_P_PAD_VALUE];
    int32_t n, h, w, j, C, OC, c_lo, c_hi, w_lo, w_hi;
    size_t es = tgrs_dtype_size(out->dtype);
    int st = tgrs_check_pad(ctx);
    if (st != TGRS_OK) {
        return st;
    }
    for (j = 0; j < 4; ++j) {
        b[j] = ctx->p[TGRS_P_PAD_B0 + j];
    }
    C = in->dims[3];
    OC = out->dims[3];
    c_lo = imax(b[3], 0); /* output channels [c_lo, c_hi) come from the input */
    c_hi = imin(b[3] + C, OC);
    w_lo = imax(b[2], 0);
    w_hi = imin(b[2] + in->dims[2], out->dims[2]);
    for (n = 0; n < out->dims[0]; ++n) {
        int32_t in_n = n - b[0];
        for (h = out->row0; h < out->row0 + out->rows; ++h) {
            int32_t ih = h - b[1];
            char *y = (char *)out->data + tgrs_kv_row_off(out, n, h) * es;
            const char *x;
            if (in_n < 0 || in_n >= in->dims[0] || ih < 0 || ih >= in->dims[1] || c_hi <= c_lo || w_hi <= w_lo) {
                fill(y, tgrs_kv_row_elems(out), es, value);
                continue;
            }
            x = (const char *)in->data + tgrs_kv_row_off(in, in_n, ih) * es;
            fill(y, (size_t)w_lo * (size_t)OC, es, value);
            for (w = w_lo; w < w_hi; ++w) {
                char *yp = y + (size_t)w * (size_t)OC * es;
                const char *xp = x + ((size_t)(w - b[2]) * (size_t)C + (size_t)(c_lo - b[3])) * es;
                fill(yp, (size_t)c_lo, es, value);
                memcpy(yp + (size_t)c_lo * es, xp, (size_t)(c_hi - c_lo) * es);
                fill(yp + (size_t)c_hi * es, (size_t)(OC - c_hi), es, value);
            }
            fill(y + (size_t)w_hi * (size_t)OC * es, (size_t)(out->dims[2] - w_hi) * (size_t)OC, es, value);
        }
    }
    return TGRS_OK;
}
