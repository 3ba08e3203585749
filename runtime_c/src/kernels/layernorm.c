/*
 * layernorm.c - the layernorm kind: LayerNormalization over the trailing logical axes [AXIS, 4) of a strided
 * rank-4 (padded) tensor, float32 and int8. tigris/ops/layernorm.py is the other half of this contract.
 *
 * D0..D3 are the logical dims, S0..S3 their element strides in the physical view (input and output alike); GAMMA
 * and BETA hold n = D[AXIS] * ... * D3 float32 each, in the row-major order of the normalized axes.
 *   float: mean and variance in float32 in that order, r = 1 / sqrtf(var + EPS), y = (x - mean) * r * g + b
 *   int8 : d = q - zp_in; S1 = sum d, V = n * sum d^2 - S1^2 exactly (int64); m = S1 / n, v = V / (n * n),
 *          k = SIN / sqrtf(v * SIN2 + EPS), y = (d - m) * k * g + b, q = sat8(rint(y / s_out) + zp_out), each step
 *          one float32 operation (NaN -> 0, halves to even)
 * The whole tensor is needed (structural). No scratch.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "kview.h"
#include "tgrs_op.h"

#define LN_N_MAX (1L << 20)

typedef struct ln_geo {
    int32_t d[4];
    size_t s[4];
    int32_t axis;
    size_t n;
} ln_geo;

static int ln_setup(const tgrs_op_ctx *ctx, ln_geo *g)
{
    const tgrs_tview *in = ctx->in[0];
    const tgrs_tview *out = ctx->out;
    const int32_t *p = ctx->p;
    uint64_t span = 0u, total = 1u, n = 1u;
    int i;
    if (ctx->n_in != 1 || !tgrs_kv_sane(in) || !tgrs_kv_sane(out) || !tgrs_kv_same_dims(in, out)) {
        return TGRS_ERR_SHAPE;
    }
    if (in->dtype != out->dtype || (out->dtype != TGRS_DT_F32 && out->dtype != TGRS_DT_S8)) {
        return TGRS_ERR_DTYPE;
    }
    if (!tgrs_kv_whole(in) || !tgrs_kv_whole(out)) {
        return TGRS_ERR_TILE;
    }
    g->axis = p[TGRS_P_LAYERNORM_AXIS];
    if (g->axis < 0 || g->axis > 3) {
        return TGRS_ERR_PARAM;
    }
    for (i = 0; i < 4; ++i) {
        g->d[i] = p[TGRS_P_LAYERNORM_D0 + i];
        if (g->d[i] < 1 || p[TGRS_P_LAYERNORM_S0 + i] < 0) {
            return TGRS_ERR_PARAM;
        }
        g->s[i] = (size_t)p[TGRS_P_LAYERNORM_S0 + i];
        span += (uint64_t)(g->d[i] - 1) * (uint64_t)g->s[i];
        total *= (uint64_t)g->d[i];
        if (i >= g->axis) {
            n *= (uint64_t)g->d[i];
        }
    }
    if (total != (uint64_t)in->dims[0] * (uint64_t)in->dims[1] * (uint64_t)in->dims[2] * (uint64_t)in->dims[3] ||
        span >= total || ctx->clen[TGRS_C_LAYERNORM_GAMMA] != n * 4u || ctx->clen[TGRS_C_LAYERNORM_BETA] != n * 4u) {
        return TGRS_ERR_SHAPE;
    }
    if (out->dtype == TGRS_DT_S8 && (n > (uint64_t)LN_N_MAX || in->zero_point < -128 || in->zero_point > 127 ||
                                     out->zero_point < -128 || out->zero_point > 127 || !(out->scale > 0.0f))) {
        return TGRS_ERR_PARAM;
    }
    g->n = (size_t)n;
    return TGRS_OK;
}

int tgrs_check_layernorm(const tgrs_op_ctx *ctx)
{
    ln_geo g;
    return ln_setup(ctx, &g);
}

/* Element offset of the j-th normalized element (row-major over axes AXIS..3) from a row's base offset. */
static size_t ln_off(const ln_geo *g, size_t j)
{
    size_t off = 0u;
    int i;
    for (i = 3; i >= g->axis; --i) {
        off += (j % (size_t)g->d[i]) * g->s[i];
        j /= (size_t)g->d[i];
    }
    return off;
}

static int8_t ln_quant(float y, float so, int32_t zo)
{
    float t = y / so;
    int32_t q;
    if (t != t) {
        t = 0.0f;
    }
    t = t > 1e9f ? 1e9f : (t < -1e9f ? -1e9f : t);
    q = (int32_t)lrintf(t) + zo; /* the default rounding mode: to nearest, halves to even */
    return (int8_t)(q < -128 ? -128 : (q > 127 ? 127 : q));
}

static void ln_row(const tgrs_op_ctx *ctx, const ln_geo *g, size_t base)
{
    const float *gamma = (const float *)ctx->c[TGRS_C_LAYERNORM_GAMMA];
    const float *beta = (const float *)ctx->c[TGRS_C_LAYERNORM_BETA];
    const float eps = tgrs_p_f32(ctx, TGRS_P_LAYERNORM_EPS);
    size_t j;
    if (ctx->out->dtype == TGRS_DT_F32) {
        const float *x = (const float *)ctx->in[0]->data;
        float *y = (float *)ctx->out->data;
        float mean = 0.0f, var = 0.0f, r;
        for (j = 0; j < g->n; ++j) {
            mean += x[base + ln_off(g, j)];
        }
        mean = mean / (float)g->n;
        for (j = 0; j < g->n; ++j) {
            const float dv = x[base + ln_off(g, j)] - mean;
            var += dv * dv;
        }
        var = var / (float)g->n;
        r = 1.0f / sqrtf(var + eps);
        for (j = 0; j < g->n; ++j) {
            const size_t o = base + ln_off(g, j);
            y[o] = (x[o] - mean) * r * gamma[j] + beta[j];
        }
    } else {
        const int8_t *x = (const int8_t *)ctx->in[0]->data;
        int8_t *y = (int8_t *)ctx->out->data;
        const int32_t zi = ctx->in[0]->zero_point;
        const float fn = (float)g->n;
        int64_t s1 = 0, s2 = 0;
        float m, v, k;
        for (j = 0; j < g->n; ++j) {
            const int64_t d = (int64_t)x[base + ln_off(g, j)] - zi;
            s1 += d;
            s2 += d * d;
        }
        m = (float)s1 / fn;
        v = (float)((int64_t)g->n * s2 - s1 * s1) / (fn * fn);
        k = tgrs_p_f32(ctx, TGRS_P_LAYERNORM_SIN) / sqrtf(v * tgrs_p_f32(ctx, TGRS_P_LAYERNORM_SIN2) + eps);
        for (j = 0; j < g->n; ++j) {
            const size_t o = base + ln_off(g, j);
            const float t = ((float)((int32_t)x[o] - zi) - m) * k * gamma[j] + beta[j];
            y[o] = ln_quant(t, ctx->out->scale, ctx->out->zero_point);
        }
    }
}

int tgrs_kernel_layernorm(const tgrs_op_ctx *ctx)
{
    int32_t o[4];
    int32_t od[4];
    ln_geo g;
    int i;
    int st = ln_setup(ctx, &g);
    if (st != TGRS_OK) {
        return st;
    }
    for (i = 0; i < 4; ++i) {
        od[i] = i < g.axis ? g.d[i] : 1;
    }
    for (o[0] = 0; o[0] < od[0]; ++o[0]) {
        for (o[1] = 0; o[1] < od[1]; ++o[1]) {
            for (o[2] = 0; o[2] < od[2]; ++o[2]) {
                for (o[3] = 0; o[3] < od[3]; ++o[3]) {
                    size_t base = 0u;
                    for (i = 0; i < 4; ++i) {
                        base += (size_t)o[i] * g.s[i];
                    }
                    ln_row(ctx, &g, base);
                }
            }
        }
    }
    return TGRS_OK;
}
