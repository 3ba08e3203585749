/*
 * conv_mvef.h - the float32 conv GEMM on Helium with float lanes (Cortex-M55/M85; target.h TGRS_FISA_MVEF). Included
 * by conv.c only.
 *
 * Register block: two patch rows x one CONV_NR = 8 channel panel, four accumulator vectors in q0-q3 (lanes are
 * channels), the panel row as two vectors in q4-q5, the inputs as scalars in core registers: per two k steps four
 * VLDRW, two LDRD and eight VFMA (vector by scalar) for 32 MACs, in inline assembly (written with intrinsics, GCC 12
 * spills inside the loop). The four patch rows of conv.c's pixel block are two calls per panel. Each output still
 * sums its k in order from +0 and then adds the bias, but every step is one fused multiply-add (one rounding, where
 * the plain loop rounds the product and the sum): results differ from the plain variant in the last bits, within the
 * float tolerance (docs/numerics.md). Bias, clamp (VMAXNM/VMINNM with a finite bound: a NaN sum becomes the bound,
 * where the plain loop keeps NaN) and the store of a short panel (VCTP-predicated) are vector operations. Written
 * from the Armv8.1-M architecture manual's MVE instruction descriptions and the Arm MVE intrinsics reference.
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
    float acc[16];
    float32x4_t c00, c01, c10, c11, bias0, bias1;
    int32_t pairs = k >> 1, x0, x1, y0, y1;
    const int32_t odd = k & 1;
    /* Assembly: written with intrinsics, GCC 12 spills an accumulator or a weight vector inside the loop. */
    __asm__ volatile(
        "vmov.i32 q0, #0\n\t"
        "vmov.i32 q1, #0\n\t"
        "vmov.i32 q2, #0\n\t"
        "vmov.i32 q3, #0\n\t"
        "cmp %[pairs], #0\n\t"
        "beq 2f\n"
        "1:\n\t"
        "ldrd %[x0], %[y0], [%[a0]], #8\n\t"
        "ldrd %[x1], %[y1], [%[a1]], #8\n\t"
        "vldrw.32 q4, [%[b]]\n\t"
        "vldrw.32 q5, [%[b], #16]\n\t"
        "vfma.f32 q0, q4, %[x0]\n\t"
        "vfma.f32 q1, q5, %[x0]\n\t"
        "vfma.f32 q2, q4, %[x1]\n\t"
        "vfma.f32 q3, q5, %[x1]\n\t"
        "vldrw.32 q4, [%[b], #32]\n\t"
        "vldrw.32 q5, [%[b], #48]\n\t"
        "adds %[b], %[b], #64\n\t"
        "vfma.f32 q0, q4, %[y0]\n\t"
        "vfma.f32 q1, q5, %[y0]\n\t"
        "vfma.f32 q2, q4, %[y1]\n\t"
        "vfma.f32 q3, q5, %[y1]\n\t"
        "subs %[pairs], %[pairs], #1\n\t"
        "bne 1b\n"
        "2:\n\t"
        "cmp %[odd], #0\n\t"
        "beq 3f\n\t"
        "ldr %[x0], [%[a0]]\n\t"
        "ldr %[x1], [%[a1]]\n\t"
        "vldrw.32 q4, [%[b]]\n\t"
        "vldrw.32 q5, [%[b], #16]\n\t"
        "vfma.f32 q0, q4, %[x0]\n\t"
        "vfma.f32 q1, q5, %[x0]\n\t"
        "vfma.f32 q2, q4, %[x1]\n\t"
        "vfma.f32 q3, q5, %[x1]\n\t"
        "3:\n\t"
        "vstrw.32 q0, [%[acc]]\n\t"
        "vstrw.32 q1, [%[acc], #16]\n\t"
        "vstrw.32 q2, [%[acc], #32]\n\t"
        "vstrw.32 q3, [%[acc], #48]\n\t"
        : [a0] "+r"(a0), [a1] "+r"(a1), [b] "+r"(b), [pairs] "+r"(pairs), [x0] "=&r"(x0), [x1] "=&r"(x1),
          [y0] "=&r"(y0), [y1] "=&r"(y1)
        : [odd] "r"(odd), [acc] "r"(acc)
        : "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "s12", "s13", "s14", "s15",
          "s16", "s17", "s18", "s19", "s20", "s21", "s22", "s23", "memory", "cc");
    c00 = vld1q_f32(acc);
    c01 = vld1q_f32(acc + 4);
    c10 = vld1q_f32(acc + 8);
    c11 = vld1q_f32(acc + 12);
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
                const int32_t nv = conv_f32_rows(cg, img, oimg, g, q0, scr, a, o);
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
