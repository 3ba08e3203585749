/*
 * conv_mve.h - the int8 conv GEMM on Helium (TGRS_HAVE_MVE, target.h); part of conv.c, which includes it after its
 * geometry helpers. Weights stay in the generic [G][OCg][K] order.
 *
 * VMLADAVA.S8 multiplies sixteen int8 pairs and adds all sixteen products to a 32-bit scalar: a dot product needs no
 * widening at all. Register block: one output pixel against four output channels, four accumulators; per 16 k one
 * patch load, four weight loads and four VMLADAVA (64 MACs); whole chunks unpredicated, then one tail predicated by
 * VCTP (K needs no multiple of 16 and nothing is read past a row). The four sums are one vector whose lanes are the
 * four channels, so bias, multiplier and shift are plain vector loads and the requantization is requant_mve.h's
 * tgrs_rq_vec2, four outputs per step, stored as four consecutive bytes (a tail of fewer than four channels is
 * predicated). Pixels come in blocks of up to CONV_MVE_PX: a 1x1 unpadded conv points their rows straight into the
 * input, any other conv gathers their int8 patches into the scratch the plan reserves (CONV_MR * K int16, which is
 * exactly CONV_MVE_PX int8 patches), once per block for every output channel. The channel block's vectors are
 * loaded once per pixel block. The sums are exact int32 (K <= CONV_MAX_PATCH), so they equal the plain loops'
 * whatever the order; an op whose requantization tgrs_rq_vec2 does not cover (tflm numerics, a shift above -1)
 * requantizes each output through the scalar tgrs_rq_s8.
 */
#ifndef TGRS_CONV_MVE_H
#define TGRS_CONV_MVE_H

#if TGRS_HAVE_MVE

#include <stddef.h>

#include "requant_mve.h"

#define CONV_MVE_PX (2 * CONV_MR) /* int8 patches that fit the planned scratch */

/* n bytes from src to dst, 16 per step, the last step predicated (n >= 0). */
static inline void conv_mve_copy(int8_t *dst, const int8_t *src, int32_t n)
{
    for (; n > 0; n -= 16, src += 16, dst += 16) {
        const mve_pred16_t p = vctp8q((uint32_t)n);
        vstrbq_p_s8(dst, vldrbq_z_s8(src, p), p);
    }
}

/* n copies of the byte v at dst. */
static inline void conv_mve_fill(int8_t *dst, int8_t v, int32_t n)
{
    const int8x16_t x = vdupq_n_s8(v);
    for (; n > 0; n -= 16, dst += 16) {
        vstrbq_p_s8(dst, x, vctp8q((uint32_t)n));
    }
}

/* The int8 patch of output pixel (oh, ow), group g, into dst (K values; padded taps hold the input zero point).
 * With one group and no horizontal dilation a kernel row's in-image taps are one contiguous run of the input. */
static void conv_mve_gather(const conv_geom *cg, const int8_t *img, int32_t oh, int32_t ow, int32_t g, int32_t zp,
                            int8_t *dst)
{
    const tgrs_window *w = &cg->w;
    const int32_t icg = cg->icg, run = w->kw * icg;
    const int32_t iw0 = ow * w->sw - w->pl;
    int32_t i, j;
    for (i = 0; i < w->kh; ++i, dst += run) {
        const int32_t ih = oh * w->sh - w->pt + i * w->dh;
        if (ih < 0 || ih >= cg->h) {
            conv_mve_fill(dst, (int8_t)zp, run);
            continue;
        }
        if (cg->g == 1 && w->dw == 1) {
            const int32_t j0 = iw0 < 0 ? -iw0 : 0;                                /* first in-image tap */
            const int32_t j1 = iw0 + w->kw > cg->wd ? cg->wd - iw0 : w->kw;       /* past the last one */
            if (j1 <= j0) {
                conv_mve_fill(dst, (int8_t)zp, run);
                continue;
            }
            conv_mve_fill(dst, (int8_t)zp, j0 * icg);
            conv_mve_copy(dst + j0 * icg, img + conv_in_off(cg, ih, iw0 + j0), (j1 - j0) * icg);
            conv_mve_fill(dst + j1 * icg, (int8_t)zp, (w->kw - j1) * icg);
            continue;
        }
        for (j = 0; j < w->kw; ++j) {
            const int32_t iw = iw0 + j * w->dw;
            if (iw >= 0 && iw < cg->wd) {
                conv_mve_copy(dst + j * icg, img + conv_in_off(cg, ih, iw) + (int64_t)g * icg, icg);
            } else {
                conv_mve_fill(dst + j * icg, (int8_t)zp, icg);
            }
        }
    }
}

/* The int8 patch of output pixel (oh, ow) for one group and no horizontal dilation (conv_mve_gather's common case),
 * in 32-bit offsets (a Helium core's arena is far below 2^31 bytes): per kernel row one run of kw * c input bytes,
 * copied 16 bytes per predicated step, its out-of-image ends and out-of-image rows filled with the input zero point.
 */
static void conv_mve_gather1(const conv_geom *cg, const int8_t *img, int32_t oh, int32_t ow, int32_t zp, int8_t *dst)
{
    const tgrs_window *w = &cg->w;
    const int32_t c = cg->c, run = w->kw * c, rstride = cg->wd * c;
    const int32_t iw0 = ow * w->sw - w->pl, ih0 = oh * w->sh - w->pt;
    const int32_t j0 = iw0 < 0 ? -iw0 : 0;                          /* first in-image tap */
    const int32_t j1 = iw0 + w->kw > cg->wd ? cg->wd - iw0 : w->kw; /* past the last one */
    const int32_t lpad = j0 * c, len = j1 > j0 ? (j1 - j0) * c : 0, rpad = run - lpad - len;
    int32_t soff = (ih0 - cg->in_row0) * rstride + (iw0 + j0) * c; /* a pointer is formed only in the image */
    int32_t i, ih = ih0;
    for (i = 0; i < w->kh; ++i, ih += w->dh, soff += w->dh * rstride, dst += run) {
        if (ih < 0 || ih >= cg->h || len == 0) {
            conv_mve_fill(dst, (int8_t)zp, run);
            continue;
        }
        if (lpad > 0) {
            conv_mve_fill(dst, (int8_t)zp, lpad);
        }
        conv_mve_copy(dst + lpad, img + soff, len);
        if (rpad > 0) {
            conv_mve_fill(dst + lpad + len, (int8_t)zp, rpad);
        }
    }
}

/* The four sums sum_k x[k] * w_j[k] (weight rows w0..w3) as one vector, lane j for row j. */
static inline int32x4_t conv_mve_dot4(const int8_t *x, const int8_t *w0, const int8_t *w1, const int8_t *w2,
                                      const int8_t *w3, int32_t k)
{
    int32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int32_t n = k >> 4;
    int32x4_t v;
    for (; n > 0; --n) {
        const int8x16_t xv = vldrbq_s8(x);
        s0 = vmladavaq_s8(s0, xv, vldrbq_s8(w0));
        s1 = vmladavaq_s8(s1, xv, vldrbq_s8(w1));
        s2 = vmladavaq_s8(s2, xv, vldrbq_s8(w2));
        s3 = vmladavaq_s8(s3, xv, vldrbq_s8(w3));
        x += 16;
        w0 += 16;
        w1 += 16;
        w2 += 16;
        w3 += 16;
    }
    if ((k & 15) != 0) {
        const mve_pred16_t p = vctp8q((uint32_t)(k & 15));
        const int8x16_t xv = vldrbq_z_s8(x, p);
        s0 = vmladavaq_s8(s0, xv, vldrbq_z_s8(w0, p));
        s1 = vmladavaq_s8(s1, xv, vldrbq_z_s8(w1, p));
        s2 = vmladavaq_s8(s2, xv, vldrbq_z_s8(w2, p));
        s3 = vmladavaq_s8(s3, xv, vldrbq_z_s8(w3, p));
    }
    v = vdupq_n_s32(s0);
    v = vsetq_lane_s32(s1, v, 1);
    v = vsetq_lane_s32(s2, v, 2);
    return vsetq_lane_s32(s3, v, 3);
}

/* What conv_mve_px4 reads of the op (offsets fixed: the assembly reads them). */
typedef struct conv_mve_opf {
    int32_t kt, nf; /* K % 16, K / 16 */
    int32_t zp, lo, hi;
} conv_mve_opf;

typedef char conv_mve_opf_offsets_are_fixed[(offsetof(conv_mve_opf, nf) == 4 && offsetof(conv_mve_opf, hi) == 16)
                                             ? 1 : -1];

/*
 * One pixel's patch x against a full block of four weight rows (w[0..3]), requantized and stored as four bytes at o,
 * in assembly: GCC 12 reloads the row pointers and the requantization operands from the stack for every pixel. The
 * K % 16 values come first (one VCTP-predicated chunk with zeroing loads; none when K is a multiple of 16), then the
 * whole 16-value chunks in a low-overhead loop (WLS/LE): per chunk one patch load, four weight loads and four VMLADAVA.
 * The four sums become one vector (lane j row j), then bias, tgrs_rq_vec2 with the doubled multipliers m2 and the
 * shifts sh, the zero point and the clamp. The sums are exact (any order).
 */
static inline void conv_mve_px4(const int8_t *x, const int8_t *const *w, int32x4_t bias, uint32x4_t m2,
                                int32x4_t sh, const conv_mve_opf *f, int8_t *o)
{
    const int8_t *w0 = w[0], *w1 = w[1], *w2 = w[2], *w3 = w[3];
    int32_t a0, a1, a2, a3;
    int8x16_t xq, wq;
    int32x4_t acc, u;
    __asm__ volatile(
        "ldr %[a3], [%[f]]\n\t"
        "cmp %[a3], #0\n\t"
        "bne 3f\n\t"
        "mov %[a0], #0\n\t"
        "mov %[a1], #0\n\t"
        "mov %[a2], #0\n\t"
        "b 4f\n"
        "3:\n\t"
        "vctp.8 %[a3]\n\t"
        "vpstt\n\t"
        "vldrbt.8 %q[xq], [%[x]]\n\t"
        "vldrbt.8 %q[wq], [%[w0]]\n\t"
        "vmladav.s8 %[a0], %q[xq], %q[wq]\n\t"
        "vpst\n\t"
        "vldrbt.8 %q[wq], [%[w1]]\n\t"
        "vmladav.s8 %[a1], %q[xq], %q[wq]\n\t"
        "vpst\n\t"
        "vldrbt.8 %q[wq], [%[w2]]\n\t"
        "vmladav.s8 %[a2], %q[xq], %q[wq]\n\t"
        "add %[x], %[x], %[a3]\n\t"
        "add %[w0], %[w0], %[a3]\n\t"
        "add %[w1], %[w1], %[a3]\n\t"
        "add %[w2], %[w2], %[a3]\n\t"
        "vpst\n\t"
        "vldrbt.8 %q[wq], [%[w3]]\n\t"
        "add %[w3], %[w3], %[a3]\n\t"
        "vmladav.s8 %[a3], %q[xq], %q[wq]\n"
        "4:\n\t"
        "ldr lr, [%[f], #4]\n\t"
        "wls lr, lr, 2f\n"
        "1:\n\t"
        "vldrb.8 %q[xq], [%[x]], #16\n\t"
        "vldrb.8 %q[wq], [%[w0]], #16\n\t"
        "vmladava.s8 %[a0], %q[xq], %q[wq]\n\t"
        "vldrb.8 %q[wq], [%[w1]], #16\n\t"
        "vmladava.s8 %[a1], %q[xq], %q[wq]\n\t"
        "vldrb.8 %q[wq], [%[w2]], #16\n\t"
        "vmladava.s8 %[a2], %q[xq], %q[wq]\n\t"
        "vldrb.8 %q[wq], [%[w3]], #16\n\t"
        "vmladava.s8 %[a3], %q[xq], %q[wq]\n\t"
        "le lr, 1b\n"
        "2:\n\t"
        "vmov.32 %q[acc][0], %[a0]\n\t"
        "vmov.32 %q[acc][1], %[a1]\n\t"
        "vmov.32 %q[acc][2], %[a2]\n\t"
        "vmov.32 %q[acc][3], %[a3]\n\t"
        "vadd.i32 %q[acc], %q[acc], %q[bias]\n\t"
        "vabs.s32 %q[u], %q[acc]\n\t"
        "vmulh.u32 %q[u], %q[u], %q[m2]\n\t"
        "vrshl.u32 %q[u], %q[u], %q[sh]\n\t"
        "vshr.s32 %q[acc], %q[acc], #31\n\t"
        "veor %q[u], %q[u], %q[acc]\n\t"
        "vsub.i32 %q[acc], %q[u], %q[acc]\n\t"
        "ldr %[a0], [%[f], #8]\n\t"
        "vadd.i32 %q[acc], %q[acc], %[a0]\n\t"
        "ldr %[a0], [%[f], #12]\n\t"
        "vdup.32 %q[u], %[a0]\n\t"
        "vmax.s32 %q[acc], %q[acc], %q[u]\n\t"
        "ldr %[a0], [%[f], #16]\n\t"
        "vdup.32 %q[u], %[a0]\n\t"
        "vmin.s32 %q[acc], %q[acc], %q[u]\n\t"
        "vstrb.32 %q[acc], [%[o]]"
        : [a0] "=&Te"(a0), [a1] "=&Te"(a1), [a2] "=&Te"(a2), [a3] "=&Te"(a3), [xq] "=&w"(xq), [wq] "=&w"(wq),
          [acc] "=&w"(acc), [u] "=&w"(u), [x] "+r"(x), [w0] "+r"(w0), [w1] "+r"(w1), [w2] "+r"(w2), [w3] "+r"(w3)
        : [bias] "w"(bias), [m2] "w"(m2), [sh] "w"(sh), [f] "r"(f), [o] "l"(o)
        : "cc", "memory", "lr");
}

/* What conv_mve_px8_k27 reads of a block of eight channels (offsets fixed: the assembly reads them): the bias, the
 * doubled multipliers and the shifts of channels 0-3 and 4-7, then the zero point and the clamp bounds. */
typedef struct conv_mve_f8 {
    int32x4_t b0, b1;   /* +0, +16 */
    uint32x4_t m0, m1;  /* +32, +48 */
    int32x4_t s0, s1;   /* +64, +80 */
    int32_t zp, lo, hi; /* +96, +100, +104 */
} conv_mve_f8;

typedef char conv_mve_f8_offsets_are_fixed[(offsetof(conv_mve_f8, s0) == 64 && offsetof(conv_mve_f8, zp) == 96 &&
                                            offsetof(conv_mve_f8, hi) == 104) ? 1 : -1];

/* Requantize the four sums in Q register A with the fields at offsets B (bias), M and S of f, zero point (a1) and
 * clamp to [a2, a3] (scratch w, t), and store them as four bytes at o, D being the store's offset. */
#define CONV_MVE_RQ4(A, B, M, S, D)                                                                               \
    "vldrw.32 %q[w], [%[f], #" #B "]\n\t"                                                                          \
    "vadd.i32 %q[" A "], %q[" A "], %q[w]\n\t"                                                                     \
    "vldrw.32 %q[w], [%[f], #" #M "]\n\t"                                                                          \
    "vabs.s32 %q[t], %q[" A "]\n\t"                                                                                \
    "vmulh.u32 %q[t], %q[t], %q[w]\n\t"                                                                            \
    "vldrw.32 %q[w], [%[f], #" #S "]\n\t"                                                                          \
    "vrshl.u32 %q[t], %q[t], %q[w]\n\t"                                                                            \
    "vshr.s32 %q[" A "], %q[" A "], #31\n\t"                                                                       \
    "veor %q[t], %q[t], %q[" A "]\n\t"                                                                             \
    "vsub.i32 %q[" A "], %q[t], %q[" A "]\n\t"                                                                     \
    "vadd.i32 %q[" A "], %q[" A "], %[a1]\n\t"                                                                     \
    "vdup.32 %q[w], %[a2]\n\t"                                                                                     \
    "vmax.s32 %q[" A "], %q[" A "], %q[w]\n\t"                                                                     \
    "vdup.32 %q[w], %[a3]\n\t"                                                                                     \
    "vmin.s32 %q[" A "], %q[" A "], %q[w]\n\t"                                                                     \
    "vstrb.32 %q[" A "], [%[o]" D "]\n\t"

/*
 * One pixel's 27-value patch x (a 3x3 window over 3 channels: the first layer of an image model) against eight
 * weight rows (27 bytes apart from w0), requantized and stored as eight bytes at o, in assembly: the rows are reached
 * with immediate offsets from w0 and w0 + 108, so each patch chunk is loaded once for eight channels; the first 16
 * values unpredicated, the last 11 predicated (VCTP, zeroing loads); eight VMLADAV(A) sums moved into two vectors and
 * requantized four lanes at a time (tgrs_rq_vec2). The accumulators are eight even registers (VMLADAV's rule).
 */
static inline void conv_mve_px8_k27(const int8_t *x, const int8_t *w0, const conv_mve_f8 *f, int8_t *o)
{
    int32_t a0, a1, a2, a3, a4, a5, a6, a7;
    const int8_t *w4;
    int8x16_t xq, wq;
    int32x4_t v0, v1, w, t;
    __asm__ volatile(
        "mov %[a0], #11\n\t"
        "vctp.8 %[a0]\n\t" /* P0 for the last 11 values; the unpredicated chunk leaves it */
        "add %[w4], %[w0], #108\n\t"
        "vldrb.8 %q[xq], [%[x]]\n\t"
        "vldrb.8 %q[wq], [%[w0]]\n\t"
        "vmladav.s8 %[a0], %q[xq], %q[wq]\n\t"
        "vldrb.8 %q[wq], [%[w0], #27]\n\t"
        "vmladav.s8 %[a1], %q[xq], %q[wq]\n\t"
        "vldrb.8 %q[wq], [%[w0], #54]\n\t"
        "vmladav.s8 %[a2], %q[xq], %q[wq]\n\t"
        "vldrb.8 %q[wq], [%[w0], #81]\n\t"
        "vmladav.s8 %[a3], %q[xq], %q[wq]\n\t"
        "vldrb.8 %q[wq], [%[w4]]\n\t"
        "vmladav.s8 %[a4], %q[xq], %q[wq]\n\t"
        "vldrb.8 %q[wq], [%[w4], #27]\n\t"
        "vmladav.s8 %[a5], %q[xq], %q[wq]\n\t"
        "vldrb.8 %q[wq], [%[w4], #54]\n\t"
        "vmladav.s8 %[a6], %q[xq], %q[wq]\n\t"
        "vldrb.8 %q[wq], [%[w4], #81]\n\t"
        "vmladav.s8 %[a7], %q[xq], %q[wq]\n\t"
        "vpstt\n\t"
        "vldrbt.8 %q[xq], [%[x], #16]\n\t"
        "vldrbt.8 %q[wq], [%[w0], #16]\n\t"
        "vmladava.s8 %[a0], %q[xq], %q[wq]\n\t"
        "vpst\n\t"
        "vldrbt.8 %q[wq], [%[w0], #43]\n\t"
        "vmladava.s8 %[a1], %q[xq], %q[wq]\n\t"
        "vpst\n\t"
        "vldrbt.8 %q[wq], [%[w0], #70]\n\t"
        "vmladava.s8 %[a2], %q[xq], %q[wq]\n\t"
        "vpst\n\t"
        "vldrbt.8 %q[wq], [%[w0], #97]\n\t"
        "vmladava.s8 %[a3], %q[xq], %q[wq]\n\t"
        "vpst\n\t"
        "vldrbt.8 %q[wq], [%[w4], #16]\n\t"
        "vmladava.s8 %[a4], %q[xq], %q[wq]\n\t"
        "vpst\n\t"
        "vldrbt.8 %q[wq], [%[w4], #43]\n\t"
        "vmladava.s8 %[a5], %q[xq], %q[wq]\n\t"
        "vpst\n\t"
        "vldrbt.8 %q[wq], [%[w4], #70]\n\t"
        "vmladava.s8 %[a6], %q[xq], %q[wq]\n\t"
        "vpst\n\t"
        "vldrbt.8 %q[wq], [%[w4], #97]\n\t"
        "vmladava.s8 %[a7], %q[xq], %q[wq]\n\t"
        "vmov.32 %q[v0][0], %[a0]\n\t"
        "vmov.32 %q[v0][1], %[a1]\n\t"
        "vmov.32 %q[v0][2], %[a2]\n\t"
        "vmov.32 %q[v0][3], %[a3]\n\t"
        "vmov.32 %q[v1][0], %[a4]\n\t"
        "vmov.32 %q[v1][1], %[a5]\n\t"
        "vmov.32 %q[v1][2], %[a6]\n\t"
        "vmov.32 %q[v1][3], %[a7]\n\t"
        "ldr %[a1], [%[f], #96]\n\t"
        "ldr %[a2], [%[f], #100]\n\t"
        "ldr %[a3], [%[f], #104]\n\t"
        CONV_MVE_RQ4("v0", 0, 32, 64, "")
        CONV_MVE_RQ4("v1", 16, 48, 80, ", #4")
        : [a0] "=&Te"(a0), [a1] "=&Te"(a1), [a2] "=&Te"(a2), [a3] "=&Te"(a3), [a4] "=&Te"(a4), [a5] "=&Te"(a5),
          [a6] "=&Te"(a6), [a7] "=&Te"(a7), [xq] "=&w"(xq), [wq] "=&w"(wq), [v0] "=&w"(v0), [v1] "=&w"(v1),
          [w] "=&w"(w), [t] "=&w"(t), [w4] "=&r"(w4)
        : [x] "r"(x), [w0] "r"(w0), [f] "r"(f), [o] "l"(o)
        : "memory");
}

/* What one pixel block's channel loop needs (a struct keeps the loop its own function with few live values). */
typedef struct conv_mve_blk {
    const int8_t *a[CONV_MVE_PX]; /* patch rows */
    int8_t *o;                    /* the first pixel's output at the group's first channel */
    const int8_t *wt;             /* the group's first weight row */
    const int32_t *bias, *mult, *shift; /* the group's first channel */
    int32_t np, nch, k, ostride, zp_out, lo, hi, nm, vec;
    conv_mve_opf f; /* conv_mve_px4's view of the op */
} conv_mve_blk;

/* Every output channel of the group for the block's np pixels. */
__attribute__((noinline)) static void conv_mve_channels(const conv_mve_blk *b)
{
    const int32_t k = b->k, zp = b->zp_out, lo = b->lo, hi = b->hi;
    int32_t oc, i, j;
    if (b->vec && k == 27 && b->nch % 8 == 0) { /* a 3x3 window over 3 channels: eight channels per patch load */
        conv_mve_f8 f8;
        f8.zp = zp;
        f8.lo = lo;
        f8.hi = hi;
        for (oc = 0; oc < b->nch; oc += 8) {
            const int8_t *w0 = b->wt + (int64_t)oc * 27;
            int8_t *o = b->o + oc;
            f8.b0 = vldrwq_s32(b->bias + oc);
            f8.b1 = vldrwq_s32(b->bias + oc + 4);
            f8.m0 = vreinterpretq_u32_s32(vldrwq_s32(b->mult + oc));
            f8.m0 = vaddq_u32(f8.m0, f8.m0);
            f8.m1 = vreinterpretq_u32_s32(vldrwq_s32(b->mult + oc + 4));
            f8.m1 = vaddq_u32(f8.m1, f8.m1);
            f8.s0 = vldrwq_s32(b->shift + oc);
            f8.s1 = vldrwq_s32(b->shift + oc + 4);
            for (i = 0; i < b->np; ++i, o += b->ostride) {
                conv_mve_px8_k27(b->a[i], w0, &f8, o);
            }
        }
        return;
    }
    for (oc = 0; oc < b->nch; oc += 4) {
        const int32_t nv = b->nch - oc < 4 ? b->nch - oc : 4;
        const mve_pred16_t p = vctp32q((uint32_t)nv);
        const int8_t *w0 = b->wt + (int64_t)oc * k;
        /* a tail block repeats its last row; those lanes are not stored */
        const int8_t *w1 = w0 + (nv > 1 ? k : 0);
        const int8_t *w2 = w0 + (int64_t)(nv > 2 ? 2 : nv - 1) * k;
        const int8_t *w3 = w0 + (int64_t)(nv - 1) * k;
        const int32x4_t bias = vldrwq_z_s32(b->bias + oc, p);
        int8_t *o = b->o + oc;
        if (b->vec) {
            const uint32x4_t m1 = vreinterpretq_u32_s32(vldrwq_z_s32(b->mult + oc, p));
            const uint32x4_t m = vaddq_u32(m1, m1); /* tgrs_rq_vec2 takes the doubled multiplier */
            const int32x4_t nn2 = vldrwq_z_s32(b->shift + oc, p);
            if (nv == 4) { /* a full block: no predicated store */
                const int8_t *const w4[4] = {w0, w1, w2, w3};
                for (i = 0; i < b->np; ++i, o += b->ostride) {
                    conv_mve_px4(b->a[i], w4, bias, m, nn2, &b->f, o);
                }
                continue;
            }
            for (i = 0; i < b->np; ++i, o += b->ostride) {
                const int32x4_t acc = vaddq_s32(conv_mve_dot4(b->a[i], w0, w1, w2, w3, k), bias);
                vstrbq_p_s32(o, tgrs_rq_vec2_s8(acc, m, nn2, zp, lo, hi), p);
            }
        } else {
            tgrs_rq rq[4];
            for (j = 0; j < nv; ++j) {
                tgrs_rq_prepare(&rq[j], b->mult[oc + j], b->shift[oc + j], zp, b->nm);
            }
            for (i = 0; i < b->np; ++i, o += b->ostride) {
                int32_t s[4];
                vstrwq_s32(s, vaddq_s32(conv_mve_dot4(b->a[i], w0, w1, w2, w3, k), bias));
                for (j = 0; j < nv; ++j) {
                    o[j] = tgrs_rq_s8_call(&rq[j], s[j], lo, hi);
                }
            }
        }
    }
}

static int conv_s8_mve(const tgrs_op_ctx *ctx, const conv_geom *cg)
{
    const int8_t *in = (const int8_t *)ctx->in[0]->data;
    int8_t *out = (int8_t *)ctx->out->data;
    int8_t *scr = (int8_t *)ctx->scratch;
    const int32_t zp_in = ctx->p[TGRS_P_CONV_ZP_IN];
    const int64_t npix = (int64_t)cg->out_rows * cg->ow;
    const int64_t in_img = (int64_t)cg->in_rows * cg->wd * cg->c;
    conv_mve_blk b;
    int32_t n, g, i;
    int64_t q0;
    b.nch = cg->ocg;
    b.k = cg->k;
    b.ostride = cg->oc;
    b.zp_out = ctx->p[TGRS_P_CONV_ZP_OUT];
    b.lo = ctx->p[TGRS_P_CONV_ACT_MIN];
    b.hi = ctx->p[TGRS_P_CONV_ACT_MAX];
    b.nm = ctx->p[TGRS_P_CONV_NUMERICS];
    b.vec = tgrs_rq_vec_ok((const int32_t *)ctx->c[TGRS_C_CONV_SHIFT], cg->oc, b.nm);
    b.f.kt = cg->k & 15;
    b.f.nf = cg->k >> 4;
    b.f.zp = b.zp_out;
    b.f.lo = b.lo;
    b.f.hi = b.hi;
    for (n = 0; n < cg->n; ++n) {
        const int8_t *img = in + n * in_img;
        int8_t *oimg = out + n * npix * cg->oc;
        for (g = 0; g < cg->g; ++g) {
            const int64_t ch0 = (int64_t)g * cg->ocg;
            b.wt = (const int8_t *)ctx->c[TGRS_C_CONV_WEIGHT] + ch0 * cg->k;
            b.bias = (const int32_t *)ctx->c[TGRS_C_CONV_BIAS] + ch0;
            b.mult = (const int32_t *)ctx->c[TGRS_C_CONV_MULT] + ch0;
            b.shift = (const int32_t *)ctx->c[TGRS_C_CONV_SHIFT] + ch0;
            int32_t oh = cg->out_row0, ow = 0; /* pixel q0 + i, stepped (no 64-bit division per pixel) */
            for (q0 = 0; q0 < npix; q0 += CONV_MVE_PX) {
                b.np = (npix - q0 < CONV_MVE_PX) ? (int32_t)(npix - q0) : CONV_MVE_PX;
                b.o = oimg + q0 * cg->oc + ch0;
                for (i = 0; i < b.np; ++i, ow = (ow + 1 == cg->ow) ? (++oh, 0) : ow + 1) {
                    if (cg->direct) {
                        b.a[i] = img + conv_in_off(cg, oh * cg->w.sh, ow * cg->w.sw) + (int64_t)g * cg->icg;
                    } else if (cg->g == 1 && cg->w.dw == 1) {
                        conv_mve_gather1(cg, img, oh, ow, zp_in, scr + (int64_t)i * cg->k);
                        b.a[i] = scr + (int64_t)i * cg->k;
                    } else {
                        conv_mve_gather(cg, img, oh, ow, g, zp_in, scr + (int64_t)i * cg->k);
                        b.a[i] = scr + (int64_t)i * cg->k;
                    }
                }
                conv_mve_channels(&b);
            }
        }
    }
    return TGRS_OK;
}

#endif /* TGRS_HAVE_MVE */
#endif /* TGRS_CONV_MVE_H */
