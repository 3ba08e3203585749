/*
 * dwconv_avx2.h - the int8 depthwise tap sums and block store on x86-64 with AVX2 (TGRS_HAVE_AVX2, target.h); part
 * of dwconv.c, same contracts as dw_taps_s8_plain and dw_out_s8_plain. Weights stay in the generic [KH][KW][C] order.
 *
 * Taps are taken in pairs: the 8 input bytes of tap t and of tap t + 1 for 8 channels are interleaved (PUNPCKLBW)
 * and sign-extended to 16 int16, which puts (x_t, x_t+1) of each channel in one 32-bit lane; the weights the same
 * way; one VPMADDWD then adds x_t * w_t + x_t+1 * w_t+1 per channel into int32 lanes in channel order. An odd last
 * tap pairs with zero weights. A block's channels go 8 at a time (two vectors for 16), the last nc % 8 channels in
 * the plain loop, so nothing is read past channel nc. The products are below 2^15 and the int32 lanes wrap like the
 * plain loop's uint32 sums, so the sums are identical.
 *
 * The store requantizes 8 channels per vector (requant_avx2.h): each lane gathers its channel's fields from the
 * block's tgrs_rq array (VPGATHERDD, lanes sizeof(tgrs_rq) apart) and takes the 32-bit form or, under tflm numerics,
 * TFLM's double rounding (requant_avx2.h); a group with an onnx channel outside the 32-bit form (shift above -2)
 * goes through the scalar tgrs_rq_s8, and so do the last nc % 8 channels.
 */
#ifndef TGRS_DWCONV_AVX2_H
#define TGRS_DWCONV_AVX2_H

#if TGRS_HAVE_AVX2

#include <stddef.h>

#include "requant_avx2.h"

/* (x_t, x_u) of 8 channels as 16 int16 in channel-pair order. */
static __m256i dw_pair16_avx2(const int8_t *xt, const int8_t *xu)
{
    const __m128i a = _mm_loadl_epi64((const __m128i *)(const void *)xt);
    const __m128i b = _mm_loadl_epi64((const __m128i *)(const void *)xu);
    return _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(a, b));
}

static void dw_taps_s8_avx2(const int8_t *const *xp, int64_t pstep, int32_t ntaps, const int8_t *wk, int32_t oc,
                            int32_t nc, int two, uint32_t *acc0, uint32_t *acc1)
{
    static const int8_t zeros[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    const int64_t poff = two ? pstep : 0;
    const int32_t nv = nc & ~7;
    int32_t t, c0, cc;
    for (c0 = 0; c0 < nv; c0 += 8) {
        __m256i s0 = _mm256_setzero_si256(), s1 = s0;
        for (t = 0; t < ntaps; t += 2) {
            const int last = t + 1 >= ntaps;
            const int8_t *xt = xp[t] + c0;
            const int8_t *xu = last ? xt : xp[t + 1] + c0;
            const int8_t *wt = wk + (int64_t)t * oc + c0;
            const __m256i w = dw_pair16_avx2(wt, last ? zeros : wt + oc);
            s0 = tgrs_dot16_avx2(s0, dw_pair16_avx2(xt, xu), w);
            if (two) {
                s1 = tgrs_dot16_avx2(s1, dw_pair16_avx2(xt + poff, xu + poff), w);
            }
        }
        _mm256_storeu_si256((__m256i *)(void *)(acc0 + c0), s0);
        _mm256_storeu_si256((__m256i *)(void *)(acc1 + c0), s1);
    }
    for (cc = nv; cc < nc; ++cc) {
        acc0[cc] = 0;
        acc1[cc] = 0;
    }
    for (t = 0; t < ntaps && nv < nc; ++t) {
        const int8_t *x0 = xp[t];
        const int8_t *x1 = x0 + poff;
        const int8_t *w = wk + (int64_t)t * oc;
        for (cc = nv; cc < nc; ++cc) {
            acc0[cc] += (uint32_t)((int32_t)x0[cc] * (int32_t)w[cc]);
            acc1[cc] += (uint32_t)((int32_t)x1[cc] * (int32_t)w[cc]);
        }
    }
}

static void dw_out_s8_avx2(int8_t *o, const uint32_t *acc, const int32_t *bias, const tgrs_rq *rq, int32_t nc,
                           int32_t lo, int32_t hi)
{
    const int32_t st = (int32_t)(sizeof(tgrs_rq) / 4);
    const __m256i idx = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(st));
    int32_t cc = 0, k;
    for (; cc + 8 <= nc; cc += 8) {
        const char *r = (const char *)&rq[cc];
#define DW_AVX2_FIELD(f) _mm256_i32gather_epi32((const int *)(const void *)(r + offsetof(tgrs_rq, f)), idx, 4)
        const __m256i a = _mm256_add_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(acc + cc)),
                                           _mm256_loadu_si256((const __m256i *)(const void *)(bias + cc)));
        const __m256i fast = DW_AVX2_FIELD(fast), tflm = DW_AVX2_FIELD(tflm);
        const __m256i z = _mm256_setzero_si256();
        __m256i q;
        int vec = 1;
        if (_mm256_movemask_epi8(_mm256_cmpeq_epi32(fast, z)) == 0) {
            q = tgrs_rq_fast_avx2(a, DW_AVX2_FIELD(mult), DW_AVX2_FIELD(n2), DW_AVX2_FIELD(add2), DW_AVX2_FIELD(sub2),
                                  lo, hi);
        } else if (_mm256_movemask_epi8(_mm256_cmpeq_epi32(tflm, z)) == 0) {
            q = tgrs_rq_tflm_avx2(a, DW_AVX2_FIELD(m32), DW_AVX2_FIELD(lsh), DW_AVX2_FIELD(rsh), DW_AVX2_FIELD(zp),
                                  lo, hi);
        } else {
            q = z;
            vec = 0;
        }
#undef DW_AVX2_FIELD
        if (vec) {
            /* int32 lanes of int8 values: two packs keep them (no saturation) and put the 8 bytes in lanes 0-3, 8-11 */
            const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(q, q), z);
            const int32_t b0 = _mm256_extract_epi32(p, 0), b1 = _mm256_extract_epi32(p, 4);
            memcpy(o + cc, &b0, 4);
            memcpy(o + cc + 4, &b1, 4);
        } else {
            for (k = cc; k < cc + 8; ++k) {
                o[k] = tgrs_rq_s8(&rq[k], tgrs_wrap_add((int32_t)acc[k], bias[k]), lo, hi);
            }
        }
    }
    for (; cc < nc; ++cc) {
        o[cc] = tgrs_rq_s8(&rq[cc], tgrs_wrap_add((int32_t)acc[cc], bias[cc]), lo, hi);
    }
}


/*
 * float32, depth multiplier 1: per output pixel, the taps inside the image are listed once (input and weight
 * offsets, in the plain loops' (i, j) order), then the channels go 32 at a time in four 8-lane accumulators over that
 * list; a last partial vector is loaded and stored under a mask (VMASKMOVPS reads and writes nothing past channel C).
 * Each output is summed from 0 over the same taps in the same order with fused multiply-adds (one rounding per tap
 * where the plain loop rounds twice: the last bits may differ), then the bias and the clamp (VMAXPS(lo, v),
 * VMINPS(hi, v): the plain selects, NaN included). Multipliers above 1 and windows above DW_MAX_TAPS taps take
 * dw_f32.
 */
static __m256i dw_mask_avx2(int32_t n)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* One output pixel: the nt taps' inputs xp[t] and weights kp[t] (channel 0 of each), summed from 0 in tap order per
 * channel, then bias and clamp; channels 32, 16 and 8 at a time, the last c % 8 under a mask. */
static void dw_px_f32_avx2(float *o, const float *const *xp, const float *const *kp, int32_t nt, int32_t c,
                           const float *bias, __m256 vlo, __m256 vhi)
{
    int32_t t, c0 = 0;
    for (; c0 + 32 <= c; c0 += 32) {
        __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
        for (t = 0; t < nt; ++t) {
            const float *x = xp[t] + c0;
            const float *k = kp[t] + c0;
            s0 = _mm256_fmadd_ps(_mm256_loadu_ps(x), _mm256_loadu_ps(k), s0);
            s1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + 8), _mm256_loadu_ps(k + 8), s1);
            s2 = _mm256_fmadd_ps(_mm256_loadu_ps(x + 16), _mm256_loadu_ps(k + 16), s2);
            s3 = _mm256_fmadd_ps(_mm256_loadu_ps(x + 24), _mm256_loadu_ps(k + 24), s3);
        }
        _mm256_storeu_ps(o + c0, _mm256_min_ps(vhi, _mm256_max_ps(vlo, _mm256_add_ps(s0, _mm256_loadu_ps(bias + c0)))));
        _mm256_storeu_ps(o + c0 + 8,
                         _mm256_min_ps(vhi, _mm256_max_ps(vlo, _mm256_add_ps(s1, _mm256_loadu_ps(bias + c0 + 8)))));
        _mm256_storeu_ps(o + c0 + 16,
                         _mm256_min_ps(vhi, _mm256_max_ps(vlo, _mm256_add_ps(s2, _mm256_loadu_ps(bias + c0 + 16)))));
        _mm256_storeu_ps(o + c0 + 24,
                         _mm256_min_ps(vhi, _mm256_max_ps(vlo, _mm256_add_ps(s3, _mm256_loadu_ps(bias + c0 + 24)))));
    }
    if (c0 + 16 <= c) {
        __m256 s0 = _mm256_setzero_ps(), s1 = s0;
        for (t = 0; t < nt; ++t) {
            s0 = _mm256_fmadd_ps(_mm256_loadu_ps(xp[t] + c0), _mm256_loadu_ps(kp[t] + c0), s0);
            s1 = _mm256_fmadd_ps(_mm256_loadu_ps(xp[t] + c0 + 8), _mm256_loadu_ps(kp[t] + c0 + 8), s1);
        }
        _mm256_storeu_ps(o + c0, _mm256_min_ps(vhi, _mm256_max_ps(vlo, _mm256_add_ps(s0, _mm256_loadu_ps(bias + c0)))));
        _mm256_storeu_ps(o + c0 + 8,
                         _mm256_min_ps(vhi, _mm256_max_ps(vlo, _mm256_add_ps(s1, _mm256_loadu_ps(bias + c0 + 8)))));
        c0 += 16;
    }
    if (c0 + 8 <= c) {
        __m256 s = _mm256_setzero_ps();
        for (t = 0; t < nt; ++t) {
            s = _mm256_fmadd_ps(_mm256_loadu_ps(xp[t] + c0), _mm256_loadu_ps(kp[t] + c0), s);
        }
        _mm256_storeu_ps(o + c0, _mm256_min_ps(vhi, _mm256_max_ps(vlo, _mm256_add_ps(s, _mm256_loadu_ps(bias + c0)))));
        c0 += 8;
    }
    if (c0 < c) {
        const __m256i m = dw_mask_avx2(c - c0);
        __m256 s = _mm256_setzero_ps();
        for (t = 0; t < nt; ++t) {
            s = _mm256_fmadd_ps(_mm256_maskload_ps(xp[t] + c0, m), _mm256_maskload_ps(kp[t] + c0, m), s);
        }
        s = _mm256_add_ps(s, _mm256_maskload_ps(bias + c0, m));
        _mm256_maskstore_ps(o + c0, m, _mm256_min_ps(vhi, _mm256_max_ps(vlo, s)));
    }
}

static int dw_f32_avx2(const tgrs_op_ctx *ctx, const dw_geom *dg)
{
    const tgrs_window *w = &dg->w;
    const float *wt = (const float *)ctx->c[TGRS_C_DWCONV_WEIGHT];
    const float *bias = (const float *)ctx->c[TGRS_C_DWCONV_BIAS];
    const __m256 vlo = _mm256_set1_ps(tgrs_p_f32(ctx, TGRS_P_DWCONV_FMIN));
    const __m256 vhi = _mm256_set1_ps(tgrs_p_f32(ctx, TGRS_P_DWCONV_FMAX));
    const float *in = (const float *)ctx->in[0]->data;
    float *out = (float *)ctx->out->data;
    const int64_t in_img = (int64_t)dg->in_rows * dg->wd * dg->c;
    const int64_t out_img = (int64_t)dg->out_rows * dg->ow * dg->oc;
    const int32_t c = dg->c;
    int64_t toff[DW_MAX_TAPS];
    const float *xp[DW_MAX_TAPS], *kp[DW_MAX_TAPS], *kall[DW_MAX_TAPS];
    int32_t n, r, ow, i, j, t, nt, ntaps;
    if (dg->m != 1 || (int64_t)w->kh * w->kw > DW_MAX_TAPS) {
        return dw_f32(ctx, dg);
    }
    ntaps = dw_tap_offsets(dg, toff); /* interior pixels: every tap, offsets from tap (0, 0) */
    for (t = 0; t < ntaps; ++t) {
        kall[t] = wt + (int64_t)t * c;
    }
    for (n = 0; n < dg->n; ++n) {
        const float *img = in + n * in_img;
        for (r = 0; r < dg->out_rows; ++r) {
            const int32_t oh = dg->out_row0 + r;
            for (ow = 0; ow < dg->ow; ++ow) {
                float *o = out + n * out_img + ((int64_t)r * dg->ow + ow) * c;
                if (dw_interior(dg, oh, ow)) {
                    const float *base = img + dw_base(dg, oh, ow);
                    for (t = 0; t < ntaps; ++t) {
                        xp[t] = base + toff[t];
                    }
                    dw_px_f32_avx2(o, xp, kall, ntaps, c, bias, vlo, vhi);
                    continue;
                }
                nt = 0; /* a border pixel: its taps inside the image, in the same order */
                for (i = 0; i < w->kh; ++i) {
                    const int32_t ih = oh * w->sh - w->pt + i * w->dh;
                    if (ih < 0 || ih >= dg->h) {
                        continue;
                    }
                    for (j = 0; j < w->kw; ++j) {
                        const int32_t iw = ow * w->sw - w->pl + j * w->dw;
                        if (iw < 0 || iw >= dg->wd) {
                            continue;
                        }
                        xp[nt] = img + ((int64_t)(ih - dg->in_row0) * dg->wd + iw) * c;
                        kp[nt] = wt + ((int64_t)i * w->kw + j) * c;
                        ++nt;
                    }
                }
                dw_px_f32_avx2(o, xp, kp, nt, c, bias, vlo, vhi);
            }
        }
    }
    return TGRS_OK;
}

/* A tap's 16 (or 8) input bytes: the zero points for a padded tap (NULL), the one input byte broadcast, or a load. */
static __m128i dw_tap16_avx2(const int8_t *x, int one, __m128i zpx)
{
    return !x ? zpx : one ? _mm_set1_epi8((char)*x) : _mm_loadu_si128((const __m128i *)(const void *)x);
}

static __m128i dw_tap8_avx2(const int8_t *x, int one, __m128i zpx)
{
    return !x ? zpx : one ? _mm_set1_epi8((char)*x) : _mm_loadl_epi64((const __m128i *)(const void *)x);
}

/* The tap sums of an interior pixel's 16 (wide) or 8 channels from base (tap (0, 0) at the group's first channel):
 * taps in pairs with the group's interleaved weights wv; an odd last tap pairs with itself under zero weights. */
static inline void dw_sum_inner_avx2(const int8_t *base, const int64_t *toff, int32_t ntaps, __m256i (*wv)[2],
                                     int wide, __m256i *s0, __m256i *s1)
{
    int32_t p;
    for (p = 0; 2 * p < ntaps; ++p) {
        const int8_t *xa = base + toff[2 * p];
        const int8_t *xb = 2 * p + 1 < ntaps ? base + toff[2 * p + 1] : xa;
        if (wide) {
            const __m128i a = _mm_loadu_si128((const __m128i *)(const void *)xa);
            const __m128i b = _mm_loadu_si128((const __m128i *)(const void *)xb);
            *s0 = tgrs_dot16_avx2(*s0, _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(a, b)), wv[p][0]);
            *s1 = tgrs_dot16_avx2(*s1, _mm256_cvtepi8_epi16(_mm_unpackhi_epi8(a, b)), wv[p][1]);
        } else {
            const __m128i a = _mm_loadl_epi64((const __m128i *)(const void *)xa);
            const __m128i b = _mm_loadl_epi64((const __m128i *)(const void *)xb);
            *s0 = tgrs_dot16_avx2(*s0, _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(a, b)), wv[p][0]);
        }
    }
}

/*
 * The whole int8 op, depth multiplier 1, or any multiplier on a one-channel input (every output channel reads the same
 * input byte, broadcast) (target.h TGRS_DW_FUSED_S8; returns 0 to leave an op to the tap and output loops: no tap list,
 * another multiplier; a group holding an onnx channel outside the 32-bit form requantizes through the prepared scalar
 * tgrs_rq_s8). Channel groups of 16 (or 8) are outermost: a group's weights are interleaved in tap pairs and widened
 * once into registers' worth of local vectors, and its requantization fields are vector loads of mult and shift
 * (channels in lanes, no gathers). Per pixel, each tap pair is two 16-byte loads, an interleave and two sign-
 * extensions, two VPMADDWD and two adds; a padded tap reads a vector of input zero points (real 0, as the bias fold
 * expects). The last C % 8 channels take a scalar loop with the prepared tgrs_rq. Same exact sums and requantization as
 * the plain loops, so the same bytes.
 */
static int dw_fused_s8_avx2(const tgrs_op_ctx *ctx, const dw_geom *dg, const int64_t *toff_m1, int32_t ntaps_m1)
{
    const tgrs_window *w = &dg->w;
    const int8_t *wt = (const int8_t *)ctx->c[TGRS_C_DWCONV_WEIGHT];
    const int32_t *bias = (const int32_t *)ctx->c[TGRS_C_DWCONV_BIAS];
    const int32_t *mult = (const int32_t *)ctx->c[TGRS_C_DWCONV_MULT];
    const int32_t *shift = (const int32_t *)ctx->c[TGRS_C_DWCONV_SHIFT];
    const int32_t lo = ctx->p[TGRS_P_DWCONV_ACT_MIN], hi = ctx->p[TGRS_P_DWCONV_ACT_MAX];
    const int32_t zp_in = ctx->p[TGRS_P_DWCONV_ZP_IN], zp_out = ctx->p[TGRS_P_DWCONV_ZP_OUT];
    const int32_t nm = ctx->p[TGRS_P_DWCONV_NUMERICS];
    const int8_t *in = (const int8_t *)ctx->in[0]->data;
    int8_t *out = (int8_t *)ctx->out->data;
    const int32_t c = dg->oc, c8 = dg->oc & ~7, cin = dg->c;
    /* one input channel read by every output channel (a conv of a one-channel image as TFLite writes it) */
    const int one = cin == 1 && dg->m > 1;
    const int64_t in_img = (int64_t)dg->in_rows * dg->wd * cin;
    const int64_t out_img = (int64_t)dg->out_rows * dg->ow * c;
    int64_t toff_own[DW_MAX_TAPS];
    const int32_t ntaps = one ? dw_tap_offsets(dg, toff_own) : ntaps_m1;
    const int64_t *toff = one ? toff_own : toff_m1;
    int32_t npair;
    const __m128i zpx = _mm_set1_epi8((char)zp_in);
    __m256i wv[DW_MAX_TAPS / 2][2];
    const int8_t *xp[DW_MAX_TAPS + 1];
    tgrs_rq rqt[8];
    int32_t n, r, ow, i, j, t, p, c0, cc;
    if (ntaps <= 0 || (dg->m != 1 && !one)) {
        return 0;
    }
    npair = (ntaps + 1) / 2;
    for (c0 = 0; c0 < c8; c0 += (c0 + 16 <= c) ? 16 : 8) {
        const int wide = c0 + 16 <= c;
        __m256i f0[4], f1[4], b0, b1;
        /* the vector requantization (requant_avx2.h): tflm, the 32-bit onnx form when every channel of the group
           has it, else the 64-bit onnx form */
        int mode = nm == TGRS_RQ_TFLM ? 2 : 1;
        for (cc = c0; cc < c0 + (wide ? 16 : 8) && mode == 1; ++cc) {
            mode = shift[cc] <= -2 ? 1 : 3;
        }
        for (p = 0; p < npair; ++p) {
            const int8_t *wa = wt + (int64_t)(2 * p) * c + c0;
            const int has_b = 2 * p + 1 < ntaps;
            if (wide) {
                const __m128i a = _mm_loadu_si128((const __m128i *)(const void *)wa);
                const __m128i b =
                    has_b ? _mm_loadu_si128((const __m128i *)(const void *)(wa + c)) : _mm_setzero_si128();
                wv[p][0] = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(a, b));
                wv[p][1] = _mm256_cvtepi8_epi16(_mm_unpackhi_epi8(a, b));
            } else {
                const __m128i a = _mm_loadl_epi64((const __m128i *)(const void *)wa);
                const __m128i b =
                    has_b ? _mm_loadl_epi64((const __m128i *)(const void *)(wa + c)) : _mm_setzero_si128();
                wv[p][0] = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(a, b));
                wv[p][1] = wv[p][0];
            }
        }
        tgrs_rq_fields_avx2(mode, _mm256_loadu_si256((const __m256i *)(const void *)(mult + c0)),
                            _mm256_loadu_si256((const __m256i *)(const void *)(shift + c0)), zp_out, f0);
        b0 = _mm256_loadu_si256((const __m256i *)(const void *)(bias + c0));
        if (wide) {
            tgrs_rq_fields_avx2(mode, _mm256_loadu_si256((const __m256i *)(const void *)(mult + c0 + 8)),
                                _mm256_loadu_si256((const __m256i *)(const void *)(shift + c0 + 8)), zp_out, f1);
            b1 = _mm256_loadu_si256((const __m256i *)(const void *)(bias + c0 + 8));
        } else {
            b1 = b0;
            f1[0] = f0[0];
            f1[1] = f0[1];
            f1[2] = f0[2];
            f1[3] = f0[3];
        }
        for (n = 0; n < dg->n; ++n) {
            const int8_t *img = in + n * in_img;
            for (r = 0; r < dg->out_rows; ++r) {
                const int32_t oh = dg->out_row0 + r;
                for (ow = 0; ow < dg->ow; ++ow) {
                    int8_t *o = out + n * out_img + ((int64_t)r * dg->ow + ow) * c + c0;
                    __m256i s0 = _mm256_setzero_si256(), s1 = s0;
                    if (!one && dw_interior(dg, oh, ow)) { /* every tap a load at the op's offsets */
                        dw_sum_inner_avx2(img + dw_base(dg, oh, ow) + c0, toff, ntaps, wv, wide, &s0, &s1);
                    } else {
                        if (dw_interior(dg, oh, ow)) {
                            const int8_t *base = img + dw_base(dg, oh, ow) + (one ? 0 : c0);
                            for (t = 0; t < ntaps; ++t) {
                                xp[t] = base + toff[t];
                            }
                        } else {
                            t = 0;
                            for (i = 0; i < w->kh; ++i) {
                                const int32_t ih = oh * w->sh - w->pt + i * w->dh;
                                for (j = 0; j < w->kw; ++j, ++t) {
                                    const int32_t iw = ow * w->sw - w->pl + j * w->dw;
                                    const int64_t at = ((int64_t)(ih - dg->in_row0) * dg->wd + iw) * cin;
                                    xp[t] = (ih >= 0 && ih < dg->h && iw >= 0 && iw < dg->wd)
                                                ? img + at + (one ? 0 : c0)
                                                : NULL; /* padded: the input zero point */
                                }
                            }
                        }
                        xp[ntaps] = NULL; /* an odd last tap pairs with zero weights */
                        for (p = 0; p < npair; ++p) {
                            const int8_t *xa = xp[2 * p], *xb = xp[2 * p + 1];
                            if (wide) {
                                const __m128i a = dw_tap16_avx2(xa, one, zpx);
                                const __m128i b = dw_tap16_avx2(xb, one, zpx);
                                s0 = tgrs_dot16_avx2(s0, _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(a, b)),
                                                     wv[p][0]);
                                s1 = tgrs_dot16_avx2(s1, _mm256_cvtepi8_epi16(_mm_unpackhi_epi8(a, b)),
                                                     wv[p][1]);
                            } else {
                                const __m128i a = dw_tap8_avx2(xa, one, zpx);
                                const __m128i b = dw_tap8_avx2(xb, one, zpx);
                                s0 = tgrs_dot16_avx2(s0, _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(a, b)),
                                                     wv[p][0]);
                            }
                        }
                    }
                    tgrs_store8_avx2(o, tgrs_rq_mode_avx2(mode, _mm256_add_epi32(s0, b0), f0, lo, hi));
                    if (wide) {
                        tgrs_store8_avx2(o + 8, tgrs_rq_mode_avx2(mode, _mm256_add_epi32(s1, b1), f1, lo, hi));
                    }
                }
            }
        }
    }
    if (c8 == c) {
        return 1;
    }
    for (cc = c8; cc < c; ++cc) {
        tgrs_rq_prepare(&rqt[cc - c8], mult[cc], shift[cc], zp_out, nm);
    }
    for (n = 0; n < dg->n; ++n) {
        const int8_t *img = in + n * in_img;
        for (r = 0; r < dg->out_rows; ++r) {
            const int32_t oh = dg->out_row0 + r;
            for (ow = 0; ow < dg->ow; ++ow) {
                int8_t *o = out + n * out_img + ((int64_t)r * dg->ow + ow) * c;
                for (cc = c8; cc < c; ++cc) {
                    uint32_t acc = 0;
                    t = 0;
                    for (i = 0; i < w->kh; ++i) {
                        const int32_t ih = oh * w->sh - w->pt + i * w->dh;
                        for (j = 0; j < w->kw; ++j, ++t) {
                            const int32_t iw = ow * w->sw - w->pl + j * w->dw;
                            const int64_t at = ((int64_t)(ih - dg->in_row0) * dg->wd + iw) * cin + (one ? 0 : cc);
                            const int32_t x = (ih >= 0 && ih < dg->h && iw >= 0 && iw < dg->wd) ? img[at] : zp_in;
                            acc += (uint32_t)(x * (int32_t)wt[(int64_t)t * c + cc]);
                        }
                    }
                    o[cc] = tgrs_rq_s8(&rqt[cc - c8], tgrs_wrap_add((int32_t)acc, bias[cc]), lo, hi);
                }
            }
        }
    }
    return 1;
}

#endif /* TGRS_HAVE_AVX2 */
#endif /* TGRS_DWCONV_AVX2_H */
