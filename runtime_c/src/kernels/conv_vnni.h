/*
 * conv_vnni.h - the int8 conv GEMM on x86-64 with AVX-VNNI (TGRS_HAVE_AVXVNNI, target.h: the host build's avxvnni
 * level); part of conv.c, which includes it after its geometry helpers. Weights stay in the generic [G][OCg][K]
 * order and the scratch is the planned CONV_MR * K int16 (8 K bytes): no plan change.
 *
 * VPDPBUSD multiplies four unsigned bytes by four signed bytes and adds the four products to an int32 lane. The
 * activations are the unsigned side: each patch byte is stored biased, x + 128 (x ^ 0x80), so the lane sums
 * sum (x + 128) * w = sum x * w + 128 * sum w, and the second term, a constant of the output channel, is taken out of
 * the bias once per op (conv_wsum128_vnni). Everything is modulo 2^32 (VPDPBUSD does not saturate), and the true sum
 * fits in int32 (K <= CONV_MAX_PATCH), so the result is the exact sum of the plain loops.
 *
 * Pixels are the lanes: eight output pixels' patches are gathered into the scratch transposed, as rows of 32 bytes,
 * row t holding patch bytes [4t, 4t + 4) of pixels 0..7 (the K % 4 last bytes in a 32-byte local row, zero-filled,
 * so the planned 8 K bytes always suffice). A micro-kernel call takes eight output channels: per row one 32-byte
 * load, eight 4-byte weight broadcasts (VPBROADCASTD) and eight VPDPBUSD into eight accumulators (one per channel,
 * 256 multiply-accumulates per row). The 8 x 8 sums are transposed so that a vector holds one pixel's eight channels,
 * then requantized as a vector with the channels' fields (requant_avx2.h, the lane-by-lane twin of tgrs_rq_s8_fast,
 * TFLM's double rounding, or, for an op with an onnx channel outside the 32-bit form, the 64-bit form) and stored as
 * eight bytes. A last group of fewer than eight channels repeats its last weight row and stores only its own
 * bytes; a last block of fewer than eight pixels repeats its last patch and stores only its own pixels.
 */
#ifndef TGRS_CONV_VNNI_H
#define TGRS_CONV_VNNI_H

#if TGRS_HAVE_AVXVNNI

#include "requant_avx2.h"

#define CONV_VP 8     /* output pixels per block: the lanes of an accumulator */
#define CONV_VOC 512  /* output channels whose folded biases are held at once (a stack array) */

/* Where patch byte k of lane p goes: full 4-byte rows in the scratch, the last K % 4 bytes in the tail row. */
static inline uint8_t *conv_at_vnni(uint8_t *scr, uint8_t *tail, int32_t kq, int32_t p, int32_t k)
{
    return ((k >> 2) < kq ? scr + (int64_t)(k >> 2) * 32 : tail) + p * 4 + (k & 3);
}

/* len input bytes at patch offset k of lane p, biased by 128. */
static void conv_put_vnni(uint8_t *scr, uint8_t *tail, int32_t kq, int32_t p, int32_t k, const int8_t *src,
                          int32_t len)
{
    int32_t e = 0;
    for (; e < len && ((k + e) & 3) != 0; ++e) {
        *conv_at_vnni(scr, tail, kq, p, k + e) = (uint8_t)((uint8_t)src[e] ^ 0x80u);
    }
    for (; e + 4 <= len && ((k + e) >> 2) < kq; e += 4) {
        uint32_t v;
        memcpy(&v, src + e, 4);
        v ^= 0x80808080u;
        memcpy(scr + (int64_t)((k + e) >> 2) * 32 + p * 4, &v, 4);
    }
    for (; e < len; ++e) {
        *conv_at_vnni(scr, tail, kq, p, k + e) = (uint8_t)((uint8_t)src[e] ^ 0x80u);
    }
}

/* len padded taps' bytes (the biased input zero point, real 0 as the bias fold expects) at patch offset k. */
static void conv_pad_vnni(uint8_t *scr, uint8_t *tail, int32_t kq, int32_t p, int32_t k, uint8_t zb, int32_t len)
{
    int32_t e;
    for (e = 0; e < len; ++e) {
        *conv_at_vnni(scr, tail, kq, p, k + e) = zb;
    }
}

/* 8 x 8 transpose of 32-bit elements: v[j][i] -> v[i][j]. */
static inline void conv_tr8_vnni(__m256i v[8])
{
    const __m256i t0 = _mm256_unpacklo_epi32(v[0], v[1]); /* (v0 v1) of elements 0, 1 | 4, 5 */
    const __m256i t1 = _mm256_unpackhi_epi32(v[0], v[1]); /* elements 2, 3 | 6, 7 */
    const __m256i t2 = _mm256_unpacklo_epi32(v[2], v[3]);
    const __m256i t3 = _mm256_unpackhi_epi32(v[2], v[3]);
    const __m256i t4 = _mm256_unpacklo_epi32(v[4], v[5]);
    const __m256i t5 = _mm256_unpackhi_epi32(v[4], v[5]);
    const __m256i t6 = _mm256_unpacklo_epi32(v[6], v[7]);
    const __m256i t7 = _mm256_unpackhi_epi32(v[6], v[7]);
    const __m256i u0 = _mm256_unpacklo_epi64(t0, t2); /* v0-v3 of element 0 | element 4 */
    const __m256i u1 = _mm256_unpackhi_epi64(t0, t2); /* element 1 | 5 */
    const __m256i u2 = _mm256_unpacklo_epi64(t1, t3); /* element 2 | 6 */
    const __m256i u3 = _mm256_unpackhi_epi64(t1, t3); /* element 3 | 7 */
    const __m256i u4 = _mm256_unpacklo_epi64(t4, t6); /* v4-v7 */
    const __m256i u5 = _mm256_unpackhi_epi64(t4, t6);
    const __m256i u6 = _mm256_unpacklo_epi64(t5, t7);
    const __m256i u7 = _mm256_unpackhi_epi64(t5, t7);
    v[0] = _mm256_permute2x128_si256(u0, u4, 0x20);
    v[1] = _mm256_permute2x128_si256(u1, u5, 0x20);
    v[2] = _mm256_permute2x128_si256(u2, u6, 0x20);
    v[3] = _mm256_permute2x128_si256(u3, u7, 0x20);
    v[4] = _mm256_permute2x128_si256(u0, u4, 0x31);
    v[5] = _mm256_permute2x128_si256(u1, u5, 0x31);
    v[6] = _mm256_permute2x128_si256(u2, u6, 0x31);
    v[7] = _mm256_permute2x128_si256(u3, u7, 0x31);
}

/* len bytes of each of eight sources (lane p reads src[p]) at patch offset k, a multiple of 4, biased by 128: columns
 * of up to eight 4-byte groups as one load per lane (masked for a short column: nothing is read past a source), a
 * transpose and one row store per group; the last len % 4 bytes through conv_put_vnni. */
static void conv_put8_vnni(uint8_t *scr, uint8_t *tail, int32_t kq, int32_t k, const int8_t *const src[8],
                           int32_t len)
{
    const __m256i b = _mm256_set1_epi8((char)0x80);
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    int32_t e = 0, p;
    while (e + 4 <= len) {
        const int32_t nd = (len - e) >= 32 ? 8 : (len - e) >> 2; /* groups in this column */
        uint8_t *row = scr + (int64_t)((k + e) >> 2) * 32;      /* rows (k + e) / 4 + nd <= K / 4: all full */
        __m256i v[8];
        if (nd == 8) {
            for (p = 0; p < 8; ++p) {
                v[p] = _mm256_loadu_si256((const __m256i *)(const void *)(src[p] + e));
            }
        } else {
            const __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(nd), lane);
            for (p = 0; p < 8; ++p) {
                v[p] = _mm256_maskload_epi32((const int *)(const void *)(src[p] + e), m);
            }
        }
        conv_tr8_vnni(v);
        for (p = 0; p < nd; ++p) {
            _mm256_storeu_si256((__m256i *)(void *)(row + p * 32), _mm256_xor_si256(v[p], b));
        }
        e += 4 * nd;
    }
    for (p = 0; p < 8 && e < len; ++p) {
        conv_put_vnni(scr, tail, kq, p, k + e, src[p] + e, len - e);
    }
}

/* Kernel row i of the patch of output pixel (oh, ow), group g, at patch offset k of lane p. */
static void conv_krow_vnni(const conv_geom *cg, const int8_t *img, int32_t oh, int32_t ow, int32_t g, uint8_t zb,
                           uint8_t *scr, uint8_t *tail, int32_t p, int32_t i, int32_t k)
{
    const tgrs_window *w = &cg->w;
    const int32_t kq = cg->k >> 2;
    const int32_t ih = oh * w->sh - w->pt + i * w->dh;
    const int32_t iw0 = ow * w->sw - w->pl;
    int32_t j;
    for (j = 0; j < w->kw; ++j, k += cg->icg) {
        const int32_t iw = iw0 + j * w->dw;
        if (ih >= 0 && ih < cg->h && iw >= 0 && iw < cg->wd) {
            conv_put_vnni(scr, tail, kq, p, k, img + conv_in_off(cg, ih, iw) + (int64_t)g * cg->icg, cg->icg);
        } else {
            conv_pad_vnni(scr, tail, kq, p, k, zb, cg->icg);
        }
    }
}

#define CONV_STAGE 1024 /* patches up to this length are staged contiguously when a block has padded taps */

/* The patch of output pixel (oh, ow), group g, as K contiguous input bytes at dst (padded taps: the zero point). With
 * one group and no dilation across, a kernel row is at most three runs: padded taps left of the image, the taps
 * inside it (consecutive pixels' channels), padded taps right of it. */
static void conv_stage_vnni(const conv_geom *cg, const int8_t *img, int32_t oh, int32_t ow, int32_t g, int8_t zp,
                            int8_t *dst)
{
    const tgrs_window *w = &cg->w;
    const int32_t iw0 = ow * w->sw - w->pl;
    const int runs = cg->g == 1 && w->dw == 1;
    const int32_t j0 = iw0 < 0 ? (-iw0 < w->kw ? -iw0 : w->kw) : 0; /* taps [j0, j1) inside the image */
    const int32_t j1 = cg->wd - iw0 < w->kw ? (cg->wd - iw0 > j0 ? cg->wd - iw0 : j0) : w->kw;
    const size_t c = (size_t)cg->icg;
    int32_t i, j;
    for (i = 0; i < w->kh; ++i, dst += w->kw * cg->icg) {
        const int32_t ih = oh * w->sh - w->pt + i * w->dh;
        if (ih < 0 || ih >= cg->h) {
            memset(dst, zp, (size_t)w->kw * c);
        } else if (runs) {
            memset(dst, zp, (size_t)j0 * c);
            if (j1 > j0) {
                memcpy(dst + (size_t)j0 * c, img + conv_in_off(cg, ih, iw0 + j0), (size_t)(j1 - j0) * c);
            }
            memset(dst + (size_t)j1 * c, zp, (size_t)(w->kw - j1) * c);
        } else {
            for (j = 0; j < w->kw; ++j) {
                const int32_t iw = iw0 + j * w->dw;
                if (iw >= 0 && iw < cg->wd) {
                    memcpy(dst + (size_t)j * c, img + conv_in_off(cg, ih, iw) + (int64_t)g * cg->icg, c);
                } else {
                    memset(dst + (size_t)j * c, zp, c);
                }
            }
        }
    }
}

/*
 * The patches of the block's eight pixels (pixel coordinates oh[], ow[]), group g, into the lanes. When every kernel
 * row of every pixel is one run of input bytes (inside the image; one group or a one-column window; no dilation
 * across) starting on a 4-byte row, the rows are copied from the image for all eight at once (conv_put8_vnni).
 * Otherwise patches of up to CONV_STAGE bytes are first assembled contiguously on the stack, then copied the same
 * way; longer ones go kernel row by kernel row, tap by tap.
 */
static void conv_block_vnni(const conv_geom *cg, const int8_t *img, const int32_t *oh, const int32_t *ow, int32_t g,
                            int8_t zp, uint8_t *scr, uint8_t *tail)
{
    const tgrs_window *w = &cg->w;
    const int32_t rl = w->kw * cg->icg; /* bytes of one kernel row */
    const int runs = (cg->g == 1 || w->kw == 1) && (w->dw == 1 || w->kw == 1) && (rl & 3) == 0;
    const uint8_t zb = (uint8_t)((uint8_t)zp ^ 0x80u);
    const int8_t *src[CONV_VP];
    int32_t i, p;
    int all = runs;
    for (p = 0; p < CONV_VP && all; ++p) {
        const int32_t ih0 = oh[p] * w->sh - w->pt, iw0 = ow[p] * w->sw - w->pl;
        all = ih0 >= 0 && ih0 + (w->kh - 1) * w->dh < cg->h && iw0 >= 0 && iw0 + w->kw <= cg->wd;
    }
    if (all) {
        for (i = 0; i < w->kh; ++i) {
            for (p = 0; p < CONV_VP; ++p) {
                src[p] = img + conv_in_off(cg, oh[p] * w->sh - w->pt + i * w->dh, ow[p] * w->sw - w->pl) +
                         (int64_t)g * cg->icg;
            }
            conv_put8_vnni(scr, tail, cg->k >> 2, i * rl, src, rl);
        }
        return;
    }
    if (cg->k <= CONV_STAGE) {
        int8_t stage[CONV_VP][CONV_STAGE];
        for (p = 0; p < CONV_VP; ++p) {
            conv_stage_vnni(cg, img, oh[p], ow[p], g, zp, stage[p]);
            src[p] = stage[p];
        }
        conv_put8_vnni(scr, tail, cg->k >> 2, 0, src, cg->k);
        return;
    }
    for (i = 0; i < w->kh; ++i) {
        for (p = 0; p < CONV_VP; ++p) {
            conv_krow_vnni(cg, img, oh[p], ow[p], g, zb, scr, tail, p, i, i * rl);
        }
    }
}

/* 128 * sum_k w[k] (exact: |sum| <= 2^30), the bias correction of the biased activations. */
static int32_t conv_wsum128_vnni(const int8_t *w, int32_t k)
{
    const __m256i b = _mm256_set1_epi8((char)0x80); /* the unsigned byte 128 */
    __m256i s = _mm256_setzero_si256();
    __m128i h;
    int32_t i = 0, tot;
    for (; i + 32 <= k; i += 32) {
        s = _mm256_dpbusd_avx_epi32(s, b, _mm256_loadu_si256((const __m256i *)(const void *)(w + i)));
    }
    h = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0x4E));
    h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0xB1));
    tot = _mm_cvtsi128_si32(h);
    for (; i < k; ++i) {
        tot += 128 * (int32_t)w[i];
    }
    return tot;
}

static inline int32_t conv_ld32_vnni(const int8_t *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* The last r (1..3) weight bytes of a row as a 4-byte group, zero above (nothing is read past the row). */
static int32_t conv_ldtail_vnni(const int8_t *p, int32_t r)
{
    uint32_t v = (uint8_t)p[0];
    if (r > 1) {
        v |= (uint32_t)(uint8_t)p[1] << 8;
    }
    if (r > 2) {
        v |= (uint32_t)(uint8_t)p[2] << 16;
    }
    return (int32_t)v;
}

/* s += the 4-byte dot products of x (unsigned) with the broadcast group at wp + 4 t (signed). Inline assembly: GCC 12
 * copies every accumulator of the intrinsic's form through another register, and spills two, each iteration. */
#define CONV_VNNI_MAC(s, x, wp, t)                                                                                   \
    do {                                                                                                             \
        const __m256i wb_ = _mm256_set1_epi32(conv_ld32_vnni((wp) + 4 * (t)));                                       \
        __asm__("%{vex%} vpdpbusd %2, %1, %0" : "+x"(s) : "x"(x), "x"(wb_));                                          \
    } while (0)
#define CONV_VNNI_TAIL(s, wp) s = _mm256_dpbusd_avx_epi32(z, x, _mm256_set1_epi32(conv_ldtail_vnni((wp) + 4 * kq, kr)))

/* The biased sums of the eight pixels of the block with eight weight rows, transposed: p[i] holds pixel i's sums of
 * rows 0..7 in lanes 0..7. The tail row goes first, so that the accumulators live in registers across one loop. */
static void conv_mk_vnni(int32_t kq, int32_t kr, const uint8_t *scr, const uint8_t *tail, const int8_t *const wr[8],
                         __m256i p[8])
{
    const int8_t *w0 = wr[0], *w1 = wr[1], *w2 = wr[2], *w3 = wr[3];
    const int8_t *w4 = wr[4], *w5 = wr[5], *w6 = wr[6], *w7 = wr[7];
    const __m256i z = _mm256_setzero_si256();
    __m256i s0 = z, s1 = z, s2 = z, s3 = z, s4 = z, s5 = z, s6 = z, s7 = z;
    int32_t t;
    if (kr != 0) {
        const __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)tail);
        CONV_VNNI_TAIL(s0, w0);
        CONV_VNNI_TAIL(s1, w1);
        CONV_VNNI_TAIL(s2, w2);
        CONV_VNNI_TAIL(s3, w3);
        CONV_VNNI_TAIL(s4, w4);
        CONV_VNNI_TAIL(s5, w5);
        CONV_VNNI_TAIL(s6, w6);
        CONV_VNNI_TAIL(s7, w7);
    }
    for (t = 0; t < kq; ++t) {
        const __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(scr + (int64_t)t * 32));
        CONV_VNNI_MAC(s0, x, w0, t);
        CONV_VNNI_MAC(s1, x, w1, t);
        CONV_VNNI_MAC(s2, x, w2, t);
        CONV_VNNI_MAC(s3, x, w3, t);
        CONV_VNNI_MAC(s4, x, w4, t);
        CONV_VNNI_MAC(s5, x, w5, t);
        CONV_VNNI_MAC(s6, x, w6, t);
        CONV_VNNI_MAC(s7, x, w7, t);
    }
    p[0] = s0;
    p[1] = s1;
    p[2] = s2;
    p[3] = s3;
    p[4] = s4;
    p[5] = s5;
    p[6] = s6;
    p[7] = s7;
    conv_tr8_vnni(p);
}

#undef CONV_VNNI_MAC
#undef CONV_VNNI_TAIL

/* Whether an onnx-numerics channel's requantization takes the 32-bit vector form (tgrs_rq_fields_avx2). */
static int conv_rq_fast_ok_vnni(int32_t shift)
{
    return shift <= -2;
}

static int conv_s8_vnni(const tgrs_op_ctx *ctx, const conv_geom *cg)
{
    const conv_s8_consts cs = conv_s8_consts_of(ctx);
    const int8_t *in = (const int8_t *)ctx->in[0]->data;
    int8_t *out = (int8_t *)ctx->out->data;
    uint8_t *scr = (uint8_t *)ctx->scratch; /* 32 * (K / 4) <= CONV_MR * K * 2 bytes */
    const int64_t npix = (int64_t)cg->out_rows * cg->ow;
    const int64_t in_img = (int64_t)cg->in_rows * cg->wd * cg->c;
    const int32_t k = cg->k, kq = cg->k >> 2, kr = cg->k & 3;
    uint8_t tail[32];
    int32_t beff[CONV_VOC];
    int32_t n, g, i, j, c0, oc;
    int64_t q0;
    /* the vector requantization (requant_avx2.h): tflm; the 32-bit onnx form when every channel has it; else the
       64-bit onnx form */
    int mode = cs.nm == TGRS_RQ_TFLM ? 2 : 1;
    for (oc = 0; oc < cg->oc && mode == 1; ++oc) {
        mode = conv_rq_fast_ok_vnni(cs.shift[oc]) ? 1 : 3;
    }
    memset(tail, 0, sizeof tail);
    for (n = 0; n < cg->n; ++n) {
        const int8_t *img = in + n * in_img;
        int8_t *oimg = out + n * npix * cg->oc;
        for (g = 0; g < cg->g; ++g) {
            for (c0 = 0; c0 < cg->ocg; c0 += CONV_VOC) {
                const int32_t ncb = (cg->ocg - c0 < CONV_VOC) ? cg->ocg - c0 : CONV_VOC;
                const int64_t cb = (int64_t)g * cg->ocg + c0; /* the chunk's first output channel */
                for (j = 0; j < ncb; ++j) {
                    beff[j] = tgrs_wrap_sub(cs.bias[cb + j], conv_wsum128_vnni(cs.wt + (cb + j) * k, k));
                }
                int32_t boh = cg->out_row0, bow = 0; /* pixel q0 */
                for (q0 = 0; q0 < npix; q0 += CONV_VP, conv_pixel_step(cg, boh, bow, CONV_VP, &boh, &bow)) {
                    const int32_t nv = (npix - q0 < CONV_VP) ? (int32_t)(npix - q0) : CONV_VP;
                    int32_t oh[CONV_VP], ow[CONV_VP];
                    for (i = 0; i < CONV_VP; ++i) { /* tail lanes repeat the last pixel, unstored */
                        conv_pixel_step(cg, boh, bow, i < nv ? i : nv - 1, &oh[i], &ow[i]);
                    }
                    conv_block_vnni(cg, img, oh, ow, g, (int8_t)cs.zp_in, scr, tail);
                    for (oc = 0; oc < ncb; oc += 8) {
                        const int32_t nc = (ncb - oc < 8) ? ncb - oc : 8;
                        const int64_t ch = cb + oc;
                        const int8_t *wr[8];
                        int32_t bb[8], mm[8], ss[8];
                        __m256i p[CONV_VP], f[4], bv;
                        for (j = 0; j < 8; ++j) {
                            const int32_t jj = j < nc ? j : nc - 1; /* a short group repeats its last channel */
                            wr[j] = cs.wt + (ch + jj) * k;
                            bb[j] = beff[oc + jj];
                            mm[j] = cs.mult[ch + jj];
                            ss[j] = cs.shift[ch + jj];
                        }
                        conv_mk_vnni(kq, kr, scr, tail, wr, p);
                        bv = _mm256_loadu_si256((const __m256i *)(const void *)bb);
                        for (i = 0; i < nv; ++i) {
                            int8_t *o = oimg + (q0 + i) * cg->oc + ch;
                            const __m256i x = _mm256_add_epi32(p[i], bv); /* wrapping, like tgrs_wrap_add */
                            int32_t r[8];
                            if (i == 0) {
                                tgrs_rq_fields_avx2(mode, _mm256_loadu_si256((const __m256i *)(const void *)mm),
                                                    _mm256_loadu_si256((const __m256i *)(const void *)ss), cs.zp_out,
                                                    f);
                            }
                            if (nc == 8) {
                                tgrs_store8_avx2(o, tgrs_rq_mode_avx2(mode, x, f, cs.lo, cs.hi));
                                continue;
                            }
                            _mm256_storeu_si256((__m256i *)(void *)r, tgrs_rq_mode_avx2(mode, x, f, cs.lo, cs.hi));
                            for (j = 0; j < nc; ++j) {
                                o[j] = (int8_t)r[j];
                            }
                        }
                    }
                }
            }
        }
    }
    return TGRS_OK;
}

#endif /* TGRS_HAVE_AVXVNNI */

#endif /* TGRS_CONV_VNNI_H */
