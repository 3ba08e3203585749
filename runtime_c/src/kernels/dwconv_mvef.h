/*
 * dwconv_mvef.h - the float32 depthwise block on Helium with float lanes (Cortex-M55/M85; target.h TGRS_FISA_MVEF).
 * Included by dwconv.c only, inside its float tap-table path (dw_f32_tab).
 *
 * One call: DW_FB = 8 channels (two vectors) of one or two pixels over a tap table, four accumulator vectors; per tap
 * the weights are loaded once for both pixels, and each lane (channel) takes one fused multiply-add (VFMA): the taps
 * are summed in the plain loop's order from +0, each step rounded once, so results differ from the plain variant in
 * the last bits, within the float tolerance (docs/numerics.md). Bias, clamp (VMAXNM/VMINNM with a finite bound: a
 * NaN sum becomes the bound, where the plain loop keeps NaN) and stores are vector operations. The last block of
 * a channel count that is not a multiple of 8 is tail-predicated (VCTP). Written from the Arm MVE intrinsics
 * reference.
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

/* The sums of every tap for one pixel (a0, a1) or two (c0, c1: inputs pstep bytes further); LD loads 4 lanes. */
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
#define DW_MVEF_LD_FULL(ptr, p) vld1q_f32(ptr)
#define DW_MVEF_LD_PRED(ptr, p) vldrwq_z_f32(ptr, p)

/* Out of line: inlined into dw_f32_tab, GCC 12 keeps fewer of the driver's values in registers around the loops.
 * nc < DW_FB (the last block): loads and stores predicated on the first nc lanes (VCTP), nothing read or written
 * past them. */
static __attribute__((noinline)) void dw_blk_f32_mvef(const char *base, const int32_t *tab, int32_t nt, const char *wb,
                                                      int32_t pstep, int two, int32_t nc, const dw_fout *fo)
{
    const mve_pred16_t p0 = vctp32q((uint32_t)nc), p1 = vctp32q((uint32_t)(nc > 4 ? nc - 4 : 0));
    float32x4_t a0 = vdupq_n_f32(0.0f), a1 = a0, c0 = a0, c1 = a0, b0, b1;
    int32_t t;
    if (nc == DW_FB) {
        DW_MVEF_TAPS(DW_MVEF_LD_FULL, p0, p1);
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

#undef DW_MVEF_TAPS
#undef DW_MVEF_LD_FULL
#undef DW_MVEF_LD_PRED

#endif /* TGRS_FISA_MVEF */

#endif /* TGRS_DWCONV_MVEF_H */
