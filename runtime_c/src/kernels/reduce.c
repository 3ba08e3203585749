/*
 * reduce.c - ReduceMean (FUNC 1), ReduceSum (2), ReduceMax (3), ReduceL2 (4) over any axes, float32 and int8.
 *
 * Defined by tigris/ops/reduce.py: R0..R3 flag the reduced axes of the input view, OS0..OS3 are the output element
 * strides per input view axis (0 where reduced), COUNT the elements per output.
 *   float: sum, sum / COUNT, max, sqrtf(sum of squares) in float32
 *   int8 : d = q - zp_in summed (or maxed, or squared and summed) exactly in int64; r = (float)acc * s_in
 *          (L2: sqrtf((float)acc) * s_in; mean: r / (float)COUNT); q = r / s_out in float32, NaN -> 0, saturated,
 *          rounded half to even, + zp_out, clamped
 * The whole input is needed (structural); the output is written whole.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "kview.h"
#include "tgrs_op.h"

typedef struct reduce_geo {
    int32_t kd[4]; /* kept extent per view axis (1 where reduced) */
    int32_t rd[4]; /* reduced extent per view axis (1 where kept) */
    size_t is[4];  /* input element strides */
    size_t os[4];  /* output element strides */
} reduce_geo;

static int reduce_setup(const tgrs_op_ctx *ctx, reduce_geo *g)
{
    const tgrs_tview *in = ctx->in[0];
    const tgrs_tview *out = ctx->out;
    const int32_t *p = ctx->p;
    int32_t func = p[TGRS_P_REDUCE_FUNC];
    size_t count = 1u, span = 0u, total;
    int i;
    if (ctx->n_in != 1 || !tgrs_kv_sane(in) || !tgrs_kv_sane(out)) {
        return TGRS_ERR_SHAPE;
    }
    if (in->dtype != out->dtype || (out->dtype != TGRS_DT_F32 && out->dtype != TGRS_DT_S8)) {
        return TGRS_ERR_DTYPE;
    }
    if (!tgrs_kv_whole(in) || !tgrs_kv_whole(out)) {
        return TGRS_ERR_TILE;
    }
    if (func < 1 || func > 4) {
        return TGRS_ERR_PARAM;
    }
    g->is[3] = 1u;
    g->is[2] = (size_t)in->dims[3];
    g->is[1] = g->is[2] * (size_t)in->dims[2];
    g->is[0] = g->is[1] * (size_t)in->dims[1];
    total = (size_t)out->dims[0] * (size_t)out->dims[1] * (size_t)out->dims[2] * (size_t)out->dims[3];
    for (i = 0; i < 4; ++i) {
        int32_t r = p[TGRS_P_REDUCE_R0 + i];
        int32_t os = p[TGRS_P_REDUCE_OS0 + i];
        if ((r != 0 && r != 1) || os < 0 || (r && os != 0)) {
            return TGRS_ERR_PARAM;
        }
        g->kd[i] = r ? 1 : in->dims[i];
        g->rd[i] = r ? in->dims[i] : 1;
        g->os[i] = (size_t)os;
        count *= (size_t)g->rd[i];
        span += (size_t)(g->kd[i] - 1) * g->os[i];
    }
    /* every output offset inside the output, and as many kept indices as output elements */
    if ((size_t)p[TGRS_P_REDUCE_COUNT] != count || span >= total ||
        (size_t)g->kd[0] * (size_t)g->kd[1] * (size_t)g->kd[2] * (size_t)g->kd[3] != total) {
        return TGRS_ERR_SHAPE;
    }
    if (out->dtype == TGRS_DT_S8 && (!(in->scale > 0.0f) || !(out->scale > 0.0f) || in->zero_point < -128 ||
                                     in->zero_point > 127 || count > ((size_t)1 << 24))) {
        return TGRS_ERR_PARAM;
    }
    return TGRS_OK;
}

int tgrs_check_reduce(const tgrs_op_ctx *ctx)
{
    reduce_geo g;
    return reduce_setup(ctx, &g);
}

static int8_t reduce_quant(float r, float so, int32_t zo)
{
    float t = r / so;
    int32_t q;
    if (t != t) {
        t = 0.0f;
    }
    t = t > 1e9f ? 1e9f : (t < -1e9f ? -1e9f : t);
    q = (int32_t)lrintf(t) + zo; /* the default rounding mode: to nearest, halves to even */
    return (int8_t)(q < -128 ? -128 : (q > 127 ? 127 : q));
}

int tgrs_kernel_reduce(const tgrs_op_ctx *ctx)
{
    const tgrs_tview *in = ctx->in[0];
    tgrs_tview *out = ctx->out;
    int32_t func = ctx->p[TGRS_P_REDUCE_FUNC];
    int32_t k0, k1, k2, k3, r0, r1, r2, r3;
    reduce_geo g;
    int st = reduce_setup(ctx, &g);
    if (st != TGRS_OK) {
        return st;
    }
    for (k0 = 0; k0 < g.kd[0]; ++k0) {
        for (k1 = 0; k1 < g.kd[1]; ++k1) {
            for (k2 = 0; k2 < g.kd[2]; ++k2) {
                for (k3 = 0; k3 < g.kd[3]; ++k3) {
                    size_t base = (size_t)k0 * g.is[0] + (size_t)k1 * g.is[1] + (size_t)k2 * g.is[2] + (size_t)k3;
                    size_t o = (size_t)k0 * g.os[0] + (size_t)k1 * g.os[1] + (size_t)k2 * g.os[2] +
                               (size_t)k3 * g.os[3];
                    float facc = func == 3 ? -INFINITY : 0.0f;
                    int64_t iacc = func == 3 ? INT64_MIN : 0;
                    for (r0 = 0; r0 < g.rd[0]; ++r0) {
                        for (r1 = 0; r1 < g.rd[1]; ++r1) {
                            for (r2 = 0; r2 < g.rd[2]; ++r2) {
                                for (r3 = 0; r3 < g.rd[3]; ++r3) {
                                    size_t i = base + (size_t)r0 * g.is[0] + (size_t)r1 * g.is[1] +
                                               (size_t)r2 * g.is[2] + (size_t)r3;
                                    if (out->dtype == TGRS_DT_F32) {
                                        float v = ((const float *)in->data)[i];
                                        if (func == 3) {
                                            facc = (v != v || v > facc) ? v : facc;
                                        } else {
                                            facc += func == 4 ? v * v : v;
                                        }
                                    } else {
                                        int64_t d = (int64_t)((const int8_t *)in->data)[i] - in->zero_point;
                                        if (func == 3) {
                                            iacc = d > iacc ? d : iacc;
                                        } else {
                                            iacc += func == 4 ? d * d : d;
                                        }
                                    }
                                }
                            }
                        }
                    }
                    if (out->dtype == TGRS_DT_F32) {
                        if (func == 1) {
                            facc = facc / (float)ctx->p[TGRS_P_REDUCE_COUNT];
                        } else if (func == 4) {
                            facc = sqrtf(facc);
                        }
                        ((float *)out->data)[o] = facc;
                    } else {
                        float r = func == 4 ? sqrtf((float)iacc) * in->scale : (float)iacc * in->scale;
                        if (func == 1) {
                            r = r / (float)ctx->p[TGRS_P_REDUCE_COUNT];
                        }
                        ((int8_t *)out->data)[o] = reduce_quant(r, out->scale, out->zero_point);
                    }
                }
            }
        }
    }
    return TGRS_OK;
}
