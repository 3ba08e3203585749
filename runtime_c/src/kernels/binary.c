/*
 * binary.c - Add (Sub) and Mul with broadcasting on NHWC views, float32 and int8, band-aware.
 *
 * The arithmetic is defined by tigris/ops/binary.py and docs/numerics.md ("Add, Sub, Mul"):
 *   add int8: acc = (qa - za) * (MA << LA) + (qb - zb) * (MB << LB)   exact int64, |acc| < 2^61
 *             out = clamp(zo + round(acc / 2^RS), LO, HI)              one rounding, halves away from zero
 *   mul int8: out = clamp(zo + requant((qa - za) * (qb - zb), MULT, SHIFT), LO, HI)
 *   float   : a + b, a - b (SUB) or a * b, clamped to [F_LO, F_HI]
 * Operand X has dims X_D0..3 (params), each the output's or 1; a 1 is broadcast with a zero stride. An operand with
 * the output's row count (> 1) is a band read at the output's rows; one with a single row is read at row 0.
 * The constant operand (K_POS 0 = A, 1 = B, -1 none) is const slot K in the same dims.
 */
#include <stddef.h>
#include <stdint.h>

#include "kview.h"
#include "requant.h"
#include "tgrs_op.h"

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
        if (ctx->c[TGRS_C_ADD_K] == NULL || ctx->clen[TGRS_C_ADD_K] != n * esize) {
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

static int binary_run(const tgrs_op_ctx *ctx, int is_mul)
{
    const int32_t *p = ctx->p;
    tgrs_tview *out = ctx->out;
    operand a, b;
    int32_t n, h, w, c, C;
    int is_f32;
    size_t esize;
    int st;
    int32_t kpos = p[TGRS_P_ADD_K_POS];
    if (!tgrs_kv_sane(out) || kpos < -1 || kpos > 1 || ctx->n_in != (kpos == -1 ? 2 : 1)) {
        return TGRS_ERR_SHAPE;
    }
    is_f32 = out->dtype == TGRS_DT_F32;
    if (!is_f32 && out->dtype != TGRS_DT_S8) {
        return TGRS_ERR_DTYPE;
    }
    esize = is_f32 ? 4u : 1u;
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
    C = out->dims[3];
    if (is_f32) {
        float lo = tgrs_p_f32(ctx, TGRS_P_ADD_F_LO);
        float hi = tgrs_p_f32(ctx, TGRS_P_ADD_F_HI);
        int sub = p[TGRS_P_ADD_SUB] != 0;
        for (n = 0; n < out->dims[0]; ++n) {
            for (h = out->row0; h < out->row0 + out->rows; ++h) {
                for (w = 0; w < out->dims[2]; ++w) {
                    const float *x = (const float *)a.data + operand_off(&a, n, h, w);
                    const float *z = (const float *)b.data + operand_off(&b, n, h, w);
                    float *y = (float *)out->data + tgrs_kv_row_off(out, n, h) + (size_t)w * (size_t)C;
                    for (c = 0; c < C; ++c) {
                        float xa = x[(size_t)c * a.s_c];
                        float xb = z[(size_t)c * b.s_c];
                        float r = is_mul ? xa * xb : (sub ? xa - xb : xa + xb);
                        r = r < lo ? lo : r;
                        y[c] = r > hi ? hi : r;
                    }
                }
            }
        }
        return TGRS_OK;
    }
    {
        int32_t lo = p[TGRS_P_ADD_LO];
        int32_t hi = p[TGRS_P_ADD_HI];
        int32_t zo = out->zero_point;
        int64_t ma = 0, mb = 0;
        int32_t rs = p[TGRS_P_ADD_RS];
        int32_t mult = p[TGRS_P_ADD_MULT];
        int32_t shift = p[TGRS_P_ADD_SHIFT];
        if (!tgrs_s8_bounds_ok(lo, hi, zo) || a.zp < -128 || a.zp > 127 || b.zp < -128 || b.zp > 127) {
            return TGRS_ERR_PARAM;
        }
        if (is_mul) {
            if (shift > TGRS_SHIFT_MAX || mult < 0) {
                return TGRS_ERR_PARAM;
            }
        } else {
            int32_t la = p[TGRS_P_ADD_LA];
            int32_t lb = p[TGRS_P_ADD_LB];
            if (la < 0 || la > 21 || lb < 0 || lb > 21 || rs < 0) {
                return TGRS_ERR_PARAM;
            }
            ma = (int64_t)p[TGRS_P_ADD_MA] * ((int64_t)1 << la);
            mb = (int64_t)p[TGRS_P_ADD_MB] * ((int64_t)1 << lb);
        }
        for (n = 0; n < out->dims[0]; ++n) {
            for (h = out->row0; h < out->row0 + out->rows; ++h) {
                for (w = 0; w < out->dims[2]; ++w) {
                    const int8_t *x = (const int8_t *)a.data + operand_off(&a, n, h, w);
                    const int8_t *z = (const int8_t *)b.data + operand_off(&b, n, h, w);
                    int8_t *y = (int8_t *)out->data + tgrs_kv_row_off(out, n, h) + (size_t)w * (size_t)C;
                    for (c = 0; c < C; ++c) {
                        int32_t da = (int32_t)x[(size_t)c * a.s_c] - a.zp;
                        int32_t db = (int32_t)z[(size_t)c * b.s_c] - b.zp;
                        if (is_mul) {
                            y[c] = tgrs_requant_s8(da * db, mult, shift, zo, lo, hi);
                        } else {
                            int64_t acc = (int64_t)da * ma + (int64_t)db * mb;
                            y[c] = (int8_t)tgrs_clamp64(tgrs_rounding_rshift64(acc, rs) + zo, lo, hi);
                        }
                    }
                }
            }
        }
    }
    return TGRS_OK;
}

/* add and mul share one PARAMS/CONSTS tuple in Python, so TGRS_P_ADD_* indices describe both. */
int tgrs_kernel_add(const tgrs_op_ctx *ctx)
{
    return binary_run(ctx, 0);
}

int tgrs_kernel_mul(const tgrs_op_ctx *ctx)
{
    return binary_run(ctx, 1);
}
