/*
 * dwconv_dsp.h - the int8 depthwise tap sums on the Cortex-M DSP extension (TGRS_HAVE_DSP, target.h); part of
 * dwconv.c, same contract as dw_taps_s8_plain. Weights stay in the generic [KH][KW][C] order.
 *
 * Depthwise products never sum across channels, so the dual SMLAD does not apply; what the DSP extension saves is
 * the byte loads: one 32-bit load of four channels' inputs and one of their weights, SXTB16 of each word and of it
 * rotated by 8 give the halfword pairs of channels (0, 2) and (1, 3), and SMLABB / SMLATT multiply-accumulate the
 * bottom and the top halves: per tap and four channels 2 loads, 4 extensions, 4 multiply-accumulates (the plain
 * loop needs 8 byte loads and 4 multiply-accumulates). Four channels' sums stay in registers over all the taps.
 * SMLAxy wraps modulo 2^32 like the plain loop's uint32 sums (it only sets the Q flag), so the sums are identical.
 */
#ifndef TGRS_DWCONV_DSP_H
#define TGRS_DWCONV_DSP_H

#if TGRS_ISA == TGRS_ISA_DSP /* the Helium build has its own loop (dwconv_mve.h) */

/* Four channels' sums of one pixel over every tap: x at xp[t] + off, weights at w + t * oc. */
static inline void dw_dsp_quad(const int8_t *const *xp, int32_t off, int32_t ntaps, const int8_t *w, int32_t oc,
                               uint32_t *acc)
{
    int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0, t;
    for (t = 0; t < ntaps; ++t) {
        uint32_t x, k;
        int32_t xe, xo, ke, ko;
        memcpy(&x, xp[t] + off, 4);
        memcpy(&k, w, 4);
        w += oc;
        xe = __sxtb16((int32_t)x);
        xo = __sxtb16((int32_t)(x >> 8));
        ke = __sxtb16((int32_t)k);
        ko = __sxtb16((int32_t)(k >> 8));
        a0 = __smlabb(xe, ke, a0);
        a2 = __smlatt(xe, ke, a2);
        a1 = __smlabb(xo, ko, a1);
        a3 = __smlatt(xo, ko, a3);
    }
    acc[0] = (uint32_t)a0;
    acc[1] = (uint32_t)a1;
    acc[2] = (uint32_t)a2;
    acc[3] = (uint32_t)a3;
}

static void dw_taps_s8_dsp(const int8_t *const *xp, int64_t pstep, int32_t ntaps, const int8_t *wk, int32_t oc,
                           int32_t nc, int two, uint32_t *acc0, uint32_t *acc1)
{
    int32_t px, cc, t;
    for (px = 0; px <= (two ? 1 : 0); ++px) {
        const int32_t poff = px ? (int32_t)pstep : 0; /* the pair's second pixel: interior, pstep further */
        uint32_t *acc = px ? acc1 : acc0;
        for (cc = 0; cc + 4 <= nc; cc += 4) {
            dw_dsp_quad(xp, poff + cc, ntaps, wk + cc, oc, acc + cc);
        }
        for (; cc < nc; ++cc) { /* channels past the last group of four */
            uint32_t s = 0;
            for (t = 0; t < ntaps; ++t) {
                s += (uint32_t)((int32_t)xp[t][poff + cc] * (int32_t)wk[(int64_t)t * oc + cc]);
            }
            acc[cc] = s;
        }
    }
}

#endif /* TGRS_ISA_DSP */
#endif /* TGRS_DWCONV_DSP_H */
