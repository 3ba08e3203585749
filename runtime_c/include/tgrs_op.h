/*
 * tgrs_op.h - the contract between the executor and the kernels.
 *
 * The executor resolves one op record of a validated plan into a tgrs_op_ctx and calls the kernel of the op's kind.
 * Every kind has two entry points in its kernel file: tgrs_check_<kind>, every check the kernel relies on
 * (parameters, dims, dtypes, constant lengths and values, scratch size, the rows each input band must hold), and
 * tgrs_kernel_<kind>, the computation. The loader calls the check on every op in every tile (check.c), on the same
 * context the executor builds except that views have no data, scratch no address, and the constants of an LZ4 unit
 * no address (their bytes exist only once the run decodes them, so their values are checked when the kernel runs).
 * A plan tgrs_load accepts therefore never fails a kernel check at run time, apart from those LZ4 constant values.
 * Kernels derive their geometry through the same check functions, so the checks exist once.
 *
 * Tensors are views of a band of rows. Every view has a rank-4 physical shape dims = {N, H, W, C}: an NHWC tensor as
 * is, a plain tensor of lower rank padded with leading ones (so a [1, 640] vector is {1, 1, 1, 640}). A view holds rows
 * [row0, row0 + rows) of axis 1 and `data` points at the first element of row row0. An untiled view has row0 = 0 and
 * rows = dims[1]. A kernel computes exactly the rows of its output view.
 */
#ifndef TGRS_OP_H
#define TGRS_OP_H

#include <stddef.h>
#include <stdint.h>

#include "tgrs_format.h"
#include "tigris.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tgrs_tview {
    void *data;          /* first element of row `row0` */
    int32_t dims[4];     /* full physical shape N, H, W, C */
    int32_t row0;        /* first row of axis 1 present in `data` */
    int32_t rows;        /* rows present */
    int32_t dtype;       /* TGRS_DT_* */
    int32_t zero_point;  /* per-tensor zero point (int8 tensors), 0 otherwise */
    float scale;         /* per-tensor scale (int8 tensors), 1 otherwise */
} tgrs_tview;

typedef struct tgrs_op_ctx {
    const int32_t *p;                      /* TGRS_MAX_PARAMS int32 params, meaning per kind (TGRS_P_*) */
    const void *c[TGRS_MAX_CONSTS];        /* constant blobs (weights, bias, multipliers, tables) or NULL */
    uint32_t clen[TGRS_MAX_CONSTS];        /* their sizes in bytes */
    const tgrs_tview *in[TGRS_MAX_INPUTS]; /* input views */
    int32_t n_in;
    tgrs_tview *out;                       /* the output view: compute exactly its rows */
    void *scratch;                         /* fast-memory scratch planned by the compiler, or NULL */
    uint32_t scratch_size;
    uint32_t phase;                        /* 0, or TGRS_PHASE_* bits: the GAP of an ACCUM unit (below) */
    int32_t acc_w;                         /* the accumulating GAP of a COLS unit: its input's full width (its
                                              views hold column bands); 0 otherwise */
    uint32_t proven;                       /* TGRS_PROVEN_* bits: what the loader's check of this kind already
                                              proved on this very context (all but the addresses), which the kernel
                                              need not check again. The executor sets it; 0 (a caller's own
                                              context) checks everything. */
} tgrs_op_ctx;

/* ctx.proven: TGRS_PROVEN_SHAPE, the parameters, dims, bands, dtypes, constant lengths and scratch size (the kernel
   only derives its geometry from them); TGRS_PROVEN_CONSTS, also the constants' values, set when the kernel reads the
   very bytes the loader checked (an XIP plan's WEIGHTS section: the plan stays unchanged while it is loaded). */
#define TGRS_PROVEN_SHAPE 1u
#define TGRS_PROVEN_CONSTS 2u

/* ctx.phase of the accumulating GlobalAveragePool (tgrs_kernel_gap passes such a call to tgrs_gap_phases): every
   tile's call accumulates its band, the first tile's also clears the sums first, the last's also averages after. */
#define TGRS_PHASE_ACCUMULATE 1u
#define TGRS_PHASE_BEGIN 2u
#define TGRS_PHASE_FINISH 4u

typedef int (*tgrs_kernel_fn)(const tgrs_op_ctx *ctx);

/* A kind's check: TGRS_OK, or the TGRS_ERR_* code its kernel would return for this context (TGRS_ERR_PARAM, _DTYPE,
 * _TILE, _SCRATCH, _SHAPE or _UNSUPPORTED). It reads no tensor data, and constant bytes only through a non-NULL
 * ctx->c[k] (lengths through ctx->clen), so it runs on the loader's data-less views. */
typedef int (*tgrs_check_fn)(const tgrs_op_ctx *ctx);

/* tgrs_check_conv ... tgrs_check_copy, one per kind of TGRS_KINDS (tgrs_format.h), each in its kind's kernel file. */
#define TGRS_DECLARE_CHECK(KIND, kind) int tgrs_check_##kind(const tgrs_op_ctx *ctx);
TGRS_KINDS(TGRS_DECLARE_CHECK)
#undef TGRS_DECLARE_CHECK

/* The checks of the _sym kernels below: their kind's check, and TGRS_ERR_UNSUPPORTED for an op with weight zero
 * points (param WZP = 1). */
int tgrs_check_conv_sym(const tgrs_op_ctx *ctx);
int tgrs_check_dwconv_sym(const tgrs_op_ctx *ctx);
int tgrs_check_fc_sym(const tgrs_op_ctx *ctx);
/* The check of the _onnx kernel below: its kind's check, and TGRS_ERR_UNSUPPORTED for an int8 op with TFLM
 * numerics (param NUMERICS = 1). */
int tgrs_check_softmax_onnx(const tgrs_op_ctx *ctx);
int tgrs_check_gap_onnx(const tgrs_op_ctx *ctx);

/* 1 when this runtime build reads weights arranged for target `target` (TGRS_TARGET_*, the plan header's field):
 * the generic layout always, its own core's arrangements, every target's in a host build (-DTGRS_ANY_TARGET=1;
 * kernels/target.h). The loader refuses an arranged op of another target with TGRS_ERR_TARGET. */
int tgrs_reads_target(uint32_t target);

/*
 * tgrs_load with the caller's check table (the op resolver's other half): checks[k] is the check of kind k
 * (n_checks entries, normally TGRS_OP_COUNT + 1; NULL for a kind the firmware does not link, refused with
 * TGRS_ERR_UNSUPPORTED). tgrs_load passes every kind's check; `tigris codegen` emits a table with exactly the plan's
 * kinds, so --gc-sections drops the other kinds' checks as it drops their kernels. failed_op as tgrs_load_diag.
 * checks[k] must be kind k's tgrs_check_<kind> (or its _sym twin): the run marks each kernel context proven
 * (tgrs_op_ctx.proven) on the strength of these checks, and the kernels do not repeat them.
 */
int tgrs_load_checks(tgrs_plan *plan, const void *bytes, size_t len, const tgrs_check_fn *checks, uint32_t n_checks,
                     int32_t *failed_op);

/*
 * Op resolver (docs/deploying.md "Linking only the kernels a model uses"). tgrs_run calls the full registry, so a
 * firmware calling it links every kernel. tgrs_run_kernels takes the caller's const table instead: kernels[k] is
 * the entry point for kind k = TGRS_OP_* (index 0 unused; n_kernels entries, normally TGRS_OP_COUNT + 1), NULL for a
 * kind the firmware does not link, so --gc-sections drops the rest. A plan with an op whose kind has no entry is
 * refused before any op runs: TGRS_ERR_UNSUPPORTED with stats.failed_op naming the first such op.
 * tgrs_check_kernels makes the same check once, at init: TGRS_OK, TGRS_ERR_NULL, TGRS_ERR_STATE (plan not loaded)
 * or TGRS_ERR_UNSUPPORTED. `tigris codegen` emits the table with exactly the kinds of its plan.
 */
int tgrs_check_kernels(const tgrs_plan *plan, const tgrs_kernel_fn *kernels, uint32_t n_kernels);
int tgrs_run_kernels(const tgrs_plan *plan, const tgrs_kernel_fn *kernels, uint32_t n_kernels, void *fast,
                     size_t fast_len, void *slow, size_t slow_len, const void *const *inputs, void *const *outputs,
                     tgrs_stats *stats);
/* tgrs_run_in_place (tigris.h) with the caller's kernel table. */
int tgrs_run_kernels_in_place(const tgrs_plan *plan, const tgrs_kernel_fn *kernels, uint32_t n_kernels, void *fast,
                              size_t fast_len, void *slow, size_t slow_len, tgrs_stats *stats);

/* A float parameter is stored as the bits of an IEEE-754 single in its int32 slot. */
static inline float tgrs_p_f32(const tgrs_op_ctx *ctx, int idx)
{
    union { int32_t i; float f; } u;
    u.i = ctx->p[idx];
    return u.f;
}

/* Element size of a TGRS_DT_* code, 0 for an unknown code. */
static inline size_t tgrs_dtype_size(int32_t dt)
{
    switch (dt) {
    case TGRS_DT_F32: return 4;
    case TGRS_DT_S8: return 1;
    case TGRS_DT_U8: return 1;
    case TGRS_DT_S32: return 4;
    case TGRS_DT_S16: return 2;
    default: return 0;
    }
}

/* Kernel entry points, one per kind (TGRS_OP_*). Each returns TGRS_OK or a negative TGRS_ERR_* code. */
int tgrs_kernel_conv(const tgrs_op_ctx *ctx);
int tgrs_kernel_dwconv(const tgrs_op_ctx *ctx);
int tgrs_kernel_fc(const tgrs_op_ctx *ctx);
int tgrs_kernel_maxpool(const tgrs_op_ctx *ctx);
int tgrs_kernel_avgpool(const tgrs_op_ctx *ctx);
int tgrs_kernel_gap(const tgrs_op_ctx *ctx);
int tgrs_kernel_add(const tgrs_op_ctx *ctx);
int tgrs_kernel_mul(const tgrs_op_ctx *ctx);
int tgrs_kernel_concat(const tgrs_op_ctx *ctx);
int tgrs_kernel_resize(const tgrs_op_ctx *ctx);
int tgrs_kernel_unary(const tgrs_op_ctx *ctx);
int tgrs_kernel_prelu(const tgrs_op_ctx *ctx);
int tgrs_kernel_softmax(const tgrs_op_ctx *ctx);
int tgrs_kernel_pad(const tgrs_op_ctx *ctx);
int tgrs_kernel_transpose(const tgrs_op_ctx *ctx);
int tgrs_kernel_quantize(const tgrs_op_ctx *ctx);
int tgrs_kernel_dequantize(const tgrs_op_ctx *ctx);
int tgrs_kernel_copy(const tgrs_op_ctx *ctx);
int tgrs_kernel_ewise(const tgrs_op_ctx *ctx);
int tgrs_kernel_reduce(const tgrs_op_ctx *ctx);
int tgrs_kernel_matmul(const tgrs_op_ctx *ctx);
int tgrs_kernel_layernorm(const tgrs_op_ctx *ctx);
int tgrs_kernel_cast(const tgrs_op_ctx *ctx);
int tgrs_kernel_convtranspose(const tgrs_op_ctx *ctx);
int tgrs_kernel_slice(const tgrs_op_ctx *ctx);
int tgrs_kernel_depthspace(const tgrs_op_ctx *ctx);
int tgrs_kernel_argmax(const tgrs_op_ctx *ctx);
int tgrs_kernel_topk(const tgrs_op_ctx *ctx);
int tgrs_kernel_nms(const tgrs_op_ctx *ctx);
int tgrs_kernel_convacc(const tgrs_op_ctx *ctx);
int tgrs_kernel_gemmacc(const tgrs_op_ctx *ctx);
int tgrs_kernel_accadd(const tgrs_op_ctx *ctx);
int tgrs_kernel_requantize(const tgrs_op_ctx *ctx);

/*
 * The multiply-accumulate kinds without their weight-zero-point path (the exact path of uint8-weight models, param
 * WZP = 1): for an op with that parameter they return TGRS_ERR_UNSUPPORTED, otherwise exactly what tgrs_kernel_<kind>
 * does. `tigris codegen` names them when no op of the kind in the plan has weight zero points, so --gc-sections drops
 * that path (1.3 KiB of the int8 CNN subset at -Os, docs/runtime.md "Code size").
 */
int tgrs_kernel_conv_sym(const tgrs_op_ctx *ctx);
int tgrs_kernel_dwconv_sym(const tgrs_op_ctx *ctx);
int tgrs_kernel_fc_sym(const tgrs_op_ctx *ctx);

/*
 * Softmax without its TFLM-numerics path: for an int8 op with NUMERICS = 1 it returns TGRS_ERR_UNSUPPORTED, otherwise
 * exactly what tgrs_kernel_softmax does. `tigris codegen` names it when no softmax op of the plan has TFLM numerics,
 * so --gc-sections drops that path (0.5 KiB at -Os, docs/runtime.md "Code size").
 */
int tgrs_kernel_softmax_onnx(const tgrs_op_ctx *ctx);
/* GlobalAveragePool without its TFLM-numerics paths (TFLM's MEAN and the whole-image AVERAGE_POOL_2D, TFLM_AVG), in
 * the same way; an accumulating GAP's tiles still go to gap_accum.c. */
int tgrs_kernel_gap_onnx(const tgrs_op_ctx *ctx);

/*
 * Accumulating GlobalAveragePool (unit flag ACCUM; tigris/ops/pool.py gap_begin/gap_accumulate/gap_finish). The
 * executor calls begin once before the first tile's band, accumulate with every tile's input band (in tile order),
 * finish once after the last. The running sum lives in planned fast memory: float32 in the output buffer, int8 as
 * int32[N*C] in the op's scratch (4*N*C bytes). tgrs_kernel_gap is the one-band case.
 */
int tgrs_gap_begin(const tgrs_op_ctx *ctx);
int tgrs_gap_accumulate(const tgrs_op_ctx *ctx);
int tgrs_gap_finish(const tgrs_op_ctx *ctx);
/* begin (TGRS_PHASE_BEGIN), accumulate, finish (TGRS_PHASE_FINISH) as ctx->phase says. The executor reaches it
   through the GAP entry of the kernel table (tgrs_kernel_gap), so an image without GAP links none of this. */
int tgrs_gap_phases(const tgrs_op_ctx *ctx);
/* The accumulating GAP's checks (tgrs_check_gap calls it for a context with phase bits set). */
int tgrs_gap_accum_check(const tgrs_op_ctx *ctx);

/* Scratch sizes, mirrored in Python by OpKind.scratch_bytes (the planner places the scratch in the fast arena). */
uint32_t tgrs_conv_scratch_size(const int32_t *p, const tgrs_tview *in, const tgrs_tview *out);

#ifdef __cplusplus
}
#endif

#endif /* TGRS_OP_H */
