/*
 * conv_avx512.h - the float conv GEMM's wide panel groups on x86-64 with AVX-512 F and VL (the host's avx512 level,
 * TGRS_HAVE_AVX512 in target.h); part of conv.c through conv_avx2.h, whose driver (conv_f32_avx2) calls
 * TGRS_CONV_MKW_F32 for the groups TGRS_CONV_PANELS_F32 chooses. Weights keep the plan's 8-channel panels: two
 * consecutive panels' rows at one k are joined into one 16-lane register (a 256-bit load and a 256-bit insert), so a
 * group of four or six panels is two or three registers per pixel row, 8 or 12 accumulators, with the same four
 * broadcasts per k as the AVX2 micro-kernels; two panels take a block's eight pixel rows at once (eight accumulators).
 * Every lane is still one output summed from 0 in k order by fused
 * multiply-adds (VFMADD231PS), so each output has the AVX2 level's bits; only the lane count per instruction changes.
 */
#ifndef TGRS_CONV_AVX512_H
#define TGRS_CONV_AVX512_H

#if TGRS_HAVE_AVX512

/* Row k of panels p and p + 1 (ps floats apart) as one 16-lane register. */
static inline __m512 conv_w2_f32_avx512(const float *b, int64_t ps)
{
    const __m512d lo = _mm512_castpd256_pd512(_mm256_castps_pd(_mm256_loadu_ps(b)));
    return _mm512_castpd_ps(_mm512_insertf64x4(lo, _mm256_castps_pd(_mm256_loadu_ps(b + ps)), 1));
}

/* Output of accumulator c (panels 2 z and 2 z + 1 of row `row`): the epilogue of full blocks, or the accumulator
 * rows of partial ones. */
static inline void conv_out2_f32_avx512(const conv_out_f32 *e, float acc[CONV_MR][CONV_ACC_W], int32_t row, int32_t z,
                                        __m512 c)
{
    if (e->full) {
        const __m256 lo = _mm512_castps512_ps256(c);
        const __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(c), 1));
        CONV_OUT_F32(e, row, 2 * z, lo);
        CONV_OUT_F32(e, row, 2 * z + 1, hi);
        return;
    }
    _mm512_storeu_ps(acc[row] + 2 * CONV_NR * z, c);
}

/*
 * acc[i][p * 8 + j] = sum_k a_i[k] * b_p[k][j] for the CONV_MR = 4 rows and np = 4 or 6 panels from b0 (ps floats
 * apart): per k, np / 2 joined panel loads, four broadcasts and 2 np fused multiply-adds on 16 lanes.
 */
static void conv_mkw_f32_avx512(int32_t np, int32_t nseg, int32_t rl, const float *const *a, const float *b0,
                                int64_t ps, float acc[CONV_MR][CONV_ACC_W], const conv_out_f32 *e)
{
    __m512 c00 = _mm512_setzero_ps(), c01 = c00, c02 = c00, c10 = c00, c11 = c00, c12 = c00;
    __m512 c20 = c00, c21 = c00, c22 = c00, c30 = c00, c31 = c00, c32 = c00;
    const int64_t step = (int64_t)rl * CONV_NR; /* one segment of a panel */
    const float *b1 = b0 + 2 * ps, *b2 = b0 + 4 * ps;
    int32_t sg, kk;
    if (np == 6) {
        for (sg = 0; sg < nseg; ++sg, b0 += step, b1 += step, b2 += step) {
            const float *a0 = a[CONV_MR * sg], *a1 = a[CONV_MR * sg + 1];
            const float *a2 = a[CONV_MR * sg + 2], *a3 = a[CONV_MR * sg + 3];
            for (kk = 0; kk < rl; ++kk) {
                const __m512 w0 = conv_w2_f32_avx512(b0 + (int64_t)kk * CONV_NR, ps);
                const __m512 w1 = conv_w2_f32_avx512(b1 + (int64_t)kk * CONV_NR, ps);
                const __m512 w2 = conv_w2_f32_avx512(b2 + (int64_t)kk * CONV_NR, ps);
                __m512 x = _mm512_set1_ps(a0[kk]);
                c00 = _mm512_fmadd_ps(x, w0, c00);
                c01 = _mm512_fmadd_ps(x, w1, c01);
                c02 = _mm512_fmadd_ps(x, w2, c02);
                x = _mm512_set1_ps(a1[kk]);
                c10 = _mm512_fmadd_ps(x, w0, c10);
                c11 = _mm512_fmadd_ps(x, w1, c11);
                c12 = _mm512_fmadd_ps(x, w2, c12);
                x = _mm512_set1_ps(a2[kk]);
                c20 = _mm512_fmadd_ps(x, w0, c20);
                c21 = _mm512_fmadd_ps(x, w1, c21);
                c22 = _mm512_fmadd_ps(x, w2, c22);
                x = _mm512_set1_ps(a3[kk]);
                c30 = _mm512_fmadd_ps(x, w0, c30);
                c31 = _mm512_fmadd_ps(x, w1, c31);
                c32 = _mm512_fmadd_ps(x, w2, c32);
            }
        }
        conv_out2_f32_avx512(e, acc, 0, 2, c02);
        conv_out2_f32_avx512(e, acc, 1, 2, c12);
        conv_out2_f32_avx512(e, acc, 2, 2, c22);
        conv_out2_f32_avx512(e, acc, 3, 2, c32);
    } else {
        for (sg = 0; sg < nseg; ++sg, b0 += step, b1 += step) {
            const float *a0 = a[CONV_MR * sg], *a1 = a[CONV_MR * sg + 1];
            const float *a2 = a[CONV_MR * sg + 2], *a3 = a[CONV_MR * sg + 3];
            for (kk = 0; kk < rl; ++kk) {
                const __m512 w0 = conv_w2_f32_avx512(b0 + (int64_t)kk * CONV_NR, ps);
                const __m512 w1 = conv_w2_f32_avx512(b1 + (int64_t)kk * CONV_NR, ps);
                __m512 x = _mm512_set1_ps(a0[kk]);
                c00 = _mm512_fmadd_ps(x, w0, c00);
                c01 = _mm512_fmadd_ps(x, w1, c01);
                x = _mm512_set1_ps(a1[kk]);
                c10 = _mm512_fmadd_ps(x, w0, c10);
                c11 = _mm512_fmadd_ps(x, w1, c11);
                x = _mm512_set1_ps(a2[kk]);
                c20 = _mm512_fmadd_ps(x, w0, c20);
                c21 = _mm512_fmadd_ps(x, w1, c21);
                x = _mm512_set1_ps(a3[kk]);
                c30 = _mm512_fmadd_ps(x, w0, c30);
                c31 = _mm512_fmadd_ps(x, w1, c31);
            }
        }
    }
    conv_out2_f32_avx512(e, acc, 0, 0, c00);
    conv_out2_f32_avx512(e, acc, 0, 1, c01);
    conv_out2_f32_avx512(e, acc, 1, 0, c10);
    conv_out2_f32_avx512(e, acc, 1, 1, c11);
    conv_out2_f32_avx512(e, acc, 2, 0, c20);
    conv_out2_f32_avx512(e, acc, 2, 1, c21);
    conv_out2_f32_avx512(e, acc, 3, 0, c30);
    conv_out2_f32_avx512(e, acc, 3, 1, c31);
}

/*
 * Two panels from b0 (ps floats apart) for eight rows: rows 0-3 from the segments a0, rows 4-7 from a1, one 16-lane
 * accumulator each (eight chains, where four rows would leave the fused multiply-adds waiting on their latency); per
 * k one joined panel load, eight broadcasts and eight fused multiply-adds. acc[d] and e[d] are half d's.
 */
static void conv_mk2r_f32_avx512(int32_t nseg, int32_t rl, const float *const *a0, const float *const *a1,
                                 const float *b0, int64_t ps, float acc[2][CONV_MR][CONV_ACC_W],
                                 const conv_out_f32 *e)
{
    __m512 c0 = _mm512_setzero_ps(), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0, c7 = c0;
    const int64_t step = (int64_t)rl * CONV_NR;
    int32_t sg, kk;
    for (sg = 0; sg < nseg; ++sg, b0 += step) {
        const float *p0 = a0[CONV_MR * sg], *p1 = a0[CONV_MR * sg + 1];
        const float *p2 = a0[CONV_MR * sg + 2], *p3 = a0[CONV_MR * sg + 3];
        const float *p4 = a1[CONV_MR * sg], *p5 = a1[CONV_MR * sg + 1];
        const float *p6 = a1[CONV_MR * sg + 2], *p7 = a1[CONV_MR * sg + 3];
        for (kk = 0; kk < rl; ++kk) {
            const __m512 wv = conv_w2_f32_avx512(b0 + (int64_t)kk * CONV_NR, ps);
            c0 = _mm512_fmadd_ps(_mm512_set1_ps(p0[kk]), wv, c0);
            c1 = _mm512_fmadd_ps(_mm512_set1_ps(p1[kk]), wv, c1);
            c2 = _mm512_fmadd_ps(_mm512_set1_ps(p2[kk]), wv, c2);
            c3 = _mm512_fmadd_ps(_mm512_set1_ps(p3[kk]), wv, c3);
            c4 = _mm512_fmadd_ps(_mm512_set1_ps(p4[kk]), wv, c4);
            c5 = _mm512_fmadd_ps(_mm512_set1_ps(p5[kk]), wv, c5);
            c6 = _mm512_fmadd_ps(_mm512_set1_ps(p6[kk]), wv, c6);
            c7 = _mm512_fmadd_ps(_mm512_set1_ps(p7[kk]), wv, c7);
        }
    }
    conv_out2_f32_avx512(&e[0], acc[0], 0, 0, c0);
    conv_out2_f32_avx512(&e[0], acc[0], 1, 0, c1);
    conv_out2_f32_avx512(&e[0], acc[0], 2, 0, c2);
    conv_out2_f32_avx512(&e[0], acc[0], 3, 0, c3);
    conv_out2_f32_avx512(&e[1], acc[1], 0, 0, c4);
    conv_out2_f32_avx512(&e[1], acc[1], 1, 0, c5);
    conv_out2_f32_avx512(&e[1], acc[1], 2, 0, c6);
    conv_out2_f32_avx512(&e[1], acc[1], 3, 0, c7);
}

/* Panels of the next micro-kernel call when rem are left: groups of six (three 16-lane registers) or four (two),
 * leaving the AVX2 calls (three, two, one 8-lane panels) only the counts that split no better: 1, 2, 3 and 5. */
static int32_t conv_panels_avx512(int32_t rem)
{
    if (rem == 6 || rem >= 9) {
        return 6;
    }
    if (rem == 4 || rem == 7 || rem == 8) {
        return 4;
    }
    return conv_panels_avx2(rem);
}

#endif /* TGRS_HAVE_AVX512 */

#endif /* TGRS_CONV_AVX512_H */
