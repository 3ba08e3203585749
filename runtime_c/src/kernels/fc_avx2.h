/*
 * fc_avx2.h - the int8 fully connected dot product on x86-64 with AVX2 (TGRS_HAVE_AVX2, target.h); part of fc.c, same
 * contract as fc_dot_s8: the sum of k products, modulo 2^32. Per 16 values, both operands are sign-extended to int16
 * (VPMOVSXBW) and one VPMADDWD adds pairs of products into eight int32 lanes (tgrs_dot16_avx2); the lanes wrap modulo
 * 2^32 like fc_dot_s8's wrapping block total, so the result is the same number. The k % 16 tail goes through fc_dot_s8.
 */
#ifndef TGRS_FC_AVX2_H
#define TGRS_FC_AVX2_H

#if TGRS_HAVE_AVX2

#include "requant_avx2.h"

static int32_t fc_dot_s8_avx2(const int8_t *x, const int8_t *w, int32_t k)
{
    __m256i s0 = _mm256_setzero_si256(), s1 = s0;
    __m128i h;
    int32_t i = 0;
    for (; i + 32 <= k; i += 32) { /* two accumulators: the adds of consecutive chunks do not wait on each other */
        const __m256i x0 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(const void *)(x + i)));
        const __m256i w0 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(const void *)(w + i)));
        const __m256i x1 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(const void *)(x + i + 16)));
        const __m256i w1 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(const void *)(w + i + 16)));
        s0 = tgrs_dot16_avx2(s0, x0, w0);
        s1 = tgrs_dot16_avx2(s1, x1, w1);
    }
    for (; i + 16 <= k; i += 16) {
        const __m256i x0 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(const void *)(x + i)));
        const __m256i w0 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(const void *)(w + i)));
        s0 = tgrs_dot16_avx2(s0, x0, w0);
    }
    s0 = _mm256_add_epi32(s0, s1);
    h = _mm_add_epi32(_mm256_castsi256_si128(s0), _mm256_extracti128_si256(s0, 1));
    h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0x4E));
    h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0xB1));
    return tgrs_wrap_add(_mm_cvtsi128_si32(h), i < k ? fc_dot_s8(x + i, w + i, k - i) : 0);
}

#endif /* TGRS_HAVE_AVX2 */
#endif /* TGRS_FC_AVX2_H */
