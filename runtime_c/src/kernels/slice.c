/*
 * slice.c - Slice / constant-index Gather on rank-4 views, any 1/2/4-byte element type, band-aware along the rows.
 *
 * Defined by tigris/ops/slice.py: output element o_j on view axis j reads input element START_j + o_j * STEP_j,
 * except on axis GAXIS (-1: none), where it reads IDX[o_j] (int32 const, one entry per output element of that
 * axis). int8: y = clamp(zo + requant_even(q - zi, MULT, SHIFT), -128, 127), a byte copy when MULT = 2^30,
 * SHIFT = 1 and zi = zo. A run of channels with step 1 is copied as one block per pixel.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kview.h"
#include "requant.h"
#include "tgrs_op.h"

/* Input index of output index o on view axis j. */
static int32_t src_index(const tgrs_op_ctx *ctx, int32_t j, int32_t o)
{
    if (j == ctx->p[TGRS_P_SLICE_GAXIS]) {
        int32_t v;
        memcpy(&v, (const char *)ctx->c[TGRS_C_SLICE_IDX] + (size_t)o * 4u, 4u);
        return v;
    }
    return ctx->p[TGRS_P_SLICE_START0 + j] + o * ctx->p[TGRS_P_SLICE_STEP0 + j];
}

/* 1 when the byte copy is exact (float, or an int8 encoding the output shares). */
static int is_identity(const tgrs_op_ctx *ctx)
{
    return ctx->out->dtype != TGRS_DT_S8 ||
           (ctx->p[TGRS_P_SLICE_MULT] == (1 << 30) && ctx->p[TGRS_P_SLICE_SHIFT] == 1 &&
            ctx->in[0]->zero_point == ctx->out->zero_point);
}

/* The kind's check: the kernel and the loader (check.c, once per op and tile) call it. */
int tgrs_check_slice(const tgrs_op_ctx *ctx)
{
    const tgrs_tview *in = ctx->in[0];
    const tgrs_tview *out = ctx->out;
    int32_t gaxis = ctx->p[TGRS_P_SLICE_GAXIS];
    int32_t j, o, lo, hi;
    if (ctx->n_in != 1 || !tgrs_kv_sane(in) || !tgrs_kv_sane(out)) {
        return TGRS_ERR_SHAPE;
    }
    if (in->dtype != out->dtype || tgrs_dtype_size(out->dtype) == 0u) {
        return TGRS_ERR_DTYPE;
    }
    if (gaxis < -1 || gaxis > 3) {
        return TGRS_ERR_PARAM;
    }
    if (gaxis >= 0 && ctx->clen[TGRS_C_SLICE_IDX] != (uint32_t)out->dims[gaxis] * 4u) {
        return TGRS_ERR_PARAM;
    }
    for (j = 0; j < 4; ++j) {
        if (j == gaxis) {
            if (ctx->c[TGRS_C_SLICE_IDX] != NULL) {
                for (o = 0; o < out->dims[j]; ++o) {
                    int32_t v = src_index(ctx, j, o);
                    if (v < 0 || v >= in->dims[j]) {
                        return TGRS_ERR_PARAM;
                    }
                }
            }
        } else {
            int64_t s = ctx->p[TGRS_P_SLICE_START0 + j];
            int64_t last = s + (int64_t)(out->dims[j] - 1) * (int64_t)ctx->p[TGRS_P_SLICE_STEP0 + j];
            if (ctx->p[TGRS_P_SLICE_STEP0 + j] == 0 || s < 0 || s >= in->dims[j] || last < 0 ||
                last >= in->dims[j]) {
                return TGRS_ERR_PARAM;
            }
        }
    }
    if (out->dtype == TGRS_DT_S8 &&
        (ctx->p[TGRS_P_SLICE_MULT] < 0 || ctx->p[TGRS_P_SLICE_SHIFT] > TGRS_SHIFT_MAX || in->zero_point < -128 ||
         in->zero_point > 127 || out->zero_point < -128 || out->zero_point > 127)) {
        return TGRS_ERR_PARAM;
    }
    /* the input rows the output band reads (their values are known unless IDX is not yet decoded) */
    if (out->rows > 0 && (gaxis != 1 || ctx->c[TGRS_C_SLICE_IDX] != NULL)) {
        lo = hi = src_index(ctx, 1, out->row0);
        for (o = out->row0 + 1; o < out->row0 + out->rows; ++o) {
            int32_t v = src_index(ctx, 1, o);
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
        if (!tgrs_kv_has_rows(in, lo, hi + 1)) {
            return TGRS_ERR_TILE;
        }
    }
    return TGRS_OK;
}

int tgrs_kernel_slice(const tgrs_op_ctx *ctx)
{
    const tgrs_tview *in = ctx->in[0];
    tgrs_tview *out = ctx->out;
    size_t es = tgrs_dtype_size(out->dtype);
    int32_t n, h, w, c, ci;
    int copy, run;
    /* a context the loader checked, constants included (tgrs_op_ctx.proven), is not checked again on every tile */
    int st = (ctx->proven & TGRS_PROVEN_CONSTS) != 0u ? TGRS_OK : tgrs_check_slice(ctx);
    if (st != TGRS_OK) {
        return st;
    }
    copy = is_identity(ctx);
    /* channels with step 1 (no channel Gather) are one contiguous block of the input pixel */
    run = ctx->p[TGRS_P_SLICE_GAXIS] != 3 && ctx->p[TGRS_P_SLICE_STEP3] == 1;
    for (n = 0; n < out->dims[0]; ++n) {
        int32_t sn = src_index(ctx, 0, n);
        for (h = out->row0; h < out->row0 + out->rows; ++h) {
            int32_t sh = src_index(ctx, 1, h);
            for (w = 0; w < out->dims[2]; ++w) {
                const char *src = (const char *)in->data +
                                  (tgrs_kv_row_off(in, sn, sh) + (size_t)src_index(ctx, 2, w) * (size_t)in->dims[3]) * es;
                char *dst = (char *)out->data + (tgrs_kv_row_off(out, n, h) + (size_t)w * (size_t)out->dims[3]) * es;
                if (run && copy) {
                    memcpy(dst, src + (size_t)ctx->p[TGRS_P_SLICE_START3] * es, (size_t)out->dims[3] * es);
                    continue;
                }
                for (c = 0; c < out->dims[3]; ++c) {
                    ci = src_index(ctx, 3, c);
                    if (copy) {
                        memcpy(dst + (size_t)c * es, src + (size_t)ci * es, es);
                    } else {
                        ((int8_t *)dst)[c] = tgrs_requant_even_s8((int32_t)((const int8_t *)src)[ci] - in->zero_point,
                                                                  ctx->p[TGRS_P_SLICE_MULT], ctx->p[TGRS_P_SLICE_SHIFT],
                                                                  out->zero_point, -128, 127);
                    }
                }
            }
        }
    }
    return TGRS_OK;
}
