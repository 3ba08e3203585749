/*
 * dwconv_mvef.h - the float32 depthwise block on Helium with float lanes (Cortex-M55/M85; target.h TGRS_FISA_MVEF).
 * Included by dwconv.c only, inside its float tap-table path (dw_f32_tab).
 *
 * One call: DW_FB = 8 channels (two vectors) of one or two pixels over a tap table, four accumulator vectors in q0-q3
 * (inline assembly for whole blocks: 15 instructions per tap for 16 MACs); per tap the weights are loaded once for
 * both pixels, and each lane (channel) takes one fused multiply-add (VFMA): the taps
 * are summed in the plain loop's order from +0, each step rounded once, so results differ from the plain variant in
 * the last bits, within the float tolerance (docs/numerics.md). Bias, clamp (VMAXNM/VMINNM with a finite bound: a
 * NaN sum becomes the bound, where the plain loop keeps NaN) and stores are vector operations. The last block of
 * a channel count that is not a multiple of 8 is tail-predicated (VCTP). Written from the Armv8.1-M architecture
 * manual and the Arm MVE intrinsics reference.
 */
#ifndef TGRS_DWCONV_MVEF_H
#define TGRS_DWCONV_MVEF_H

#if TGRS_FISA == TGRS_FISA_MVEF

/* A finite bound clamps with VMAXNM / VMINNM; an infinite one is not applied (a NaN sum stays NaN). */
static inline float32x4_t dw_clamp_mvef(float32x4_t v, const dw_fout *fo)
{
    if (fo->has_lo) {
        v = vmaxnmq_f32(v, vdupq_n_f32(fo->lo));
    }
    if (fo->has_hi) {
        v = vminnmq_f32(v, vdupq_n_f32(fo->hi));
    }
    return v;
}

/* The sums of every tap for one pixel (a0, a1) or two (c0, c1: inputs pstep bytes further) of a short block; LD
 * loads 4 lanes. */
#define DW_MVEF_TAPS(LD, p0, p1)                                                                                      \
    do {                                                                                                              \
        if (two) {                                                                                                    \
            for (t = 0; t < nt; ++t) {                                                                                \
                const float *x = (const float *)(const void *)(base + tab[2 * t]);                                    \
                const float *y = (const float *)(const void *)(base + tab[2 * t] + pstep);                            \
                const float *w = (const float *)(const void *)(wb + tab[2 * t + 1]);                                  \
                const float32x4_t w0 = LD(w, p0), w1 = LD(w + 4, p1);                                                 \
                a0 = vfmaq_f32(a0, LD(x, p0), w0);                                                                    \
                a1 = vfmaq_f32(a1, LD(x + 4, p1), w1);                                                                \
                c0 = vfmaq_f32(c0, LD(y, p0), w0);                                                                    \
                c1 = vfmaq_f32(c1, LD(y + 4, p1), w1);                                                                \
            }                                                                                                         \
        } else {                                                                                                      \
            for (t = 0; t < nt; ++t) {                                                                                \
                const float *x = (const float *)(const void *)(base + tab[2 * t]);                                    \
                const float *w = (const float *)(const void *)(wb + tab[2 * t + 1]);                                  \
                a0 = vfmaq_f32(a0, LD(x, p0), LD(w, p0));                                                             \
                a1 = vfmaq_f32(a1, LD(x + 4, p1), LD(w + 4, p1));                                                     \
            }                                                                                                         \
        }                                                                                                             \
    } while (0)
#define DW_MVEF_LD_PRED(ptr, p) vldrwq_z_f32(ptr, p)

/* nc < DW_FB (the last block): loads and stores predicated on the first nc lanes (VCTP), nothing read or written
 * past them. */
static inline void dw_blk8_mvef(const char *base, const int32_t *tab, int32_t nt, const char *wb, int32_t pstep,
                                int two, int32_t nc, const dw_fout *fo)
{
    const mve_pred16_t p0 = vctp32q((uint32_t)nc), p1 = vctp32q((uint32_t)(nc > 4 ? nc - 4 : 0));
    float32x4_t a0 = vdupq_n_f32(0.0f), a1 = a0, c0 = a0, c1 = a0, b0, b1;
    int32_t t;
    if (nc == DW_FB) {
        float acc[16];
        int32_t x, w;
        /* Assembly: written with intrinsics (DW_MVEF_TAPS), GCC 12 indexes the table and spills around the loop. */
        __asm__ volatile(
            "vmov.i32 q0, #0\n\t"
            "vmov.i32 q1, #0\n\t"
            "vmov.i32 q2, #0\n\t"
            "vmov.i32 q3, #0\n\t"
            "cmp %[nt], #0\n\t"
            "beq 3f\n\t"
            "cmp %[two], #0\n\t"
            "beq 2f\n"
            "1:\n\t"
            "ldrd %[x], %[w], [%[tab]], #8\n\t"
            "add %[x], %[x], %[base]\n\t"
            "add %[w], %[w], %[wb]\n\t"
            "vldrw.32 q4, [%[w]]\n\t"
            "vldrw.32 q5, [%[w], #16]\n\t"
            "vldrw.32 q6, [%[x]]\n\t"
            "vldrw.32 q7, [%[x], #16]\n\t"
            "vfma.f32 q0, q6, q4\n\t"
            "vfma.f32 q1, q7, q5\n\t"
            "add %[x], %[x], %[pstep]\n\t"
            "vldrw.32 q6, [%[x]]\n\t"
            "vldrw.32 q7, [%[x], #16]\n\t"
            "vfma.f32 q2, q6, q4\n\t"
            "vfma.f32 q3, q7, q5\n\t"
            "subs %[nt], %[nt], #1\n\t"
            "bne 1b\n\t"
            "b 3f\n"
            "2:\n\t"
            "ldrd %[x], %[w], [%[tab]], #8\n\t"
            "add %[x], %[x], %[base]\n\t"
            "add %[w], %[w], %[wb]\n\t"
            "vldrw.32 q4, [%[w]]\n\t"
            "vldrw.32 q5, [%[w], #16]\n\t"
            "vldrw.32 q6, [%[x]]\n\t"
            "vldrw.32 q7, [%[x], #16]\n\t"
            "vfma.f32 q0, q6, q4\n\t"
            "vfma.f32 q1, q7, q5\n\t"
            "subs %[nt], %[nt], #1\n\t"
            "bne 2b\n"
            "3:\n\t"
            "vstrw.32 q0, [%[acc]]\n\t"
            "vstrw.32 q1, [%[acc], #16]\n\t"
            "vstrw.32 q2, [%[acc], #32]\n\t"
            "vstrw.32 q3, [%[acc], #48]\n\t"
            : [tab] "+r"(tab), [nt] "+r"(nt), [x] "=&r"(x), [w] "=&r"(w)
            : [base] "r"(base), [wb] "r"(wb), [pstep] "r"(pstep), [two] "r"(two), [acc] "r"(acc)
            : "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "s12", "s13", "s14", "s15",
              "s16", "s17", "s18", "s19", "s20", "s21", "s22", "s23", "s24", "s25", "s26", "s27", "s28", "s29", "s30",
              "s31", "memory", "cc");
        a0 = vld1q_f32(acc);
        a1 = vld1q_f32(acc + 4);
        c0 = vld1q_f32(acc + 8);
        c1 = vld1q_f32(acc + 12);
        b0 = vld1q_f32(fo->bias);
        b1 = vld1q_f32(fo->bias + 4);
        if (two) {
            vst1q_f32(fo->o1, dw_clamp_mvef(vaddq_f32(c0, b0), fo));
            vst1q_f32(fo->o1 + 4, dw_clamp_mvef(vaddq_f32(c1, b1), fo));
        }
        vst1q_f32(fo->o0, dw_clamp_mvef(vaddq_f32(a0, b0), fo));
        vst1q_f32(fo->o0 + 4, dw_clamp_mvef(vaddq_f32(a1, b1), fo));
        return;
    }
    DW_MVEF_TAPS(DW_MVEF_LD_PRED, p0, p1);
    b0 = vldrwq_z_f32(fo->bias, p0);
    b1 = vldrwq_z_f32(fo->bias + 4, p1);
    if (two) {
        vstrwq_p_f32(fo->o1, dw_clamp_mvef(vaddq_f32(c0, b0), fo), p0);
        vstrwq_p_f32(fo->o1 + 4, dw_clamp_mvef(vaddq_f32(c1, b1), fo), p1);
    }
    vstrwq_p_f32(fo->o0, dw_clamp_mvef(vaddq_f32(a0, b0), fo), p0);
    vstrwq_p_f32(fo->o0 + 4, dw_clamp_mvef(vaddq_f32(a1, b1), fo), p1);
}

/* Every channel block of one pixel or two: oc channels from fo's pointers (channel 0). Out of line: inlined into
 * dw_f32_tab, GCC 12 keeps fewer of the driver's values in registers around the loops. */
static __attribute__((noinline)) void dw_blk_f32_mvef(const char *base, const int32_t *tab, int32_t nt, const char *wb,
                                                      int32_t pstep, int two, int32_t oc, const dw_fout *fo)
{
    dw_fout f = *fo;
    int32_t c0;
    for (c0 = 0; c0 < oc; c0 += DW_FB) {
        f.bias = fo->bias + c0;
        f.o0 = fo->o0 + c0;
        f.o1 = fo->o1 + c0;
        dw_blk8_mvef(base + c0 * 4, tab, nt, wb + c0 * 4, pstep, two, oc - c0 < DW_FB ? oc - c0 : DW_FB, &f);
    }
}

#undef DW_MVEF_TAPS
#undef DW_MVEF_LD_PRED

#endif /* TGRS_FISA_MVEF */

#endif /* TGRS_DWCONV_MVEF_H */
