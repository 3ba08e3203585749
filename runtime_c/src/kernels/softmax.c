/*
 * softmax.c - Softmax along one physical axis (AXIS 0..3), float32 and int8.
 *
 * Defined by tigris/ops/softmax.py and docs/numerics.md ("Softmax"):
 *   float: e = expf(x - max), y = e / sum(e) (sum in line order)
 *   int8 : d = max(q) - q; E = EXP[d] (int32 table); S = sum(E) (int64);
 *          y = clamp(zo + round(E * MULT / (S << (31 - SHIFT))), -128, 127), one rounding, halves to even
 *   int8, NUMERICS 1 (tflm): E = EXP[d] (exponentials, 0 integer bits); S = sum(rdbpot(E, 12)) (int32, wrapping);
 *          r, e = reciprocal(S); y = clamp(rdbpot(srdhm(r, E), e + 23) - 128, -128, 127); lines of at most 4095;
 *          an exponent e + 23 above 31 gives -128
 * Lines run along AXIS with that axis's stride; along the row axis the views must be whole, otherwise the input
 * band must hold the output's rows.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "kview.h"
#include "requant.h"
#include "tgrs_op.h"
#include "variants.h"

/* Element offset of (n, h, w, c) in a band view (h global). */
static size_t sm_off(const tgrs_tview *v, int32_t n, int32_t h, int32_t w, int32_t c)
{
    return tgrs_kv_row_off(v, n, h) + (size_t)w * (size_t)v->dims[3] + (size_t)c;
}

/* What an int8 line needs besides its bytes (the float line needs nothing). */
typedef struct sm_q sm_q;
/* TFLM's line (sm_line_tflm), set only by the TFLM check: the onnx-numerics entries never reference it. */
typedef void (*sm_tflm_line_fn)(const int8_t *x, int8_t *y, int32_t len, size_t step_in, size_t step_out,
                                const sm_q *q, int32_t m);
struct sm_q {
    const int32_t *table;
    int32_t mult, shift, zo;
    sm_tflm_line_fn tflm; /* NULL: onnx numerics */
};

/* TFLM's int8 softmax of one line (tigris/ops/softmax.py tflm_softmax_lines). */
static void sm_line_tflm(const int8_t *x, int8_t *y, int32_t len, size_t step_in, size_t step_out, const sm_q *q,
                         int32_t m)
{
    int32_t s = 0, e, r, k;
    for (k = 0; k < len; ++k) {
        s = tgrs_wrap_add(s, tgrs_rdbpot(q->table[m - (int32_t)x[(size_t)k * step_in]], 12));
    }
    /* s >= rdbpot(EXP[0], 12) > 0 for a valid table (checked) and s < 2^31, so e + 23 >= 0 */
    r = tgrs_reciprocal_q31(s, 12, &e);
    for (k = 0; k < len; ++k) {
        const int32_t ek = q->table[m - (int32_t)x[(size_t)k * step_in]];
        int32_t v = e + 23 > 31 ? -128 : tgrs_rdbpot(tgrs_srdhm(r, ek), e + 23) - 128;
        y[(size_t)k * step_out] = (int8_t)(v < -128 ? -128 : (v > 127 ? 127 : v));
    }
}

/* One line of `len` elements with strides step_in / step_out; each dtype variant passes its own. */
typedef void (*sm_line_fn)(const void *xv, void *yv, int32_t len, size_t step_in, size_t step_out, const sm_q *q);

static void sm_line_f32(const void *xv, void *yv, int32_t len, size_t step_in, size_t step_out, const sm_q *q)
{
    const float *x = (const float *)xv;
    float *y = (float *)yv;
    float m = x[0];
    float s = 0.0f;
    int32_t k;
    (void)q;
    for (k = 1; k < len; ++k) {
        m = x[(size_t)k * step_in] > m ? x[(size_t)k * step_in] : m;
    }
    for (k = 0; k < len; ++k) {
        float e = expf(x[(size_t)k * step_in] - m);
        y[(size_t)k * step_out] = e;
        s += e;
    }
    for (k = 0; k < len; ++k) {
        y[(size_t)k * step_out] = y[(size_t)k * step_out] / s;
    }
}

static void sm_line_s8(const void *xv, void *yv, int32_t len, size_t step_in, size_t step_out, const sm_q *q)
{
    const int8_t *x = (const int8_t *)xv;
    int8_t *y = (int8_t *)yv;
    int32_t m = x[0];
    int64_t s = 0;
    int64_t den;
    int32_t k;
    for (k = 1; k < len; ++k) {
        m = (int32_t)x[(size_t)k * step_in] > m ? (int32_t)x[(size_t)k * step_in] : m;
    }
    if (q->tflm != NULL) {
        q->tflm(x, y, len, step_in, step_out, q, m);
        return;
    }
    for (k = 0; k < len; ++k) {
        s += q->table[m - (int32_t)x[(size_t)k * step_in]];
    }
    den = s * ((int64_t)1 << (31 - q->shift)); /* s >= E[0] > 0 for the max element */
    for (k = 0; k < len; ++k) {
        int64_t e = q->table[m - (int32_t)x[(size_t)k * step_in]];
        int64_t r = tgrs_div_round_half_even(e * (int64_t)q->mult, den > 0 ? den : 1);
        y[(size_t)k * step_out] = (int8_t)tgrs_clamp64(r + q->zo, -128, 127);
    }
}

/* The TFLM numerics' parameters and table (tgrs_softmax_s8 and tgrs_check_softmax pass it to sm_setup; the
 * _onnx entries pass NULL, so an image whose plan has no TFLM softmax links neither it nor sm_line_tflm). */
typedef int (*sm_tflm_check_fn)(const tgrs_op_ctx *ctx, const tgrs_tview *out, sm_q *q);

static int sm_check_tflm(const tgrs_op_ctx *ctx, const tgrs_tview *out, sm_q *q)
{
    int32_t k;
    /* EXP[0] is exp(0) (2^31 - 1, so every line's sum is positive), no entry is negative, and the line is short
     * enough that the sum (at most 2^19 per element) stays below 2^31. */
    q->table = (const int32_t *)ctx->c[TGRS_C_SOFTMAX_EXP];
    q->tflm = sm_line_tflm;
    if (ctx->clen[TGRS_C_SOFTMAX_EXP] != 256u * 4u || out->dims[ctx->p[TGRS_P_SOFTMAX_AXIS]] > 4095 ||
        (q->table != NULL && q->table[0] != INT32_MAX)) {
        return TGRS_ERR_PARAM;
    }
    for (k = 1; q->table != NULL && k < 256; ++k) { /* values: when visible (not an LZ4 unit at load) */
        if (q->table[k] < 0) {
            return TGRS_ERR_PARAM;
        }
    }
    return TGRS_OK;
}

/* The int8 parameters and table: everything the module doc's bounds rely on. TFLM numerics go to `tflm`, and are
 * TGRS_ERR_UNSUPPORTED without it. */
static int sm_check_s8(const tgrs_op_ctx *ctx, const tgrs_tview *out, sm_q *q, sm_tflm_check_fn tflm)
{
    int32_t k;
    int32_t tmax = 0;
    int32_t axis = ctx->p[TGRS_P_SOFTMAX_AXIS];
    q->mult = ctx->p[TGRS_P_SOFTMAX_MULT];
    q->shift = ctx->p[TGRS_P_SOFTMAX_SHIFT];
    q->zo = out->zero_point;
    q->tflm = NULL;
    if (ctx->p[TGRS_P_SOFTMAX_NUMERICS] == TGRS_NUMERICS_TFLM) {
        return tflm != NULL ? tflm(ctx, out, q) : TGRS_ERR_UNSUPPORTED;
    }
    if (ctx->p[TGRS_P_SOFTMAX_NUMERICS] != TGRS_NUMERICS_ONNX) {
        return TGRS_ERR_PARAM;
    }
    if (ctx->clen[TGRS_C_SOFTMAX_EXP] != 256u * 4u || q->mult < 0 ||
        q->shift > TGRS_SHIFT_MAX || q->shift < -31 || q->zo < -128 || q->zo > 127) {
        return TGRS_ERR_PARAM;
    }
    q->table = (const int32_t *)ctx->c[TGRS_C_SOFTMAX_EXP];
    if (q->table == NULL) {
        return TGRS_OK; /* the loader's check of an LZ4 unit: the table's values are checked when the kernel runs */
    }
    for (k = 0; k < 256; ++k) {
        if (q->table[k] < 0 || q->table[k] > (1 << 20)) {
            return TGRS_ERR_PARAM; /* the numerator bound of the module doc relies on E <= 2^20 */
        }
        tmax = q->table[k] > tmax ? q->table[k] : tmax;
    }
    /* S << (31 - shift) must stay below 2^62, and S <= len * max(E). */
    if (31 - q->shift > 62 || (uint64_t)out->dims[axis] * (uint64_t)tmax >= ((uint64_t)1 << (62 - (31 - q->shift)))) {
        return TGRS_ERR_PARAM;
    }
    return TGRS_OK;
}

/* Every check of the kind; the kernel and its load-time check (tgrs_check_softmax) share it. */
static int sm_setup(const tgrs_op_ctx *ctx, int32_t dt, sm_q *qp, sm_tflm_check_fn tflm)
{
    const tgrs_tview *in = ctx->in[0];
    const tgrs_tview *out = ctx->out;
    int32_t axis = ctx->p[TGRS_P_SOFTMAX_AXIS];
    if (ctx->n_in != 1 || !tgrs_kv_sane(in) || !tgrs_kv_sane(out) || !tgrs_kv_same_dims(in, out)) {
        return TGRS_ERR_SHAPE;
    }
    if (axis < 0 || axis > 3) {
        return TGRS_ERR_PARAM;
    }
    if (in->dtype != out->dtype) {
        return TGRS_ERR_DTYPE;
    }
    if (axis == 1 ? (!tgrs_kv_whole(in) || !tgrs_kv_whole(out))
                  : !tgrs_kv_has_rows(in, out->row0, out->row0 + out->rows)) {
        return TGRS_ERR_TILE;
    }
    if (out->dtype != dt) {
        return TGRS_ERR_DTYPE;
    }
    if (dt == TGRS_DT_S8) {
        int st = sm_check_s8(ctx, out, qp, tflm);
        if (st != TGRS_OK) {
            return st;
        }
    }
    return TGRS_OK;
}

int tgrs_check_softmax(const tgrs_op_ctx *ctx)
{
    sm_q q;
    return sm_setup(ctx, ctx->out->dtype == TGRS_DT_F32 ? TGRS_DT_F32 : TGRS_DT_S8, &q, sm_check_tflm);
}

/* The check of tgrs_kernel_softmax_onnx: an op with TFLM numerics is TGRS_ERR_UNSUPPORTED. */
int tgrs_check_softmax_onnx(const tgrs_op_ctx *ctx)
{
    sm_q q;
    return sm_setup(ctx, ctx->out->dtype == TGRS_DT_F32 ? TGRS_DT_F32 : TGRS_DT_S8, &q, NULL);
}

static int sm_run(const tgrs_op_ctx *ctx, int32_t dt, sm_line_fn line, sm_tflm_check_fn tflm)
{
    const tgrs_tview *in = ctx->in[0];
    tgrs_tview *out = ctx->out;
    int32_t axis = ctx->p[TGRS_P_SOFTMAX_AXIS];
    int32_t cnt[4], idx[4];
    int32_t len;
    size_t step_in, step_out, es;
    sm_q q;
    int st = sm_setup(ctx, dt, &q, tflm);
    if (st != TGRS_OK) {
        return st;
    }
    es = tgrs_dtype_size(dt);
    cnt[0] = out->dims[0];
    cnt[1] = out->rows;
    cnt[2] = out->dims[2];
    cnt[3] = out->dims[3];
    len = out->dims[axis];
    cnt[axis] = 1;
    step_in = axis == 3 ? 1u : axis == 2 ? (size_t)in->dims[3]
              : axis == 1 ? tgrs_kv_row_elems(in) : (size_t)in->rows * tgrs_kv_row_elems(in);
    step_out = axis == 3 ? 1u : axis == 2 ? (size_t)out->dims[3]
               : axis == 1 ? tgrs_kv_row_elems(out) : (size_t)out->rows * tgrs_kv_row_elems(out);
    for (idx[0] = 0; idx[0] < cnt[0]; ++idx[0]) {
        for (idx[1] = 0; idx[1] < cnt[1]; ++idx[1]) {
            for (idx[2] = 0; idx[2] < cnt[2]; ++idx[2]) {
                for (idx[3] = 0; idx[3] < cnt[3]; ++idx[3]) {
                    int32_t h = out->row0 + idx[1];
                    size_t bi = sm_off(in, idx[0], h, idx[2], idx[3]);
                    size_t bo = sm_off(out, idx[0], h, idx[2], idx[3]);
                    line((const char *)in->data + bi * es, (char *)out->data + bo * es, len, step_in, step_out, &q);
                }
            }
        }
    }
    return TGRS_OK;
}

/* The dtype variants (registry.c picks one per op). */
int tgrs_softmax_f32(const tgrs_op_ctx *ctx)
{
    return sm_run(ctx, TGRS_DT_F32, sm_line_f32, NULL);
}

int tgrs_softmax_s8(const tgrs_op_ctx *ctx)
{
    return sm_run(ctx, TGRS_DT_S8, sm_line_s8, sm_check_tflm);
}

/* Without the TFLM numerics: such an op is TGRS_ERR_UNSUPPORTED (tgrs_check_softmax_onnx refuses it at load). */
int tgrs_softmax_s8_onnx(const tgrs_op_ctx *ctx)
{
    return sm_run(ctx, TGRS_DT_S8, sm_line_s8, NULL);
}
