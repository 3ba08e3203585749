/*
 * conv_avx2.h - the int8 conv GEMM on x86-64 with AVX2 (TGRS_ISA_AVX2, target.h); part of conv.c, which includes it
 * after its geometry helpers. Weights stay in the generic [G][OCg][K] order: no plan change.
 *
 * Like the plain loops, CONV_MR = 4 patches are widened once per pixel block into the planned scratch (CONV_MR rows of
 * K int16; padded taps hold the input zero point), and each micro-kernel call takes the dot products of the four rows
 * with two weight rows. Here a call keeps eight 8-lane int32 accumulators (pixel x channel): per 16 values of K, the
 * two weight chunks are sign-extended to int16 once (VPMOVSXBW) and each of the eight products is one VPMADDWD with the
 * patch chunk read from memory, then one VPADDD. A tail of K % 16 values (K >= 16) re-reads the last 16 values of each
 * row and masks out of the weights the lanes the chunks already summed, so no read leaves a row. Two rounds of VPHADDD
 * and one 128-bit fold turn the accumulators into one vector of the eight sums, in the order (pixel 0: ch 0, ch 1;
 * pixel 1: ...), which is then requantized as one vector: the lane-by-lane twin of tgrs_rq_s8_fast (VPMULDQ for the
 * 64-bit products, the borrow of P = p - [p < 0] from a 64-bit compare, variable shifts per lane); TFLM numerics take
 * its double rounding on the same eight lanes (tgrs_rq_tflm_avx2). onnx channels outside the 32-bit form (shift above
 * -2 or at most -32) take the scalar tgrs_rq_s8. Integer sums are exact in any order (K <= CONV_MAX_PATCH), so every
 * output byte equals the plain path's.
 */
#ifndef TGRS_CONV_AVX2_H
#define TGRS_CONV_AVX2_H

#if TGRS_ISA == TGRS_ISA_AVX2

#include "requant_avx2.h"

/* The output pixel d places after (oh, ow) in the band's row-major order, without a division (d is a small step);
   only the AVX2 and AVX-VNNI pixel-block loops step pixels this way. */
static inline void conv_pixel_step(const conv_geom *cg, int32_t oh, int32_t ow, int32_t d, int32_t *ohd, int32_t *owd)
{
    ow += d;
    while (ow >= cg->ow) {
        ow -= cg->ow;
        ++oh;
    }
    *ohd = oh;
    *owd = ow;
}

#if !TGRS_HAVE_AVXVNNI /* the avxvnni level has its own int8 GEMM (conv_vnni.h) */

/* n int8 values widened to int16. */
static void conv_widen_avx2(const int8_t *src, int16_t *dst, int32_t n)
{
    int32_t e = 0;
    for (; e + 16 <= n; e += 16) {
        const __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(src + e));
        _mm256_storeu_si256((__m256i *)(void *)(dst + e), _mm256_cvtepi8_epi16(x));
    }
    if (e + 8 <= n) {
        const __m128i x = _mm_loadl_epi64((const __m128i *)(const void *)(src + e));
        _mm_storeu_si128((__m128i *)(void *)(dst + e), _mm_cvtepi8_epi16(x));
        e += 8;
    }
    for (; e < n; ++e) {
        dst[e] = src[e];
    }
}

/* The patch of output pixel (oh, ow), group g, widened to int16 at dst (padded taps: the input zero point). */
static void conv_rows_avx2(const conv_geom *cg, const int8_t *img, int32_t oh, int32_t ow, int32_t g, int32_t zp,
                           int16_t *dst)
{
    const tgrs_window *w = &cg->w;
    int32_t i, j, e;
    const int32_t iw0 = ow * w->sw - w->pl;
    /* with one group and no dilation across, a row of taps inside the image is one contiguous run of KW * C bytes */
    const int run = cg->g == 1 && w->dw == 1 && iw0 >= 0 && iw0 + w->kw <= cg->wd;
    for (i = 0; i < w->kh; ++i) {
        const int32_t ih = oh * w->sh - w->pt + i * w->dh;
        if (run && ih >= 0 && ih < cg->h) {
            conv_widen_avx2(img + conv_in_off(cg, ih, iw0), dst, w->kw * cg->icg);
            dst += w->kw * cg->icg;
            continue;
        }
        for (j = 0; j < w->kw; ++j) {
            const int32_t iw = iw0 + j * w->dw;
            if (ih >= 0 && ih < cg->h && iw >= 0 && iw < cg->wd) {
                conv_widen_avx2(img + conv_in_off(cg, ih, iw) + (int64_t)g * cg->icg, dst, cg->icg);
            } else {
                for (e = 0; e < cg->icg; ++e) {
                    dst[e] = (int16_t)zp; /* the zero point encodes real 0; the bias fold expects it */
                }
            }
            dst += cg->icg;
        }
    }
}

static __m256i conv_ld16_avx2(const int16_t *p)
{
    return _mm256_loadu_si256((const __m256i *)(const void *)p);
}

static __m256i conv_w16_avx2(const int8_t *p)
{
    return _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(const void *)p));
}

#define CONV_AVX2_MAC(s, x, w) s = tgrs_dot16_avx2(s, (x), (w))

/*
 * The eight exact sums sum_k a_i[k] * w_j[k] (i < 4 rows, j < 2 weight rows) as one vector, lane 2 i + j.
 */
static inline __m256i conv_mk_avx2(int32_t k, const int16_t *const a[CONV_MR], const int8_t *w0, const int8_t *w1)
{
    __m256i s00 = _mm256_setzero_si256(), s01 = s00, s10 = s00, s11 = s00;
    __m256i s20 = s00, s21 = s00, s30 = s00, s31 = s00;
    const int16_t *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3];
    __m256i h0, h1, h2, h3;
    int32_t kk;
    for (kk = 0; kk + 16 <= k; kk += 16) {
        const __m256i u = conv_w16_avx2(w0 + kk), v = conv_w16_avx2(w1 + kk);
        CONV_AVX2_MAC(s00, conv_ld16_avx2(a0 + kk), u);
        CONV_AVX2_MAC(s01, conv_ld16_avx2(a0 + kk), v);
        CONV_AVX2_MAC(s10, conv_ld16_avx2(a1 + kk), u);
        CONV_AVX2_MAC(s11, conv_ld16_avx2(a1 + kk), v);
        CONV_AVX2_MAC(s20, conv_ld16_avx2(a2 + kk), u);
        CONV_AVX2_MAC(s21, conv_ld16_avx2(a2 + kk), v);
        CONV_AVX2_MAC(s30, conv_ld16_avx2(a3 + kk), u);
        CONV_AVX2_MAC(s31, conv_ld16_avx2(a3 + kk), v);
    }
    if (kk < k && k >= 16) {
        /* the last 16 values of every row; lanes below `done` were summed by the chunks, their weights are zeroed */
        const int32_t t = k - 16, done = 16 - (k - kk);
        const __m256i lane = _mm256_setr_epi16(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
        const __m256i keep = _mm256_cmpgt_epi16(lane, _mm256_set1_epi16((int16_t)(done - 1)));
        const __m256i u = _mm256_and_si256(conv_w16_avx2(w0 + t), keep);
        const __m256i v = _mm256_and_si256(conv_w16_avx2(w1 + t), keep);
        CONV_AVX2_MAC(s00, conv_ld16_avx2(a0 + t), u);
        CONV_AVX2_MAC(s01, conv_ld16_avx2(a0 + t), v);
        CONV_AVX2_MAC(s10, conv_ld16_avx2(a1 + t), u);
        CONV_AVX2_MAC(s11, conv_ld16_avx2(a1 + t), v);
        CONV_AVX2_MAC(s20, conv_ld16_avx2(a2 + t), u);
        CONV_AVX2_MAC(s21, conv_ld16_avx2(a2 + t), v);
        CONV_AVX2_MAC(s30, conv_ld16_avx2(a3 + t), u);
        CONV_AVX2_MAC(s31, conv_ld16_avx2(a3 + t), v);
        kk = k;
    }
    if (kk < k && k >= 8) {
        /* 8 <= K < 16: one 8-value chunk, and the last 8 values with the lanes the chunk summed masked out */
        const __m128i lane = _mm_setr_epi16(0, 1, 2, 3, 4, 5, 6, 7);
        const __m128i keep = _mm_cmpgt_epi16(lane, _mm_set1_epi16((int16_t)(15 - k)));
        const int32_t t = k - 8;
        const __m128i u0 = _mm_cvtepi8_epi16(_mm_loadl_epi64((const __m128i *)(const void *)w0));
        const __m128i v0 = _mm_cvtepi8_epi16(_mm_loadl_epi64((const __m128i *)(const void *)w1));
        const __m128i u1 = _mm_and_si128(_mm_cvtepi8_epi16(_mm_loadl_epi64((const __m128i *)(const void *)(w0 + t))),
                                         keep);
        const __m128i v1 = _mm_and_si128(_mm_cvtepi8_epi16(_mm_loadl_epi64((const __m128i *)(const void *)(w1 + t))),
                                         keep);
#define CONV_AVX2_MAC8(sa, sb, r)                                                                                    \
    do {                                                                                                             \
        const __m128i x0 = _mm_loadu_si128((const __m128i *)(const void *)(r));                                     \
        const __m128i x1 = _mm_loadu_si128((const __m128i *)(const void *)((r) + t));                               \
        sa = _mm256_add_epi32(sa, _mm256_set_m128i(_mm_setzero_si128(),                                              \
                                                    _mm_add_epi32(_mm_madd_epi16(x0, u0), _mm_madd_epi16(x1, u1)))); \
        sb = _mm256_add_epi32(sb, _mm256_set_m128i(_mm_setzero_si128(),                                              \
                                                    _mm_add_epi32(_mm_madd_epi16(x0, v0), _mm_madd_epi16(x1, v1)))); \
    } while (0)
        CONV_AVX2_MAC8(s00, s01, a0);
        CONV_AVX2_MAC8(s10, s11, a1);
        CONV_AVX2_MAC8(s20, s21, a2);
        CONV_AVX2_MAC8(s30, s31, a3);
#undef CONV_AVX2_MAC8
        kk = k;
    }
    h0 = _mm256_hadd_epi32(s00, s01);
    h1 = _mm256_hadd_epi32(s10, s11);
    h2 = _mm256_hadd_epi32(s20, s21);
    h3 = _mm256_hadd_epi32(s30, s31);
    h0 = _mm256_hadd_epi32(h0, h1); /* [00 01 10 11 | 00 01 10 11], halves of the lanes' sums */
    h2 = _mm256_hadd_epi32(h2, h3);
    h0 = _mm256_add_epi32(_mm256_permute2x128_si256(h0, h2, 0x20), _mm256_permute2x128_si256(h0, h2, 0x31));
    if (kk < k) { /* K < 8: a short plain loop */
        int32_t r[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        for (; kk < k; ++kk) {
            const int32_t u = w0[kk], v = w1[kk];
            r[0] += a0[kk] * u;
            r[1] += a0[kk] * v;
            r[2] += a1[kk] * u;
            r[3] += a1[kk] * v;
            r[4] += a2[kk] * u;
            r[5] += a2[kk] * v;
            r[6] += a3[kk] * u;
            r[7] += a3[kk] * v;
        }
        h0 = _mm256_add_epi32(h0, _mm256_loadu_si256((const __m256i *)(const void *)r));
    }
    return h0;
}

#undef CONV_AVX2_MAC

/* The requantization of eight lanes with per-lane (mult, n2 = -1 - shift): requant_avx2.h, with the fields
 * tgrs_rq_make derives for the 32-bit form. Every lane's shift must be in [-31, -2] and the numerics onnx. */
static __m256i conv_rq_avx2(__m256i x, __m256i mult, __m256i n2, int32_t zp, int32_t lo, int32_t hi)
{
    const __m256i top = _mm256_set1_epi32((int32_t)0x80000000u);
    const __m256i one = _mm256_set1_epi32(1);
    const __m256i add2 = _mm256_add_epi32(top, _mm256_sllv_epi32(one, _mm256_sub_epi32(n2, one)));
    const __m256i sub2 = _mm256_sub_epi32(_mm256_srlv_epi32(top, n2), _mm256_set1_epi32(zp));
    return tgrs_rq_fast_avx2(x, mult, n2, add2, sub2, lo, hi);
}

/* Whether an onnx-numerics channel's requantization takes the 32-bit form with mult used as it is (conv_rq_avx2). */
static int conv_rq_fast_ok(int32_t shift)
{
    return shift <= -2 && shift > -32;
}

/*
 * Eight channels ch..ch+7 of the four pixels at once: four micro-kernel calls (channel pairs), a transpose of their
 * 64-bit (channel pair) elements into one vector per pixel with the channels in lanes, then per pixel one vector
 * requantization with the channels' own fields loaded as vectors and one 8-byte store. Used when every channel of
 * the op takes the same vector form (mode 1: the 32-bit onnx form, mode 2: tflm).
 */
static void conv_oct_avx2(const tgrs_op_ctx *ctx, int32_t k, const int16_t *const a[CONV_MR], const int8_t *w,
                          int64_t ch, int8_t *const o[CONV_MR], int32_t oc, int32_t nv, int mode)
{
    const int32_t *bias = (const int32_t *)ctx->c[TGRS_C_CONV_BIAS] + ch;
    const int32_t *mult = (const int32_t *)ctx->c[TGRS_C_CONV_MULT] + ch;
    const int32_t *shift = (const int32_t *)ctx->c[TGRS_C_CONV_SHIFT] + ch;
    const int32_t lo = ctx->p[TGRS_P_CONV_ACT_MIN], hi = ctx->p[TGRS_P_CONV_ACT_MAX];
    const int32_t zp_out = ctx->p[TGRS_P_CONV_ZP_OUT];
    const __m256i v0 = conv_mk_avx2(k, a, w, w + k);
    const __m256i v1 = conv_mk_avx2(k, a, w + 2 * (int64_t)k, w + 3 * (int64_t)k);
    const __m256i v2 = conv_mk_avx2(k, a, w + 4 * (int64_t)k, w + 5 * (int64_t)k);
    const __m256i v3 = conv_mk_avx2(k, a, w + 6 * (int64_t)k, w + 7 * (int64_t)k);
    const __m256i t0 = _mm256_unpacklo_epi64(v0, v1), t1 = _mm256_unpackhi_epi64(v0, v1);
    const __m256i t2 = _mm256_unpacklo_epi64(v2, v3), t3 = _mm256_unpackhi_epi64(v2, v3);
    const __m256i bv = _mm256_loadu_si256((const __m256i *)(const void *)bias);
    const __m256i sv = _mm256_loadu_si256((const __m256i *)(const void *)shift);
    const __m256i mv = _mm256_loadu_si256((const __m256i *)(const void *)mult);
    __m256i p[CONV_MR], f[4];
    int32_t i;
    p[0] = _mm256_permute2x128_si256(t0, t2, 0x20);
    p[1] = _mm256_permute2x128_si256(t1, t3, 0x20);
    p[2] = _mm256_permute2x128_si256(t0, t2, 0x31);
    p[3] = _mm256_permute2x128_si256(t1, t3, 0x31);
    tgrs_rq_fields_avx2(mode, mv, sv, zp_out, f);
    for (i = 0; i < nv; ++i) { /* + bias wraps, like tgrs_wrap_add */
        tgrs_store8_avx2(o[i] + oc, tgrs_rq_mode_avx2(mode, _mm256_add_epi32(p[i], bv), f, lo, hi));
    }
}

/* The AVX2 level's requantization form for conv_oct_avx2, per op: 1 when every channel takes the 32-bit onnx form, 2
 * for tflm numerics, else 0 (conv_ch_s8_avx2 then takes channel pairs only). */
static int conv_mode_s8_avx2(const tgrs_op_ctx *ctx, const conv_geom *cg)
{
    const int32_t *shift = (const int32_t *)ctx->c[TGRS_C_CONV_SHIFT];
    int mode = ctx->p[TGRS_P_CONV_NUMERICS] == TGRS_RQ_TFLM ? 2 : 1;
    int32_t oc;
    for (oc = 0; oc < cg->oc && mode == 1; ++oc) {
        mode = conv_rq_fast_ok(shift[oc]) ? 1 : 0;
    }
    return mode;
}

/* The AVX2 level's channel step of conv_s8_blocks: eight channels from oc through conv_oct_avx2 when the op has a
 * vector form and eight are left, otherwise one pair (an odd last channel pairs with itself; its second column is
 * not stored) requantized on the pair's eight lanes. Returns the channels it took. */
static int32_t conv_ch_s8_avx2(const tgrs_op_ctx *ctx, const conv_geom *cg, const int16_t *const a[CONV_MR],
                               int8_t *const o[CONV_MR], int32_t g, int32_t oc, int32_t nv, int mode)
{
    const conv_s8_consts cs = conv_s8_consts_of(ctx);
    const int64_t ch = (int64_t)g * cg->ocg + oc;
    const int32_t ncol = (cg->ocg - oc < 2) ? 1 : 2;
    const int64_t c1 = ch + ncol - 1;
    const int8_t *w0 = cs.wt + ch * cg->k;
    int32_t r[8], i, j;
    __m256i acc, bv, x;
    if (mode != 0 && oc + 8 <= cg->ocg) {
        conv_oct_avx2(ctx, cg->k, a, w0, ch, o, oc, nv, mode);
        return 8;
    }
    acc = conv_mk_avx2(cg->k, a, w0, w0 + (ncol - 1) * (int64_t)cg->k);
    bv = _mm256_setr_epi32(cs.bias[ch], cs.bias[c1], cs.bias[ch], cs.bias[c1], cs.bias[ch], cs.bias[c1], cs.bias[ch],
                           cs.bias[c1]);
    x = _mm256_add_epi32(acc, bv); /* wrapping, like tgrs_wrap_add */
    if (cs.nm == TGRS_RQ_TFLM) {
        const int32_t s0 = cs.shift[ch], s1 = cs.shift[c1];
        const int32_t m0 = s0 <= -32 ? 0 : cs.mult[ch], m1 = s1 <= -32 ? 0 : cs.mult[c1];
        const int32_t l0 = s0 > 0 ? s0 : 0, l1 = s1 > 0 ? s1 : 0;
        const int32_t r0 = (s0 < 0 && s0 > -32) ? -s0 : 0, r1 = (s1 < 0 && s1 > -32) ? -s1 : 0;
        _mm256_storeu_si256((__m256i *)(void *)r, tgrs_rq_tflm_avx2(
            x, _mm256_setr_epi32(m0, m1, m0, m1, m0, m1, m0, m1), _mm256_setr_epi32(l0, l1, l0, l1, l0, l1, l0, l1),
            _mm256_setr_epi32(r0, r1, r0, r1, r0, r1, r0, r1), _mm256_set1_epi32(cs.zp_out), cs.lo, cs.hi));
    } else if (conv_rq_fast_ok(cs.shift[ch]) && conv_rq_fast_ok(cs.shift[c1])) {
        const __m256i mv = _mm256_setr_epi32(cs.mult[ch], cs.mult[c1], cs.mult[ch], cs.mult[c1], cs.mult[ch],
                                             cs.mult[c1], cs.mult[ch], cs.mult[c1]);
        const int32_t e0 = -1 - cs.shift[ch], e1 = -1 - cs.shift[c1];
        const __m256i ev = _mm256_setr_epi32(e0, e1, e0, e1, e0, e1, e0, e1);
        _mm256_storeu_si256((__m256i *)(void *)r, conv_rq_avx2(x, mv, ev, cs.zp_out, cs.lo, cs.hi));
    } else { /* the 64-bit form: a shift above -2 or at most -32 */
        _mm256_storeu_si256((__m256i *)(void *)r, x);
        for (j = 0; j < ncol; ++j) {
            const tgrs_rq rq = tgrs_rq_make(cs.mult[ch + j], cs.shift[ch + j], cs.zp_out, cs.nm);
            for (i = 0; i < nv; ++i) {
                r[2 * i + j] = tgrs_rq_s8(&rq, r[2 * i + j], cs.lo, cs.hi);
            }
        }
    }
    for (i = 0; i < nv; ++i) {
        o[i][oc] = (int8_t)r[2 * i];
        if (ncol == 2) {
            o[i][oc + 1] = (int8_t)r[2 * i + 1];
        }
    }
    return 2;
}

#endif /* !TGRS_HAVE_AVXVNNI */

/* ---------------------------------------------------------------------------------------------------- float32 -- */

/* Where a float micro-kernel call's outputs go: row i at o[i] (already at the call's first channel), the biases of
 * its channels, the clamp. full: all four rows are stored and every panel of the call holds eight channels; the call
 * then adds the bias, clamps and stores from its registers (conv_store_f32_avx2's operations), otherwise it leaves
 * its sums in acc for conv_store_f32_avx2. */
#define CONV_ACC_W (6 * CONV_NR) /* accumulator row of a partial block: up to six panels (the avx512 groups) */

typedef struct conv_out_f32 {
    float *o[CONV_MR];
    const float *bias;
    __m256 lo, hi;
    int full;
} conv_out_f32;

#define CONV_OUT_F32(e, row, p, c)                                                                                   \
    _mm256_storeu_ps((e)->o[row] + 8 * (p),                                                                          \
                     _mm256_min_ps((e)->hi,                                                                          \
                                   _mm256_max_ps((e)->lo, _mm256_add_ps(c, _mm256_loadu_ps((e)->bias + 8 * (p))))))

/*
 * acc[i][p * 8 + j] = sum_k a_i[k] * b_p[k][j] for the CONV_MR = 4 rows and three CONV_NR = 8 panels b0, b1, b2: twelve
 * 8-lane accumulators, per k three panel loads, four broadcasts and twelve fused multiply-adds (VFMADD231PS). Each
 * output is summed from 0 in k order; the fused multiply-add rounds once where the plain loop rounds twice, so the
 * results may differ from the plain path's in the last bits (within the kernel tests' float tolerance).
 */
static void conv_mk3_f32_avx2(int32_t nseg, int32_t rl, const float *const *a, const float *b0, const float *b1,
                              const float *b2, float acc[CONV_MR][CONV_ACC_W], const conv_out_f32 *e)
{
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c02 = c00, c10 = c00, c11 = c00, c12 = c00;
    __m256 c20 = c00, c21 = c00, c22 = c00, c30 = c00, c31 = c00, c32 = c00;
    int32_t sg, kk;
    const int64_t step = (int64_t)rl * CONV_NR; /* one segment of a panel */
    for (sg = 0; sg < nseg; ++sg, b0 += step, b1 += step, b2 += step) {
        const float *a0 = a[CONV_MR * sg], *a1 = a[CONV_MR * sg + 1];
        const float *a2 = a[CONV_MR * sg + 2], *a3 = a[CONV_MR * sg + 3];
        for (kk = 0; kk < rl; ++kk) {
            const __m256 w0 = _mm256_loadu_ps(b0 + (int64_t)kk * CONV_NR);
            const __m256 w1 = _mm256_loadu_ps(b1 + (int64_t)kk * CONV_NR);
            const __m256 w2 = _mm256_loadu_ps(b2 + (int64_t)kk * CONV_NR);
            __m256 x = _mm256_broadcast_ss(a0 + kk);
            c00 = _mm256_fmadd_ps(x, w0, c00);
            c01 = _mm256_fmadd_ps(x, w1, c01);
            c02 = _mm256_fmadd_ps(x, w2, c02);
            x = _mm256_broadcast_ss(a1 + kk);
            c10 = _mm256_fmadd_ps(x, w0, c10);
            c11 = _mm256_fmadd_ps(x, w1, c11);
            c12 = _mm256_fmadd_ps(x, w2, c12);
            x = _mm256_broadcast_ss(a2 + kk);
            c20 = _mm256_fmadd_ps(x, w0, c20);
            c21 = _mm256_fmadd_ps(x, w1, c21);
            c22 = _mm256_fmadd_ps(x, w2, c22);
            x = _mm256_broadcast_ss(a3 + kk);
            c30 = _mm256_fmadd_ps(x, w0, c30);
            c31 = _mm256_fmadd_ps(x, w1, c31);
            c32 = _mm256_fmadd_ps(x, w2, c32);
        }
    }
    if (e->full) {
        CONV_OUT_F32(e, 0, 0, c00);
        CONV_OUT_F32(e, 0, 1, c01);
        CONV_OUT_F32(e, 0, 2, c02);
        CONV_OUT_F32(e, 1, 0, c10);
        CONV_OUT_F32(e, 1, 1, c11);
        CONV_OUT_F32(e, 1, 2, c12);
        CONV_OUT_F32(e, 2, 0, c20);
        CONV_OUT_F32(e, 2, 1, c21);
        CONV_OUT_F32(e, 2, 2, c22);
        CONV_OUT_F32(e, 3, 0, c30);
        CONV_OUT_F32(e, 3, 1, c31);
        CONV_OUT_F32(e, 3, 2, c32);
        return;
    }
    _mm256_storeu_ps(acc[0], c00);
    _mm256_storeu_ps(acc[0] + 8, c01);
    _mm256_storeu_ps(acc[0] + 16, c02);
    _mm256_storeu_ps(acc[1], c10);
    _mm256_storeu_ps(acc[1] + 8, c11);
    _mm256_storeu_ps(acc[1] + 16, c12);
    _mm256_storeu_ps(acc[2], c20);
    _mm256_storeu_ps(acc[2] + 8, c21);
    _mm256_storeu_ps(acc[2] + 16, c22);
    _mm256_storeu_ps(acc[3], c30);
    _mm256_storeu_ps(acc[3] + 8, c31);
    _mm256_storeu_ps(acc[3] + 16, c32);
}

/* conv_mk3_f32_avx2 for two panels: eight accumulators. */
static void conv_mk2_f32_avx2(int32_t nseg, int32_t rl, const float *const *a, const float *b0, const float *b1,
                              float acc[CONV_MR][CONV_ACC_W], const conv_out_f32 *e)
{
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00;
    __m256 c20 = c00, c21 = c00, c30 = c00, c31 = c00;
    int32_t sg, kk;
    for (sg = 0; sg < nseg; ++sg, b0 += (int64_t)rl * CONV_NR, b1 += (int64_t)rl * CONV_NR) {
        const float *a0 = a[CONV_MR * sg], *a1 = a[CONV_MR * sg + 1];
        const float *a2 = a[CONV_MR * sg + 2], *a3 = a[CONV_MR * sg + 3];
        for (kk = 0; kk < rl; ++kk) {
            const __m256 w0 = _mm256_loadu_ps(b0 + (int64_t)kk * CONV_NR);
            const __m256 w1 = _mm256_loadu_ps(b1 + (int64_t)kk * CONV_NR);
            __m256 x = _mm256_broadcast_ss(a0 + kk);
            c00 = _mm256_fmadd_ps(x, w0, c00);
            c01 = _mm256_fmadd_ps(x, w1, c01);
            x = _mm256_broadcast_ss(a1 + kk);
            c10 = _mm256_fmadd_ps(x, w0, c10);
            c11 = _mm256_fmadd_ps(x, w1, c11);
            x = _mm256_broadcast_ss(a2 + kk);
            c20 = _mm256_fmadd_ps(x, w0, c20);
            c21 = _mm256_fmadd_ps(x, w1, c21);
            x = _mm256_broadcast_ss(a3 + kk);
            c30 = _mm256_fmadd_ps(x, w0, c30);
            c31 = _mm256_fmadd_ps(x, w1, c31);
        }
    }
    if (e->full) {
        CONV_OUT_F32(e, 0, 0, c00);
        CONV_OUT_F32(e, 0, 1, c01);
        CONV_OUT_F32(e, 1, 0, c10);
        CONV_OUT_F32(e, 1, 1, c11);
        CONV_OUT_F32(e, 2, 0, c20);
        CONV_OUT_F32(e, 2, 1, c21);
        CONV_OUT_F32(e, 3, 0, c30);
        CONV_OUT_F32(e, 3, 1, c31);
        return;
    }
    _mm256_storeu_ps(acc[0], c00);
    _mm256_storeu_ps(acc[0] + 8, c01);
    _mm256_storeu_ps(acc[1], c10);
    _mm256_storeu_ps(acc[1] + 8, c11);
    _mm256_storeu_ps(acc[2], c20);
    _mm256_storeu_ps(acc[2] + 8, c21);
    _mm256_storeu_ps(acc[3], c30);
    _mm256_storeu_ps(acc[3] + 8, c31);
}

/* conv_mk3_f32_avx2 for one panel: four accumulators, one per row (each output's sum in k order, like the others). */
static void conv_mk1_f32_avx2(int32_t nseg, int32_t rl, const float *const *a, const float *b0,
                              float acc[CONV_MR][CONV_ACC_W], const conv_out_f32 *e)
{
    __m256 c0 = _mm256_setzero_ps(), c1 = c0, c2 = c0, c3 = c0;
    int32_t sg, kk;
    for (sg = 0; sg < nseg; ++sg, b0 += (int64_t)rl * CONV_NR) {
        const float *a0 = a[CONV_MR * sg], *a1 = a[CONV_MR * sg + 1];
        const float *a2 = a[CONV_MR * sg + 2], *a3 = a[CONV_MR * sg + 3];
        for (kk = 0; kk < rl; ++kk) {
            const __m256 w0 = _mm256_loadu_ps(b0 + (int64_t)kk * CONV_NR);
            c0 = _mm256_fmadd_ps(_mm256_broadcast_ss(a0 + kk), w0, c0);
            c1 = _mm256_fmadd_ps(_mm256_broadcast_ss(a1 + kk), w0, c1);
            c2 = _mm256_fmadd_ps(_mm256_broadcast_ss(a2 + kk), w0, c2);
            c3 = _mm256_fmadd_ps(_mm256_broadcast_ss(a3 + kk), w0, c3);
        }
    }
    if (e->full) {
        CONV_OUT_F32(e, 0, 0, c0);
        CONV_OUT_F32(e, 1, 0, c1);
        CONV_OUT_F32(e, 2, 0, c2);
        CONV_OUT_F32(e, 3, 0, c3);
        return;
    }
    _mm256_storeu_ps(acc[0], c0);
    _mm256_storeu_ps(acc[1], c1);
    _mm256_storeu_ps(acc[2], c2);
    _mm256_storeu_ps(acc[3], c3);
}

/* Bias, clamp and store of n <= 24 accumulated channels of one pixel: the plain epilogue's (v < lo ? lo : v, then
 * v > hi ? hi : v), which VMAXPS(lo, v) and VMINPS(hi, v) compute lane for lane, NaN included. */
static void conv_store_f32_avx2(float *o, const float *acc, const float *bias, int32_t n, float lo, float hi)
{
    const __m256 vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi);
    int32_t j = 0;
    for (; j + 8 <= n; j += 8) {
        const __m256 v = _mm256_add_ps(_mm256_loadu_ps(acc + j), _mm256_loadu_ps(bias + j));
        _mm256_storeu_ps(o + j, _mm256_min_ps(vhi, _mm256_max_ps(vlo, v)));
    }
    for (; j < n; ++j) {
        float v = acc[j] + bias[j];
        v = (v < lo) ? lo : v;
        v = (v > hi) ? hi : v;
        o[j] = v;
    }
}

/* The mask of the first n (< 8) float lanes. */
static inline __m256i conv_mask_f32_avx2(int32_t n)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* n floats from src to dst, or n zeros when src is NULL (no library call: runs are short; the last n % 8 under a
 * mask, VMASKMOVPS reads and writes nothing past them). */
static inline void conv_copy_f32_avx2(const float *src, float *dst, int32_t n)
{
    int32_t e = 0;
    if (src == NULL) {
        for (; e + 8 <= n; e += 8) {
            _mm256_storeu_ps(dst + e, _mm256_setzero_ps());
        }
        if (e < n) {
            _mm256_maskstore_ps(dst + e, conv_mask_f32_avx2(n - e), _mm256_setzero_ps());
        }
        return;
    }
    for (; e + 8 <= n; e += 8) {
        _mm256_storeu_ps(dst + e, _mm256_loadu_ps(src + e));
    }
    if (e < n) {
        const __m256i m = conv_mask_f32_avx2(n - e);
        _mm256_maskstore_ps(dst + e, m, _mm256_maskload_ps(src + e, m));
    }
}

/* conv_im2col_f32 with each kernel row in at most three runs when there is one group and no dilation across: the
 * padded taps left of the image (zeros), the taps inside it (one copy of consecutive pixels' channels) and the padded
 * taps right of it; otherwise tap by tap. The same values in the same places. */
static void conv_im2col_f32_avx2(const conv_geom *cg, const float *img, int32_t oh, int32_t ow, int32_t g,
                                 float *dst)
{
    const tgrs_window *w = &cg->w;
    const int32_t iw0 = ow * w->sw - w->pl;
    const int runs = cg->g == 1 && w->dw == 1;
    /* taps [j0, j1) of a kernel row lie inside the image horizontally (runs only) */
    const int32_t j0 = iw0 < 0 ? (-iw0 < w->kw ? -iw0 : w->kw) : 0;
    const int32_t j1 = cg->wd - iw0 < w->kw ? (cg->wd - iw0 > j0 ? cg->wd - iw0 : j0) : w->kw;
    int32_t i, j;
    for (i = 0; i < w->kh; ++i) {
        const int32_t ih = oh * w->sh - w->pt + i * w->dh;
        if (ih < 0 || ih >= cg->h) {
            conv_copy_f32_avx2(NULL, dst, w->kw * cg->icg);
            dst += w->kw * cg->icg;
            continue;
        }
        if (runs) {
            conv_copy_f32_avx2(NULL, dst, j0 * cg->icg);
            if (j1 > j0) {
                conv_copy_f32_avx2(img + conv_in_off(cg, ih, iw0 + j0), dst + j0 * cg->icg, (j1 - j0) * cg->icg);
            }
            conv_copy_f32_avx2(NULL, dst + j1 * cg->icg, (w->kw - j1) * cg->icg);
            dst += w->kw * cg->icg;
            continue;
        }
        for (j = 0; j < w->kw; ++j) {
            const int32_t iw = iw0 + j * w->dw;
            const int in = iw >= 0 && iw < cg->wd;
            conv_copy_f32_avx2(in ? img + conv_in_off(cg, ih, iw) + (int64_t)g * cg->icg : NULL, dst, cg->icg);
            dst += cg->icg;
        }
    }
}

/* Panels of the next micro-kernel call when rem are left: threes, and four as two twos, so that a single panel
 * (four accumulator chains, half the throughput) comes only when the conv has one. */
static int32_t conv_panels_avx2(int32_t rem)
{
    return (rem == 4 || rem == 2) ? 2 : (rem >= 3 ? 3 : 1);
}

/* The avx512 level's micro-kernel for groups of four and six panels (conv_avx512.h); a stand-in elsewhere, where
 * conv_panels_avx2 never asks for more than three. */
static inline void conv_mkw_f32_none(int32_t np, int32_t nseg, int32_t rl, const float *const *a, const float *b0,
                                     int64_t ps, float acc[CONV_MR][CONV_ACC_W], const conv_out_f32 *e)
{
    (void)np, (void)nseg, (void)rl, (void)a, (void)b0, (void)ps, (void)acc, (void)e;
}

/* The avx512 level's two-panel micro-kernel for eight rows (conv_avx512.h); a stand-in elsewhere, never called. */
static inline void conv_mk2r_f32_none(int32_t nseg, int32_t rl, const float *const *a0, const float *const *a1,
                                      const float *b0, int64_t ps, float acc[2][CONV_MR][CONV_ACC_W],
                                      const conv_out_f32 *e)
{
    (void)nseg, (void)rl, (void)a0, (void)a1, (void)b0, (void)ps, (void)acc, (void)e;
}

#include "conv_avx512.h"

#define CONV_SEGS 16 /* kernel rows a patch may be read in place as (one run of the input each) */
#define CONV_VB (2 * CONV_MR) /* pixels per block of the float GEMM */

/* What the panel calls of one pixel block share: the group's panels and bias, the clamp, and how a patch is read
 * (nseg segments of rl values). */
typedef struct conv_blk_f32 {
    const float *wg, *bias;
    float lo, hi;
    int32_t nseg, rl;
} conv_blk_f32;

/* The output fields of half h (rows 4 h .. 4 h + 3) of a block for the panels from oc0. */
static void conv_half_f32_avx2(conv_out_f32 *e, const conv_blk_f32 *b, float *const *o, int32_t h, int32_t oc0,
                               int full)
{
    int32_t i;
    for (i = 0; i < CONV_MR; ++i) {
        e->o[i] = o[h * CONV_MR + i] + oc0;
    }
    e->bias = b->bias + oc0;
    e->lo = _mm256_set1_ps(b->lo);
    e->hi = _mm256_set1_ps(b->hi);
    e->full = full;
}

/* Every panel of rows [r0, r1) of a pixel block (r0 a multiple of 4; seg holds CONV_SEGS * CONV_MR segment pointers
 * per half of four rows, each half's four rows valid; o the rows' outputs at the group's channel 0). A block of
 * eight rows takes each panel call's weights twice while they are in the first-level cache; at the avx512 level a
 * call of two panels takes all eight rows at once (TGRS_CONV_MK2R_F32: eight 16-lane accumulators). */
static void conv_run_f32_avx2(const conv_geom *cg, const conv_blk_f32 *b, const float *const *seg, float *const *o,
                              int32_t r0, int32_t r1)
{
    float acc[2][CONV_MR][CONV_ACC_W];
    int32_t pan, h, i;
    for (pan = 0; pan < cg->npan; pan += TGRS_CONV_PANELS_F32(cg->npan - pan)) {
        const int32_t oc0 = pan * CONV_NR;
        const int32_t np = TGRS_CONV_PANELS_F32(cg->npan - pan);
        const int32_t ncol = (cg->ocg - oc0 < np * CONV_NR) ? cg->ocg - oc0 : np * CONV_NR;
        const float *b0 = b->wg + (int64_t)pan * cg->k * CONV_NR;
        const int64_t ps = (int64_t)cg->k * CONV_NR; /* one panel */
        for (h = r0 / CONV_MR; h * CONV_MR < r1; ++h) {
            const int32_t nh = (r1 - h * CONV_MR < CONV_MR) ? r1 - h * CONV_MR : CONV_MR;
            const float *const *sh = seg + (int64_t)h * CONV_SEGS * CONV_MR;
            const int full = nh == CONV_MR && ncol == np * CONV_NR;
            conv_out_f32 e[2];
            int32_t nd = 1, d;
            conv_half_f32_avx2(&e[0], b, o, h, oc0, full);
            if (TGRS_HAVE_AVX512 && np == 2 && r0 == 0 && r1 == CONV_VB && h == 0) {
                conv_half_f32_avx2(&e[1], b, o, 1, oc0, full);
                TGRS_CONV_MK2R_F32(b->nseg, b->rl, sh, sh + CONV_SEGS * CONV_MR, b0, ps, acc, e);
                nd = 2;
            } else if (np > 3) {
                TGRS_CONV_MKW_F32(np, b->nseg, b->rl, sh, b0, ps, acc[0], &e[0]);
            } else if (np == 3) {
                conv_mk3_f32_avx2(b->nseg, b->rl, sh, b0, b0 + ps, b0 + 2 * ps, acc[0], &e[0]);
            } else if (np == 2) {
                conv_mk2_f32_avx2(b->nseg, b->rl, sh, b0, b0 + ps, acc[0], &e[0]);
            } else {
                conv_mk1_f32_avx2(b->nseg, b->rl, sh, b0, acc[0], &e[0]);
            }
            for (d = 0; d < nd && !full; ++d) {
                for (i = 0; i < nh; ++i) {
                    conv_store_f32_avx2(e[d].o[i], acc[d][i], e[d].bias, ncol, b->lo, b->hi);
                }
            }
            h += nd - 1;
        }
    }
}

/* Whether output pixel (oh, ow)'s patch lies inside the image (its kernel rows can be read in place). */
static int conv_inner_f32(const conv_geom *cg, int32_t oh, int32_t ow)
{
    const tgrs_window *w = &cg->w;
    const int32_t ih0 = oh * w->sh - w->pt, iw0 = ow * w->sw - w->pl;
    return ih0 >= 0 && ih0 + (w->kh - 1) * w->dh < cg->h && iw0 >= 0 && iw0 + w->kw <= cg->wd;
}

/* The segment pointers of block row i read in place: kernel row r at seg[CONV_SEGS * CONV_MR * (i / 4) + 4 r + i % 4]
 * (a direct conv: its one segment, the input pixel itself). */
static void conv_seg_f32_avx2(const conv_geom *cg, const float *img, int32_t g, int32_t oh, int32_t ow, int32_t i,
                              const float **seg)
{
    const tgrs_window *w = &cg->w;
    const float **s = seg + (int64_t)(i / CONV_MR) * CONV_SEGS * CONV_MR + i % CONV_MR;
    int32_t r;
    if (cg->direct) {
        s[0] = img + conv_in_off(cg, oh * w->sh, ow * w->sw) + (int64_t)g * cg->icg;
        return;
    }
    for (r = 0; r < w->kh; ++r) {
        s[CONV_MR * r] = img + (int64_t)g * cg->icg + conv_in_off(cg, oh * w->sh - w->pt + r * w->dh, ow * w->sw - w->pl);
    }
}

/* The float GEMM with up to three 8-lane panels per micro-kernel call (8 or 12 accumulators; a single panel, 4), or
 * at the avx512 level groups of panels on 16 lanes (conv_avx512.h). Output pixels go in blocks of CONV_VB = 8 (the
 * tail rows repeat the last pixel, unstored). A patch is read in segments, each a run of K in k order: a direct
 * conv's patch is one segment, the input row itself; a block whose patches lie inside the image, with one group (or
 * a one-column window) and no dilation across, reads each kernel row in place (KW * C consecutive values, up to
 * CONV_SEGS rows); otherwise each half of four rows is read in place if it can be, else gathered into the scratch
 * first (conv_im2col_f32_avx2), one segment per row, and run on its own. Every output is still summed over k in
 * order. */
static int conv_f32_avx2(const tgrs_op_ctx *ctx, const conv_geom *cg)
{
    const tgrs_window *w = &cg->w;
    const float *wt = (const float *)ctx->c[TGRS_C_CONV_WEIGHT];
    const float *bias = (const float *)ctx->c[TGRS_C_CONV_BIAS];
    const float *in = (const float *)ctx->in[0]->data;
    float *out = (float *)ctx->out->data;
    float *scr = (float *)ctx->scratch;
    const int64_t npix = (int64_t)cg->out_rows * cg->ow;
    const int64_t in_img = (int64_t)cg->in_rows * cg->wd * cg->c;
    const int in_place = (cg->g == 1 || w->kw == 1) && (w->dw == 1 || w->kw == 1) && w->kh <= CONV_SEGS;
    const float *seg[2 * CONV_SEGS * CONV_MR];
    conv_blk_f32 b;
    int32_t n, g, i, h;
    int64_t q0;
    b.lo = tgrs_p_f32(ctx, TGRS_P_CONV_FMIN);
    b.hi = tgrs_p_f32(ctx, TGRS_P_CONV_FMAX);
    for (n = 0; n < cg->n; ++n) {
        const float *img = in + n * in_img;
        float *oimg = out + n * npix * cg->oc;
        for (g = 0; g < cg->g; ++g) {
            int32_t boh = cg->out_row0, bow = 0; /* pixel q0 */
            b.wg = wt + (int64_t)g * cg->npan * cg->k * CONV_NR;
            b.bias = bias + (int64_t)g * cg->ocg;
            for (q0 = 0; q0 < npix; q0 += CONV_VB, conv_pixel_step(cg, boh, bow, CONV_VB, &boh, &bow)) {
                float *o[CONV_VB];
                int32_t oh[CONV_VB], ow[CONV_VB];
                const int32_t nv = (npix - q0 < CONV_VB) ? (int32_t)(npix - q0) : CONV_VB;
                int inner[2] = {in_place && !cg->direct, in_place && !cg->direct};
                for (i = 0; i < CONV_VB; ++i) {
                    const int32_t d = i < nv ? i : nv - 1;
                    conv_pixel_step(cg, boh, bow, d, &oh[i], &ow[i]);
                    o[i] = oimg + (q0 + d) * cg->oc + (int64_t)g * cg->ocg;
                    if (inner[i / CONV_MR]) {
                        inner[i / CONV_MR] = conv_inner_f32(cg, oh[i], ow[i]);
                    }
                }
                if (cg->direct || (inner[0] && inner[1])) {
                    b.nseg = cg->direct ? 1 : w->kh;
                    b.rl = cg->direct ? cg->k : w->kw * cg->icg;
                    for (i = 0; i < CONV_VB; ++i) {
                        conv_seg_f32_avx2(cg, img, g, oh[i], ow[i], i, seg);
                    }
                    conv_run_f32_avx2(cg, &b, seg, o, 0, nv);
                    continue;
                }
                for (h = 0; h * CONV_MR < nv; ++h) { /* each half on its own, read in place or gathered */
                    const int32_t r1 = (nv - h * CONV_MR < CONV_MR) ? nv : (h + 1) * CONV_MR;
                    const float **sh = seg + (int64_t)h * CONV_SEGS * CONV_MR;
                    b.nseg = inner[h] ? w->kh : 1;
                    b.rl = inner[h] ? w->kw * cg->icg : cg->k;
                    for (i = h * CONV_MR; i < (h + 1) * CONV_MR; ++i) {
                        if (inner[h]) {
                            conv_seg_f32_avx2(cg, img, g, oh[i], ow[i], i, seg);
                        } else if (i < nv) {
                            conv_im2col_f32_avx2(cg, img, oh[i], ow[i], g, scr + (int64_t)(i % CONV_MR) * cg->k);
                            sh[i % CONV_MR] = scr + (int64_t)(i % CONV_MR) * cg->k;
                        } else {
                            sh[i % CONV_MR] = sh[(nv - 1) % CONV_MR];
                        }
                    }
                    conv_run_f32_avx2(cg, &b, seg, o, h * CONV_MR, r1);
                }
            }
        }
    }
    return TGRS_OK;
}

#endif /* TGRS_ISA_AVX2 */

#endif /* TGRS_CONV_AVX2_H */
