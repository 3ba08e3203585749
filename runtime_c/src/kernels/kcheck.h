/*
 * kcheck.h - checks shared by several kernels that need the op context (kcheck.c; the view and window checks are
 * declared in kview.h and window.h).
 */
#ifndef TGRS_KCHECK_H
#define TGRS_KCHECK_H

#include <stdint.h>

#include "requant.h"
#include "tgrs_op.h"

/*
 * The int8 requantization operands of a multiply-accumulate kind (conv, dwconv, fc): constant slots mult_slot and
 * shift_slot hold oc int32 each (TGRS_ERR_SHAPE otherwise), every (mult, shift) is valid (when the constants are
 * visible, ctx->c non-NULL), the clamp bounds and zero points are int8 and the numerics code is TGRS_NUMERICS_ONNX
 * or TGRS_NUMERICS_TFLM (TGRS_ERR_PARAM otherwise). kcheck.c.
 */
int tgrs_mac_s8_check(const tgrs_op_ctx *ctx, int mult_slot, int shift_slot, int32_t oc, int32_t lo, int32_t hi,
                      int32_t zp_in, int32_t zp_out, int32_t numerics);

/* n zero points read from a plan (weight zero points of a WZP op): 1 when every one is in [-128, 127]. */
int tgrs_zp_s8_ok(const int32_t *zp, int32_t n);

/* A numerics code read from a plan: 1 when it is TGRS_NUMERICS_ONNX or TGRS_NUMERICS_TFLM. */
int tgrs_numerics_ok(int32_t numerics);

/* tgrs_rq_make and tgrs_rq_s8 out of line, for loops that prepare once per channel (kcheck.c). */
void tgrs_rq_prepare(tgrs_rq *r, int32_t mult, int32_t shift, int32_t zp_out, int32_t numerics);
int8_t tgrs_rq_s8_call(const tgrs_rq *r, int32_t acc, int32_t lo, int32_t hi);

/*
 * Float16 weights (param wf16 of conv, dwconv, fc, convtranspose, matmul; docs/format.md "Float16 weights").
 * Constant slot `slot` then holds IEEE halves, which the kernel widens into the first align16(2 * clen) bytes of its
 * scratch. tgrs_f16_view writes to
 * *wide the context the float kernel computes with: *ctx with that slot 2 * clen bytes long (address NULL) and the
 * scratch that follows the widened weights; for wf16 == 0 just *ctx. TGRS_ERR_PARAM for wf16 other than 0 and 1 or
 * an odd length, TGRS_ERR_SCRATCH when the scratch cannot hold the widened weights. The loader's check uses it as is;
 * the kernel then calls tgrs_f16_widen, which converts the halves (exactly) and points the slot at them.
 */
int tgrs_f16_view(tgrs_op_ctx *wide, const tgrs_op_ctx *ctx, int slot, int32_t wf16);
int tgrs_f16_widen(tgrs_op_ctx *wide, const tgrs_op_ctx *ctx, int slot, int32_t wf16);

/* tgrs_f16_view for the load-time checks of float conv, dwconv and fc (registry.c): in an int8-only build, which has
 * no float kernel to run such an op, TGRS_ERR_UNSUPPORTED instead, so the build links no float16 code and the
 * loader refuses the op at init. */
int tgrs_check_f32_weights(tgrs_op_ctx *wide, const tgrs_op_ctx *ctx, int slot, int32_t wf16);

#endif /* TGRS_KCHECK_H */
