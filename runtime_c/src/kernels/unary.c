/*
 * unary.c - elementwise activations (unary) and PRelu on band views, float32 and int8.
 *
 * Defined by tigris/ops/unary.py and docs/numerics.md ("Activations"):
 *   unary float: FUNC 1 relu, 2 relu6, 3 clip(ALPHA, BETA), 4 sigmoid, 5 tanh, 6 hardsigmoid (ALPHA*x + BETA),
 *                7 hardswish (x * hardsigmoid), 8 leakyrelu (ALPHA), 9 exp, 10 log, 11 sqrt, 12 reciprocal, 13 neg,
 *                14 abs, 15 erf, 16 gelu (erf form), 17 gelu (tanh form), 18 softplus, 19 elu (ALPHA),
 *                20 selu (ALPHA, gamma BETA), 21 pow (exponent ALPHA); computed in float32
 *   unary int8 : y = LUT[q + 128] (a 256-entry table built by the compiler)
 *   prelu float: x >= 0 ? x : SLOPE[k] * x, k = c (NCH = C) or 0 (NCH = 1); with COUNT > 0 slope values (a
 *                slope varying along N, H or W) k = n * SN + h * SH + w * SW + (NCH > 1 ? c : 0), h the global row
 *   prelu int8 : d = q - zp_in; zp_out + requant_even(d, d >= 0 ? PMULT : NMULT[c], d >= 0 ? PSHIFT : NSHIFT[c]),
 *                halves to even
 * Output row h reads input row h, so any band works as long as the input band holds the output's rows.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "kview.h"
#include "requant.h"
#include "tgrs_op.h"

/* Shared checks of an elementwise op: one input with the output's dims, holding the output's rows. */
static int ewise_check(const tgrs_op_ctx *ctx)
{
    const tgrs_tview *in = ctx->in[0];
    const tgrs_tview *out = ctx->out;
    if (ctx->n_in != 1 || !tgrs_kv_sane(in) || !tgrs_kv_sane(out) || !tgrs_kv_same_dims(in, out)) {
        return TGRS_ERR_SHAPE;
    }
    if (in->dtype != out->dtype) {
        return TGRS_ERR_DTYPE;
    }
    if (!tgrs_kv_has_rows(in, out->row0, out->row0 + out->rows)) {
        return TGRS_ERR_TILE;
    }
    return TGRS_OK;
}

static float unary_f32(int32_t func, float x, float alpha, float beta)
{
    float t;
    switch (func) {
    case 1:
        return x > 0.0f ? x : 0.0f;
    case 2:
        t = x > 0.0f ? x : 0.0f;
        return t < 6.0f ? t : 6.0f;
    case 3:
        t = x > alpha ? x : alpha;
        return t < beta ? t : beta;
    case 4:
        return 1.0f / (1.0f + expf(-x));
    case 5:
        return tanhf(x);
    case 6:
        t = alpha * x + beta;
        t = t < 1.0f ? t : 1.0f;
        return t > 0.0f ? t : 0.0f;
    case 7:
        t = alpha * x + beta;
        t = t < 1.0f ? t : 1.0f;
        t = t > 0.0f ? t : 0.0f;
        return x * t;
    case 8:
        return x >= 0.0f ? x : alpha * x;
    case 9:
        return expf(x);
    case 10:
        return logf(x);
    case 11:
        return sqrtf(x);
    case 12:
        return 1.0f / x;
    case 13:
        return -x;
    case 14:
        return fabsf(x);
    case 15:
        return erff(x);
    case 16:
        return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
    case 17:
        return 0.5f * x * (1.0f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
    case 18:
        return log1pf(expf(x));
    case 19:
        return x >= 0.0f ? x : alpha * (expf(x) - 1.0f);
    case 20:
        return beta * (x > 0.0f ? x : alpha * (expf(x) - 1.0f));
    default: /* 21, validated by the caller */
        return powf(x, alpha);
    }
}

/* The kinds' checks: the kernels and the loader (check.c, once per op and tile) call them. */
int tgrs_check_unary(const tgrs_op_ctx *ctx)
{
    int32_t func = ctx->p[TGRS_P_UNARY_FUNC];
    int st = ewise_check(ctx);
    if (st != TGRS_OK) {
        return st;
    }
    if (ctx->out->dtype == TGRS_DT_F32) {
        return (func < 1 || func > 21) ? TGRS_ERR_PARAM : TGRS_OK;
    }
    if (ctx->out->dtype != TGRS_DT_S8) {
        return TGRS_ERR_DTYPE;
    }
    return ctx->clen[TGRS_C_UNARY_LUT] != 256u ? TGRS_ERR_PARAM : TGRS_OK; /* any 256 bytes are a valid table */
}

int tgrs_check_prelu(const tgrs_op_ctx *ctx)
{
    const tgrs_tview *in = ctx->in[0];
    const tgrs_tview *out = ctx->out;
    int32_t nch = ctx->p[TGRS_P_PRELU_NCH];
    const int32_t count = ctx->p[TGRS_P_PRELU_COUNT];
    const int32_t sn = ctx->p[TGRS_P_PRELU_SN], sh = ctx->p[TGRS_P_PRELU_SH], sw = ctx->p[TGRS_P_PRELU_SW];
    int st = ewise_check(ctx);
    if (st != TGRS_OK) {
        return st;
    }
    if (nch != 1 && nch != out->dims[3]) {
        return TGRS_ERR_PARAM;
    }
    if (count != 0) { /* every index the kernel forms lies below COUNT */
        int64_t last = (int64_t)(out->dims[0] - 1) * sn + (int64_t)(out->dims[1] - 1) * sh +
                       (int64_t)(out->dims[2] - 1) * sw + (nch > 1 ? nch - 1 : 0);
        if (count < 0 || sn < 0 || sh < 0 || sw < 0 || last >= count) {
            return TGRS_ERR_PARAM;
        }
        nch = count; /* the constants hold COUNT values */
    }
    if (out->dtype == TGRS_DT_F32) {
        return ctx->clen[TGRS_C_PRELU_SLOPE] != (uint32_t)nch * 4u ? TGRS_ERR_PARAM : TGRS_OK;
    }
    if (out->dtype != TGRS_DT_S8) {
        return TGRS_ERR_DTYPE;
    }
    {
        const int32_t *nm = (const int32_t *)ctx->c[TGRS_C_PRELU_NMULT];
        const int32_t *ns = (const int32_t *)ctx->c[TGRS_C_PRELU_NSHIFT];
        int32_t ps = ctx->p[TGRS_P_PRELU_PSHIFT];
        int32_t zi = in->zero_point;
        int32_t c;
        if (ctx->clen[TGRS_C_PRELU_NMULT] != (uint32_t)nch * 4u || ctx->clen[TGRS_C_PRELU_NSHIFT] != (uint32_t)nch * 4u ||
            ps > TGRS_SHIFT_MAX || ctx->p[TGRS_P_PRELU_PMULT] < 0 ||
            !tgrs_s8_bounds_ok(ctx->p[TGRS_P_PRELU_LO], ctx->p[TGRS_P_PRELU_HI], out->zero_point) || zi < -128 ||
            zi > 127) {
            return TGRS_ERR_PARAM;
        }
        for (c = 0; nm != NULL && ns != NULL && c < nch; ++c) {
            /* a negative multiplier encodes a negative slope; INT32_MIN could not be negated and is refused */
            if (ns[c] > TGRS_SHIFT_MAX || nm[c] == INT32_MIN) {
                return TGRS_ERR_PARAM;
            }
        }
    }
    return TGRS_OK;
}

int tgrs_kernel_unary(const tgrs_op_ctx *ctx)
{
    const tgrs_tview *in = ctx->in[0];
    tgrs_tview *out = ctx->out;
    int32_t n;
    size_t i, len;
    int st = tgrs_check_unary(ctx);
    if (st != TGRS_OK) {
        return st;
    }
    len = (size_t)out->rows * tgrs_kv_row_elems(out);
    if (out->dtype == TGRS_DT_F32) {
        int32_t func = ctx->p[TGRS_P_UNARY_FUNC];
        float alpha = tgrs_p_f32(ctx, TGRS_P_UNARY_ALPHA);
        float beta = tgrs_p_f32(ctx, TGRS_P_UNARY_BETA);
        for (n = 0; n < out->dims[0]; ++n) {
            const float *x = (const float *)in->data + tgrs_kv_row_off(in, n, out->row0);
            float *y = (float *)out->data + tgrs_kv_row_off(out, n, out->row0);
            if (func == 1) { /* the common case gets its own tight loop */
                for (i = 0; i < len; ++i) {
                    y[i] = x[i] > 0.0f ? x[i] : 0.0f;
                }
                continue;
            }
            for (i = 0; i < len; ++i) {
                y[i] = unary_f32(func, x[i], alpha, beta);
            }
        }
        return TGRS_OK;
    }
    {
        const int8_t *lut = (const int8_t *)ctx->c[TGRS_C_UNARY_LUT];
        for (n = 0; n < out->dims[0]; ++n) {
            const int8_t *x = (const int8_t *)in->data + tgrs_kv_row_off(in, n, out->row0);
            int8_t *y = (int8_t *)out->data + tgrs_kv_row_off(out, n, out->row0);
            for (i = 0; i < len; ++i) {
                y[i] = lut[(int32_t)x[i] + 128];
            }
        }
    }
    return TGRS_OK;
}

/* The slope index of pixel (n, h, w), channel 0 (0 for a per-channel or scalar slope). */
static size_t prelu_base(const tgrs_op_ctx *ctx, int32_t n, int32_t h, int32_t w)
{
    if (ctx->p[TGRS_P_PRELU_COUNT] == 0) {
        return 0u;
    }
    return (size_t)n * (size_t)ctx->p[TGRS_P_PRELU_SN] + (size_t)h * (size_t)ctx->p[TGRS_P_PRELU_SH] +
           (size_t)w * (size_t)ctx->p[TGRS_P_PRELU_SW];
}

int tgrs_kernel_prelu(const tgrs_op_ctx *ctx)
{
    const tgrs_tview *in = ctx->in[0];
    tgrs_tview *out = ctx->out;
    int32_t nch = ctx->p[TGRS_P_PRELU_NCH];
    int32_t n, C, W;
    size_t i, pix;
    int st = tgrs_check_prelu(ctx);
    if (st != TGRS_OK) {
        return st;
    }
    C = out->dims[3];
    W = out->dims[2];
    pix = (size_t)out->rows * (size_t)W;
    if (out->dtype == TGRS_DT_F32) {
        const float *slope = (const float *)ctx->c[TGRS_C_PRELU_SLOPE];
        for (n = 0; n < out->dims[0]; ++n) {
            const float *x = (const float *)in->data + tgrs_kv_row_off(in, n, out->row0);
            float *y = (float *)out->data + tgrs_kv_row_off(out, n, out->row0);
            for (i = 0; i < pix; ++i) {
                int32_t c;
                const size_t k0 = prelu_base(ctx, n, out->row0 + (int32_t)(i / (size_t)W), (int32_t)(i % (size_t)W));
                for (c = 0; c < C; ++c) {
                    float v = x[i * (size_t)C + (size_t)c];
                    float s = slope[k0 + (nch == 1 ? 0u : (size_t)c)];
                    y[i * (size_t)C + (size_t)c] = v >= 0.0f ? v : v * s;
                }
            }
        }
        return TGRS_OK;
    }
    {
        const int32_t *nm = (const int32_t *)ctx->c[TGRS_C_PRELU_NMULT];
        const int32_t *ns = (const int32_t *)ctx->c[TGRS_C_PRELU_NSHIFT];
        int32_t pm = ctx->p[TGRS_P_PRELU_PMULT];
        int32_t ps = ctx->p[TGRS_P_PRELU_PSHIFT];
        int32_t lo = ctx->p[TGRS_P_PRELU_LO];
        int32_t hi = ctx->p[TGRS_P_PRELU_HI];
        int32_t zi = in->zero_point;
        int32_t zo = out->zero_point;
        int32_t c;
        for (n = 0; n < out->dims[0]; ++n) {
            const int8_t *x = (const int8_t *)in->data + tgrs_kv_row_off(in, n, out->row0);
            int8_t *y = (int8_t *)out->data + tgrs_kv_row_off(out, n, out->row0);
            for (i = 0; i < pix; ++i) {
                const size_t k0 = prelu_base(ctx, n, out->row0 + (int32_t)(i / (size_t)W), (int32_t)(i % (size_t)W));
                for (c = 0; c < C; ++c) {
                    int32_t d = (int32_t)x[i * (size_t)C + (size_t)c] - zi;
                    size_t k = k0 + (nch == 1 ? 0u : (size_t)c);
                    y[i * (size_t)C + (size_t)c] = d >= 0 ? tgrs_requant_even_s8(d, pm, ps, zo, lo, hi)
                                                          : tgrs_requant_even_s8(d, nm[k], ns[k], zo, lo, hi);
                }
            }
        }
    }
    return TGRS_OK;
}
