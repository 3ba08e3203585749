/*
 * acc.c - the int32 accumulator family (tigris/ops/acc.py is the other half of this contract): the kinds an int8
 * conv or Gemm split into input-channel (K) groups runs as (docs/memory-planning.md "Weights that do not fit").
 *
 *   convacc     int8 conv over one slice of the input channels -> its exact int32 accumulator (no requantization):
 *               out[n, oh, ow, oc] = acc_in[n, oh, ow, oc] + bias[oc]
 *                                    + sum_{taps inside the image, ic} (x - zp_in) * (w[oc] - wzp[oc])
 *               with the optional second input acc_in (an int32 view of the output's dims, read at the output's own
 *               rows; 0 without it), which the output may share (in place: each element is read before it is stored)
 *   gemmacc     the same for a Gemm row (whole tensors):
 *               out[p, oc] = acc_in[p, oc] + bias[oc] + sum_k (x[p, k] - zp_in) * (w[oc, k] - wzp[oc])
 *   accadd      out = a + b on int32 accumulators of one shape, saturated (the compiler proves a chain never is)
 *   requantize  int32 -> int8 with the per-channel (mult, shift) of the op that was split, its output zero point
 *               and clamp: the epilogue of the int8 MAC kernels (requant.h)
 *
 * Weights are OHWI rows (convacc: [OC][KH][KW][C_in]; gemmacc: [OC][K]); bias and wzp are int32 [OC] or empty
 * (0 bytes: none). The compiler proves |bias| + K * 255 * max|w - wzp| < 2^31, so every partial sum fits in int32;
 * the kernels accumulate with tgrs_wrap_add all the same, so a corrupted plan yields a wrong number, never undefined
 * behaviour. No scratch. -DTGRS_NO_ACC (a firmware whose plans split no int8 op by input channels) folds every entry
 * point to TGRS_ERR_UNSUPPORTED (variants.h, TGRS_ACC), and the loader then refuses such a plan at init.
 */
#include <stddef.h>
#include <stdint.h>

#include "kcheck.h"
#include "kview.h"
#include "requant.h"
#include "tgrs_op.h"
#include "variants.h"
#include "window.h"

#define ACC_MAX_PATCH 65536 /* ACC_MAX_PATCH in tigris/ops/acc.py */

/* The optional int32 [oc] constants (bias, wzp): 0 bytes or oc values; wzp values in [-128, 127] when visible. */
static int acc_consts_ok(const tgrs_op_ctx *ctx, int w_slot, int b_slot, int z_slot, int32_t oc, int32_t k)
{
    const uint32_t per = (uint32_t)oc * 4u;
    if (oc < 1 || k < 1 || k > ACC_MAX_PATCH || (uint64_t)ctx->clen[w_slot] != (uint64_t)oc * (uint64_t)k ||
        (ctx->clen[b_slot] != 0u && ctx->clen[b_slot] != per) || (ctx->clen[z_slot] != 0u && ctx->clen[z_slot] != per)) {
        return TGRS_ERR_SHAPE;
    }
    if (ctx->clen[z_slot] != 0u && ctx->c[z_slot] != NULL && !tgrs_zp_s8_ok((const int32_t *)ctx->c[z_slot], oc)) {
        return TGRS_ERR_PARAM;
    }
    return TGRS_OK;
}

/* The optional accumulator added into (ctx->in[1]): an int32 view of the output's dims holding its rows. */
static int acc_in_ok(const tgrs_op_ctx *ctx)
{
    const tgrs_tview *a = ctx->in[1];
    if (ctx->n_in == 1) {
        return TGRS_OK;
    }
    if (ctx->n_in != 2 || !tgrs_kv_sane(a) || !tgrs_kv_same_dims(a, ctx->out)) {
        return TGRS_ERR_SHAPE;
    }
    if (a->dtype != TGRS_DT_S32) {
        return TGRS_ERR_DTYPE;
    }
    return tgrs_kv_has_rows(a, ctx->out->row0, ctx->out->row0 + ctx->out->rows) ? TGRS_OK : TGRS_ERR_TILE;
}

/* acc of one output: bias + sum over n values (x - zp) * (w - wz), x and w contiguous. */
static int32_t acc_dot(int32_t acc, const int8_t *x, const int8_t *w, int32_t n, int32_t zp, int32_t wz)
{
    int32_t i;
    for (i = 0; i < n; ++i) {
        acc = tgrs_wrap_add(acc, ((int32_t)x[i] - zp) * ((int32_t)w[i] - wz));
    }
    return acc;
}

static int32_t acc_c(const tgrs_op_ctx *ctx, int slot, int32_t i)
{
    return ctx->clen[slot] != 0u ? ((const int32_t *)ctx->c[slot])[i] : 0;
}

int tgrs_check_convacc(const tgrs_op_ctx *ctx)
{
    tgrs_window w;
    const tgrs_tview *in = ctx->in[0];
    const tgrs_tview *out = ctx->out;
    int32_t zp;
    int st;
    if (!TGRS_ACC) {
        return TGRS_ERR_UNSUPPORTED; /* built with -DTGRS_NO_ACC */
    }
    if (ctx->n_in < 1 || ctx->n_in > 2 || !tgrs_window_load(&w, ctx->p)) {
        return TGRS_ERR_PARAM;
    }
    if (in->dtype != TGRS_DT_S8 || out->dtype != TGRS_DT_S32) {
        return TGRS_ERR_DTYPE;
    }
    zp = ctx->p[TGRS_P_CONVACC_ZP_IN];
    if (zp < -128 || zp > 127) {
        return TGRS_ERR_PARAM;
    }
    st = tgrs_window_check(&w, in, out);
    if (st == TGRS_OK) {
        st = acc_in_ok(ctx);
    }
    if (st != TGRS_OK) {
        return st;
    }
    if ((int64_t)ctx->p[TGRS_P_CONVACC_PATCH] != (int64_t)w.kh * w.kw * in->dims[3]) {
        return TGRS_ERR_PARAM;
    }
    return acc_consts_ok(ctx, TGRS_C_CONVACC_WEIGHT, TGRS_C_CONVACC_BIAS, TGRS_C_CONVACC_WZP, out->dims[3],
                         ctx->p[TGRS_P_CONVACC_PATCH]);
}

int tgrs_kernel_convacc(const tgrs_op_ctx *ctx)
{
    tgrs_window w;
    const tgrs_tview *in = ctx->in[0];
    tgrs_tview *out = ctx->out;
    const int8_t *wt = (const int8_t *)ctx->c[TGRS_C_CONVACC_WEIGHT];
    int32_t n, oh, ow, o, i, j, c, oc, zp, k;
    int st = tgrs_check_convacc(ctx);
    if (st != TGRS_OK) {
        return st;
    }
    tgrs_window_get(&w, ctx->p);
    c = in->dims[3];
    oc = out->dims[3];
    zp = ctx->p[TGRS_P_CONVACC_ZP_IN];
    k = ctx->p[TGRS_P_CONVACC_PATCH];
    for (n = 0; n < out->dims[0]; ++n) {
        for (oh = out->row0; oh < out->row0 + out->rows; ++oh) {
            int32_t *y = (int32_t *)out->data + tgrs_kv_row_off(out, n, oh);
            const int32_t *ai = ctx->n_in == 2 ? (const int32_t *)ctx->in[1]->data + tgrs_kv_row_off(ctx->in[1], n, oh)
                                               : NULL;
            for (ow = 0; ow < out->dims[2]; ++ow) {
                for (o = 0; o < oc; ++o) {
                    const int8_t *wr = wt + (size_t)o * (size_t)k;
                    const int32_t wz = acc_c(ctx, TGRS_C_CONVACC_WZP, o);
                    const size_t at = (size_t)ow * (size_t)oc + (size_t)o;
                    /* in place over acc_in: its element is read here, before y[at] is stored */
                    int32_t acc = tgrs_wrap_add(acc_c(ctx, TGRS_C_CONVACC_BIAS, o), ai != NULL ? ai[at] : 0);
                    for (i = 0; i < w.kh; ++i) {
                        const int32_t ih = oh * w.sh - w.pt + i * w.dh;
                        if (ih < 0 || ih >= in->dims[1]) {
                            continue; /* a padded row: (zp - zp) * w adds 0 */
                        }
                        for (j = 0; j < w.kw; ++j) {
                            const int32_t iw = ow * w.sw - w.pl + j * w.dw;
                            if (iw < 0 || iw >= in->dims[2]) {
                                continue;
                            }
                            acc = acc_dot(acc, (const int8_t *)in->data + tgrs_kv_row_off(in, n, ih) +
                                                   (size_t)iw * (size_t)c,
                                          wr + ((size_t)i * (size_t)w.kw + (size_t)j) * (size_t)c, c, zp, wz);
                        }
                    }
                    y[at] = acc;
                }
            }
        }
    }
    return TGRS_OK;
}

/* gemmacc reads and writes whole tensors: rows = in elements / K, out elements = rows * OC. */
int tgrs_check_gemmacc(const tgrs_op_ctx *ctx)
{
    const tgrs_tview *in = ctx->in[0];
    const tgrs_tview *out = ctx->out;
    int32_t k = ctx->p[TGRS_P_GEMMACC_K], zp = ctx->p[TGRS_P_GEMMACC_ZP_IN];
    uint64_t ne_in, ne_out;
    int st;
    if (!TGRS_ACC) {
        return TGRS_ERR_UNSUPPORTED; /* built with -DTGRS_NO_ACC */
    }
    if (ctx->n_in < 1 || ctx->n_in > 2 || k < 1 || zp < -128 || zp > 127) {
        return TGRS_ERR_PARAM;
    }
    if (in->dtype != TGRS_DT_S8 || out->dtype != TGRS_DT_S32) {
        return TGRS_ERR_DTYPE;
    }
    if (!tgrs_kv_sane(in) || !tgrs_kv_sane(out) || !tgrs_kv_whole(in) || !tgrs_kv_whole(out)) {
        return TGRS_ERR_TILE;
    }
    ne_in = (uint64_t)in->dims[0] * (uint64_t)in->dims[1] * tgrs_kv_row_elems(in);
    ne_out = (uint64_t)out->dims[0] * (uint64_t)out->dims[1] * tgrs_kv_row_elems(out);
    if (ne_in % (uint64_t)k != 0u || out->dims[3] < 1 || ne_out != ne_in / (uint64_t)k * (uint64_t)out->dims[3]) {
        return TGRS_ERR_SHAPE;
    }
    st = acc_in_ok(ctx);
    return st != TGRS_OK ? st : acc_consts_ok(ctx, TGRS_C_GEMMACC_WEIGHT, TGRS_C_GEMMACC_BIAS, TGRS_C_GEMMACC_WZP,
                                             out->dims[3], k);
}

int tgrs_kernel_gemmacc(const tgrs_op_ctx *ctx)
{
    const tgrs_tview *in = ctx->in[0];
    tgrs_tview *out = ctx->out;
    const int8_t *wt = (const int8_t *)ctx->c[TGRS_C_GEMMACC_WEIGHT];
    const int8_t *x = (const int8_t *)in->data;
    int32_t *y = (int32_t *)out->data;
    int32_t k = ctx->p[TGRS_P_GEMMACC_K], zp = ctx->p[TGRS_P_GEMMACC_ZP_IN], oc, o;
    size_t rows, r;
    int st = tgrs_check_gemmacc(ctx);
    if (st != TGRS_OK) {
        return st;
    }
    oc = out->dims[3];
    rows = (size_t)in->dims[0] * (size_t)in->dims[1] * tgrs_kv_row_elems(in) / (size_t)k;
    for (r = 0; r < rows; ++r) {
        for (o = 0; o < oc; ++o) {
            const size_t at = r * (size_t)oc + (size_t)o;
            const int32_t a0 = ctx->n_in == 2 ? ((const int32_t *)ctx->in[1]->data)[at] : 0; /* before y[at] */
            y[at] = acc_dot(tgrs_wrap_add(acc_c(ctx, TGRS_C_GEMMACC_BIAS, o), a0), x + r * (size_t)k,
                            wt + (size_t)o * (size_t)k, k, zp, acc_c(ctx, TGRS_C_GEMMACC_WZP, o));
        }
    }
    return TGRS_OK;
}

int tgrs_check_accadd(const tgrs_op_ctx *ctx)
{
    const tgrs_tview *out = ctx->out;
    int32_t i;
    if (!TGRS_ACC) {
        return TGRS_ERR_UNSUPPORTED; /* built with -DTGRS_NO_ACC */
    }
    if (ctx->n_in != 2 || !tgrs_kv_sane(out)) {
        return TGRS_ERR_SHAPE;
    }
    if (out->dtype != TGRS_DT_S32) {
        return TGRS_ERR_DTYPE;
    }
    for (i = 0; i < 2; ++i) {
        const tgrs_tview *in = ctx->in[i];
        if (!tgrs_kv_sane(in) || !tgrs_kv_same_dims(in, out)) {
            return TGRS_ERR_SHAPE;
        }
        if (in->dtype != TGRS_DT_S32) {
            return TGRS_ERR_DTYPE;
        }
        if (!tgrs_kv_has_rows(in, out->row0, out->row0 + out->rows)) {
            return TGRS_ERR_TILE;
        }
    }
    return TGRS_OK;
}

int tgrs_kernel_accadd(const tgrs_op_ctx *ctx)
{
    tgrs_tview *out = ctx->out;
    size_t row = tgrs_kv_row_elems(out), e;
    int32_t n, h;
    int st = tgrs_check_accadd(ctx);
    if (st != TGRS_OK) {
        return st;
    }
    for (n = 0; n < out->dims[0]; ++n) {
        for (h = out->row0; h < out->row0 + out->rows; ++h) {
            const int32_t *a = (const int32_t *)ctx->in[0]->data + tgrs_kv_row_off(ctx->in[0], n, h);
            const int32_t *b = (const int32_t *)ctx->in[1]->data + tgrs_kv_row_off(ctx->in[1], n, h);
            int32_t *y = (int32_t *)out->data + tgrs_kv_row_off(out, n, h);
            for (e = 0; e < row; ++e) { /* in place over a or b: y[e] is stored after a[e] and b[e] are read */
                int64_t s = (int64_t)a[e] + (int64_t)b[e];
                y[e] = (int32_t)(s < INT32_MIN ? INT32_MIN : (s > INT32_MAX ? INT32_MAX : s));
            }
        }
    }
    return TGRS_OK;
}

int tgrs_check_requantize(const tgrs_op_ctx *ctx)
{
    const tgrs_tview *in = ctx->in[0];
    const tgrs_tview *out = ctx->out;
    if (!TGRS_ACC) {
        return TGRS_ERR_UNSUPPORTED; /* built with -DTGRS_NO_ACC */
    }
    if (ctx->n_in != 1 || !tgrs_kv_sane(in) || !tgrs_kv_sane(out) || !tgrs_kv_same_dims(in, out)) {
        return TGRS_ERR_SHAPE;
    }
    if (in->dtype != TGRS_DT_S32 || out->dtype != TGRS_DT_S8) {
        return TGRS_ERR_DTYPE;
    }
    if (!tgrs_kv_has_rows(in, out->row0, out->row0 + out->rows)) {
        return TGRS_ERR_TILE;
    }
    return tgrs_mac_s8_check(ctx, TGRS_C_REQUANTIZE_MULT, TGRS_C_REQUANTIZE_SHIFT, out->dims[3],
                             ctx->p[TGRS_P_REQUANTIZE_ACT_MIN], ctx->p[TGRS_P_REQUANTIZE_ACT_MAX], 0,
                             ctx->p[TGRS_P_REQUANTIZE_ZP_OUT], ctx->p[TGRS_P_REQUANTIZE_NUMERICS]);
}

int tgrs_kernel_requantize(const tgrs_op_ctx *ctx)
{
    const tgrs_tview *in = ctx->in[0];
    tgrs_tview *out = ctx->out;
    const int32_t *mult = (const int32_t *)ctx->c[TGRS_C_REQUANTIZE_MULT];
    const int32_t *shift = (const int32_t *)ctx->c[TGRS_C_REQUANTIZE_SHIFT];
    const int32_t lo = ctx->p[TGRS_P_REQUANTIZE_ACT_MIN], hi = ctx->p[TGRS_P_REQUANTIZE_ACT_MAX];
    const int32_t zp = ctx->p[TGRS_P_REQUANTIZE_ZP_OUT], nm = ctx->p[TGRS_P_REQUANTIZE_NUMERICS];
    size_t pixels, px;
    int32_t n, h, c, oc;
    int st = tgrs_check_requantize(ctx);
    if (st != TGRS_OK) {
        return st;
    }
    oc = out->dims[3];
    pixels = (size_t)out->dims[2];
    for (n = 0; n < out->dims[0]; ++n) {
        for (h = out->row0; h < out->row0 + out->rows; ++h) {
            const int32_t *a = (const int32_t *)in->data + tgrs_kv_row_off(in, n, h);
            int8_t *y = (int8_t *)out->data + tgrs_kv_row_off(out, n, h);
            for (c = 0; c < oc; ++c) { /* prepared once per channel; the out-of-line twins keep the family small */
                tgrs_rq r;
                tgrs_rq_prepare(&r, mult[c], shift[c], zp, nm);
                for (px = 0; px < pixels; ++px) {
                    y[px * (size_t)oc + (size_t)c] = tgrs_rq_s8_call(&r, a[px * (size_t)oc + (size_t)c], lo, hi);
                }
            }
        }
    }
    return TGRS_OK;
}
