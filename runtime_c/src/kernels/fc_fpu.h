/*
 * fc_fpu.h - the float32 fc lanes on an Arm single-precision FPU without MVE-F (Cortex-M4F, M7, M33; target.h
 * TGRS_FISA_FPU). Included by fc.c only.
 *
 * fc.c's FC_LANES = 8 partial sums of one or two weight rows in s0-s7 and s8-s15; per chunk of 8 values one VLDM of
 * the inputs (s16-s23, shared by both rows), one VLDM per row's weights (s24-s31) and 8 VMLA per row. VMLA (fpu.h)
 * in the plain loop's order: the plain variant's bits. Written from the Armv7-M architecture manual.
 */
#ifndef TGRS_FC_FPU_H
#define TGRS_FC_FPU_H

#if TGRS_FISA == TGRS_FISA_FPU

#include "fpu.h"

/* lane s<d0+j> += x s<16+j> * w s<24+j> */
#define FC_FPU_EW8(d0, d1, d2, d3, d4, d5, d6, d7)                                                                   \
    FPU_MLA(d0, 16, 24) FPU_MLA(d1, 17, 25) FPU_MLA(d2, 18, 26) FPU_MLA(d3, 19, 27) FPU_MLA(d4, 20, 28)            \
    FPU_MLA(d5, 21, 29) FPU_MLA(d6, 22, 30) FPU_MLA(d7, 23, 31)

static int32_t fc_lanes_f32_fpu(const float *x, const float *w, int32_t k, int two, float lane[2][FC_LANES])
{
    int32_t chunks = k / FC_LANES;
    const float *w1 = two ? w + k : w;
    __asm__ volatile(
        "vldmia %[z], {s0-s15}\n\t"
        "cmp %[n], #0\n\t"
        "beq 2f\n"
        "1:\n\t"
        "vldmia %[x]!, {s16-s23}\n\t"
        "vldmia %[w0]!, {s24-s31}\n\t"
        FC_FPU_EW8(0, 1, 2, 3, 4, 5, 6, 7)
        "vldmia %[w1]!, {s24-s31}\n\t"
        FC_FPU_EW8(8, 9, 10, 11, 12, 13, 14, 15)
        "subs %[n], %[n], #1\n\t"
        "bne 1b\n"
        "2:\n\t"
        "vstmia %[lane], {s0-s15}\n\t"
        : [x] "+r"(x), [w0] "+r"(w), [w1] "+r"(w1), [n] "+r"(chunks)
        : [z] "r"(tgrs_fpu_zero), [lane] "r"(&lane[0][0])
        : "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "s12", "s13", "s14", "s15",
          "s16", "s17", "s18", "s19", "s20", "s21", "s22", "s23", "s24", "s25", "s26", "s27", "s28", "s29", "s30",
          "s31", "memory", "cc");
    return k - k % FC_LANES;
}

#endif /* TGRS_FISA_FPU */

#endif /* TGRS_FC_FPU_H */
