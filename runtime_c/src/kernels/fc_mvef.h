/*
 * fc_mvef.h - the float32 fc lanes on Helium with float lanes (Cortex-M55/M85; target.h TGRS_FISA_MVEF). Included by
 * fc.c only.
 *
 * fc.c's FC_LANES = 8 partial sums of one or two weight rows as two vectors per row; per chunk of 8 values two input
 * loads shared by both rows, two weight loads and two fused multiply-adds (VFMA) per row. Same lanes and order as
 * the plain loop, each step rounded once: the last bits may differ (docs/numerics.md). Written from the Arm MVE
 * intrinsics reference.
 */
#ifndef TGRS_FC_MVEF_H
#define TGRS_FC_MVEF_H

#if TGRS_FISA == TGRS_FISA_MVEF

static int32_t fc_lanes_f32_mvef(const float *x, const float *w, int32_t k, int two, float lane[2][FC_LANES])
{
    const float *w1 = two ? w + k : w;
    float32x4_t a0 = vdupq_n_f32(0.0f), a1 = a0, b0 = a0, b1 = a0;
    int32_t i;
    for (i = 0; i + FC_LANES <= k; i += FC_LANES) {
        const float32x4_t x0 = vld1q_f32(x + i), x1 = vld1q_f32(x + i + 4);
        a0 = vfmaq_f32(a0, x0, vld1q_f32(w + i));
        a1 = vfmaq_f32(a1, x1, vld1q_f32(w + i + 4));
        b0 = vfmaq_f32(b0, x0, vld1q_f32(w1 + i));
        b1 = vfmaq_f32(b1, x1, vld1q_f32(w1 + i + 4));
    }
    vst1q_f32(&lane[0][0], a0);
    vst1q_f32(&lane[0][4], a1);
    vst1q_f32(&lane[1][0], b0);
    vst1q_f32(&lane[1][4], b1);
    return k - k % FC_LANES;
}

#endif /* TGRS_FISA_MVEF */

#endif /* TGRS_FC_MVEF_H */
