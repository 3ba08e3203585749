/*
 * fc_mve.h - fc's int8 dot products on Helium (TGRS_ISA_MVE, target.h); part of fc.c, which includes it after its
 * plain loops. Weights stay in the generic [OC][K] order: no plan change.
 *
 * VMLADAVA.S8 multiplies 16 int8 lanes pairwise and adds all 16 products to a 32-bit scalar (wrapping modulo 2^32,
 * like the plain loop's block sums): per 16 k, one input load shared by both weight rows, then one load and one
 * VMLADAVA per row. The k % 16 tail is one VCTP-predicated step: the zeroing loads leave the lanes past the end 0,
 * so they add nothing, and they read no byte past the row.
 */
#ifndef TGRS_FC_MVE_H
#define TGRS_FC_MVE_H

#if TGRS_HAVE_MVE

/* s[0] = x . w[0, k), s[1] = x . w[k, 2k) (int32, wrapping); with two == 0 only s[0] (see fc_dsp.h). */
static void fc_dot2_s8_mve(const int8_t *x, const int8_t *w, int32_t k, int two, int32_t s[2])
{
    const int8_t *w1 = two ? w + k : w;
    int32_t s0 = 0, s1 = 0, i = 0;
    for (; i + 16 <= k; i += 16) {
        const int8x16_t xv = vldrbq_s8(x + i);
        s0 = vmladavaq_s8(s0, xv, vldrbq_s8(w + i));
        s1 = vmladavaq_s8(s1, xv, vldrbq_s8(w1 + i));
    }
    if (i < k) {
        const mve_pred16_t p = vctp8q((uint32_t)(k - i));
        const int8x16_t xv = vldrbq_z_s8(x + i, p);
        s0 = vmladavaq_s8(s0, xv, vldrbq_z_s8(w + i, p));
        s1 = vmladavaq_s8(s1, xv, vldrbq_z_s8(w1 + i, p));
    }
    s[0] = s0;
    s[1] = s1;
}

#endif /* TGRS_HAVE_MVE */

#endif /* TGRS_FC_MVE_H */
