/*
 * dwconv_mve.h - the int8 depthwise tap sums on Helium (TGRS_HAVE_MVE, target.h); part of dwconv.c, same contract
 * as dw_taps_s8_plain. Weights stay in the generic [KH][KW][C] order.
 *
 * Lanes are channels: per tap, VLDRB.S32 loads four channels' inputs and four weights sign-extended to 32 bits, and
 * a multiply and an add accumulate them (the products are below 2^15, the 32-bit lanes wrap like the plain loop's
 * uint32 sums, so the sums are identical). A block's up to 16 channels are four vectors held in registers over all
 * the taps; channels past nc are predicated off (VCTP: nothing is read beyond them).
 */
#ifndef TGRS_DWCONV_MVE_H
#define TGRS_DWCONV_MVE_H

#if TGRS_HAVE_MVE

#include <stddef.h>

#include "requant_mve.h"

static void dw_taps_s8_mve(const int8_t *const *xp, int64_t pstep, int32_t ntaps, const int8_t *wk, int32_t oc,
                           int32_t nc, int two, uint32_t *acc0, uint32_t *acc1)
{
    const mve_pred16_t p0 = vctp32q((uint32_t)nc);
    const mve_pred16_t p1 = vctp32q((uint32_t)(nc > 4 ? nc - 4 : 0));
    const mve_pred16_t p2 = vctp32q((uint32_t)(nc > 8 ? nc - 8 : 0));
    const mve_pred16_t p3 = vctp32q((uint32_t)(nc > 12 ? nc - 12 : 0));
    int32_t px, t;
    for (px = 0; px <= (two ? 1 : 0); ++px) {
        const int32_t poff = px ? (int32_t)pstep : 0; /* the pair's second pixel: interior, pstep further */
        int32_t *acc = (int32_t *)(px ? acc1 : acc0);
        int32x4_t s0 = vdupq_n_s32(0), s1 = s0, s2 = s0, s3 = s0;
        const int8_t *w = wk;
        if (nc == 16) { /* a full block: no predication, so no predicate moves in the loop */
            for (t = 0; t < ntaps; ++t) {
                const int8_t *x = xp[t] + poff;
                s0 = vaddq_s32(s0, vmulq_s32(vldrbq_s32(x), vldrbq_s32(w)));
                s1 = vaddq_s32(s1, vmulq_s32(vldrbq_s32(x + 4), vldrbq_s32(w + 4)));
                s2 = vaddq_s32(s2, vmulq_s32(vldrbq_s32(x + 8), vldrbq_s32(w + 8)));
                s3 = vaddq_s32(s3, vmulq_s32(vldrbq_s32(x + 12), vldrbq_s32(w + 12)));
                w += oc;
            }
            vstrwq_s32(acc, s0);
            vstrwq_s32(acc + 4, s1);
            vstrwq_s32(acc + 8, s2);
            vstrwq_s32(acc + 12, s3);
            continue;
        }
        for (t = 0; t < ntaps; ++t) {
            const int8_t *x = xp[t] + poff;
            s0 = vaddq_s32(s0, vmulq_s32(vldrbq_z_s32(x, p0), vldrbq_z_s32(w, p0)));
            s1 = vaddq_s32(s1, vmulq_s32(vldrbq_z_s32(x + 4, p1), vldrbq_z_s32(w + 4, p1)));
            s2 = vaddq_s32(s2, vmulq_s32(vldrbq_z_s32(x + 8, p2), vldrbq_z_s32(w + 8, p2)));
            s3 = vaddq_s32(s3, vmulq_s32(vldrbq_z_s32(x + 12, p3), vldrbq_z_s32(w + 12, p3)));
            w += oc;
        }
        vstrwq_p_s32(acc, s0, p0);
        vstrwq_p_s32(acc + 4, s1, p1);
        vstrwq_p_s32(acc + 8, s2, p2);
        vstrwq_p_s32(acc + 12, s3, p3);
    }
}

/*
 * Bias, requantization and store of one pixel's block of nc channel sums, four channels per vector, same bytes as
 * dw_out_s8_plain: each lane gathers its own channel's fields from rq (one gather per field, lanes sizeof(tgrs_rq)
 * apart) and takes tgrs_rq_fast_lanes, whose arithmetic is tgrs_rq_s8_fast's; a group with a channel the fast form
 * does not cover (mult <= 0, tflm numerics, shift above -2) goes through the scalar tgrs_rq_s8. The tail group is
 * predicated: nothing is read or written past nc.
 */
static void dw_out_s8_mve(int8_t *o, const uint32_t *acc, const int32_t *bias, const tgrs_rq *rq, int32_t nc,
                          int32_t lo, int32_t hi)
{
    const uint32x4_t off = vmulq_n_u32(vidupq_n_u32(0u, 1), (uint32_t)sizeof(tgrs_rq));
    int32_t cc, k;
    for (cc = 0; cc < nc; cc += 4) {
        const mve_pred16_t p = vctp32q((uint32_t)(nc - cc));
        const char *r = (const char *)&rq[cc];
        const int32x4_t m = vldrwq_gather_offset_z_s32((const int32_t *)(r + offsetof(tgrs_rq, mult)), off, p);
        const int32x4_t fast = vldrwq_gather_offset_z_s32((const int32_t *)(r + offsetof(tgrs_rq, fast)), off, p);
        const mve_pred16_t ok = vcmpgtq_m_n_s32(m, 0, vcmpneq_m_n_s32(fast, 0, p));
        if (ok == p) {
            const uint32x4_t add2 = vldrwq_gather_offset_z_u32((const uint32_t *)(r + offsetof(tgrs_rq, add2)), off, p);
            const int32x4_t n2 = vldrwq_gather_offset_z_s32((const int32_t *)(r + offsetof(tgrs_rq, n2)), off, p);
            const int32x4_t sub2 = vldrwq_gather_offset_z_s32((const int32_t *)(r + offsetof(tgrs_rq, sub2)), off, p);
            const int32x4_t a = vaddq_s32(vldrwq_z_s32((const int32_t *)acc + cc, p), vldrwq_z_s32(bias + cc, p));
            vstrbq_p_s32(o + cc, tgrs_rq_fast_lanes(a, m, add2, vnegq_s32(n2), sub2, lo, hi), p);
        } else {
            for (k = cc; k < nc && k < cc + 4; ++k) {
                o[k] = tgrs_rq_s8(&rq[k], tgrs_wrap_add((int32_t)acc[k], bias[k]), lo, hi);
            }
        }
    }
}

#endif /* TGRS_HAVE_MVE */
#endif /* TGRS_DWCONV_MVE_H */
