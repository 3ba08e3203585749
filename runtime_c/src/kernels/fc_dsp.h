/*
 * fc_dsp.h - fc's int8 dot products on the Cortex-M DSP extension (TGRS_ISA_DSP, target.h); part of fc.c, which
 * includes it after its plain loops. Weights stay in the generic [OC][K] order: no plan change.
 *
 * SMLAD adds x.lo * y.lo + x.hi * y.hi to an accumulator. One 32-bit load of four int8 values v0..v3 and two
 * sign-extensions give the halfword pairs (v0, v2) (SXTB16) and (v1, v3) (SXTB16 of the word rotated by 8); the
 * input and the weights are extended the same way, so the pairs line up with no shuffling: per four k, one input
 * load and two extensions shared by both weight rows, then per row one load, two extensions and two SMLADs
 * (15 instructions per 8 MACs). SMLAD wraps modulo 2^32 like the plain loop's block sums, so the results are the
 * same int32 whatever the order.
 */
#ifndef TGRS_FC_DSP_H
#define TGRS_FC_DSP_H

#if TGRS_ISA == TGRS_ISA_DSP /* the Helium build has its own loop (fc_mve.h) */

/*
 * s[0] = x . w[0, k), s[1] = x . w[k, 2k) (int32, wrapping). With two == 0 only s[0] is meaningful: the second row
 * is the first again (no read past the weights). The loop over k rounded down to a multiple of four is assembly:
 * GCC 12 does not fold the rotation into SXTB16 (one more instruction per extension). Any alignment.
 */
static void fc_dot2_s8_dsp(const int8_t *x, const int8_t *w, int32_t k, int two, int32_t s[2])
{
    const int8_t *w1 = two ? w + k : w;
    const int8_t *xp = x, *wp0 = w, *wp1 = w1;
    const int8_t *const xend = x + (k & ~3);
    int32_t s0 = 0, s1 = 0, xv, xo, v0, v1, t, i;
    if (xp != xend) {
        __asm__("1:\n\t"
                "ldr %[xv], [%[xp]], #4\n\t"
                "ldr %[v0], [%[w0]], #4\n\t"
                "ldr %[v1], [%[w1]], #4\n\t"
                "sxtb16 %[xo], %[xv], ror #8\n\t"
                "sxtb16 %[xv], %[xv]\n\t"
                "sxtb16 %[t], %[v0], ror #8\n\t"
                "sxtb16 %[v0], %[v0]\n\t"
                "smlad %[s0], %[xv], %[v0], %[s0]\n\t"
                "smlad %[s0], %[xo], %[t], %[s0]\n\t"
                "sxtb16 %[t], %[v1], ror #8\n\t"
                "sxtb16 %[v1], %[v1]\n\t"
                "smlad %[s1], %[xv], %[v1], %[s1]\n\t"
                "smlad %[s1], %[xo], %[t], %[s1]\n\t"
                "cmp %[xp], %[end]\n\t"
                "bne 1b"
                : [s0] "+r"(s0), [s1] "+r"(s1), [xp] "+r"(xp), [w0] "+r"(wp0), [w1] "+r"(wp1), [xv] "=&r"(xv),
                  [xo] "=&r"(xo), [v0] "=&r"(v0), [v1] "=&r"(v1), [t] "=&r"(t)
                : [end] "r"(xend)
                : "cc", "memory");
    }
    for (i = k & ~3; i < k; ++i) {
        s0 = tgrs_wrap_add(s0, (int32_t)x[i] * (int32_t)w[i]);
        s1 = tgrs_wrap_add(s1, (int32_t)x[i] * (int32_t)w1[i]);
    }
    s[0] = s0;
    s[1] = s1;
}

#endif /* TGRS_ISA_DSP */

#endif /* TGRS_FC_DSP_H */
