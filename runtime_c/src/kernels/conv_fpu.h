/*
 * conv_fpu.h - the float32 conv GEMM on an Arm single-precision FPU without MVE-F (Cortex-M4F, M7, M33; target.h
 * TGRS_FISA_FPU). Included by conv.c only.
 *
 * Register block: two patch rows x one CONV_NR = 8 channel panel, 16 accumulators in s0-s15, a weight panel row in
 * s16-s23 (one VLDM), two k steps of both rows' inputs in s24-s27 (one VLDM each): 38 instructions per 32 MACs in the
 * loop, nothing spills. The four patch rows of conv.c's pixel block are two such calls per panel. The
 * multiply-accumulate is VMLA, which rounds the product and then the sum exactly like the plain loop's
 * `c += x * b` compiled without contraction, and every output sums its k in order from +0 and then adds the bias,
 * as conv_mk_f32: the outputs are the plain variant's bits (tests/cortex_m/test_kernel_variants.py asserts it).
 * Bias, clamp and store run in the same assembly block (the clamp with VCMP/VMRS and a conditional VMOV, mi for the
 * lower bound and gt for the upper, both false on NaN like the plain `v < lo ? lo : v`); a bound that is infinite is
 * skipped. Written from the Armv7-M architecture manual's VFP instruction descriptions.
 */
#ifndef TGRS_CONV_FPU_H
#define TGRS_CONV_FPU_H

#if TGRS_FISA == TGRS_FISA_FPU

#include "fpu.h"

/*
 * o0[j] = clamp(bias[j] + sum_k a0[k] * b[k][j]), o1 likewise from a1, j < 8, k < K, b the panel (K rows of 8).
 */
static inline void conv_mk2_fpu(int32_t k, const float *a0, const float *a1, const float *b, const tgrs_fpu_ep *ep)
{
    int32_t pairs = k >> 1;
    const int32_t odd = k & 1;
    int32_t t;
    __asm__ volatile(
        "vldmia %[z], {s0-s15}\n\t"
        "cmp %[pairs], #0\n\t"
        "beq 2f\n"
        "1:\n\t"
        "vldmia %[a0]!, {s24-s25}\n\t"
        "vldmia %[a1]!, {s26-s27}\n\t"
        "vldmia %[b]!, {s16-s23}\n\t"
        FPU_ROWA(24) FPU_ROWB(26)
        "vldmia %[b]!, {s16-s23}\n\t"
        FPU_ROWA(25) FPU_ROWB(27)
        "subs %[pairs], %[pairs], #1\n\t"
        "bne 1b\n"
        "2:\n\t"
        "cmp %[odd], #0\n\t"
        "beq 3f\n\t"
        "vldmia %[a0]!, {s24}\n\t"
        "vldmia %[a1]!, {s26}\n\t"
        "vldmia %[b]!, {s16-s23}\n\t"
        FPU_ROWA(24) FPU_ROWB(26)
        "3:\n\t"
        FPU_EP16
        : [a0] "+r"(a0), [a1] "+r"(a1), [b] "+r"(b), [pairs] "+r"(pairs), [t] "=&r"(t)
        : [z] "r"(tgrs_fpu_zero), [odd] "r"(odd), [ep] "r"(ep)
        : "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "s12", "s13", "s14", "s15",
          "s16", "s17", "s18", "s19", "s20", "s21", "s22", "s23", "s24", "s25", "s26", "s27", "s28", "s29", "memory",
          "cc");
}

/* conv_f32's pixel blocks, patch rows and tail rows; each panel is two conv_mk2_fpu calls (rows 0-1, 2-3). */
static int conv_f32_fpu(const tgrs_op_ctx *ctx, const conv_geom *cg)
{
    const float *wt = (const float *)ctx->c[TGRS_C_CONV_WEIGHT];
    const float *bias = (const float *)ctx->c[TGRS_C_CONV_BIAS];
    const float lo = tgrs_p_f32(ctx, TGRS_P_CONV_FMIN);
    const float hi = tgrs_p_f32(ctx, TGRS_P_CONV_FMAX);
    const float *in = (const float *)ctx->in[0]->data;
    float *out = (float *)ctx->out->data;
    float *scr = (float *)ctx->scratch;
    const int64_t npix = (int64_t)cg->out_rows * cg->ow;
    const int64_t in_img = (int64_t)cg->in_rows * cg->wd * cg->c;
    float tmp[2][CONV_NR]; /* outputs of a short panel or an unstored tail row */
    float bpad[CONV_NR];
    tgrs_fpu_ep ep;
    int32_t n, g, i, j, pan;
    int64_t q0;
    tgrs_fpu_bounds(&ep, lo, hi);
    for (n = 0; n < cg->n; ++n) {
        const float *img = in + n * in_img;
        float *oimg = out + n * npix * cg->oc;
        for (g = 0; g < cg->g; ++g) {
            for (q0 = 0; q0 < npix; q0 += CONV_MR) {
                const float *a[CONV_MR];
                float *o[CONV_MR];
                const int32_t nv = conv_f32_rows(cg, img, oimg, g, q0, scr, a, o);
                for (pan = 0; pan < cg->npan; ++pan) {
                    const int32_t oc0 = pan * CONV_NR;
                    const int32_t ncol = (cg->ocg - oc0 < CONV_NR) ? cg->ocg - oc0 : CONV_NR;
                    const float *bs = bias + (int64_t)g * cg->ocg + oc0;
                    const float *b = wt + ((int64_t)g * cg->npan + pan) * cg->k * CONV_NR;
                    if (ncol < CONV_NR) {
                        for (j = 0; j < CONV_NR; ++j) {
                            bpad[j] = j < ncol ? bs[j] : 0.0f;
                        }
                        bs = bpad;
                    }
                    ep.bias = bs;
                    for (i = 0; i < nv; i += 2) {
                        const int full = ncol == CONV_NR;
                        ep.o0 = full ? o[i] + oc0 : tmp[0];
                        ep.o1 = (full && i + 1 < nv) ? o[i + 1] + oc0 : tmp[1];
                        conv_mk2_fpu(cg->k, a[i], a[i + 1], b, &ep);
                        tgrs_fpu_finish(ep.o0, &ep, CONV_NR);
                        tgrs_fpu_finish(ep.o1, &ep, CONV_NR);
                        if (!full) {
                            for (j = 0; j < ncol; ++j) {
                                o[i][oc0 + j] = tmp[0][j];
                            }
                            for (j = 0; i + 1 < nv && j < ncol; ++j) {
                                o[i + 1][oc0 + j] = tmp[1][j];
                            }
                        }
                    }
                }
            }
        }
    }
    return TGRS_OK;
}

#endif /* TGRS_FISA_FPU */

#endif /* TGRS_CONV_FPU_H */
