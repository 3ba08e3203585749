/*
 * quant_avx2.h - QuantizeLinear's per-tensor loop on x86-64 with AVX2 (TGRS_HAVE_AVX2, target.h); part of quant.c,
 * same arithmetic as its scalar loop, eight elements per step: the float32 division (VDIVPS rounds exactly like the
 * scalar division), the clamp to +-2^16, round half to even (VROUNDPS in nearest mode: what tgrs_rne_small computes), the
 * zero point and the clamp to [lo, hi]; a NaN lane takes the zero point. Returns how many leading elements it wrote
 * (a multiple of 8); the scalar loop does the rest.
 */
#ifndef TGRS_QUANT_AVX2_H
#define TGRS_QUANT_AVX2_H

#if TGRS_HAVE_AVX2

#include <string.h>

static size_t quant_s8_avx2(const float *x, void *y, size_t len, float scale, int32_t zp, int32_t lo, int32_t hi,
                            int u8)
{
    const __m256 s = _mm256_set1_ps(scale);
    const __m256 big = _mm256_set1_ps(65536.0f), nbig = _mm256_set1_ps(-65536.0f);
    const __m256i z = _mm256_set1_epi32(zp), vlo = _mm256_set1_epi32(lo), vhi = _mm256_set1_epi32(hi);
    uint8_t *o = (uint8_t *)y;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        const __m256 v = _mm256_div_ps(_mm256_loadu_ps(x + i), s);
        const __m256 nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
        const __m256 c = _mm256_min_ps(_mm256_max_ps(v, nbig), big); /* NaN lanes are replaced below */
        __m256i q = _mm256_cvtps_epi32(_mm256_round_ps(c, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        __m128i b;
        q = _mm256_min_epi32(_mm256_max_epi32(_mm256_add_epi32(q, z), vlo), vhi);
        q = _mm256_blendv_epi8(q, z, _mm256_castps_si256(nan));
        /* int32 lanes in [lo, hi] (a byte's range): the packs keep the values, the low byte is the stored one */
        b = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
        b = u8 ? _mm_packus_epi16(b, b) : _mm_packs_epi16(b, b);
        memcpy(o + i, &b, 8);
    }
    return i;
}

#endif /* TGRS_HAVE_AVX2 */
#endif /* TGRS_QUANT_AVX2_H */
