/*
 * matmul.c - the matmul kind: Y[b0,b1,m,n] = ALPHA * sum_k A[b0,b1,m,k] * B[b0,b1,k,n] (+ C[m,n]), two operands
 * that may both be activations, float32 and int8 (int32 output: the raw accumulator).
 *
 * tigris/ops/matmul.py is the other half of this contract. Every operand is addressed through element strides of
 * its physical view (params AS0 AS1 AM AK, BS0 BS1 BK BN, YS0 YS1 YM YN; 0 on a broadcast axis), so any layout,
 * batch broadcasting and Gemm's transA/transB need no data movement. K_POS: -1 both operands are inputs, 0 A is the
 * const K, 1 B is (plain logical order); KZP is that constant's zero point. C, if present, is [M][N] float32
 * (beta applied) or int32 (in the accumulator's scale).
 *   float: acc in float32 over k in order; y = acc * ALPHA + C[m][n]
 *   int8 : acc = sum (a - za) * (b - zb) in int32 (K <= 32767: |acc| < 2^31) + C[m][n] (a wrapping add; the
 *          compiler proved the sum fits); y = sat8(requant(acc, MULT[n or 0], SHIFT[n or 0]) + zp_y)
 *   int32: y = acc
 * Row bands: when A is an activation whose M axis is its view's row axis (AM = one row's elements) and so is Y's
 * (YM likewise), with one image and every other axis inside a row, the op runs on a band of output rows: rows
 * [row0, row0 + rows) of M, A's band holding them, B (and the constant C, indexed by the global m) whole. Any other
 * product needs whole operands. No scratch, except for float16 weights (WF16 = 1, docs/format.md
 * "Float16 weights"): a float op's constant K holds IEEE halves, which the kernel widens exactly into the first bytes
 * of its scratch (tgrs_f16_widen, kcheck.h) and reads there.
 */
#include <stddef.h>
#include <stdint.h>

#include "kcheck.h"
#include "kview.h"
#include "requant.h"
#include "tgrs_op.h"

#define MM_K_MAX 32767

typedef struct mm_geo {
    int32_t b0, b1, m, n, k;
    int32_t m0, m1, a0; /* output rows [m0, m1) of M; A's band starts at its row a0 */
    size_t as[4], bs[4], ys[4];
    const void *a, *b;
    int32_t za, zb;
} mm_geo;

static uint64_t mm_count(const tgrs_tview *v)
{
    return (uint64_t)v->dims[0] * (uint64_t)v->dims[1] * (uint64_t)v->dims[2] * (uint64_t)v->dims[3];
}

/* Largest element offset an operand's strides reach, or UINT64_MAX for a negative stride. */
static uint64_t mm_span(const int32_t *p, int s0, int32_t d0, int32_t d1, int32_t d2, int32_t d3)
{
    int32_t d[4];
    uint64_t span = 0u;
    int i;
    d[0] = d0; d[1] = d1; d[2] = d2; d[3] = d3;
    for (i = 0; i < 4; ++i) {
        if (p[s0 + i] < 0) {
            return UINT64_MAX;
        }
        span += (uint64_t)(d[i] - 1) * (uint64_t)p[s0 + i];
    }
    return span;
}

static int mm_setup(const tgrs_op_ctx *ctx, mm_geo *g)
{
    const int32_t *p = ctx->p;
    const tgrs_tview *out = ctx->out;
    const int32_t kpos = p[TGRS_P_MATMUL_K_POS];
    const int32_t dt = out->dtype;
    const size_t esz = dt == TGRS_DT_F32 ? 4u : 1u; /* operand element size */
    const int32_t n_in = kpos < 0 ? 2 : 1;
    const tgrs_tview *va = NULL, *vb = NULL;
    uint64_t lim_a, lim_b, total, nmult;
    int i;
    if (kpos < -1 || kpos > 1 || ctx->n_in != n_in || !tgrs_kv_sane(out)) {
        return kpos < -1 || kpos > 1 ? TGRS_ERR_PARAM : TGRS_ERR_SHAPE;
    }
    for (i = 0; i < n_in; ++i) {
        if (!tgrs_kv_sane(ctx->in[i])) {
            return TGRS_ERR_SHAPE;
        }
        /* a band of A only (checked against the output's band below) */
        if (!tgrs_kv_whole(ctx->in[i]) && !(i == 0 && kpos != 0)) {
            return TGRS_ERR_TILE;
        }
        if (ctx->in[i]->dtype != (dt == TGRS_DT_F32 ? TGRS_DT_F32 : TGRS_DT_S8)) {
            return TGRS_ERR_DTYPE;
        }
    }
    if (dt != TGRS_DT_F32 && dt != TGRS_DT_S8 && dt != TGRS_DT_S32) {
        return TGRS_ERR_DTYPE;
    }
    g->b0 = p[TGRS_P_MATMUL_B0];
    g->b1 = p[TGRS_P_MATMUL_B1];
    g->m = p[TGRS_P_MATMUL_M];
    g->n = p[TGRS_P_MATMUL_N];
    g->k = p[TGRS_P_MATMUL_K];
    if (g->b0 < 1 || g->b1 < 1 || g->m < 1 || g->n < 1 || g->k < 1 || (dt != TGRS_DT_F32 && g->k > MM_K_MAX)) {
        return TGRS_ERR_PARAM;
    }
    if (kpos == 0) {
        vb = ctx->in[0];
    } else if (kpos == 1) {
        va = ctx->in[0];
    } else {
        va = ctx->in[0];
        vb = ctx->in[1];
    }
    lim_a = va != NULL ? mm_count(va) : ctx->clen[TGRS_C_MATMUL_K] / esz;
    lim_b = vb != NULL ? mm_count(vb) : ctx->clen[TGRS_C_MATMUL_K] / esz;
    total = mm_count(out);
    if (mm_span(p, TGRS_P_MATMUL_AS0, g->b0, g->b1, g->m, g->k) >= lim_a ||
        mm_span(p, TGRS_P_MATMUL_BS0, g->b0, g->b1, g->k, g->n) >= lim_b ||
        mm_span(p, TGRS_P_MATMUL_YS0, g->b0, g->b1, g->m, g->n) >= total ||
        (uint64_t)g->b0 * (uint64_t)g->b1 * (uint64_t)g->m * (uint64_t)g->n != total) {
        return TGRS_ERR_SHAPE;
    }
    if (kpos < 0 && ctx->clen[TGRS_C_MATMUL_K] != 0u) {
        return TGRS_ERR_SHAPE;
    }
    if (ctx->clen[TGRS_C_MATMUL_C] != 0u &&
        ctx->clen[TGRS_C_MATMUL_C] != (uint64_t)g->m * (uint64_t)g->n * 4u) {
        return TGRS_ERR_SHAPE;
    }
    for (i = 0; i < 4; ++i) {
        g->as[i] = (size_t)p[TGRS_P_MATMUL_AS0 + i];
        g->bs[i] = (size_t)p[TGRS_P_MATMUL_BS0 + i];
        g->ys[i] = (size_t)p[TGRS_P_MATMUL_YS0 + i];
    }
    g->m0 = 0;
    g->m1 = g->m;
    g->a0 = 0;
    if (!tgrs_kv_whole(out) || (va != NULL && !tgrs_kv_whole(va))) {
        /* a row band: M is the row axis of A and Y, one image, every other axis within a row */
        const uint64_t arow = va != NULL ? tgrs_kv_row_elems(va) : 0u;
        const uint64_t yrow = tgrs_kv_row_elems(out);
        if (va == NULL || out->dims[0] != 1 || va->dims[0] != 1 || out->dims[1] != g->m || va->dims[1] != g->m ||
            (uint64_t)p[TGRS_P_MATMUL_AM] != arow || (uint64_t)p[TGRS_P_MATMUL_YM] != yrow ||
            (g->b0 > 1 && (p[TGRS_P_MATMUL_AS0] != 0 || p[TGRS_P_MATMUL_YS0] != 0)) ||
            mm_span(p, TGRS_P_MATMUL_AS0, g->b0, g->b1, 1, g->k) >= arow ||
            mm_span(p, TGRS_P_MATMUL_YS0, g->b0, g->b1, 1, g->n) >= yrow ||
            !tgrs_kv_has_rows(va, out->row0, out->row0 + out->rows)) {
            return TGRS_ERR_TILE;
        }
        g->m0 = out->row0;
        g->m1 = out->row0 + out->rows;
        g->a0 = va->row0;
    }
    g->a = va != NULL ? va->data : ctx->c[TGRS_C_MATMUL_K];
    g->b = vb != NULL ? vb->data : ctx->c[TGRS_C_MATMUL_K];
    g->za = va != NULL ? va->zero_point : p[TGRS_P_MATMUL_KZP];
    g->zb = vb != NULL ? vb->zero_point : p[TGRS_P_MATMUL_KZP];
    if (dt == TGRS_DT_F32) {
        return TGRS_OK;
    }
    if (g->za < -128 || g->za > 127 || g->zb < -128 || g->zb > 127) {
        return TGRS_ERR_PARAM;
    }
    if (dt == TGRS_DT_S32) {
        return out->zero_point == 0 && ctx->clen[TGRS_C_MATMUL_MULT] == 0u ? TGRS_OK : TGRS_ERR_PARAM;
    }
    nmult = (uint64_t)p[TGRS_P_MATMUL_NMULT];
    if (nmult != 1u && nmult != (uint64_t)g->n) {
        return TGRS_ERR_PARAM;
    }
    return tgrs_mac_s8_check(ctx, TGRS_C_MATMUL_MULT, TGRS_C_MATMUL_SHIFT, (int32_t)nmult, -128, 127, 0,
                             out->zero_point, p[TGRS_P_MATMUL_NUMERICS]);
}

/* WF16 is 0, or 1 on a float op with a constant operand (anything else is TGRS_ERR_PARAM). */
static int mm_wf16_ok(const tgrs_op_ctx *ctx)
{
    const int32_t wf16 = ctx->p[TGRS_P_MATMUL_WF16];
    const int32_t kpos = ctx->p[TGRS_P_MATMUL_K_POS];
    return wf16 == 0 || (ctx->out != NULL && ctx->out->dtype == TGRS_DT_F32 && (kpos == 0 || kpos == 1));
}

/* The load-time check: float16 constants are checked viewed widened (tgrs_f16_view refuses a bad WF16, an odd
 * length or a short scratch). */
int tgrs_check_matmul(const tgrs_op_ctx *ctx)
{
    mm_geo g;
    tgrs_op_ctx wide;
    int st;
    if (ctx->out == NULL) {
        return TGRS_ERR_SHAPE;
    }
    if (!mm_wf16_ok(ctx)) {
        return TGRS_ERR_PARAM;
    }
    st = tgrs_f16_view(&wide, ctx, TGRS_C_MATMUL_K, ctx->p[TGRS_P_MATMUL_WF16]);
    return st != TGRS_OK ? st : mm_setup(&wide, &g);
}

static int mm_run(const tgrs_op_ctx *ctx);

/* A float op with a float16 constant computes on it widened into the scratch (tgrs_f16_widen). */
int tgrs_kernel_matmul(const tgrs_op_ctx *ctx)
{
    tgrs_op_ctx wide;
    int st;
    if (ctx->out == NULL) {
        return TGRS_ERR_SHAPE;
    }
    if (!mm_wf16_ok(ctx)) {
        return TGRS_ERR_PARAM;
    }
    st = tgrs_f16_widen(&wide, ctx, TGRS_C_MATMUL_K, ctx->p[TGRS_P_MATMUL_WF16]);
    return st != TGRS_OK ? st : mm_run(&wide);
}

static int mm_run(const tgrs_op_ctx *ctx)
{
    const int32_t dt = ctx->out->dtype;
    const int32_t *mult = (const int32_t *)ctx->c[TGRS_C_MATMUL_MULT];
    const int32_t *shift = (const int32_t *)ctx->c[TGRS_C_MATMUL_SHIFT];
    const int32_t per_col = ctx->p[TGRS_P_MATMUL_NMULT] > 1;
    const int32_t numerics = ctx->p[TGRS_P_MATMUL_NUMERICS];
    const float alpha = tgrs_p_f32(ctx, TGRS_P_MATMUL_ALPHA);
    const void *cv = ctx->clen[TGRS_C_MATMUL_C] != 0u ? ctx->c[TGRS_C_MATMUL_C] : NULL;
    int32_t i0, i1, m, n, k;
    mm_geo g;
    int st = mm_setup(ctx, &g);
    if (st != TGRS_OK) {
        return st;
    }
    if (dt == TGRS_DT_S8 && !tgrs_requant_check(mult, shift, ctx->p[TGRS_P_MATMUL_NMULT])) {
        return TGRS_ERR_PARAM; /* an LZ4 unit's constants are only visible now */
    }
    for (i0 = 0; i0 < g.b0; ++i0) {
        for (i1 = 0; i1 < g.b1; ++i1) {
            const size_t oa = (size_t)i0 * g.as[0] + (size_t)i1 * g.as[1];
            const size_t ob = (size_t)i0 * g.bs[0] + (size_t)i1 * g.bs[1];
            const size_t oy = (size_t)i0 * g.ys[0] + (size_t)i1 * g.ys[1];
            for (m = g.m0; m < g.m1; ++m) {
                for (n = 0; n < g.n; ++n) {
                    const size_t ra = oa + (size_t)(m - g.a0) * g.as[2];
                    const size_t rb = ob + (size_t)n * g.bs[3];
                    const size_t y = oy + (size_t)(m - g.m0) * g.ys[2] + (size_t)n * g.ys[3];
                    const size_t ci = (size_t)m * (size_t)g.n + (size_t)n;
                    if (dt == TGRS_DT_F32) {
                        const float *a = (const float *)g.a;
                        const float *b = (const float *)g.b;
                        float acc = 0.0f;
                        for (k = 0; k < g.k; ++k) {
                            acc += a[ra + (size_t)k * g.as[3]] * b[rb + (size_t)k * g.bs[2]];
                        }
                        acc = acc * alpha;
                        if (cv != NULL) {
                            acc += ((const float *)cv)[ci];
                        }
                        ((float *)ctx->out->data)[y] = acc;
                    } else {
                        const int8_t *a = (const int8_t *)g.a;
                        const int8_t *b = (const int8_t *)g.b;
                        int32_t acc = 0;
                        for (k = 0; k < g.k; ++k) {
                            acc += ((int32_t)a[ra + (size_t)k * g.as[3]] - g.za) *
                                   ((int32_t)b[rb + (size_t)k * g.bs[2]] - g.zb);
                        }
                        if (cv != NULL) {
                            acc = tgrs_wrap_add(acc, ((const int32_t *)cv)[ci]);
                        }
                        if (dt == TGRS_DT_S32) {
                            ((int32_t *)ctx->out->data)[y] = acc;
                        } else {
                            const int32_t j = per_col ? n : 0;
                            ((int8_t *)ctx->out->data)[y] = tgrs_requant_nm_s8(acc, mult[j], shift[j],
                                                                               ctx->out->zero_point, -128, 127,
                                                                               numerics);
                        }
                    }
                }
            }
        }
    }
    return TGRS_OK;
}
