/*
 * dwconv_fpu.h - the float32 depthwise block on an Arm single-precision FPU without MVE-F (Cortex-M4F, M7, M33;
 * target.h TGRS_FISA_FPU). Included by dwconv.c only, inside its float tap-table path (dw_f32_tab).
 *
 * One call: DW_FB = 8 channels of one or two pixels over a tap table, the accumulators in s0-s7 (and s8-s15 for the
 * second pixel), the tap's weights in s16-s23 (one VLDM, shared by both pixels), its inputs in s24-s31 (one VLDM per
 * pixel): 24 instructions per tap for 16 MACs; fewer than 8 channels (the last block) take a plain loop over the
 * same taps. VMLA (fpu.h) in the plain loop's tap order from +0, then the bias and the clamp: the plain variant's
 * bits. Written from the Armv7-M architecture manual's VFP instruction descriptions.
 */
#ifndef TGRS_DWCONV_FPU_H
#define TGRS_DWCONV_FPU_H

#if TGRS_FISA == TGRS_FISA_FPU

#include "fpu.h"

/* acc s<d0+c> += x s<24+c> * w s<16+c>, c < 8: channels are lanes of the register block */
#define FPU_EW8(d0, d1, d2, d3, d4, d5, d6, d7)                                                                      \
    FPU_MLA(d0, 24, 16) FPU_MLA(d1, 25, 17) FPU_MLA(d2, 26, 18) FPU_MLA(d3, 27, 19) FPU_MLA(d4, 28, 20)            \
    FPU_MLA(d5, 29, 21) FPU_MLA(d6, 30, 22) FPU_MLA(d7, 31, 23)

/* Channels [0, nc) of one pixel (o: fo->o0 or fo->o1), nc < DW_FB (the last block): the same taps in the same
 * order, plain arithmetic. */
static void dw_blk_tail_f32(const char *base, const int32_t *tab, int32_t nt, const char *wb, int32_t nc,
                            const dw_fout *fo, float *o)
{
    float acc[DW_FB];
    int32_t t, cc;
    for (cc = 0; cc < nc; ++cc) {
        acc[cc] = 0.0f;
    }
    for (t = 0; t < nt; ++t) {
        const float *x = (const float *)(const void *)(base + tab[2 * t]);
        const float *w = (const float *)(const void *)(wb + tab[2 * t + 1]);
        for (cc = 0; cc < nc; ++cc) {
            acc[cc] += x[cc] * w[cc];
        }
    }
    dw_store_f32(o, acc, fo->bias, nc, fo->lo, fo->hi);
}

static inline void dw_blk8_fpu(const char *base, const int32_t *tab, int32_t nt, const char *wb, int32_t pstep, int two,
                               int32_t nc, const dw_fout *fo)
{
    int32_t x, w, t;
    if (nc < DW_FB) { /* the last channels: dwconv.c's plain loop over the same taps */
        dw_blk_tail_f32(base, tab, nt, wb, nc, fo, fo->o0);
        if (two) {
            dw_blk_tail_f32(base + pstep, tab, nt, wb, nc, fo, fo->o1);
        }
        return;
    }
    if (two) {
        __asm__ volatile(
            "vldmia %[z], {s0-s15}\n\t"
            "cmp %[nt], #0\n\t"
            "beq 2f\n"
            "1:\n\t"
            "ldrd %[x], %[w], [%[tab]], #8\n\t"
            "add %[x], %[x], %[base]\n\t"
            "add %[w], %[w], %[wb]\n\t"
            "vldmia %[w], {s16-s23}\n\t"
            "vldmia %[x], {s24-s31}\n\t"
            FPU_EW8(0, 1, 2, 3, 4, 5, 6, 7)
            "add %[x], %[x], %[pstep]\n\t"
            "vldmia %[x], {s24-s31}\n\t"
            FPU_EW8(8, 9, 10, 11, 12, 13, 14, 15)
            "subs %[nt], %[nt], #1\n\t"
            "bne 1b\n"
            "2:\n\t"
            FPU_EP16
            : [tab] "+r"(tab), [nt] "+r"(nt), [x] "=&r"(x), [w] "=&r"(w), [t] "=&r"(t)
            : [z] "r"(tgrs_fpu_zero), [base] "r"(base), [wb] "r"(wb), [pstep] "r"(pstep), [ep] "r"(fo)
            : "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "s12", "s13", "s14", "s15",
              "s16", "s17", "s18", "s19", "s20", "s21", "s22", "s23", "s24", "s25", "s26", "s27", "s28", "s29", "s30",
              "s31", "memory", "cc");
        tgrs_fpu_finish(fo->o1, fo, DW_FB); /* -Os: the C half of the epilogue */
    } else {
        __asm__ volatile(
            "vldmia %[z], {s0-s7}\n\t"
            "cmp %[nt], #0\n\t"
            "beq 2f\n"
            "1:\n\t"
            "ldrd %[x], %[w], [%[tab]], #8\n\t"
            "add %[x], %[x], %[base]\n\t"
            "add %[w], %[w], %[wb]\n\t"
            "vldmia %[w], {s16-s23}\n\t"
            "vldmia %[x], {s24-s31}\n\t"
            FPU_EW8(0, 1, 2, 3, 4, 5, 6, 7)
            "subs %[nt], %[nt], #1\n\t"
            "bne 1b\n"
            "2:\n\t"
            FPU_EP8
            : [tab] "+r"(tab), [nt] "+r"(nt), [x] "=&r"(x), [w] "=&r"(w), [t] "=&r"(t)
            : [z] "r"(tgrs_fpu_zero), [base] "r"(base), [wb] "r"(wb), [ep] "r"(fo)
            : "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s16", "s17", "s18", "s19", "s20", "s21", "s22", "s23",
              "s24", "s25", "s26", "s27", "s28", "s29", "s30", "s31", "memory", "cc");
    }
    tgrs_fpu_finish(fo->o0, fo, DW_FB);
}

/* Every channel block of one pixel or two: oc channels from fo's pointers (channel 0). */
static void dw_blk_f32_fpu(const char *base, const int32_t *tab, int32_t nt, const char *wb, int32_t pstep, int two,
                           int32_t oc, const dw_fout *fo)
{
    dw_fout f = *fo;
    int32_t c0;
    for (c0 = 0; c0 < oc; c0 += DW_FB) {
        f.bias = fo->bias + c0;
        f.o0 = fo->o0 + c0;
        f.o1 = fo->o1 + c0;
        dw_blk8_fpu(base + c0 * 4, tab, nt, wb + c0 * 4, pstep, two, oc - c0 < DW_FB ? oc - c0 : DW_FB, &f);
    }
}

#endif /* TGRS_FISA_FPU */

#endif /* TGRS_DWCONV_FPU_H */
