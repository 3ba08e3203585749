/*
 * variants.h - the dtype variants of the kernel kinds that have more than one, named tgrs_<kind>_<dtype>.
 *
 * Each variant checks its own dtypes (TGRS_ERR_DTYPE otherwise) and everything else its kind's entry point always
 * checked; registry.c is the only caller. Keeping every dtype in its own function is what lets a build leave a dtype
 * out: a variant nothing references is dropped by --gc-sections (registry.c, TGRS_INT8_ONLY).
 */
#ifndef TGRS_VARIANTS_H
#define TGRS_VARIANTS_H

#include "tgrs_op.h"

int tgrs_conv_f32(const tgrs_op_ctx *ctx);
int tgrs_conv_s8(const tgrs_op_ctx *ctx);
int tgrs_conv_s8_sym(const tgrs_op_ctx *ctx); /* without the weight-zero-point path */
int tgrs_dwconv_f32(const tgrs_op_ctx *ctx);
int tgrs_dwconv_s8(const tgrs_op_ctx *ctx);
int tgrs_dwconv_s8_sym(const tgrs_op_ctx *ctx); /* without the weight-zero-point path */
int tgrs_fc_f32(const tgrs_op_ctx *ctx);
int tgrs_fc_s8(const tgrs_op_ctx *ctx);
int tgrs_fc_s8_sym(const tgrs_op_ctx *ctx); /* without the weight-zero-point path */
int tgrs_maxpool_f32(const tgrs_op_ctx *ctx);
int tgrs_maxpool_s8(const tgrs_op_ctx *ctx);
int tgrs_avgpool_f32(const tgrs_op_ctx *ctx);
int tgrs_avgpool_s8(const tgrs_op_ctx *ctx);
int tgrs_gap_f32(const tgrs_op_ctx *ctx);
int tgrs_gap_s8(const tgrs_op_ctx *ctx);
/* TGRS_P_GAP_TFLM_AVG (TFLM's AVERAGE_POOL_2D over the whole image as a GAP) is 0 or 1, and 1 only with the
 * tflm numerics and the input's zero point on the output (one encoding): both gap variants check it. */
static inline int tgrs_gap_tflm_avg_ok(const tgrs_op_ctx *ctx)
{
    int32_t t = ctx->p[TGRS_P_GAP_TFLM_AVG];
    return t == 0 || (t == 1 && ctx->p[TGRS_P_GAP_NUMERICS] == TGRS_NUMERICS_TFLM &&
                      ctx->in[0]->zero_point == ctx->out->zero_point);
}

/* That average of a raw-code sum s over hw pixels (|s| <= 128 * 2^23): C's truncating division of s +- hw/2,
 * clamped to [lo, hi]. */
static inline int8_t tgrs_gap_tflm_avg(int32_t s, int32_t hw, int32_t lo, int32_t hi)
{
    int32_t q = s > 0 ? (s + hw / 2) / hw : (s - hw / 2) / hw;
    return (int8_t)(q < lo ? lo : (q > hi ? hi : q));
}

/* -DTGRS_NO_ACCUM (no ACCUM unit in the firmware's plans; the loader refuses one, tgrs_internal.h): the GAP entry and
 * check never reach the accumulating phases, so --gc-sections drops gap_accum.c. */
#if defined(TGRS_NO_ACCUM)
#define TGRS_GAP_ACCUM 0
#else
#define TGRS_GAP_ACCUM 1
#endif
/* -DTGRS_NO_COLS (no COLS unit in the firmware's plans, and no int8 conv band of fewer than CONV_MR output pixels:
 * a column band, or a row band of a 1-D or narrow image, which the generated file says): conv.c's conv_s8_narrow
 * folds away (about 0.8 KiB on a Cortex-M4F at -Os) and tgrs_conv_scratch_size asks for CONV_MR patches again,
 * which the loader then proves of every int8 conv. */
#if defined(TGRS_NO_COLS)
#define TGRS_CONV_NARROW 0
#else
#define TGRS_CONV_NARROW 1
#endif
/* -DTGRS_NO_ACC (no int8 op of the firmware's plans runs as input-channel groups: no convacc, gemmacc, accadd or
 * requantize op, which the generated file says): every entry point of acc.c is TGRS_ERR_UNSUPPORTED, so a firmware
 * that links every kind (tgrs_load's full check table) drops the family's code and the loader refuses such a plan. */
#if defined(TGRS_NO_ACC)
#define TGRS_ACC 0
#else
#define TGRS_ACC 1
#endif
int tgrs_add_f32(const tgrs_op_ctx *ctx);
int tgrs_add_s8(const tgrs_op_ctx *ctx);
int tgrs_mul_f32(const tgrs_op_ctx *ctx);
int tgrs_mul_s8(const tgrs_op_ctx *ctx);
int tgrs_softmax_f32(const tgrs_op_ctx *ctx);
int tgrs_softmax_s8(const tgrs_op_ctx *ctx);
int tgrs_softmax_s8_onnx(const tgrs_op_ctx *ctx); /* without the TFLM numerics */
int tgrs_gap_s8_onnx(const tgrs_op_ctx *ctx);     /* likewise */

#endif /* TGRS_VARIANTS_H */
