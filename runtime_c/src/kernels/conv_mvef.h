/*
 * conv_mvef.h - the float32 conv GEMM on Helium with float lanes (Cortex-M55/M85; target.h TGRS_FISA_MVEF). Included
 * by conv.c only.
 *
 * Register block: two patch rows x one CONV_NR = 8 channel panel, four accumulator vectors (lanes are channels), the
 * panel row as two vectors, the two inputs as scalars in core registers: per k two VLDRW, two LDR and four VFMA
 * (vector by scalar) for 16 MACs, 6 of the 8 Q registers. The four patch rows of conv.c's pixel block are two calls
 * per panel. Each output still sums its k in order from +0 and then adds the bias, but every step is one fused
 * multiply-add (one rounding, where the plain loop rounds the product and the sum): results differ from the plain
 * variant in the last bits, within the float tolerance (docs/numerics.md). Bias, clamp (compare and select, NaN kept
 * as the plain loop keeps it) and the store of a short panel (VCTP-predicated) are vector operations too. Written from
 * the Arm MVE intrinsics reference.
 */
#ifndef TGRS_CONV_MVEF_H
#define TGRS_CONV_MVEF_H

#if TGRS_FISA == TGRS_FISA_MVEF

/* The clamp bounds; a bound that is infinite is not applied. */
typedef struct conv_bounds_mvef {
    float32x4_t lo, hi;
    int has_lo, has_hi;
} conv_bounds_mvef;

/* clamp(acc + bias) for nc <= 4 channels (VMAXNM/VMINNM); a short store is predicated. */
static inline void conv_out4_mvef(float *o, float32x4_t acc, float32x4_t bias, const conv_bounds_mvef *cb,
                                  int32_t nc)
{
    float32x4_t v = vaddq_f32(acc, bias);
    if (cb->has_lo) {
        v = vmaxnmq_f32(v, cb->lo);
    }
    if (cb->has_hi) {
        v = vminnmq_f32(v, cb->hi);
    }
    if (nc >= 4) {
        vst1q_f32(o, v);
    } else if (nc > 0) {
        vstrwq_p_f32(o, v, vctp32q((uint32_t)nc));
    }
}

/*
 * o0[j] = clamp(bias[j] + sum_k a0[k] * b[k][j]) for j < ncol (<= 8), and o1 likewise from a1 when o1 is not NULL.
 * b: the panel, K rows of 8; bias: the panel's ncol values (a short panel's are loaded predicated).
 */
static inline void conv_mk2_mvef(int32_t k, const float *a0, const float *a1, const float *b, const float *bias,
                                 int32_t ncol, const conv_bounds_mvef *cb, float *o0, float *o1)
{
    float32x4_t c00 = vdupq_n_f32(0.0f), c01 = c00, c10 = c00, c11 = c00;
    float32x4_t bias0, bias1;
    int32_t kk;
    for (kk = 0; kk < k; ++kk) {
        const float32x4_t b0 = vld1q_f32(b), b1 = vld1q_f32(b + 4);
        const float x0 = a0[kk], x1 = a1[kk];
        c00 = vfmaq_n_f32(c00, b0, x0);
        c01 = vfmaq_n_f32(c01, b1, x0);
        c10 = vfmaq_n_f32(c10, b0, x1);
        c11 = vfmaq_n_f32(c11, b1, x1);
        b += CONV_NR;
    }
    if (ncol == CONV_NR) {
        bias0 = vld1q_f32(bias);
        bias1 = vld1q_f32(bias + 4);
    } else {
        bias0 = vldrwq_z_f32(bias, vctp32q((uint32_t)ncol));
        bias1 = vldrwq_z_f32(bias + 4, vctp32q((uint32_t)(ncol > 4 ? ncol - 4 : 0)));
    }
    conv_out4_mvef(o0, c00, bias0, cb, ncol);
    conv_out4_mvef(o0 + 4, c01, bias1, cb, ncol - 4);
    if (o1 != NULL) {
        conv_out4_mvef(o1, c10, bias0, cb, ncol);
        conv_out4_mvef(o1 + 4, c11, bias1, cb, ncol - 4);
    }
}

/* conv_f32's pixel blocks, patch rows and tail rows; each panel is two conv_mk2_mvef calls (rows 0-1, 2-3). */
static int conv_f32_mvef(const tgrs_op_ctx *ctx, const conv_geom *cg)
{
    const float *wt = (const float *)ctx->c[TGRS_C_CONV_WEIGHT];
    const float *bias = (const float *)ctx->c[TGRS_C_CONV_BIAS];
    const float lo = tgrs_p_f32(ctx, TGRS_P_CONV_FMIN), hi = tgrs_p_f32(ctx, TGRS_P_CONV_FMAX);
    conv_bounds_mvef cb;
    const float *in = (const float *)ctx->in[0]->data;
    float *out = (float *)ctx->out->data;
    float *scr = (float *)ctx->scratch;
    const int64_t npix = (int64_t)cg->out_rows * cg->ow;
    const int64_t in_img = (int64_t)cg->in_rows * cg->wd * cg->c;
    int32_t n, g, i, pan;
    int64_t q0;
    cb.lo = vdupq_n_f32(lo);
    cb.hi = vdupq_n_f32(hi);
    cb.has_lo = lo >= -3.402823466e38f; /* not -inf (nor NaN) */
    cb.has_hi = hi <= 3.402823466e38f;
    for (n = 0; n < cg->n; ++n) {
        const float *img = in + n * in_img;
        float *oimg = out + n * npix * cg->oc;
        for (g = 0; g < cg->g; ++g) {
            for (q0 = 0; q0 < npix; q0 += CONV_MR) {
                const float *a[CONV_MR];
                float *o[CONV_MR];
                const int32_t nv = (npix - q0 < CONV_MR) ? (int32_t)(npix - q0) : CONV_MR;
                for (i = 0; i < CONV_MR; ++i) {
                    int32_t oh, ow;
                    const int64_t q = q0 + (i < nv ? i : nv - 1); /* tail rows repeat the last pixel, unstored */
                    conv_pixel(cg, q, &oh, &ow);
                    o[i] = oimg + q * cg->oc + (int64_t)g * cg->ocg;
                    if (cg->direct) {
                        a[i] = img + conv_in_off(cg, oh * cg->w.sh, ow * cg->w.sw) + (int64_t)g * cg->icg;
                    } else if (i < nv) {
                        conv_im2col_f32(cg, img, oh, ow, g, scr + (int64_t)i * cg->k);
                        a[i] = scr + (int64_t)i * cg->k;
                    } else {
                        a[i] = a[nv - 1];
                    }
                }
                for (pan = 0; pan < cg->npan; ++pan) {
                    const int32_t oc0 = pan * CONV_NR;
                    const int32_t ncol = (cg->ocg - oc0 < CONV_NR) ? cg->ocg - oc0 : CONV_NR;
                    const float *bs = bias + (int64_t)g * cg->ocg + oc0;
                    const float *b = wt + ((int64_t)g * cg->npan + pan) * cg->k * CONV_NR;
                    for (i = 0; i < nv; i += 2) {
                        conv_mk2_mvef(cg->k, a[i], a[i + 1], b, bs, ncol, &cb, o[i] + oc0,
                                      i + 1 < nv ? o[i + 1] + oc0 : NULL);
                    }
                }
            }
        }
    }
    return TGRS_OK;
}

#endif /* TGRS_FISA_MVEF */

#endif /* TGRS_CONV_MVEF_H */
