/*
 * dwconv_dsp.h - the int8 depthwise tap sums on the Cortex-M DSP extension (TGRS_HAVE_DSP, target.h); part of
 * dwconv.c, same contract as dw_taps_s8_plain. Weights stay in the generic [KH][KW][C] order.
 *
 * Depthwise products never sum across channels, so the dual SMLAD does not apply; what the DSP extension saves is
 * the byte loads: one 32-bit load of four channels' inputs and one of their weights, SXTB16 of each word and of it
 * rotated by 8 give the halfword pairs of channels (0, 2) and (1, 3), and SMLABB / SMLATT multiply-accumulate the
 * bottom and the top halves: per tap and four channels 2 loads, 4 extensions, 4 multiply-accumulates (the plain
 * loop needs 8 byte loads and 4 multiply-accumulates). Four channels' sums stay in registers over all the taps.
 * SMLAxy wraps modulo 2^32 like the plain loop's uint32 sums (it only sets the Q flag), so the sums are identical.
 */
#ifndef TGRS_DWCONV_DSP_H
#define TGRS_DWCONV_DSP_H

#if TGRS_ISA == TGRS_ISA_DSP /* the Helium build has its own loop (dwconv_mve.h) */

/* Four channels' sums of one pixel over every tap: x at xp[t] + off, weights at w + t * oc. */
static inline void dw_dsp_quad(const int8_t *const *xp, int32_t off, int32_t ntaps, const int8_t *w, int32_t oc,
                               uint32_t *acc)
{
    int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0, t;
    for (t = 0; t < ntaps; ++t) {
        uint32_t x, k;
        int32_t xe, xo, ke, ko;
        memcpy(&x, xp[t] + off, 4);
        memcpy(&k, w, 4);
        w += oc;
        xe = __sxtb16((int32_t)x);
        xo = __sxtb16((int32_t)(x >> 8));
        ke = __sxtb16((int32_t)k);
        ko = __sxtb16((int32_t)(k >> 8));
        a0 = __smlabb(xe, ke, a0);
        a2 = __smlatt(xe, ke, a2);
        a1 = __smlabb(xo, ko, a1);
        a3 = __smlatt(xo, ko, a3);
    }
    acc[0] = (uint32_t)a0;
    acc[1] = (uint32_t)a1;
    acc[2] = (uint32_t)a2;
    acc[3] = (uint32_t)a3;
}

static void dw_taps_s8_dsp(const int8_t *const *xp, int64_t pstep, int32_t ntaps, const int8_t *wk, int32_t oc,
                           int32_t nc, int two, uint32_t *acc0, uint32_t *acc1)
{
    int32_t px, cc, t;
    for (px = 0; px <= (two ? 1 : 0); ++px) {
        const int32_t poff = px ? (int32_t)pstep : 0; /* the pair's second pixel: interior, pstep further */
        uint32_t *acc = px ? acc1 : acc0;
        for (cc = 0; cc + 4 <= nc; cc += 4) {
            dw_dsp_quad(xp, poff + cc, ntaps, wk + cc, oc, acc + cc);
        }
        for (; cc < nc; ++cc) { /* channels past the last group of four */
            uint32_t s = 0;
            for (t = 0; t < ntaps; ++t) {
                s += (uint32_t)((int32_t)xp[t][poff + cc] * (int32_t)wk[(int64_t)t * oc + cc]);
            }
            acc[cc] = s;
        }
    }
}

#if !defined(__OPTIMIZE_SIZE__) /* target.h: -Os builds keep the loop above only */
/*
 * The fused multiplier-1 path (TGRS_DW_FUSED_S8, target.h): per output pixel, its tap list is built once (in-image
 * taps: input pixel and weight offset; padded taps: weight offset, adding zp_in * w as the bias fold expects), then
 * every group of four channels sums all taps in four registers (dw_dsp_quad4, the loop above in assembly) and is
 * requantized and stored straight from them. The requantization is computed from the op's (mult, shift) arrays,
 * with no per-channel preparation (requant.h's tgrs_rq_abs). Ops outside that range (tflm numerics, shift above
 * -2) and multipliers above 1 keep the tap and output loops.
 */

typedef struct dw_dsp_tap {
    int32_t x; /* the tap's input pixel, channel 0, from the pixel's base (interior pixels share one table per op) */
    int32_t w; /* offset of the tap's weights */
} dw_dsp_tap;

/* Four channels' sums over n in-image taps (n >= 1) added to a[0..3]: inputs at c + tp[t].x (c: the base at the
 * group's first channel), weights at
 * wk + tp[t].w. Assembly: GCC 12 neither folds the rotation into SXTB16 nor keeps the twelve live values in
 * registers. 13 instructions per tap and four channels. */
__attribute__((always_inline)) static inline void dw_dsp_quad4(const dw_dsp_tap *tp, int32_t n, const int8_t *c,
                                                               const int8_t *wk, int32_t *s0, int32_t *s1,
                                                               int32_t *s2, int32_t *s3)
{
    int32_t a0 = *s0, a1 = *s1, a2 = *s2, a3 = *s3, x, w, xo, wo;
    __asm__("1:\n\t"
            "ldrd %[x], %[w], [%[tp]], #8\n\t"
            "ldr %[x], [%[x], %[c]]\n\t"
            "ldr %[w], [%[w], %[wk]]\n\t"
            "sxtb16 %[xo], %[x], ror #8\n\t"
            "sxtb16 %[wo], %[w], ror #8\n\t"
            "sxtb16 %[x], %[x]\n\t"
            "sxtb16 %[w], %[w]\n\t"
            "smlabb %[a0], %[x], %[w], %[a0]\n\t"
            "smlatt %[a2], %[x], %[w], %[a2]\n\t"
            "smlabb %[a1], %[xo], %[wo], %[a1]\n\t"
            "smlatt %[a3], %[xo], %[wo], %[a3]\n\t"
            "subs %[n], %[n], #1\n\t"
            "bne 1b"
            : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [x] "=&r"(x), [w] "=&r"(w),
              [xo] "=&r"(xo), [wo] "=&r"(wo), [tp] "+r"(tp), [n] "+r"(n)
            : [c] "r"(c), [wk] "r"(wk)
            : "cc", "memory");
    *s0 = a0;
    *s1 = a1;
    *s2 = a2;
    *s3 = a3;
}

static inline int8_t dw_dsp_clamp(int32_t r, int32_t lo, int32_t hi)
{
    return (int8_t)(r < lo ? lo : (r > hi ? hi : r));
}

/*
 * Four channels' sums a0..a3 (bias not yet added) requantized and stored at o. Each result saturates to int8
 * (SSAT), the four are packed into one word and clamped to [lo, hi] bytewise (SSUB8 sets the GE flags, SEL
 * picks): lo4 and hi4 hold lo and hi in every byte. Same bytes as clamping each value: lo, hi are int8.
 */
static inline void dw_dsp_out4(int32_t a0, int32_t a1, int32_t a2, int32_t a3, const int32_t *bias,
                               const int32_t *mult, const int32_t *shift, int32_t zp, int32_t lo4, int32_t hi4,
                               int8_t *o)
{
    const int32_t q0 = __ssat(tgrs_rq_abs(tgrs_wrap_add(a0, bias[0]), mult[0], shift[0], zp), 8);
    const int32_t q1 = __ssat(tgrs_rq_abs(tgrs_wrap_add(a1, bias[1]), mult[1], shift[1], zp), 8);
    const int32_t q2 = __ssat(tgrs_rq_abs(tgrs_wrap_add(a2, bias[2]), mult[2], shift[2], zp), 8);
    const int32_t q3 = __ssat(tgrs_rq_abs(tgrs_wrap_add(a3, bias[3]), mult[3], shift[3], zp), 8);
    uint32_t v = ((uint32_t)q0 & 0xffu) | (((uint32_t)q1 & 0xffu) << 8) | (((uint32_t)q2 & 0xffu) << 16) |
                 ((uint32_t)q3 << 24);
    (void)__ssub8((int32_t)v, lo4);
    v = (uint32_t)__sel((int32_t)v, lo4);
    (void)__ssub8(hi4, (int32_t)v);
    v = (uint32_t)__sel((int32_t)v, hi4);
    memcpy(o, &v, 4);
}

/* What one pixel's channel loop needs (a struct keeps the loop its own function with few live values). */
typedef struct dw_dsp_px {
    const int8_t *base;    /* what the in-image taps' input offsets are from */
    const dw_dsp_tap *tin; /* in-image taps */
    const int32_t *wpad;   /* weight offsets of the padded taps */
    int32_t nin, npad;
    const int8_t *wt;
    const int32_t *bias, *mult, *shift;
    int32_t oc, zp_in, zpp, zp_out, lo, hi;
} dw_dsp_px;

/* Every channel of one pixel into o. noinline: inlined into the pixel loops, GCC spills the requantization's
 * operands. */
__attribute__((noinline)) static void dw_dsp_pixel(const dw_dsp_px *d, int8_t *o)
{
    const int8_t *const wt = d->wt;
    const int32_t oc = d->oc, c4 = oc & ~3, zp = d->zp_out, lo = d->lo, hi = d->hi;
    const int32_t lo4 = (int32_t)((uint32_t)(uint8_t)lo * 0x01010101u); /* lo in every byte */
    const int32_t hi4 = (int32_t)((uint32_t)(uint8_t)hi * 0x01010101u);
    int32_t c, t;
    for (c = 0; c < c4; c += 4) {
        int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
        if (d->nin > 0) {
            dw_dsp_quad4(d->tin, d->nin, d->base + c, wt + c, &a0, &a1, &a2, &a3);
        }
        for (t = 0; t < d->npad; ++t) {
            uint32_t k;
            int32_t ke, ko;
            memcpy(&k, wt + d->wpad[t] + c, 4);
            ke = __sxtb16((int32_t)k);
            ko = __sxtb16((int32_t)(k >> 8));
            a0 = __smlabb(d->zpp, ke, a0);
            a2 = __smlatt(d->zpp, ke, a2);
            a1 = __smlabb(d->zpp, ko, a1);
            a3 = __smlatt(d->zpp, ko, a3);
        }
        /* SMLAxy wraps like the plain loop's uint32 sums */
        dw_dsp_out4(a0, a1, a2, a3, d->bias + c, d->mult + c, d->shift + c, zp, lo4, hi4, o + c);
    }
    for (; c < oc; ++c) { /* channels past the last group of four */
        uint32_t s = 0;
        for (t = 0; t < d->nin; ++t) {
            s += (uint32_t)((int32_t)d->base[d->tin[t].x + c] * (int32_t)wt[d->tin[t].w + c]);
        }
        for (t = 0; t < d->npad; ++t) {
            s += (uint32_t)(d->zp_in * (int32_t)wt[d->wpad[t] + c]);
        }
        o[c] = dw_dsp_clamp(tgrs_rq_abs(tgrs_wrap_add((int32_t)s, d->bias[c]), d->mult[c], d->shift[c], zp), lo, hi);
    }
}

static int dw_fused_s8_dsp(const tgrs_op_ctx *ctx, const dw_geom *dg, const int64_t *toff, int32_t ntaps)
{
    const tgrs_window *w = &dg->w;
    const int8_t *in = (const int8_t *)ctx->in[0]->data;
    int8_t *out = (int8_t *)ctx->out->data;
    const int64_t in_img = (int64_t)dg->in_rows * dg->wd * dg->c;
    const int64_t out_img = (int64_t)dg->out_rows * dg->ow * dg->oc;
    const int32_t oc = dg->oc;
    dw_dsp_tap inner[DW_MAX_TAPS], border[DW_MAX_TAPS];
    int32_t wpad[DW_MAX_TAPS];
    dw_dsp_px d;
    const int32_t pstep = w->sw * dg->c; /* input distance between adjacent output pixels */
    int32_t clo, chi, n, r, ow, i, j, t;
    d.shift = (const int32_t *)ctx->c[TGRS_C_DWCONV_SHIFT];
    if (dg->m != 1 || ntaps == 0 || !tgrs_rq_fast_all(d.shift, oc, ctx->p[TGRS_P_DWCONV_NUMERICS])) {
        return 0;
    }
    d.wpad = wpad;
    dw_inner_cols(dg, &clo, &chi);
    for (t = 0; t < ntaps; ++t) {
        inner[t].x = (int32_t)toff[t]; /* int32: the views of a Cortex-M arena are far below 2^31 bytes */
        inner[t].w = t * oc;
    }
    d.wt = (const int8_t *)ctx->c[TGRS_C_DWCONV_WEIGHT];
    d.bias = (const int32_t *)ctx->c[TGRS_C_DWCONV_BIAS];
    d.mult = (const int32_t *)ctx->c[TGRS_C_DWCONV_MULT];
    d.oc = oc;
    d.zp_in = ctx->p[TGRS_P_DWCONV_ZP_IN];
    d.zpp = (int32_t)(((uint32_t)d.zp_in & 0xffffu) | ((uint32_t)d.zp_in << 16)); /* (zp_in, zp_in) */
    d.zp_out = ctx->p[TGRS_P_DWCONV_ZP_OUT];
    d.lo = ctx->p[TGRS_P_DWCONV_ACT_MIN];
    d.hi = ctx->p[TGRS_P_DWCONV_ACT_MAX];
    for (n = 0; n < dg->n; ++n) {
        const int8_t *img = in + n * in_img;
        for (r = 0; r < dg->out_rows; ++r) {
            const int32_t oh = dg->out_row0 + r, ih0 = oh * w->sh - w->pt;
            const int rin = ih0 >= 0 && ih0 + (w->kh - 1) * w->dh < dg->h; /* dw_interior's row half */
            /* column 0's tap (0, 0), formed only for a row whose taps are in the band */
            const int8_t *row = rin ? img + ((ih0 - dg->in_row0) * dg->wd - w->pl) * dg->c : img;
            for (ow = 0; ow < dg->ow; ++ow) {
                d.nin = 0;
                d.npad = 0;
                if (rin && ow >= clo && ow < chi) {
                    d.base = row + ow * pstep;
                    d.tin = inner;
                    d.nin = ntaps;
                } else {
                    d.base = img;
                    d.tin = border;
                    for (i = 0, t = 0; i < w->kh; ++i) {
                        const int32_t ih = oh * w->sh - w->pt + i * w->dh;
                        for (j = 0; j < w->kw; ++j, ++t) {
                            const int32_t iw = ow * w->sw - w->pl + j * w->dw;
                            if (ih >= 0 && ih < dg->h && iw >= 0 && iw < dg->wd) {
                                border[d.nin].x = ((ih - dg->in_row0) * dg->wd + iw) * dg->c;
                                border[d.nin++].w = t * oc;
                            } else {
                                wpad[d.npad++] = t * oc;
                            }
                        }
                    }
                }
                dw_dsp_pixel(&d, out + n * out_img + ((int64_t)r * dg->ow + ow) * oc);
            }
        }
    }
    return 1;
}

#endif /* !__OPTIMIZE_SIZE__ */
#endif /* TGRS_ISA_DSP */
#endif /* TGRS_DWCONV_DSP_H */
