/*
 * pad.c - Pad on rank-4 views, float32 and int8 (any 1- or 4-byte type), band-aware along the rows.
 *
 * Defined by tigris/ops/pad.py: output element o on view axis j reads input element i = o - B_j; outside the input
 * it is VALUE (float32 bits, or the int8 code of the value) in MODE 0 (constant), or the element the mode maps i to:
 * 1 reflect (mirrored, period 2 * (n - 1)), 2 edge (clamped), 3 wrap (i mod n). Negative begins/ends crop. A
 * reflect/edge/wrap Pad of the rows reads, for a band of output rows, the rows the mode maps them to: the check
 * walks the band and asks the input band for their hull.
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

/* The input index element i (= o - B, any integer) copies in MODE 1-3; n >= 1. source_index() in pad.py. */
static int32_t pad_src(int32_t i, int32_t n, int32_t mode)
{
    int32_t per, k;
    if (mode == 2) {
        return i < 0 ? 0 : (i >= n ? n - 1 : i);
    }
    if (mode == 3) {
        k = i % n;
        return k < 0 ? k + n : k;
    }
    if (n == 1) {
        return 0;
    }
    per = 2 * (n - 1);
    k = i % per;
    k = k < 0 ? k + per : k;
    return k < n ? k : per - k;
}

/* MODE 1-3: every output element copies the input element pad_src picks on each axis. */
static void pad_mapped(const tgrs_op_ctx *ctx, const int32_t b[4], size_t es)
{
    const tgrs_tview *in = ctx->in[0];
    tgrs_tview *out = ctx->out;
    const int32_t mode = ctx->p[TGRS_P_PAD_MODE];
    int32_t n, h, w, c;
    for (n = 0; n < out->dims[0]; ++n) {
        const int32_t sn = pad_src(n - b[0], in->dims[0], mode);
        for (h = out->row0; h < out->row0 + out->rows; ++h) {
            const char *x = (const char *)in->data +
                            tgrs_kv_row_off(in, sn, pad_src(h - b[1], in->dims[1], mode)) * es;
            char *y = (char *)out->data + tgrs_kv_row_off(out, n, h) * es;
            for (w = 0; w < out->dims[2]; ++w) {
                const char *xp = x + (size_t)pad_src(w - b[2], in->dims[2], mode) * (size_t)in->dims[3] * es;
                for (c = 0; c < out->dims[3]; ++c) {
                    memcpy(y, xp + (size_t)pad_src(c - b[3], in->dims[3], mode) * es, es);
                    y += es;
                }
            }
        }
    }
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
    if ((es == 1u && (value < -128 || value > 255)) || ctx->p[TGRS_P_PAD_MODE] < 0 || ctx->p[TGRS_P_PAD_MODE] > 3) {
        return TGRS_ERR_PARAM;
    }
    if (ctx->p[TGRS_P_PAD_MODE] != 0 && (b[1] != 0 || ctx->p[TGRS_P_PAD_E1] != 0)) {
        /* the hull of the rows the band's output rows copy (not monotone at the edges) */
        if (tgrs_kv_whole(in)) {
            return TGRS_OK;
        }
        r_lo = in->dims[1];
        r_hi = 0;
        for (j = out->row0; j < out->row0 + out->rows; ++j) {
            int32_t s = pad_src(j - b[1], in->dims[1], ctx->p[TGRS_P_PAD_MODE]);
            r_lo = imin(r_lo, s);
            r_hi = imax(r_hi, s + 1);
        }
        return tgrs_kv_has_rows(in, r_lo, r_hi) ? TGRS_OK : TGRS_ERR_TILE;
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
    if (ctx->p[TGRS_P_PAD_MODE] != 0) {
        pad_mapped(ctx, b, es);
        return TGRS_OK;
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
