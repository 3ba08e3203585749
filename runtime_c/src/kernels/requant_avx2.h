/*
 * requant_avx2.h - tgrs_rq_s8_fast (requant.h) on eight int32 lanes with AVX2, for the x86-64 host kernels
 * (TGRS_HAVE_AVX2, target.h). The same arithmetic, lane by lane, so the bytes are identical: VPMULDQ forms the exact
 * 64-bit products of the even and of the odd lanes, a 64-bit compare supplies the borrow of P = p - [p < 0], the high
 * words go back into lane order, and the per-lane rounding add, variable shift and zero point finish as in the scalar
 * form. Every lane must be in the 32-bit form (onnx numerics, shift <= -2, mult >= 0: tgrs_rq.fast).
 */
#ifndef TGRS_REQUANT_AVX2_H
#define TGRS_REQUANT_AVX2_H

#if TGRS_HAVE_AVX2

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

#endif /* TGRS_HAVE_AVX2 */
#endif /* TGRS_REQUANT_AVX2_H */
