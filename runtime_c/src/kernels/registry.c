/*
 * registry.c - the per-dtype dispatch of every kind that has dtype variants (variants.h), in one place.
 *
 * tgrs_kernel_<kind> (tgrs_op.h) picks the float32 variant when the output is float32 and the int8 variant
 * otherwise; the variant checks the rest of its dtypes. Building with -DTGRS_INT8_ONLY selects, here and nowhere
 * else, a registry without float entries: float ops then fail with TGRS_ERR_UNSUPPORTED, nothing references the
 * float variants, and --gc-sections drops them (and expf, so no libm). The other kinds have one entry point for
 * every dtype and live in their own files: quantize/dequantize are the int8 boundary and stay in any build.
 */
#include <stddef.h>

#include "kcheck.h"
#include "tgrs_op.h"
#include "variants.h"

#ifdef TGRS_INT8_ONLY
#define TGRS_F32_VARIANT(fn) NULL
#else
#define TGRS_F32_VARIANT(fn) (fn)
#endif

int tgrs_check_f32_weights(tgrs_op_ctx *wide, const tgrs_op_ctx *ctx, int slot, int32_t wf16)
{
#ifdef TGRS_INT8_ONLY
    (void)wide;
    (void)ctx;
    (void)slot;
    (void)wf16;
    return TGRS_ERR_UNSUPPORTED;
#else
    return tgrs_f16_view(wide, ctx, slot, wf16);
#endif
}

/* The two variants of one kind, by the output dtype; a missing variant is an unsupported op, not a crash. */
static int tgrs_by_dtype(const tgrs_op_ctx *ctx, tgrs_kernel_fn s8, tgrs_kernel_fn f32)
{
    tgrs_kernel_fn fn;
    if (ctx->out == NULL) {
        return TGRS_ERR_SHAPE;
    }
    fn = ctx->out->dtype == TGRS_DT_F32 ? f32 : s8;
    return fn != NULL ? fn(ctx) : TGRS_ERR_UNSUPPORTED;
}

int tgrs_kernel_conv(const tgrs_op_ctx *ctx)
{
    return tgrs_by_dtype(ctx, tgrs_conv_s8, TGRS_F32_VARIANT(tgrs_conv_f32));
}

int tgrs_kernel_conv_sym(const tgrs_op_ctx *ctx)
{
    return tgrs_by_dtype(ctx, tgrs_conv_s8_sym, TGRS_F32_VARIANT(tgrs_conv_f32));
}

int tgrs_kernel_dwconv(const tgrs_op_ctx *ctx)
{
    return tgrs_by_dtype(ctx, tgrs_dwconv_s8, TGRS_F32_VARIANT(tgrs_dwconv_f32));
}

int tgrs_kernel_dwconv_sym(const tgrs_op_ctx *ctx)
{
    return tgrs_by_dtype(ctx, tgrs_dwconv_s8_sym, TGRS_F32_VARIANT(tgrs_dwconv_f32));
}

int tgrs_kernel_fc(const tgrs_op_ctx *ctx)
{
    return tgrs_by_dtype(ctx, tgrs_fc_s8, TGRS_F32_VARIANT(tgrs_fc_f32));
}

int tgrs_kernel_fc_sym(const tgrs_op_ctx *ctx)
{
    return tgrs_by_dtype(ctx, tgrs_fc_s8_sym, TGRS_F32_VARIANT(tgrs_fc_f32));
}

int tgrs_kernel_maxpool(const tgrs_op_ctx *ctx)
{
    return tgrs_by_dtype(ctx, tgrs_maxpool_s8, TGRS_F32_VARIANT(tgrs_maxpool_f32));
}

int tgrs_kernel_avgpool(const tgrs_op_ctx *ctx)
{
    return tgrs_by_dtype(ctx, tgrs_avgpool_s8, TGRS_F32_VARIANT(tgrs_avgpool_f32));
}

int tgrs_kernel_gap(const tgrs_op_ctx *ctx)
{
    if (TGRS_GAP_ACCUM && ctx->phase != 0u) {
        return tgrs_gap_phases(ctx); /* the GAP of an ACCUM unit, one tile's band (gap_accum.c) */
    }
    return tgrs_by_dtype(ctx, tgrs_gap_s8, TGRS_F32_VARIANT(tgrs_gap_f32));
}

int tgrs_kernel_gap_onnx(const tgrs_op_ctx *ctx)
{
    if (TGRS_GAP_ACCUM && ctx->phase != 0u) {
        return tgrs_gap_phases(ctx);
    }
    return tgrs_by_dtype(ctx, tgrs_gap_s8_onnx, TGRS_F32_VARIANT(tgrs_gap_f32));
}

int tgrs_kernel_add(const tgrs_op_ctx *ctx)
{
    return tgrs_by_dtype(ctx, tgrs_add_s8, TGRS_F32_VARIANT(tgrs_add_f32));
}

int tgrs_kernel_mul(const tgrs_op_ctx *ctx)
{
    return tgrs_by_dtype(ctx, tgrs_mul_s8, TGRS_F32_VARIANT(tgrs_mul_f32));
}

int tgrs_kernel_softmax(const tgrs_op_ctx *ctx)
{
    return tgrs_by_dtype(ctx, tgrs_softmax_s8, TGRS_F32_VARIANT(tgrs_softmax_f32));
}

int tgrs_kernel_softmax_onnx(const tgrs_op_ctx *ctx)
{
    return tgrs_by_dtype(ctx, tgrs_softmax_s8_onnx, TGRS_F32_VARIANT(tgrs_softmax_f32));
}
