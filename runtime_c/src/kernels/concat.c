/*
 * concat.c - Concat of up to TGRS_MAX_INPUTS views along view axis AXIS (0..3), float32 and int8, band-aware.
 *
 * Defined by tigris/ops/concat.py and docs/numerics.md ("Concat"):
 *   int8: y = clamp(zo + requant_even(q - zi, M_i, S_i), -128, 127) for input i (halves to even); a byte copy when
 *         M_i = 2^30, S_i = 1
 *         and zi = zo (the identity, exactly)
 *   float: a copy
 * Along H, input i covers output rows [off_i, off_i + H_i); elsewhere every input holds the output band's rows.
 * A plan may place the output over its first input when that input is the output's prefix (a join in place,
 * docs/memory-planning.md): a segment whose source is its destination is an identity copy and is skipped.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kview.h"
#include "requant.h"
#include "tgrs_op.h"

/* Copy `count` elements of input i to the output, requantizing int8 when the input's encoding differs. */
static void seg_copy(void *dst, const void *src, size_t count, int is_f32, int32_t m, int32_t s, int32_t zi,
                     int32_t zo)
{
    size_t k;
    int same = m == (1 << 30) && s == 1 && zi == zo;
    if (dst == src && (is_f32 || same)) {
        return; /* a prefix already in place: the plan put the output over this input (a join in place) */
    }
    if (is_f32) {
        memcpy(dst, src, count * 4u);
        return;
    }
    if (same) {
        memcpy(dst, src, count);
        return;
    }
    for (k = 0; k < count; ++k) {
        ((int8_t *)dst)[k] = tgrs_requant_even_s8((int32_t)((const int8_t *)src)[k] - zi, m, s, zo, -128, 127);
    }
}

/* Every check of the kind; off[i] is where input i starts along the axis, mult/shift its requantization. The kernel
 * and its load-time check (tgrs_check_concat) share it. */
static int concat_setup(const tgrs_op_ctx *ctx, int32_t *off, int32_t *mult, int32_t *shift)
{
    const int32_t *p = ctx->p;
    const tgrs_tview *out = ctx->out;
    int32_t axis = p[TGRS_P_CONCAT_AXIS];
    int32_t i, d;
    int is_f32;
    if (!tgrs_kv_sane(out) || ctx->n_in < 1 || ctx->n_in > TGRS_MAX_INPUTS) {
        return TGRS_ERR_SHAPE;
    }
    if (axis < 0 || axis > 3) {
        return TGRS_ERR_PARAM;
    }
    is_f32 = out->dtype == TGRS_DT_F32;
    if (!is_f32 && out->dtype != TGRS_DT_S8) {
        return TGRS_ERR_DTYPE;
    }
    off[0] = 0;
    for (i = 0; i < ctx->n_in; ++i) {
        const tgrs_tview *v = ctx->in[i];
        if (!tgrs_kv_sane(v)) {
            return TGRS_ERR_SHAPE;
        }
        for (d = 0; d < 4; ++d) {
            if (d != axis && v->dims[d] != out->dims[d]) {
                return TGRS_ERR_SHAPE;
            }
        }
        if (v->dtype != out->dtype) {
            return TGRS_ERR_DTYPE;
        }
        off[i + 1] = off[i] + v->dims[axis];
        mult[i] = p[TGRS_P_CONCAT_M0 + i];
        shift[i] = p[TGRS_P_CONCAT_S0 + i];
        if (!is_f32 && (mult[i] < 0 || shift[i] > TGRS_SHIFT_MAX || v->zero_point < -128 || v->zero_point > 127)) {
            return TGRS_ERR_PARAM;
        }
        if (axis == 1) {
            int32_t a = out->row0 > off[i] ? out->row0 : off[i];
            int32_t b = out->row0 + out->rows < off[i + 1] ? out->row0 + out->rows : off[i + 1];
            if (!tgrs_kv_has_rows(v, a - off[i], b - off[i])) {
                return TGRS_ERR_TILE;
            }
        } else if (!tgrs_kv_has_rows(v, out->row0, out->row0 + out->rows)) {
            return TGRS_ERR_TILE;
        }
    }
    if (off[ctx->n_in] != out->dims[axis]) {
        return TGRS_ERR_SHAPE;
    }
    if (!is_f32 && (out->zero_point < -128 || out->zero_point > 127)) {
        return TGRS_ERR_PARAM;
    }
    return TGRS_OK;
}

int tgrs_check_concat(const tgrs_op_ctx *ctx)
{
    int32_t off[TGRS_MAX_INPUTS + 1];
    int32_t mult[TGRS_MAX_INPUTS], shift[TGRS_MAX_INPUTS];
    return concat_setup(ctx, off, mult, shift);
}

int tgrs_kernel_concat(const tgrs_op_ctx *ctx)
{
    tgrs_tview *out = ctx->out;
    int32_t axis = ctx->p[TGRS_P_CONCAT_AXIS];
    int32_t off[TGRS_MAX_INPUTS + 1];
    int32_t mult[TGRS_MAX_INPUTS], shift[TGRS_MAX_INPUTS];
    int32_t i, n, h, w;
    int is_f32 = out->dtype == TGRS_DT_F32;
    size_t es = is_f32 ? 4u : 1u;
    int st = concat_setup(ctx, off, mult, shift);
    if (st != TGRS_OK) {
        return st;
    }
    for (n = 0; n < out->dims[0]; ++n) {
        for (h = out->row0; h < out->row0 + out->rows; ++h) {
            char *yrow = (char *)out->data + tgrs_kv_row_off(out, n, h) * es;
            size_t row_elems = tgrs_kv_row_elems(out);
            if (axis <= 1) {
                /* the whole row comes from the input holding batch n (axis 0) or row h (axis 1) */
                int32_t key = axis == 0 ? n : h;
                const tgrs_tview *v;
                for (i = 0; i < ctx->n_in - 1 && key >= off[i + 1]; ++i) {
                }
                v = ctx->in[i];
                seg_copy(yrow,
                         (const char *)v->data + tgrs_kv_row_off(v, axis == 0 ? n - off[i] : n,
                                                                 axis == 1 ? h - off[i] : h) * es,
                         row_elems, is_f32, mult[i], shift[i], v->zero_point, out->zero_point);
            } else if (axis == 2) {
                for (i = 0; i < ctx->n_in; ++i) {
                    const tgrs_tview *v = ctx->in[i];
                    seg_copy(yrow + (size_t)off[i] * (size_t)out->dims[3] * es,
                             (const char *)v->data + tgrs_kv_row_off(v, n, h) * es, tgrs_kv_row_elems(v), is_f32,
                             mult[i], shift[i], v->zero_point, out->zero_point);
                }
            } else {
                for (w = 0; w < out->dims[2]; ++w) {
                    for (i = 0; i < ctx->n_in; ++i) {
                        const tgrs_tview *v = ctx->in[i];
                        size_t ci = (size_t)v->dims[3];
                        seg_copy(yrow + ((size_t)w * (size_t)out->dims[3] + (size_t)off[i]) * es,
                                 (const char *)v->data + (tgrs_kv_row_off(v, n, h) + (size_t)w * ci) * es, ci,
                                 is_f32, mult[i], shift[i], v->zero_point, out->zero_point);
                    }
                }
            }
        }
    }
    return TGRS_OK;
}
