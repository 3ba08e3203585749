/*
 * gap_accum.c - GlobalAveragePool accumulated over the tiles of a unit (unit flag ACCUM, docs/format.md).
 *
 * The executor calls, on the unit's last op, tgrs_gap_begin before the first tile's band is added, tgrs_gap_accumulate
 * every tile with that tile's input band, and tgrs_gap_finish after the last tile's band (before the unit spills):
 * one call per tile of the GAP entry of its kernel table with ctx->phase set, which tgrs_kernel_gap hands to
 * tgrs_gap_phases (so firmware whose table has no GAP links none of this file).
 * The arithmetic is tigris/ops/pool.py's gap_begin / gap_accumulate / gap_finish:
 *   float: per channel, pixels added one at a time in row-major order from 0.0f into the output buffer itself
 *          (float32[N*C], live across the tiles); finish divides by (float)(H*W). Bands are consecutive and in
 *          order, so the sum is the untiled kernel's bit for bit.
 *   int8:  exact int32 sums of the codes in the op's scratch (int32[N*C], 4*N*C bytes, planned across the tiles);
 *          finish writes zp_out + round((sum - H*W*zp_in) * mult / (H*W << (31 - shift))), halves to even, clamped
 *          (TFLM_AVG 1: the raw sum / (H*W), halves away from zero, clamped; NUMERICS 1: TFLM's MEAN).
 * Nothing is kept between calls except in those two planned buffers: no globals, no allocation.
 */
#include <stddef.h>
#include <stdint.h>

#include "kview.h"
#include "requant.h"
#include "tgrs_op.h"
#include "variants.h"

/* -DTGRS_INT8_ONLY (see registry.c) refuses float accumulation, and the constant-false branches drop its code. */
#ifdef TGRS_INT8_ONLY
#define GAP_F32 0
#else
#define GAP_F32 1
#endif

/* Checks shared by the three phases; on success *hw and *nc are H*W and N*C of the input. */
static int gap_acc_check(const tgrs_op_ctx *ctx, size_t *hw, size_t *nc)
{
    const tgrs_tview *in = ctx->in[0];
    const tgrs_tview *out = ctx->out;
    if (ctx->n_in != 1 || !tgrs_kv_sane(in) || !tgrs_kv_sane(out)) { /* tgrs_kv_sane(NULL) is 0 */
        return TGRS_ERR_SHAPE;
    }
    if (in->dims[0] != out->dims[0] || in->dims[3] != out->dims[3] || out->dims[1] != 1 || out->dims[2] != 1) {
        return TGRS_ERR_SHAPE;
    }
    if (!tgrs_kv_whole(out)) {
        return TGRS_ERR_TILE; /* the accumulator is the whole output in every tile */
    }
    /* H*W of the whole image: in a COLS unit the view holds a band of columns and acc_w states the full width */
    if (ctx->acc_w != 0 && ctx->acc_w < in->dims[2]) {
        return TGRS_ERR_SHAPE;
    }
    *hw = (size_t)in->dims[1] * (size_t)(ctx->acc_w != 0 ? ctx->acc_w : in->dims[2]);
    *nc = (size_t)in->dims[0] * (size_t)in->dims[3];
    if (in->dtype == TGRS_DT_F32 && out->dtype == TGRS_DT_F32) {
        return GAP_F32 ? TGRS_OK : TGRS_ERR_UNSUPPORTED;
    }
    if (in->dtype != TGRS_DT_S8 || out->dtype != TGRS_DT_S8) {
        return TGRS_ERR_DTYPE;
    }
    {
        int32_t shift = ctx->p[TGRS_P_GAP_SHIFT];
        int32_t nm = ctx->p[TGRS_P_GAP_NUMERICS];
        if (shift > TGRS_SHIFT_MAX || ctx->p[TGRS_P_GAP_MULT] < 0 ||
            !tgrs_s8_bounds_ok(ctx->p[TGRS_P_GAP_LO], ctx->p[TGRS_P_GAP_HI], out->zero_point) ||
            *hw > ((size_t)1 << 23) || (nm != TGRS_NUMERICS_ONNX && nm != TGRS_NUMERICS_TFLM) ||
            (nm == TGRS_NUMERICS_ONNX && ((int64_t)31 - shift) + tgrs_bitlen((uint32_t)*hw) > 62) ||
            !tgrs_gap_tflm_avg_ok(ctx)) {
            return TGRS_ERR_PARAM;
        }
    }
    /* nc >= 1, so a large enough size means a scratch the executor placed in the arena (TGRS_ALIGN-aligned); the
       loader's check has the size only */
    if ((size_t)ctx->scratch_size / 4u < *nc || (ctx->scratch != NULL && ((uintptr_t)ctx->scratch % 4u) != 0u)) {
        return TGRS_ERR_SCRATCH;
    }
    return TGRS_OK;
}

int tgrs_gap_begin(const tgrs_op_ctx *ctx)
{
    size_t hw;
    size_t nc;
    size_t i;
    int rc = gap_acc_check(ctx, &hw, &nc);
    if (rc != TGRS_OK) {
        return rc;
    }
    if (GAP_F32 && ctx->out->dtype == TGRS_DT_F32) {
        float *y = (float *)ctx->out->data;
        for (i = 0; i < nc; ++i) {
            y[i] = 0.0f;
        }
    } else {
        int32_t *acc = (int32_t *)ctx->scratch;
        for (i = 0; i < nc; ++i) {
            acc[i] = 0;
        }
    }
    return TGRS_OK;
}

int tgrs_gap_accumulate(const tgrs_op_ctx *ctx)
{
    const tgrs_tview *in = ctx->in[0];
    size_t hw;
    size_t nc;
    size_t C;
    size_t px;
    int32_t n;
    size_t i;
    size_t c;
    int rc = gap_acc_check(ctx, &hw, &nc);
    if (rc != TGRS_OK) {
        return rc;
    }
    C = (size_t)in->dims[3];
    px = (size_t)in->rows * (size_t)in->dims[2]; /* pixels in the band, per image */
    if (px == 0u) {
        return TGRS_OK; /* an empty band adds nothing (and its data may be NULL) */
    }
    for (n = 0; n < in->dims[0]; ++n) {
        if (GAP_F32 && ctx->out->dtype == TGRS_DT_F32) {
            const float *x = (const float *)in->data + (size_t)n * px * C;
            float *y = (float *)ctx->out->data + (size_t)n * C;
            for (i = 0; i < px; ++i) {
                for (c = 0; c < C; ++c) {
                    y[c] += x[i * C + c];
                }
            }
        } else {
            const int8_t *x = (const int8_t *)in->data + (size_t)n * px * C;
            int32_t *acc = (int32_t *)ctx->scratch + (size_t)n * C;
            for (i = 0; i < px; ++i) {
                for (c = 0; c < C; ++c) {
                    acc[c] += (int32_t)x[i * C + c]; /* |sum| <= 128 * 2^23: no overflow (checked hw) */
                }
            }
        }
    }
    return TGRS_OK;
}

int tgrs_gap_finish(const tgrs_op_ctx *ctx)
{
    const tgrs_tview *in = ctx->in[0];
    tgrs_tview *out = ctx->out;
    size_t hw;
    size_t nc;
    size_t i;
    int rc = gap_acc_check(ctx, &hw, &nc);
    if (rc != TGRS_OK) {
        return rc;
    }
    if (GAP_F32 && out->dtype == TGRS_DT_F32) {
        float *y = (float *)out->data;
        for (i = 0; i < nc; ++i) {
            y[i] = y[i] / (float)hw;
        }
    } else {
        const int32_t *acc = (const int32_t *)ctx->scratch;
        int8_t *y = (int8_t *)out->data;
        int32_t mult = ctx->p[TGRS_P_GAP_MULT];
        int32_t shift = ctx->p[TGRS_P_GAP_SHIFT];
        int32_t lo = ctx->p[TGRS_P_GAP_LO];
        int32_t hi = ctx->p[TGRS_P_GAP_HI];
        if (ctx->p[TGRS_P_GAP_TFLM_AVG] != 0) {
            /* TFLM's AVERAGE_POOL_2D over the whole image: the raw codes' sum, halves away from zero */
            for (i = 0; i < nc; ++i) {
                y[i] = tgrs_gap_tflm_avg(acc[i], (int32_t)hw, lo, hi);
            }
        } else if (ctx->p[TGRS_P_GAP_NUMERICS] == TGRS_NUMERICS_TFLM) {
            /* TFLM's MEAN: 1/(H*W) is already in (mult, shift); |sum| <= 255 * 2^23 fits in int32 */
            for (i = 0; i < nc; ++i) {
                int32_t sum = (int32_t)((int64_t)acc[i] - (int64_t)hw * in->zero_point);
                y[i] = tgrs_requant_nm_s8(sum, mult, shift, out->zero_point, lo, hi, TGRS_RQ_TFLM);
            }
        } else {
            int64_t den = (int64_t)hw * ((int64_t)1 << (31 - shift));
            for (i = 0; i < nc; ++i) {
                int64_t sum = (int64_t)acc[i] - (int64_t)hw * in->zero_point;
                int64_t q = tgrs_div_round_half_even(sum * (int64_t)mult, den) + out->zero_point;
                y[i] = (int8_t)(q < lo ? lo : (q > hi ? hi : q));
            }
        }
    }
    return TGRS_OK;
}

int tgrs_gap_phases(const tgrs_op_ctx *ctx)
{
    int rc = (ctx->phase & TGRS_PHASE_BEGIN) != 0u ? tgrs_gap_begin(ctx) : TGRS_OK;
    if (rc == TGRS_OK && (ctx->phase & TGRS_PHASE_ACCUMULATE) != 0u) {
        rc = tgrs_gap_accumulate(ctx);
    }
    if (rc == TGRS_OK && (ctx->phase & TGRS_PHASE_FINISH) != 0u) {
        rc = tgrs_gap_finish(ctx);
    }
    return rc;
}

int tgrs_gap_accum_check(const tgrs_op_ctx *ctx)
{
    size_t hw;
    size_t nc;
    return gap_acc_check(ctx, &hw, &nc);
}
