/*
 * fpu.h - what the float32 kernels of an Arm single-precision FPU share (target.h TGRS_FISA_FPU: conv_fpu.h,
 * dwconv_fpu.h, fc_fpu.h): the epilogue record their assembly blocks read (dwconv.c's MVE-F blocks read it too),
 * the zero block that clears accumulators, and the assembly text macros. The multiply-accumulate is VMLA, the
 * unfused form: the product is rounded, then the sum, exactly the plain loops' `acc += x * w` compiled without
 * contraction (-ffp-contract=off, -std=c99), so these kernels give the plain variant's bits when they sum in its
 * order.
 */
#ifndef TGRS_FPU_H
#define TGRS_FPU_H

#include "target.h"

#if TGRS_FISA == TGRS_FISA_FPU || TGRS_FISA == TGRS_FISA_MVEF

#include <stddef.h>

/* What a float block reads after its sums (the FPU's assembly at the offsets checked below; dwconv.c's MVE-F blocks
 * by name). */
typedef struct tgrs_fpu_ep {
    const float *bias;  /* 8 values (a short conv panel passes a padded copy) */
    float *o0, *o1;     /* 8 outputs each */
    float lo, hi;       /* clamp bounds */
    int32_t has_lo, has_hi;
} tgrs_fpu_ep;

typedef char tgrs_fpu_ep_layout[(offsetof(tgrs_fpu_ep, bias) == 0 && offsetof(tgrs_fpu_ep, o0) == 4 &&
                                 offsetof(tgrs_fpu_ep, o1) == 8 && offsetof(tgrs_fpu_ep, lo) == 12 &&
                                 offsetof(tgrs_fpu_ep, hi) == 16 && offsetof(tgrs_fpu_ep, has_lo) == 20 &&
                                 offsetof(tgrs_fpu_ep, has_hi) == 24 && sizeof(void *) == 4) ? 1 : -1];

#endif

#if TGRS_FISA == TGRS_FISA_FPU

/* +0 for the accumulators: one VLDM (no VFP immediate encodes zero). */
static const float tgrs_fpu_zero[16] = {0.0f};

#define FPU_MLA(d, n, m) "vmla.f32 s" #d ", s" #n ", s" #m "\n\t"
/* acc row d0..d0+7 += x (s<x>) * panel row s16-s23 */
#define FPU_ROW8(d0, d1, d2, d3, d4, d5, d6, d7, x)                                                                  \
    FPU_MLA(d0, x, 16) FPU_MLA(d1, x, 17) FPU_MLA(d2, x, 18) FPU_MLA(d3, x, 19) FPU_MLA(d4, x, 20)                 \
    FPU_MLA(d5, x, 21) FPU_MLA(d6, x, 22) FPU_MLA(d7, x, 23)
#define FPU_ROWA(x) FPU_ROW8(0, 1, 2, 3, 4, 5, 6, 7, x)
#define FPU_ROWB(x) FPU_ROW8(8, 9, 10, 11, 12, 13, 14, 15, x)
#define FPU_ADD(d, m) "vadd.f32 s" #d ", s" #d ", s" #m "\n\t"
#define FPU_BIAS8(d0, d1, d2, d3, d4, d5, d6, d7)                                                                    \
    FPU_ADD(d0, 16) FPU_ADD(d1, 17) FPU_ADD(d2, 18) FPU_ADD(d3, 19) FPU_ADD(d4, 20) FPU_ADD(d5, 21)                \
    FPU_ADD(d6, 22) FPU_ADD(d7, 23)
/* v = v < lo ? lo : v (lo in s28), v = v > hi ? hi : v (hi in s29) */
#define FPU_LO(d) "vcmp.f32 s" #d ", s28\n\tvmrs APSR_nzcv, fpscr\n\tit mi\n\tvmovmi.f32 s" #d ", s28\n\t"
#define FPU_HI(d) "vcmp.f32 s" #d ", s29\n\tvmrs APSR_nzcv, fpscr\n\tit gt\n\tvmovgt.f32 s" #d ", s29\n\t"
#define FPU_LO8(a, b, c, d, e, f, g, h) FPU_LO(a) FPU_LO(b) FPU_LO(c) FPU_LO(d) FPU_LO(e) FPU_LO(f) FPU_LO(g) FPU_LO(h)
#define FPU_HI8(a, b, c, d, e, f, g, h) FPU_HI(a) FPU_HI(b) FPU_HI(c) FPU_HI(d) FPU_HI(e) FPU_HI(f) FPU_HI(g) FPU_HI(h)

/* The epilogue of a block of 16 accumulators (s0-s7 for o0, s8-s15 for o1) or of 8 (s0-s7, o0 only), in an asm
 * block with operands %[ep] (a tgrs_fpu_ep) and %[t] (a scratch core register): bias (s16-s23), clamp, store. At -Os
 * (TGRS_SPEED_PATHS 0) the block stores the raw sums and the caller finishes them in C (tgrs_fpu_finish): the
 * unrolled clamps are most of the code. */
#define FPU_EP_STORE8 "ldr %[t], [%[ep], #4]\n\tvstmia %[t], {s0-s7}\n\t"
#define FPU_EP_STORE16 FPU_EP_STORE8 "ldr %[t], [%[ep], #8]\n\tvstmia %[t], {s8-s15}\n\t"
#if TGRS_SPEED_PATHS
#define FPU_EP_BIAS "ldr %[t], [%[ep], #0]\n\tvldmia %[t], {s16-s23}\n\t"
#define FPU_EP_BOUNDS "vldr s28, [%[ep], #12]\n\tvldr s29, [%[ep], #16]\n\t"
#define FPU_EP_IF(off, label) "ldr %[t], [%[ep], #" #off "]\n\tcmp %[t], #0\n\tbeq " #label "f\n\t"
#define FPU_EP16                                                                                                     \
    FPU_EP_BIAS FPU_BIAS8(0, 1, 2, 3, 4, 5, 6, 7) FPU_BIAS8(8, 9, 10, 11, 12, 13, 14, 15) FPU_EP_BOUNDS             \
    FPU_EP_IF(20, 7) FPU_LO8(0, 1, 2, 3, 4, 5, 6, 7) FPU_LO8(8, 9, 10, 11, 12, 13, 14, 15) "7:\n\t"                 \
    FPU_EP_IF(24, 8) FPU_HI8(0, 1, 2, 3, 4, 5, 6, 7) FPU_HI8(8, 9, 10, 11, 12, 13, 14, 15) "8:\n\t" FPU_EP_STORE16
#define FPU_EP8                                                                                                      \
    FPU_EP_BIAS FPU_BIAS8(0, 1, 2, 3, 4, 5, 6, 7) FPU_EP_BOUNDS                                                      \
    FPU_EP_IF(20, 7) FPU_LO8(0, 1, 2, 3, 4, 5, 6, 7) "7:\n\t"                                                        \
    FPU_EP_IF(24, 8) FPU_HI8(0, 1, 2, 3, 4, 5, 6, 7) "8:\n\t" FPU_EP_STORE8
#else
#define FPU_EP16 FPU_EP_STORE16
#define FPU_EP8 FPU_EP_STORE8
#endif

/* The caller's half of the -Os epilogue: o[j] = clamp(o[j] + bias[j]) for j < n, in place (a no-op at -O2, where
 * the block did it). */
static inline void tgrs_fpu_finish(float *o, const tgrs_fpu_ep *ep, int32_t n)
{
    int32_t j;
    for (j = 0; !TGRS_SPEED_PATHS && j < n; ++j) {
        float v = o[j] + ep->bias[j];
        v = (v < ep->lo) ? ep->lo : v;
        v = (v > ep->hi) ? ep->hi : v;
        o[j] = v;
    }
}

/* Fill the epilogue record's bounds: a bound that is infinite (or NaN) is not tested. */
static inline void tgrs_fpu_bounds(tgrs_fpu_ep *ep, float lo, float hi)
{
    ep->lo = lo;
    ep->hi = hi;
    ep->has_lo = lo >= -3.402823466e38f;
    ep->has_hi = hi <= 3.402823466e38f;
}

#endif /* TGRS_FISA_FPU */

#endif /* TGRS_FPU_H */
