/*
 * requant_avx2.h - the 16-bit dot-product step of the AVX2 int8 kernels, and tgrs_rq_s8_fast (requant.h) on eight int32
 * lanes with AVX2, for the x86-64 host kernels (TGRS_HAVE_AVX2, target.h). The same arithmetic, lane by lane, so the
 * bytes are identical: VPMULDQ forms the exact 64-bit products of the even and of the odd lanes, a 64-bit compare
 * supplies the borrow of P = p - [p < 0], the high words go back into lane order, and the per-lane rounding add,
 * variable shift and zero point finish as in the scalar form. Every lane must be in the 32-bit form (onnx numerics,
 * shift <= -2, mult >= 0: tgrs_rq.fast).
 *
 * tgrs_rq_tflm_avx2 is TFLM's double rounding (the tflm branch of tgrs_rq_s8_slow) on eight lanes: the wrapping left
 * shift, srdhm as the low word of (a * m + 2^30) >> 31 (the true quotient fits in int32 because m >= 0, and a logical
 * 64-bit shift leaves the same low word as an arithmetic one), rdbpot with VPSRAVD and its remainder test, and the
 * clamp taken before the zero point is added (clamp(t + zp, lo, hi) = clamp(t, lo - zp, hi - zp) + zp, with no 32-bit
 * overflow for any t).
 */
#ifndef TGRS_REQUANT_AVX2_H
#define TGRS_REQUANT_AVX2_H

#if TGRS_HAVE_AVX2

#include <string.h>

/* acc + the sums of the adjacent int16 products of a and b in each int32 lane (wrapping). With AVX-VNNI one VPDPWSSD,
 * otherwise VPMADDWD and VPADDD: the same numbers (the products are of sign-extended int8 values, so no pair sum
 * saturates or wraps inside the multiply-add). */
static inline __m256i tgrs_dot16_avx2(__m256i acc, __m256i a, __m256i b)
{
#if TGRS_HAVE_AVXVNNI
    return _mm256_dpwssd_avx_epi32(acc, a, b);
#else
    return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b));
#endif
}

/* x (acc + bias, already wrapped) requantized with the lanes' (mult, n2, add2, sub2) of tgrs_rq, clamped to
 * [lo, hi]; int32 lanes holding int8 values. */
static inline __m256i tgrs_rq_fast_avx2(__m256i x, __m256i mult, __m256i n2, __m256i add2, __m256i sub2, int32_t lo,
                                        int32_t hi)
{
    const __m256i zero = _mm256_setzero_si256();
    __m256i pe = _mm256_mul_epi32(x, mult); /* lanes 0, 2, 4, 6 as 64-bit products */
    __m256i po = _mm256_mul_epi32(_mm256_srli_epi64(x, 32), _mm256_srli_epi64(mult, 32));
    __m256i hiw, q;
    pe = _mm256_add_epi64(pe, _mm256_cmpgt_epi64(zero, pe)); /* P = p - [p < 0] */
    po = _mm256_add_epi64(po, _mm256_cmpgt_epi64(zero, po));
    hiw = _mm256_blend_epi32(_mm256_srli_epi64(pe, 32), po, 0xAA); /* the high words, back in lane order */
    q = _mm256_sub_epi32(_mm256_srlv_epi32(_mm256_add_epi32(hiw, add2), n2), sub2);
    q = _mm256_max_epi32(q, _mm256_set1_epi32(lo));
    return _mm256_min_epi32(q, _mm256_set1_epi32(hi));
}

/* x (acc + bias) requantized with the lanes' tflm fields (m32, lsh, rsh of tgrs_rq) and zero points zp. */
static inline __m256i tgrs_rq_tflm_avx2(__m256i x, __m256i m32, __m256i lsh, __m256i rsh, __m256i zp, int32_t lo,
                                        int32_t hi)
{
    const __m256i zero = _mm256_setzero_si256();
    const __m256i half = _mm256_set1_epi64x((int64_t)1 << 30);
    const __m256i one = _mm256_set1_epi32(1);
    const __m256i a = _mm256_sllv_epi32(x, lsh);
    const __m256i pe = _mm256_srli_epi64(_mm256_add_epi64(_mm256_mul_epi32(a, m32), half), 31);
    const __m256i po = _mm256_srli_epi64(
        _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(a, 32), _mm256_srli_epi64(m32, 32)), half), 31);
    const __m256i t = _mm256_blend_epi32(pe, _mm256_slli_epi64(po, 32), 0xAA); /* srdhm(a, m32) per lane */
    const __m256i mask = _mm256_sub_epi32(_mm256_sllv_epi32(one, rsh), one);
    const __m256i rem = _mm256_and_si256(t, mask);
    const __m256i thr = _mm256_sub_epi32(_mm256_srli_epi32(mask, 1), _mm256_cmpgt_epi32(zero, t));
    __m256i q = _mm256_sub_epi32(_mm256_srav_epi32(t, rsh), _mm256_cmpgt_epi32(rem, thr)); /* rdbpot(t, rsh) */
    q = _mm256_max_epi32(q, _mm256_sub_epi32(_mm256_set1_epi32(lo), zp));
    q = _mm256_min_epi32(q, _mm256_sub_epi32(_mm256_set1_epi32(hi), zp));
    return _mm256_add_epi32(q, zp);
}

/* round(p / 2^n), halves away from zero (tgrs_rounding_rshift64), for 64-bit lanes p (|p| < 2^62) and counts n
 * (64-bit lanes; any n above 63 gives 0, as VPSRLVQ and VPSLLVQ do, and so does n = 63 since |p| < 2^62). */
static inline __m256i tgrs_rshift64_avx2(__m256i p, __m256i n)
{
    const __m256i one = _mm256_set1_epi64x(1);
    const __m256i s = _mm256_cmpgt_epi64(_mm256_setzero_si256(), p);
    const __m256i a = _mm256_sub_epi64(_mm256_xor_si256(p, s), s); /* |p| */
    /* 2^(n - 1); n = 0 gives a count of 2^64 - 1, so 0 */
    const __m256i q = _mm256_srlv_epi64(_mm256_add_epi64(a, _mm256_sllv_epi64(one, _mm256_sub_epi64(n, one))), n);
    return _mm256_sub_epi64(_mm256_xor_si256(q, s), s);
}

/* The 64-bit form of onnx numerics on eight lanes (any shift): x * mult exactly (VPMULDQ of the even and the odd
 * lanes), tgrs_rshift64_avx2 by n = 31 - shift (shift <= -32 gives 0), the clamp in 64 bits before the zero point is
 * added (clamp(q + zp, lo, hi) = clamp(q, lo - zp, hi - zp) + zp), and the low words back in lane order. zp: the
 * output zero point in every lane. */
static inline __m256i tgrs_rq_wide_avx2(__m256i x, __m256i mult, __m256i n, __m256i zp, int32_t lo, int32_t hi)
{
    const __m256i low = _mm256_set1_epi64x(0xFFFFFFFF);
    const __m256i z64 = _mm256_cvtepi32_epi64(_mm256_castsi256_si128(zp));
    const __m256i qlo = _mm256_sub_epi64(_mm256_set1_epi64x(lo), z64);
    const __m256i qhi = _mm256_sub_epi64(_mm256_set1_epi64x(hi), z64);
    __m256i qe = tgrs_rshift64_avx2(_mm256_mul_epi32(x, mult), _mm256_and_si256(n, low));
    __m256i qo = tgrs_rshift64_avx2(_mm256_mul_epi32(_mm256_srli_epi64(x, 32), _mm256_srli_epi64(mult, 32)),
                                    _mm256_srli_epi64(n, 32));
    qe = _mm256_blendv_epi8(qe, qlo, _mm256_cmpgt_epi64(qlo, qe));
    qe = _mm256_blendv_epi8(qe, qhi, _mm256_cmpgt_epi64(qe, qhi));
    qo = _mm256_blendv_epi8(qo, qlo, _mm256_cmpgt_epi64(qlo, qo));
    qo = _mm256_blendv_epi8(qo, qhi, _mm256_cmpgt_epi64(qo, qhi));
    return _mm256_add_epi32(_mm256_blend_epi32(qe, _mm256_slli_epi64(qo, 32), 0xAA), zp);
}

/*
 * The fields of eight channels' requantization from their (mult, shift) vectors, as tgrs_rq_make derives them:
 * mode 1 (onnx, every shift at most -2; a lane with shift <= -32 gets mult 0 and n2 1, whose result is the zero
 * point, as tgrs_rq_make sets it): f = (mult, n2 = -1 - shift, add2, sub2) for tgrs_rq_fast_avx2; mode 2
 * (tflm): f = (m32, lsh, rsh, zp) for tgrs_rq_tflm_avx2; mode 3 (onnx, any shift): f = (mult, n = 31 - shift, 0, zp)
 * for tgrs_rq_wide_avx2. tgrs_rq_mode_avx2 picks the function.
 */
static inline void tgrs_rq_fields_avx2(int mode, __m256i mv, __m256i sv, int32_t zp_out, __m256i f[4])
{
    const __m256i zero = _mm256_setzero_si256();
    if (mode == 1) {
        const __m256i top = _mm256_set1_epi32((int32_t)0x80000000u), one = _mm256_set1_epi32(1);
        const __m256i gone = _mm256_cmpgt_epi32(_mm256_set1_epi32(-31), sv); /* shift <= -32: mult 0, n2 1 */
        f[0] = _mm256_andnot_si256(gone, mv);
        f[1] = _mm256_blendv_epi8(_mm256_sub_epi32(_mm256_set1_epi32(-1), sv), one, gone);
        f[2] = _mm256_add_epi32(top, _mm256_sllv_epi32(one, _mm256_sub_epi32(f[1], one)));
        f[3] = _mm256_sub_epi32(_mm256_srlv_epi32(top, f[1]), _mm256_set1_epi32(zp_out));
    } else if (mode == 3) {
        f[0] = mv;
        f[1] = _mm256_sub_epi32(_mm256_set1_epi32(31), sv); /* a shift near INT32_MIN wraps to a count above 63 */
        f[2] = zero;
        f[3] = _mm256_set1_epi32(zp_out);
    } else {
        const __m256i gone = _mm256_cmpgt_epi32(_mm256_set1_epi32(-31), sv); /* shift <= -32 */
        f[0] = _mm256_andnot_si256(gone, mv);
        f[1] = _mm256_max_epi32(sv, zero);
        f[2] = _mm256_andnot_si256(gone, _mm256_max_epi32(_mm256_sub_epi32(zero, sv), zero));
        f[3] = _mm256_set1_epi32(zp_out);
    }
}

/* requantize with the fields of tgrs_rq_fields_avx2 */
static inline __m256i tgrs_rq_mode_avx2(int mode, __m256i x, const __m256i f[4], int32_t lo, int32_t hi)
{
    return mode == 1   ? tgrs_rq_fast_avx2(x, f[0], f[1], f[2], f[3], lo, hi)
           : mode == 3 ? tgrs_rq_wide_avx2(x, f[0], f[1], f[3], lo, hi)
                       : tgrs_rq_tflm_avx2(x, f[0], f[1], f[2], f[3], lo, hi);
}

/* The eight int8 values of int32 lanes (already clamped) stored at o. */
static inline void tgrs_store8_avx2(int8_t *o, __m256i q)
{
    const __m256i b = _mm256_packs_epi16(_mm256_packs_epi32(q, q), _mm256_setzero_si256());
    const int32_t b0 = _mm256_extract_epi32(b, 0), b1 = _mm256_extract_epi32(b, 4);
    memcpy(o, &b0, 4);
    memcpy(o + 4, &b1, 4);
}

#endif /* TGRS_HAVE_AVX2 */
#endif /* TGRS_REQUANT_AVX2_H */
