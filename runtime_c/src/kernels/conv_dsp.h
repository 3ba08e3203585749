/*
 * conv_dsp.h - the int8 conv GEMM on the Cortex-M DSP extension (TGRS_HAVE_DSP, target.h); part of conv.c, which
 * includes it after its geometry helpers. Weights stay in the generic [G][OCg][K] order: no plan change.
 *
 * The dual 16-bit multiply-accumulate SMLAD adds x.lo * y.lo + x.hi * y.hi. One 32-bit load of four weights
 * w0..w3 and two sign-extensions give the halfword pairs (w0, w2) (SXTB16) and (w1, w3) (SXTB16 of the word
 * rotated by 8); the patch rows are widened once per block of pixels into that same pair order, so the inner loop
 * spends nothing on shuffling: per four k, one weight load, two extensions, and two SMLADs per pixel.
 *
 * Scratch block (exactly CONV_MR * K int16, the scratch the plan reserves): with K4 = K rounded down to a multiple
 * of four and T = K - K4, group g (k = 4g..4g+3) of the CONV_MR = 4 rows is 16 int16 at 16 g: row r's four values
 * at 16 g + 4 r in the order (k0, k2, k1, k3); the T tail values of row r follow at 4 K4 + T r, in plain order.
 * Micro-kernel: the CONV_MR = 4 pixels against one output channel, 4 accumulators, 13 registers (no spills).
 * The sums are exact int32 (K <= CONV_MAX_PATCH, conv.c), so they equal the plain loops' whatever the order.
 */
#ifndef TGRS_CONV_DSP_H
#define TGRS_CONV_DSP_H

#if TGRS_ISA == TGRS_ISA_DSP /* the Helium build has its own GEMM (conv_mve.h) */

/* Position of patch value k of row r in the block (see above). */
static inline int32_t conv_dsp_pos(int32_t k, int32_t r, int32_t k4, int32_t t)
{
    if (k < k4) {
        return (k >> 2) * 16 + r * 4 + (k & 1) * 2 + ((k >> 1) & 1);
    }
    return k4 * 4 + r * t + (k - k4);
}

/* n patch values of row r starting at patch index k, from int8 src (n == 0 is fine). */
static void conv_dsp_put(int16_t *blk, int32_t k4, int32_t t, int32_t r, int32_t k, const int8_t *src, int32_t n)
{
    int32_t e = 0;
    for (; e < n && ((k + e) & 3) != 0; ++e) {
        blk[conv_dsp_pos(k + e, r, k4, t)] = src[e];
    }
    for (; e + 4 <= n && k + e + 4 <= k4; e += 4) {
        uint32_t x;
        int32_t pr[2];
        memcpy(&x, src + e, 4);
        pr[0] = __sxtb16((int32_t)x);        /* (x0, x2) */
        pr[1] = __sxtb16((int32_t)(x >> 8)); /* (x1, x3) */
        memcpy(blk + ((k + e) >> 2) * 16 + r * 4, pr, 8);
    }
    for (; e < n; ++e) {
        blk[conv_dsp_pos(k + e, r, k4, t)] = src[e];
    }
}

/* n copies of the input zero point (padded taps, real 0) at patch index k of row r. */
static void conv_dsp_fill(int16_t *blk, int32_t k4, int32_t t, int32_t r, int32_t k, int32_t zp, int32_t n)
{
    int32_t e;
    for (e = 0; e < n; ++e) {
        blk[conv_dsp_pos(k + e, r, k4, t)] = (int16_t)zp;
    }
}

/* The patch of output pixel (oh, ow), group g, as row r of the block. With one group and no horizontal dilation a
 * kernel row's in-image taps are one contiguous run of the input, put as one piece (few channels per tap, as in a
 * first layer, would otherwise go value by value; -Os builds skip it: TGRS_SPEED_PATHS, target.h). */
static void conv_dsp_gather(const conv_geom *cg, const int8_t *img, int32_t oh, int32_t ow, int32_t g, int32_t zp,
                            int16_t *blk, int32_t r)
{
    const tgrs_window *w = &cg->w;
    const int32_t k4 = cg->k & ~3, t = cg->k - k4, icg = cg->icg, run = w->kw * icg;
    const int32_t iw0 = ow * w->sw - w->pl;
    int32_t i, j, k = 0;
    for (i = 0; i < w->kh; ++i, k += run) {
        const int32_t ih = oh * w->sh - w->pt + i * w->dh;
        if (ih < 0 || ih >= cg->h) {
            conv_dsp_fill(blk, k4, t, r, k, zp, run);
            continue;
        }
        if (TGRS_SPEED_PATHS && cg->g == 1 && w->dw == 1) {
            const int32_t j0 = iw0 < 0 ? (-iw0 < w->kw ? -iw0 : w->kw) : 0; /* first in-image tap */
            const int32_t j1 = iw0 + w->kw > cg->wd ? cg->wd - iw0 : w->kw;  /* past the last one */
            if (j1 <= j0) {
                conv_dsp_fill(blk, k4, t, r, k, zp, run);
                continue;
            }
            conv_dsp_fill(blk, k4, t, r, k, zp, j0 * icg);
            conv_dsp_put(blk, k4, t, r, k + j0 * icg, img + conv_in_off(cg, ih, iw0 + j0), (j1 - j0) * icg);
            conv_dsp_fill(blk, k4, t, r, k + j1 * icg, zp, (w->kw - j1) * icg);
            continue;
        }
        for (j = 0; j < w->kw; ++j) {
            const int32_t iw = iw0 + j * w->dw;
            if (iw >= 0 && iw < cg->wd) {
                conv_dsp_put(blk, k4, t, r, k + j * icg, img + conv_in_off(cg, ih, iw) + (int64_t)g * icg, icg);
            } else {
                conv_dsp_fill(blk, k4, t, r, k + j * icg, zp, icg);
            }
        }
    }
}

/*
 * s[r] = sum_k patch_r[k] * w[k] for the four rows of the block. The loop over the K4 / 4 groups is written in
 * assembly: GCC 12 neither folds the rotation into SXTB16 nor keeps the four rows' pointer in one register, which
 * costs 6 of 17 instructions per 16 MACs. blk must be 4-byte aligned (LDRD); the weights may be at any address.
 */
static void conv_dsp_dot4(const int16_t *blk, const int8_t *w, int32_t k4, int32_t t, int32_t s[4])
{
    int32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0, e, o, x0, x1, x2, x3, kk;
    const int16_t *a = blk;
    const int8_t *wp = w;
    const int8_t *const wend = w + k4;
    if (k4 > 0) {
        __asm__("1:\n\t"
                "ldr %[e], [%[w]], #4\n\t"
                "ldrd %[x0], %[x1], [%[a]], #8\n\t"
                "ldrd %[x2], %[x3], [%[a]], #8\n\t"
                "sxtb16 %[o], %[e], ror #8\n\t"
                "sxtb16 %[e], %[e]\n\t"
                "smlad %[s0], %[x0], %[e], %[s0]\n\t"
                "smlad %[s0], %[x1], %[o], %[s0]\n\t"
                "smlad %[s1], %[x2], %[e], %[s1]\n\t"
                "smlad %[s1], %[x3], %[o], %[s1]\n\t"
                "ldrd %[x0], %[x1], [%[a]], #8\n\t"
                "ldrd %[x2], %[x3], [%[a]], #8\n\t"
                "smlad %[s2], %[x0], %[e], %[s2]\n\t"
                "smlad %[s2], %[x1], %[o], %[s2]\n\t"
                "smlad %[s3], %[x2], %[e], %[s3]\n\t"
                "smlad %[s3], %[x3], %[o], %[s3]\n\t"
                "cmp %[w], %[end]\n\t"
                "bne 1b"
                : [s0] "+r"(s0), [s1] "+r"(s1), [s2] "+r"(s2), [s3] "+r"(s3), [a] "+r"(a), [w] "+r"(wp),
                  [e] "=&r"(e), [o] "=&r"(o), [x0] "=&r"(x0), [x1] "=&r"(x1), [x2] "=&r"(x2), [x3] "=&r"(x3)
                : [end] "r"(wend)
                : "cc", "memory");
    }
    for (kk = 0; kk < t; ++kk) {
        const int32_t v = w[k4 + kk];
        s0 += a[kk] * v;
        s1 += a[t + kk] * v;
        s2 += a[2 * t + kk] * v;
        s3 += a[3 * t + kk] * v;
    }
    s[0] = s0;
    s[1] = s1;
    s[2] = s2;
    s[3] = s3;
}

/* What the channel loop of one block needs; a struct so the loop is its own function with few live values. */
typedef struct conv_dsp_out {
    int8_t *o[CONV_MR];     /* output pixel rows (first channel of the group) */
    const int8_t *wt;       /* the group's first weight row */
    const int32_t *bias, *mult, *shift; /* the group's first channel */
    int32_t nch, k, nv, zp_out, lo, hi, nm;
    int32_t direct_rq; /* every channel in tgrs_rq_abs's range (tgrs_rq_fast_all) */
} conv_dsp_out;

/* Every output channel of the group for the block's pixels. noinline: inlined into the pixel loops, GCC spills
 * the requantization's operands in this loop. */
__attribute__((noinline)) static void conv_dsp_channels(const int16_t *blk, const conv_dsp_out *d)
{
    const int32_t k4 = d->k & ~3, t = d->k - k4, nv = d->nv;
    const int32_t lo = d->lo, hi = d->hi;
    int32_t s[CONV_MR];
    int32_t oc, i;
    /* no per-channel preparation: small patches spend more on it than on the MACs */
    if (TGRS_SPEED_PATHS && d->direct_rq) {
        for (oc = 0; oc < d->nch; ++oc) {
            const int32_t b = d->bias[oc], m = d->mult[oc], sh = d->shift[oc];
            conv_dsp_dot4(blk, d->wt + (int64_t)oc * d->k, k4, t, s);
            for (i = 0; i < nv; ++i) {
                const int32_t r = tgrs_rq_abs(tgrs_wrap_add(s[i], b), m, sh, d->zp_out);
                d->o[i][oc] = (int8_t)(r < lo ? lo : (r > hi ? hi : r));
            }
        }
        return;
    }
    for (oc = 0; oc < d->nch; ++oc) {
        const int32_t b = d->bias[oc];
        tgrs_rq rq;
        tgrs_rq_prepare(&rq, d->mult[oc], d->shift[oc], d->zp_out, d->nm);
        conv_dsp_dot4(blk, d->wt + (int64_t)oc * d->k, k4, t, s);
        if (rq.fast) {
            for (i = 0; i < nv; ++i) {
                d->o[i][oc] = tgrs_rq_s8_fast(&rq, tgrs_wrap_add(s[i], b), lo, hi);
            }
        } else {
            for (i = 0; i < nv; ++i) {
                d->o[i][oc] = tgrs_rq_s8_call(&rq, tgrs_wrap_add(s[i], b), lo, hi);
            }
        }
    }
}

static int conv_s8_dsp(const tgrs_op_ctx *ctx, const conv_geom *cg)
{
    const int8_t *in = (const int8_t *)ctx->in[0]->data;
    int8_t *out = (int8_t *)ctx->out->data;
    int16_t *blk = (int16_t *)ctx->scratch;
    const int32_t zp_in = ctx->p[TGRS_P_CONV_ZP_IN];
    const int64_t npix = (int64_t)cg->out_rows * cg->ow;
    const int64_t in_img = (int64_t)cg->in_rows * cg->wd * cg->c;
    conv_dsp_out d;
    int32_t n, g, i;
    int64_t q0;
    if (((uintptr_t)blk & 3u) != 0) {
        return TGRS_ERR_SCRATCH; /* LDRD needs a word-aligned block; planned scratch is 16-byte aligned */
    }
    d.nch = cg->ocg;
    d.k = cg->k;
    d.zp_out = ctx->p[TGRS_P_CONV_ZP_OUT];
    d.lo = ctx->p[TGRS_P_CONV_ACT_MIN];
    d.hi = ctx->p[TGRS_P_CONV_ACT_MAX];
    d.nm = ctx->p[TGRS_P_CONV_NUMERICS];
    d.direct_rq = TGRS_SPEED_PATHS && tgrs_rq_fast_all((const int32_t *)ctx->c[TGRS_C_CONV_SHIFT], cg->oc, d.nm);
    for (n = 0; n < cg->n; ++n) {
        const int8_t *img = in + n * in_img;
        int8_t *oimg = out + n * npix * cg->oc;
        for (g = 0; g < cg->g; ++g) {
            const int64_t ch0 = (int64_t)g * cg->ocg;
            d.wt = (const int8_t *)ctx->c[TGRS_C_CONV_WEIGHT] + ch0 * cg->k;
            d.bias = (const int32_t *)ctx->c[TGRS_C_CONV_BIAS] + ch0;
            d.mult = (const int32_t *)ctx->c[TGRS_C_CONV_MULT] + ch0;
            d.shift = (const int32_t *)ctx->c[TGRS_C_CONV_SHIFT] + ch0;
            int32_t oh = cg->out_row0, ow = 0; /* the next pixel, stepped (no 64-bit division per pixel) */
            for (q0 = 0; q0 < npix; q0 += CONV_MR) {
                int32_t ph = oh, pw = ow;
                d.nv = (npix - q0 < CONV_MR) ? (int32_t)(npix - q0) : CONV_MR;
                for (i = 0; i < CONV_MR; ++i) {
                    const int64_t q = q0 + (i < d.nv ? i : d.nv - 1); /* tail rows repeat the last pixel */
                    if (i < d.nv) {
                        ph = oh;
                        pw = ow;
                        ow = (ow + 1 == cg->ow) ? (++oh, 0) : ow + 1;
                    }
                    d.o[i] = oimg + q * cg->oc + ch0;
                    conv_dsp_gather(cg, img, ph, pw, g, zp_in, blk, i);
                }
                conv_dsp_channels(blk, &d);
            }
        }
    }
    return TGRS_OK;
}

#endif /* TGRS_ISA_DSP */
#endif /* TGRS_CONV_DSP_H */
