/*
 * conv_mve.h - the int8 conv GEMM on Helium (TGRS_HAVE_MVE, target.h); part of conv.c, which includes it after its
 * geometry helpers. Weights stay in the generic [G][OCg][K] order.
 *
 * VMLADAVA.S8 multiplies sixteen int8 pairs and adds all sixteen products to a 32-bit scalar: a dot product needs no
 * widening at all. The patches of CONV_MR = 4 output pixels are int8 rows (the scratch the plan reserves holds
 * CONV_MR * K int16, twice what they need); a 1x1 unpadded conv of one group points its rows straight into the input.
 * Per 16 k: one tail predicate (VCTP, so K needs no multiple of 16 and nothing is read past a row), one weight
 * load, four row loads, four VMLADAVA: 64 MACs. The four pixels' sums of a channel are requantized together
 * (requant_mve.h, bit-identical to tgrs_rq_s8_fast) and stored with one scatter when the pixels are consecutive.
 * The sums are exact int32 (K <= CONV_MAX_PATCH), so they equal the plain loops' whatever the order.
 */
#ifndef TGRS_CONV_MVE_H
#define TGRS_CONV_MVE_H

#if TGRS_HAVE_MVE

#include "requant_mve.h"

/* The int8 patch of output pixel (oh, ow), group g, into dst (K values; padded taps hold the input zero point). */
static void conv_mve_gather(const conv_geom *cg, const int8_t *img, int32_t oh, int32_t ow, int32_t g, int32_t zp,
                            int8_t *dst)
{
    const tgrs_window *w = &cg->w;
    int32_t i, j;
    for (i = 0; i < w->kh; ++i) {
        const int32_t ih = oh * w->sh - w->pt + i * w->dh;
        for (j = 0; j < w->kw; ++j) {
            const int32_t iw = ow * w->sw - w->pl + j * w->dw;
            if (ih >= 0 && ih < cg->h && iw >= 0 && iw < cg->wd) {
                memcpy(dst, img + conv_in_off(cg, ih, iw) + (int64_t)g * cg->icg, (size_t)cg->icg);
            } else {
                memset(dst, (int)(int8_t)zp, (size_t)cg->icg);
            }
            dst += cg->icg;
        }
    }
}

/* s[r] = sum_k a_r[k] * w[k], r < 4: whole 16-value chunks unpredicated, then one predicated tail (VCTP: nothing
 * is read past a row). */
static inline void conv_mve_dot4(const int8_t *a0, const int8_t *a1, const int8_t *a2, const int8_t *a3,
                                 const int8_t *w, int32_t k, int32_t s[4])
{
    int32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    const int8_t *const end = w + (k & ~15);
    while (w != end) {
        const int8x16_t wv = vldrbq_s8(w);
        s0 = vmladavaq_s8(s0, vldrbq_s8(a0), wv);
        s1 = vmladavaq_s8(s1, vldrbq_s8(a1), wv);
        s2 = vmladavaq_s8(s2, vldrbq_s8(a2), wv);
        s3 = vmladavaq_s8(s3, vldrbq_s8(a3), wv);
        w += 16;
        a0 += 16;
        a1 += 16;
        a2 += 16;
        a3 += 16;
    }
    if ((k & 15) != 0) {
        const mve_pred16_t p = vctp8q((uint32_t)(k & 15));
        const int8x16_t wv = vldrbq_z_s8(w, p);
        s0 = vmladavaq_s8(s0, vldrbq_z_s8(a0, p), wv);
        s1 = vmladavaq_s8(s1, vldrbq_z_s8(a1, p), wv);
        s2 = vmladavaq_s8(s2, vldrbq_z_s8(a2, p), wv);
        s3 = vmladavaq_s8(s3, vldrbq_z_s8(a3, p), wv);
    }
    s[0] = s0;
    s[1] = s1;
    s[2] = s2;
    s[3] = s3;
}

static int conv_s8_mve(const tgrs_op_ctx *ctx, const conv_geom *cg)
{
    const int8_t *in = (const int8_t *)ctx->in[0]->data;
    int8_t *out = (int8_t *)ctx->out->data;
    int8_t *scr = (int8_t *)ctx->scratch;
    const int32_t zp_in = ctx->p[TGRS_P_CONV_ZP_IN], zp_out = ctx->p[TGRS_P_CONV_ZP_OUT];
    const int32_t lo = ctx->p[TGRS_P_CONV_ACT_MIN], hi = ctx->p[TGRS_P_CONV_ACT_MAX];
    const int32_t nm = ctx->p[TGRS_P_CONV_NUMERICS];
    const int64_t npix = (int64_t)cg->out_rows * cg->ow;
    const int64_t in_img = (int64_t)cg->in_rows * cg->wd * cg->c;
    const int direct = cg->direct && cg->g == 1;
    const uint32_t offs[4] = {0u, (uint32_t)cg->oc, 2u * (uint32_t)cg->oc, 3u * (uint32_t)cg->oc};
    const uint32x4_t pix_off = vldrwq_u32(offs); /* the 4 pixels' output offsets */
    int32_t n, g, i, oc;
    int64_t q0;
    for (n = 0; n < cg->n; ++n) {
        const int8_t *img = in + n * in_img;
        int8_t *oimg = out + n * npix * cg->oc;
        for (g = 0; g < cg->g; ++g) {
            const int64_t ch0 = (int64_t)g * cg->ocg;
            const int8_t *wt = (const int8_t *)ctx->c[TGRS_C_CONV_WEIGHT] + ch0 * cg->k;
            const int32_t *bias = (const int32_t *)ctx->c[TGRS_C_CONV_BIAS] + ch0;
            const int32_t *mult = (const int32_t *)ctx->c[TGRS_C_CONV_MULT] + ch0;
            const int32_t *shift = (const int32_t *)ctx->c[TGRS_C_CONV_SHIFT] + ch0;
            for (q0 = 0; q0 < npix; q0 += CONV_MR) {
                const int32_t nv = (npix - q0 < CONV_MR) ? (int32_t)(npix - q0) : CONV_MR;
                const int8_t *a[CONV_MR];
                int8_t *o0 = oimg + q0 * cg->oc + ch0;
                for (i = 0; i < CONV_MR; ++i) {
                    int32_t oh, ow;
                    const int64_t q = q0 + (i < nv ? i : nv - 1); /* tail rows repeat the last pixel, unstored */
                    conv_pixel(cg, q, &oh, &ow);
                    if (direct) {
                        a[i] = img + conv_in_off(cg, oh * cg->w.sh, ow * cg->w.sw);
                    } else {
                        conv_mve_gather(cg, img, oh, ow, g, zp_in, scr + (int64_t)i * cg->k);
                        a[i] = scr + (int64_t)i * cg->k;
                    }
                }
                for (oc = 0; oc < cg->ocg; ++oc) {
                    int32_t s[CONV_MR];
                    const tgrs_rq rq = tgrs_rq_make(mult[oc], shift[oc], zp_out, nm);
                    conv_mve_dot4(a[0], a[1], a[2], a[3], wt + (int64_t)oc * cg->k, cg->k, s);
                    if (rq.fast && rq.mult != 0 && nv == CONV_MR) {
                        const int32x4_t acc = vaddq_n_s32(vldrwq_s32(s), bias[oc]); /* wraps like tgrs_wrap_add */
                        vstrbq_scatter_offset_s32(o0 + oc, pix_off, tgrs_rq_fast_x4(&rq, acc, lo, hi));
                    } else {
                        for (i = 0; i < nv; ++i) {
                            o0[(int64_t)i * cg->oc + oc] = tgrs_rq_s8_call(&rq, tgrs_wrap_add(s[i], bias[oc]), lo, hi);
                        }
                    }
                }
            }
        }
    }
    return TGRS_OK;
}

#endif /* TGRS_HAVE_MVE */
#endif /* TGRS_CONV_MVE_H */
