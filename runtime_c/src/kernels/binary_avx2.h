/*
 * binary_avx2.h - int8 Add/Sub and Mul (onnx numerics) on x86-64 with AVX2 (TGRS_HAVE_AVX2, target.h); part of
 * binary.c, same arithmetic as span_s8's loops, four elements per step in 64-bit lanes (and span_f32's, below):
 *   add: acc = (qa - za) * ma + (qb - zb) * mb, where |q - z| <= 255 and |m| < 2^53: each product is formed exactly
 *        from VPMULDQ by the multiplier's two 32-bit halves (m = h * 2^32 + l with l read as signed, h absorbing the
 *        borrow), |acc| < 2^61;
 *   mul: acc = ((qa - za) * (qb - zb)) * mult, one VPMULDQ of the 16-bit product by the multiplier.
 * The rounding shift halves to even like tgrs_rshift_half_even: acc + 2^62 is positive, so a logical shift gives
 * floor(acc / 2^n) + 2^(62 - n) (n <= 61: the offset is even, so the parity test is unchanged) and the low n bits
 * are the remainder; one is added above the half, or at the half when the quotient is odd. Then the zero point and
 * the clamp in 64 bits, and the low bytes are the results. Returns how many leading elements it wrote (a multiple of
 * 4; 0 for tflm numerics or a shift outside [1, 61]); the scalar loops do the rest. Operand strides are 1 or 0.
 */
#ifndef TGRS_BINARY_AVX2_H
#define TGRS_BINARY_AVX2_H

#if TGRS_HAVE_AVX2

#include <string.h>

/* Four operand bytes at element i (stride 1) or the broadcast byte (stride 0), as 64-bit lanes minus the zero point. */
static inline __m256i bin_d64_avx2(const int8_t *x, size_t i, size_t sx, __m256i z)
{
    int32_t v;
    if (sx != 0u) {
        memcpy(&v, x + i, 4);
    } else {
        v = (int32_t)((uint32_t)(uint8_t)x[0] * 0x01010101u);
    }
    return _mm256_sub_epi64(_mm256_cvtepi8_epi64(_mm_cvtsi32_si128(v)), z);
}

/* d * m exactly, for 64-bit lanes d with |d| < 2^31 and m = (h << 32) + l (h, l in the lanes' low words). */
static inline __m256i bin_mul64_avx2(__m256i d, __m256i h, __m256i l)
{
    return _mm256_add_epi64(_mm256_slli_epi64(_mm256_mul_epi32(d, h), 32), _mm256_mul_epi32(d, l));
}

/* The 32-bit halves of m for bin_mul64_avx2: l is the low word read as signed, h = (m - l) / 2^32. */
static inline void bin_split_avx2(int64_t m, __m256i *h, __m256i *l)
{
    const int32_t lo = (int32_t)(uint32_t)((uint64_t)m & 0xFFFFFFFFu);
    *l = _mm256_set1_epi64x(lo);
    *h = _mm256_set1_epi64x((m - lo) / ((int64_t)1 << 32));
}

static size_t bin_s8_avx2(const binop *op, int8_t *y, const int8_t *x, const int8_t *z, size_t count, size_t sx,
                          size_t sz)
{
    const int32_t n = op->is_mul ? op->mul_n : op->rs;
    const __m256i za = _mm256_set1_epi64x(op->za), zb = _mm256_set1_epi64x(op->zb);
    const __m256i one = _mm256_set1_epi64x(1);
    const __m256i lo = _mm256_set1_epi64x(op->lo), hi = _mm256_set1_epi64x(op->hi);
    const __m256i pick = _mm256_setr_epi8(0, 8, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                          0, 8, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
    __m256i ah, al, bh, bl, mult, off, mask, half, base;
    __m128i sh;
    size_t i = 0;
    if (op->tflm || n < 1 || n > 61) {
        return 0;
    }
    bin_split_avx2(op->ma, &ah, &al);
    bin_split_avx2(op->mb, &bh, &bl);
    mult = _mm256_set1_epi64x(op->mult);
    off = _mm256_set1_epi64x((int64_t)1 << 62);
    mask = _mm256_set1_epi64x(((int64_t)1 << n) - 1);
    half = _mm256_set1_epi64x((int64_t)1 << (n - 1));
    base = _mm256_set1_epi64x(((int64_t)1 << (62 - n)) - op->zo); /* the offset's quotient, less the zero point */
    sh = _mm_cvtsi32_si128(n);
    for (; i + 4 <= count; i += 4) {
        const __m256i da = bin_d64_avx2(x, i, sx, za), db = bin_d64_avx2(z, i, sz, zb);
        const __m256i acc = op->is_mul ? _mm256_mul_epi32(_mm256_mul_epi32(da, db), mult)
                                       : _mm256_add_epi64(bin_mul64_avx2(da, ah, al), bin_mul64_avx2(db, bh, bl));
        const __m256i t = _mm256_add_epi64(acc, off);
        const __m256i r = _mm256_and_si256(t, mask);
        __m256i q = _mm256_srl_epi64(t, sh);
        const __m256i odd = _mm256_cmpeq_epi64(_mm256_and_si256(q, one), one);
        const __m256i up = _mm256_or_si256(_mm256_cmpgt_epi64(r, half),
                                           _mm256_and_si256(_mm256_cmpeq_epi64(r, half), odd));
        __m128i b;
        int32_t v;
        q = _mm256_sub_epi64(_mm256_sub_epi64(q, up), base); /* up is -1 where the quotient rounds up */
        q = _mm256_blendv_epi8(q, lo, _mm256_cmpgt_epi64(lo, q));
        q = _mm256_blendv_epi8(q, hi, _mm256_cmpgt_epi64(q, hi));
        q = _mm256_shuffle_epi8(q, pick); /* the low bytes of lanes 0, 1 | 2, 3 */
        b = _mm_unpacklo_epi16(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
        v = _mm_cvtsi128_si32(b);
        memcpy(y + i, &v, 4);
    }
    return i;
}

/* float32 a + b, a - b or a * b and the clamp, eight elements per step (the scalar loop's operations, so its bits: the
 * clamp is VMAXPS(lo, r) then VMINPS(hi, r), which return r for a NaN r as the scalar selects do). */
static size_t bin_f32_avx2(const binop *op, float *y, const float *x, const float *z, size_t count, size_t sx,
                           size_t sz)
{
    const __m256 flo = _mm256_set1_ps(op->flo), fhi = _mm256_set1_ps(op->fhi);
    const __m256 xb = _mm256_set1_ps(x[0]), zb = _mm256_set1_ps(z[0]);
    size_t i = 0;
    for (; i + 8 <= count; i += 8) {
        const __m256 a = sx != 0u ? _mm256_loadu_ps(x + i) : xb;
        const __m256 b = sz != 0u ? _mm256_loadu_ps(z + i) : zb;
        const __m256 r = op->is_mul ? _mm256_mul_ps(a, b) : (op->sub ? _mm256_sub_ps(a, b) : _mm256_add_ps(a, b));
        _mm256_storeu_ps(y + i, _mm256_min_ps(fhi, _mm256_max_ps(flo, r)));
    }
    return i;
}

#endif /* TGRS_HAVE_AVX2 */
#endif /* TGRS_BINARY_AVX2_H */
