/*
 * fc_dsp.h - fc's int8 dot products on the Cortex-M DSP extension (TGRS_ISA_DSP, target.h); part of fc.c, which
 * includes it after its plain loops. Plain [OC][K] weights go two rows at a time (fc_dot2_s8_dsp); weights the
 * compiler arranged FC_ROWS4 for this core (`--target cortex-m4`, docs/format.md) four rows at a time
 * (fc_dot4r_s8_dsp).
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

/*
 * s[r] = x . row r of an FC_ROWS4 block at w (fc.c's fc_dot4r_s8_plain says where each weight sits; w is 4-byte
 * aligned). Each group of four features is 16 bytes, four bytes per row, so one pointer walks the block and two
 * LDRDs fetch it: per four k, one input load and two extensions shared by the four rows, then per row two
 * extensions and two SMLADs (23 instructions per 16 MACs, against 30 for two fc_dot2_s8_dsp calls), with four
 * accumulators, three pointers and five temporaries in registers.
 */
static void fc_dot4r_s8_dsp(const int8_t *x, const int8_t *w, int32_t k, int32_t s[4])
{
    const int32_t k4 = k & ~3, t = k - k4;
    const int8_t *xp = x, *wp = w;
    const int8_t *const xend = x + k4;
    const int8_t *tail = w + 4 * k4;
    int32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0, xv, xo, v0, v1, u, i;
    if (xp != xend) {
        __asm__("1:\n\t"
                "ldr %[xv], [%[xp]], #4\n\t"
                "ldrd %[v0], %[v1], [%[wp]], #8\n\t"
                "sxtb16 %[xo], %[xv], ror #8\n\t"
                "sxtb16 %[xv], %[xv]\n\t"
                "sxtb16 %[u], %[v0], ror #8\n\t"
                "sxtb16 %[v0], %[v0]\n\t"
                "smlad %[s0], %[xv], %[v0], %[s0]\n\t"
                "smlad %[s0], %[xo], %[u], %[s0]\n\t"
                "sxtb16 %[u], %[v1], ror #8\n\t"
                "sxtb16 %[v1], %[v1]\n\t"
                "smlad %[s1], %[xv], %[v1], %[s1]\n\t"
                "smlad %[s1], %[xo], %[u], %[s1]\n\t"
                "ldrd %[v0], %[v1], [%[wp]], #8\n\t"
                "sxtb16 %[u], %[v0], ror #8\n\t"
                "sxtb16 %[v0], %[v0]\n\t"
                "smlad %[s2], %[xv], %[v0], %[s2]\n\t"
                "smlad %[s2], %[xo], %[u], %[s2]\n\t"
                "sxtb16 %[u], %[v1], ror #8\n\t"
                "sxtb16 %[v1], %[v1]\n\t"
                "smlad %[s3], %[xv], %[v1], %[s3]\n\t"
                "smlad %[s3], %[xo], %[u], %[s3]\n\t"
                "cmp %[xp], %[end]\n\t"
                "bne 1b"
                : [s0] "+r"(s0), [s1] "+r"(s1), [s2] "+r"(s2), [s3] "+r"(s3), [xp] "+r"(xp), [wp] "+r"(wp),
                  [xv] "=&r"(xv), [xo] "=&r"(xo), [v0] "=&r"(v0), [v1] "=&r"(v1), [u] "=&r"(u)
                : [end] "r"(xend)
                : "cc", "memory");
    }
    for (i = 0; i < t; ++i) { /* the K - K4 < 4 tail values of each row */
        const int32_t v = x[k4 + i];
        s0 = tgrs_wrap_add(s0, v * (int32_t)tail[i]);
        s1 = tgrs_wrap_add(s1, v * (int32_t)tail[t + i]);
        s2 = tgrs_wrap_add(s2, v * (int32_t)tail[2 * t + i]);
        s3 = tgrs_wrap_add(s3, v * (int32_t)tail[3 * t + i]);
    }
    s[0] = s0;
    s[1] = s1;
    s[2] = s2;
    s[3] = s3;
}

#endif /* TGRS_ISA_DSP */

#endif /* TGRS_FC_DSP_H */
