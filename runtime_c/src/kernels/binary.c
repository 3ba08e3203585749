/*
 * binary.c - Add (Sub) and Mul with broadcasting on NHWC views, float32 and int8, band-aware.
 *
 * The arithmetic is defined by tigris/ops/binary.py and docs/numerics.md ("Add, Sub, Mul"):
 *   add int8: acc = (qa - za) * (MA << LA) + (qb - zb) * (MB << LB)   exact int64, |acc| < 2^61
 *             out = clamp(zo + round(acc / 2^RS), LO, HI)              one rounding, halves to even
 *   mul int8: out = clamp(zo + round((qa - za) * (qb - zb) * MULT / 2^(31 - SHIFT)), LO, HI), halves to even
 *   float   : a + b, a - b (SUB) or a * b, clamped to [F_LO, F_HI]
 *   NUMERICS 1 (tflm), requantizations tgrs_requant_tflm (rq):
 *     add int8: out = clamp(zo + rq(rq((qa - za) << 20, MA, LA) +- rq((qb - zb) << 20, MB, LB), MULT, SHIFT), LO, HI)
 *     mul int8: out = clamp(zo + rq((qa - za) * (qb - zb), MULT, SHIFT), LO, HI)
 * Operand X has dims X_D0..3 (params), each the output's or 1; a 1 is broadcast with a zero stride. An operand with
 * the output's row count (> 1) is a band read at the output's rows; one with a single row is read at row 0.
 * The constant operand (K_POS 0 = A, 1 = B, -1 none) is const slot K in the same dims.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "kview.h"
#include "requant.h"
#include "target.h"
#include "tgrs_op.h"
#include "variants.h"

/* One operand resolved to a base pointer for row `h` and element strides (0 where broadcast). */
typedef struct operand {
    const void *data;
    int32_t zp;
    int32_t dims[4];
    int32_t banded;  /* rows indexed relative to row0 of a band */
    int32_t row0;
    size_t s_n, s_h, s_w, s_c;
} operand;

static int operand_init(const tgrs_op_ctx *ctx, int slot, operand *o, size_t esize)
{
    const int32_t *p = ctx->p;
    const tgrs_tview *out = ctx->out;
    int32_t kpos = p[TGRS_P_ADD_K_POS];
    int32_t base = slot == 0 ? TGRS_P_ADD_A_D0 : TGRS_P_ADD_B_D0;
    size_t rows;
    int i;
    for (i = 0; i < 4; ++i) {
        o->dims[i] = p[base + i];
        if (o->dims[i] != 1 && o->dims[i] != out->dims[i]) {
            return TGRS_ERR_SHAPE;
        }
    }
    o->banded = o->dims[1] == out->dims[1] && o->dims[1] > 1;
    if (kpos == slot) {
        size_t n = (size_t)o->dims[0] * (size_t)o->dims[1] * (size_t)o->dims[2] * (size_t)o->dims[3];
        if (ctx->clen[TGRS_C_ADD_K] != n * esize) { /* n * esize > 0: the length decides presence */
            return TGRS_ERR_PARAM;
        }
        o->data = ctx->c[TGRS_C_ADD_K];
        o->zp = p[TGRS_P_ADD_KZP];
        o->banded = o->dims[1] > 1; /* the whole tensor: global rows index it directly (row0 = 0) */
        o->row0 = 0;
        rows = (size_t)o->dims[1];
    } else {
        /* Lowered.inputs holds the non-constant operands in order (A, B). */
        const tgrs_tview *v = ctx->in[(slot == 1 && kpos == -1) ? 1 : 0];
        size_t pn = (size_t)o->dims[0] * (size_t)o->dims[1] * (size_t)o->dims[2] * (size_t)o->dims[3];
        size_t vn = (size_t)v->dims[0] * (size_t)v->dims[1] * (size_t)v->dims[2] * (size_t)v->dims[3];
        if (!tgrs_kv_sane(v) || pn != vn || (size_t)tgrs_dtype_size(v->dtype) != esize) {
            return TGRS_ERR_SHAPE;
        }
        o->data = v->data;
        o->zp = v->zero_point;
        o->row0 = v->row0;
        if (o->banded) {
            if (v->dims[1] != o->dims[1]) {
                return TGRS_ERR_SHAPE;
            }
            if (!tgrs_kv_has_rows(v, out->row0, out->row0 + out->rows)) {
                return TGRS_ERR_TILE;
            }
            rows = (size_t)v->rows;
        } else {
            if (!tgrs_kv_whole(v)) {
                return TGRS_ERR_TILE;
            }
            o->row0 = 0;
            rows = (size_t)o->dims[1];
        }
    }
    o->s_c = o->dims[3] == 1 ? 0u : 1u;
    o->s_w = o->dims[2] == 1 ? 0u : (size_t)o->dims[3];
    o->s_h = o->dims[1] == 1 ? 0u : (size_t)o->dims[2] * (size_t)o->dims[3];
    o->s_n = o->dims[0] == 1 ? 0u : rows * (size_t)o->dims[2] * (size_t)o->dims[3];
    return TGRS_OK;
}

/* Element offset of (n, h, w) (c = 0) in an operand; h is a global row. */
static size_t operand_off(const operand *o, int32_t n, int32_t h, int32_t w)
{
    size_t hh = o->banded ? (size_t)(h - o->row0) : 0u;
    return (size_t)n * o->s_n + hh * o->s_h + (size_t)w * o->s_w;
}

/* The arithmetic of one op, resolved once per call. */
typedef struct binop {
    int is_f32, is_mul, sub;
    float flo, fhi;
    int32_t za, zb, zo, lo, hi, rs, mult, shift;
    int32_t mul_n; /* 31 - shift, saturated at 63 (a quotient below one half) */
    int64_t ma, mb; /* MA << LA, MB << LB */
    int32_t tflm;   /* NUMERICS 1: the fields below */
    int32_t m1, s1, m2, s2;
} binop;

/* TFLM's headroom shift for int8 Add/Sub (tigris/ops/binary.py TFLM_LEFT_SHIFT). */
#define BINARY_TFLM_LEFT_SHIFT 20

static int8_t tflm_s8(const binop *op, int32_t da, int32_t db)
{
    int32_t r;
    if (op->is_mul) {
        r = tgrs_requant_tflm(da * db, op->mult, op->shift); /* |da * db| <= 255^2 */
    } else {
        /* |d| <= 255, so d << 20 and the two rescaled terms (each at most 2^28 in magnitude) stay in int32. */
        int32_t xa = tgrs_requant_tflm(da * (1 << BINARY_TFLM_LEFT_SHIFT), op->m1, op->s1);
        int32_t xb = tgrs_requant_tflm(db * (1 << BINARY_TFLM_LEFT_SHIFT), op->m2, op->s2);
        r = tgrs_requant_tflm(op->sub ? tgrs_wrap_sub(xa, xb) : tgrs_wrap_add(xa, xb), op->mult, op->shift);
    }
    return (int8_t)tgrs_clamp64((int64_t)r + op->zo, op->lo, op->hi);
}

#if !TGRS_HAVE_AVX2
/* No vector loop: span_s8's and span_f32's scalar loops take every element (target.h TGRS_BIN_S8, TGRS_BIN_F32). */
static size_t bin_span_none(const binop *op, void *y, const void *x, const void *z, size_t count, size_t sx, size_t sz)
{
    (void)op;
    (void)y;
    (void)x;
    (void)z;
    (void)count;
    (void)sx;
    (void)sz;
    return 0;
}
#endif

#include "binary_avx2.h" /* bin_s8_avx2, bin_f32_avx2 */

/* One contiguous output span of `count` elements; operand strides are 1 (dense) or 0 (broadcast). The dense/dense
 * and dense/broadcast cases get their own loops so the compiler can keep them simple. */
static void span_f32(const binop *op, float *y, const float *x, const float *z, size_t count, size_t sx, size_t sz)
{
    size_t i;
    for (i = TGRS_BIN_F32(op, y, x, z, count, sx, sz); i < count; ++i) { /* the target's vector loop first */
        float xa = x[i * sx];
        float xb = z[i * sz];
        float r = op->is_mul ? xa * xb : (op->sub ? xa - xb : xa + xb);
        r = r < op->flo ? op->flo : r;
        y[i] = r > op->fhi ? op->fhi : r;
    }
}


static void span_s8(const binop *op, int8_t *y, const int8_t *x, const int8_t *z, size_t count, size_t sx, size_t sz)
{
    const size_t i0 = TGRS_BIN_S8(op, y, x, z, count, sx, sz); /* the target's vector loop, if any, first */
    size_t i;
    if (op->tflm) {
        for (i = i0; i < count; ++i) {
            y[i] = tflm_s8(op, (int32_t)x[i * sx] - op->za, (int32_t)z[i * sz] - op->zb);
        }
        return;
    }
    if (op->is_mul) {
        for (i = i0; i < count; ++i) {
            int32_t da = (int32_t)x[i * sx] - op->za;
            int32_t db = (int32_t)z[i * sz] - op->zb;
            int64_t q = tgrs_rshift_half_even((int64_t)(da * db) * op->mult, op->mul_n);
            y[i] = (int8_t)tgrs_clamp64(q + op->zo, op->lo, op->hi);
        }
        return;
    }
    for (i = i0; i < count; ++i) {
        int64_t acc = (int64_t)((int32_t)x[i * sx] - op->za) * op->ma + (int64_t)((int32_t)z[i * sz] - op->zb) * op->mb;
        y[i] = (int8_t)tgrs_clamp64(tgrs_rshift_half_even(acc, op->rs) + op->zo, op->lo, op->hi);
    }
}

/* One span of either dtype; the dtype variant passes its own, so an int8-only build links no float span. */
typedef void (*binary_span_fn)(const binop *op, void *y, const void *x, const void *z, size_t count, size_t sx,
                               size_t sz);

static void span_any_f32(const binop *op, void *y, const void *x, const void *z, size_t count, size_t sx, size_t sz)
{
    if (sx == 1u && sz == 1u) {
        span_f32(op, (float *)y, (const float *)x, (const float *)z, count, 1u, 1u);
    } else {
        span_f32(op, (float *)y, (const float *)x, (const float *)z, count, sx, sz);
    }
}

static void span_any_s8(const binop *op, void *y, const void *x, const void *z, size_t count, size_t sx, size_t sz)
{
    if (sx == 1u && sz == 1u) {
        span_s8(op, (int8_t *)y, (const int8_t *)x, (const int8_t *)z, count, 1u, 1u);
    } else {
        span_s8(op, (int8_t *)y, (const int8_t *)x, (const int8_t *)z, count, sx, sz);
    }
}

/* Every check of the kind and the operands: the kernel and its load-time check (tgrs_check_add/_mul) share it. */
static int binary_setup(const tgrs_op_ctx *ctx, int is_mul, int32_t dt, operand *ap, operand *bp, binop *opp)
{
    const int32_t *p = ctx->p;
    const tgrs_tview *out = ctx->out;
    operand a, b;
    binop op;
    size_t esize;
    int st;
    int32_t kpos = p[TGRS_P_ADD_K_POS];
    if (!tgrs_kv_sane(out) || kpos < -1 || kpos > 1 || ctx->n_in != (kpos == -1 ? 2 : 1)) {
        return TGRS_ERR_SHAPE;
    }
    op.is_f32 = dt == TGRS_DT_F32;
    op.is_mul = is_mul;
    if (out->dtype != dt) {
        return TGRS_ERR_DTYPE;
    }
    esize = op.is_f32 ? 4u : 1u;
    st = operand_init(ctx, 0, &a, esize);
    if (st == TGRS_OK) {
        st = operand_init(ctx, 1, &b, esize);
    }
    if (st != TGRS_OK) {
        return st;
    }
    if (ctx->in[0]->dtype != out->dtype || (ctx->n_in == 2 && ctx->in[1]->dtype != out->dtype)) {
        return TGRS_ERR_DTYPE;
    }
    op.sub = p[TGRS_P_ADD_SUB] != 0;
    op.flo = tgrs_p_f32(ctx, TGRS_P_ADD_F_LO);
    op.fhi = tgrs_p_f32(ctx, TGRS_P_ADD_F_HI);
    op.za = a.zp;
    op.zb = b.zp;
    op.zo = out->zero_point;
    op.lo = p[TGRS_P_ADD_LO];
    op.hi = p[TGRS_P_ADD_HI];
    op.rs = p[TGRS_P_ADD_RS];
    op.mult = p[TGRS_P_ADD_MULT];
    op.shift = p[TGRS_P_ADD_SHIFT];
    op.ma = 0;
    op.mb = 0;
    op.mul_n = 0;
    op.tflm = p[TGRS_P_ADD_NUMERICS] == TGRS_NUMERICS_TFLM;
    op.m1 = p[TGRS_P_ADD_MA];
    op.s1 = p[TGRS_P_ADD_LA];
    op.m2 = p[TGRS_P_ADD_MB];
    op.s2 = p[TGRS_P_ADD_LB];
    if (!op.is_f32) {
        if (!tgrs_s8_bounds_ok(op.lo, op.hi, op.zo) || a.zp < -128 || a.zp > 127 || b.zp < -128 || b.zp > 127 ||
            (p[TGRS_P_ADD_NUMERICS] != TGRS_NUMERICS_ONNX && !op.tflm)) {
            return TGRS_ERR_PARAM;
        }
        if (op.tflm) {
            if (op.shift > TGRS_SHIFT_MAX || op.mult < 0 || (!is_mul && (op.s1 > TGRS_SHIFT_MAX || op.m1 < 0 ||
                                                                         op.s2 > TGRS_SHIFT_MAX || op.m2 < 0))) {
                return TGRS_ERR_PARAM;
            }
        } else if (is_mul) {
            if (op.shift > TGRS_SHIFT_MAX || op.mult < 0) {
                return TGRS_ERR_PARAM;
            }
            op.mul_n = op.shift <= -32 ? 63 : 31 - op.shift;
        } else {
            int32_t la = p[TGRS_P_ADD_LA];
            int32_t lb = p[TGRS_P_ADD_LB];
            if (la < 0 || la > 21 || lb < 0 || lb > 21 || op.rs < 0) {
                return TGRS_ERR_PARAM;
            }
            op.ma = (int64_t)p[TGRS_P_ADD_MA] * ((int64_t)1 << la);
            op.mb = (int64_t)p[TGRS_P_ADD_MB] * ((int64_t)1 << lb);
        }
    }
    *ap = a;
    *bp = b;
    *opp = op;
    return TGRS_OK;
}

static int binary_run(const tgrs_op_ctx *ctx, int is_mul, int32_t dt, binary_span_fn span)
{
    tgrs_tview *out = ctx->out;
    operand a, b;
    binop op;
    int32_t n, h, w, C, OW;
    size_t esize = dt == TGRS_DT_F32 ? 4u : 1u;
    int rows_dense;
    int st = binary_setup(ctx, is_mul, dt, &a, &b, &op);
    if (st != TGRS_OK) {
        return st;
    }
    C = out->dims[3];
    OW = out->dims[2];
    /* When both operands are dense along W and C, a whole row is one contiguous span. */
    rows_dense = a.dims[2] == OW && a.dims[3] == C && b.dims[2] == OW && b.dims[3] == C;
    for (n = 0; n < out->dims[0]; ++n) {
        for (h = out->row0; h < out->row0 + out->rows; ++h) {
            char *yrow = (char *)out->data + tgrs_kv_row_off(out, n, h) * esize;
            if (rows_dense) {
                span(&op, yrow, (const char *)a.data + operand_off(&a, n, h, 0) * esize,
                     (const char *)b.data + operand_off(&b, n, h, 0) * esize, (size_t)OW * (size_t)C, 1u, 1u);
                continue;
            }
            for (w = 0; w < OW; ++w) {
                span(&op, yrow + (size_t)w * (size_t)C * esize, (const char *)a.data + operand_off(&a, n, h, w) * esize,
                     (const char *)b.data + operand_off(&b, n, h, w) * esize, (size_t)C, a.s_c, b.s_c);
            }
        }
    }
    return TGRS_OK;
}

/* The dtype variants (registry.c picks one per op). add and mul share one PARAMS/CONSTS tuple in Python, so
 * TGRS_P_ADD_* indices describe both. */
int tgrs_add_f32(const tgrs_op_ctx *ctx)
{
    return binary_run(ctx, 0, TGRS_DT_F32, span_any_f32);
}

int tgrs_add_s8(const tgrs_op_ctx *ctx)
{
    return binary_run(ctx, 0, TGRS_DT_S8, span_any_s8);
}

int tgrs_mul_f32(const tgrs_op_ctx *ctx)
{
    return binary_run(ctx, 1, TGRS_DT_F32, span_any_f32);
}

int tgrs_mul_s8(const tgrs_op_ctx *ctx)
{
    return binary_run(ctx, 1, TGRS_DT_S8, span_any_s8);
}

/* The kinds' checks (check.c calls them at load, once per op and tile): what the dtype variant registry.c picks
 * would check before computing. */
static int binary_check(const tgrs_op_ctx *ctx, int is_mul)
{
    operand a, b;
    binop op;
    return binary_setup(ctx, is_mul, ctx->out->dtype == TGRS_DT_F32 ? TGRS_DT_F32 : TGRS_DT_S8, &a, &b, &op);
}

int tgrs_check_add(const tgrs_op_ctx *ctx)
{
    return binary_check(ctx, 0);
}

int tgrs_check_mul(const tgrs_op_ctx *ctx)
{
    return binary_check(ctx, 1);
}

/*
 * ewise: Max (FUNC 1), Min (2), Div (3), Pow (4) between two operands (tigris/ops/binary.py, Ewise), the operand
 * scheme above (K_POS, A_D*, B_D*, KZP at add's indices, checked below).
 *   float: max/min (NaN propagates), a / b, powf(a, b)
 *   int8 : ra = (float)(qa - za) * sa, rb likewise (a constant's scale is KSCALE); r = f(ra, rb) in float32;
 *          q = r / so in float32, NaN -> 0, saturated to +-1e9, rounded half to even, + zo, clamped to int8
 *          (Pow is float only here: a scalar exponent is the unary kind's table)
 */
typedef char tgrs_ewise_shares_operands[(TGRS_P_EWISE_K_POS == TGRS_P_ADD_K_POS &&
                                         TGRS_P_EWISE_A_D0 == TGRS_P_ADD_A_D0 &&
                                         TGRS_P_EWISE_B_D0 == TGRS_P_ADD_B_D0 && TGRS_P_EWISE_KZP == TGRS_P_ADD_KZP &&
                                         TGRS_C_EWISE_K == TGRS_C_ADD_K) ? 1 : -1];

static float ewise_f(int32_t func, float a, float b)
{
    switch (func) {
    case 1:
        return (a != a || a > b) ? a : b;
    case 2:
        return (a != a || a < b) ? a : b;
    case 3:
        return a / b;
    default: /* 4 (float only), validated by the setup */
        return powf(a, b);
    }
}

static int8_t ewise_quant(float r, float so, int32_t zo)
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

static int ewise_setup(const tgrs_op_ctx *ctx, operand *a, operand *b, float *sa, float *sb)
{
    const int32_t *p = ctx->p;
    const tgrs_tview *out = ctx->out;
    int32_t kpos = p[TGRS_P_EWISE_K_POS];
    int32_t func = p[TGRS_P_EWISE_FUNC];
    size_t esize;
    int st;
    if (!tgrs_kv_sane(out) || kpos < -1 || kpos > 1 || ctx->n_in != (kpos == -1 ? 2 : 1)) {
        return TGRS_ERR_SHAPE;
    }
    if (out->dtype != TGRS_DT_F32 && out->dtype != TGRS_DT_S8) {
        return TGRS_ERR_DTYPE;
    }
    if (func < 1 || func > (out->dtype == TGRS_DT_F32 ? 4 : 3)) {
        return TGRS_ERR_PARAM;
    }
    esize = out->dtype == TGRS_DT_F32 ? 4u : 1u;
    st = operand_init(ctx, 0, a, esize);
    if (st == TGRS_OK) {
        st = operand_init(ctx, 1, b, esize);
    }
    if (st != TGRS_OK) {
        return st;
    }
    if (ctx->in[0]->dtype != out->dtype || (ctx->n_in == 2 && ctx->in[1]->dtype != out->dtype)) {
        return TGRS_ERR_DTYPE;
    }
    *sa = kpos == 0 ? tgrs_p_f32(ctx, TGRS_P_EWISE_KSCALE) : ctx->in[0]->scale;
    *sb = kpos == 1 ? tgrs_p_f32(ctx, TGRS_P_EWISE_KSCALE) : ctx->in[kpos == -1 ? 1 : 0]->scale;
    if (out->dtype == TGRS_DT_S8 && (a->zp < -128 || a->zp > 127 || b->zp < -128 || b->zp > 127 ||
                                     !(out->scale > 0.0f) || !(*sa > 0.0f) || !(*sb > 0.0f))) {
        return TGRS_ERR_PARAM;
    }
    return TGRS_OK;
}

int tgrs_check_ewise(const tgrs_op_ctx *ctx)
{
    operand a, b;
    float sa, sb;
    return ewise_setup(ctx, &a, &b, &sa, &sb);
}

int tgrs_kernel_ewise(const tgrs_op_ctx *ctx)
{
    tgrs_tview *out = ctx->out;
    operand a, b;
    float sa, sb, so = out->scale;
    int32_t func = ctx->p[TGRS_P_EWISE_FUNC];
    int32_t n, h, w, c, C, OW, zo = out->zero_point;
    int st = ewise_setup(ctx, &a, &b, &sa, &sb);
    if (st != TGRS_OK) {
        return st;
    }
    C = out->dims[3];
    OW = out->dims[2];
    for (n = 0; n < out->dims[0]; ++n) {
        for (h = out->row0; h < out->row0 + out->rows; ++h) {
            size_t yo = tgrs_kv_row_off(out, n, h);
            for (w = 0; w < OW; ++w) {
                size_t oa = operand_off(&a, n, h, w);
                size_t ob = operand_off(&b, n, h, w);
                for (c = 0; c < C; ++c) {
                    size_t i = yo + (size_t)w * (size_t)C + (size_t)c;
                    size_t ia = oa + (size_t)c * a.s_c;
                    size_t ib = ob + (size_t)c * b.s_c;
                    if (out->dtype == TGRS_DT_F32) {
                        ((float *)out->data)[i] = ewise_f(func, ((const float *)a.data)[ia], ((const float *)b.data)[ib]);
                    } else {
                        float ra = (float)((int32_t)((const int8_t *)a.data)[ia] - a.zp) * sa;
                        float rb = (float)((int32_t)((const int8_t *)b.data)[ib] - b.zp) * sb;
                        ((int8_t *)out->data)[i] = ewise_quant(ewise_f(func, ra, rb), so, zo);
                    }
                }
            }
        }
    }
    return TGRS_OK;
}
