/*
 * dwconv_mve.h - the int8 depthwise tap sums on Helium (TGRS_HAVE_MVE, target.h); part of dwconv.c, same contract
 * as dw_taps_s8_plain. Weights stay in the generic [KH][KW][C] order.
 *
 * Lanes are channels: per tap, VLDRB.S32 loads four channels' inputs and four weights sign-extended to 32 bits, and
 * a multiply and an add accumulate them (the products are below 2^15, the 32-bit lanes wrap like the plain loop's
 * uint32 sums, so the sums are identical). A block's up to 16 channels are four vectors held in registers over all
 * the taps; channels past nc are predicated off (VCTP: nothing is read beyond them).
 */
#ifndef TGRS_DWCONV_MVE_H
#define TGRS_DWCONV_MVE_H

#if TGRS_HAVE_MVE

#include <stddef.h>

#include "requant_mve.h"

static void dw_taps_s8_mve(const int8_t *const *xp, int64_t pstep, int32_t ntaps, const int8_t *wk, int32_t oc,
                           int32_t nc, int two, uint32_t *acc0, uint32_t *acc1)
{
    const mve_pred16_t p0 = vctp32q((uint32_t)nc);
    const mve_pred16_t p1 = vctp32q((uint32_t)(nc > 4 ? nc - 4 : 0));
    const mve_pred16_t p2 = vctp32q((uint32_t)(nc > 8 ? nc - 8 : 0));
    const mve_pred16_t p3 = vctp32q((uint32_t)(nc > 12 ? nc - 12 : 0));
    int32_t px, t;
    for (px = 0; px <= (two ? 1 : 0); ++px) {
        const int32_t poff = px ? (int32_t)pstep : 0; /* the pair's second pixel: interior, pstep further */
        int32_t *acc = (int32_t *)(px ? acc1 : acc0);
        int32x4_t s0 = vdupq_n_s32(0), s1 = s0, s2 = s0, s3 = s0;
        const int8_t *w = wk;
        if (nc == 16) { /* a full block: no predication, so no predicate moves in the loop */
            for (t = 0; t < ntaps; ++t) {
                const int8_t *x = xp[t] + poff;
                s0 = vaddq_s32(s0, vmulq_s32(vldrbq_s32(x), vldrbq_s32(w)));
                s1 = vaddq_s32(s1, vmulq_s32(vldrbq_s32(x + 4), vldrbq_s32(w + 4)));
                s2 = vaddq_s32(s2, vmulq_s32(vldrbq_s32(x + 8), vldrbq_s32(w + 8)));
                s3 = vaddq_s32(s3, vmulq_s32(vldrbq_s32(x + 12), vldrbq_s32(w + 12)));
                w += oc;
            }
            vstrwq_s32(acc, s0);
            vstrwq_s32(acc + 4, s1);
            vstrwq_s32(acc + 8, s2);
            vstrwq_s32(acc + 12, s3);
            continue;
        }
        for (t = 0; t < ntaps; ++t) {
            const int8_t *x = xp[t] + poff;
            s0 = vaddq_s32(s0, vmulq_s32(vldrbq_z_s32(x, p0), vldrbq_z_s32(w, p0)));
            s1 = vaddq_s32(s1, vmulq_s32(vldrbq_z_s32(x + 4, p1), vldrbq_z_s32(w + 4, p1)));
            s2 = vaddq_s32(s2, vmulq_s32(vldrbq_z_s32(x + 8, p2), vldrbq_z_s32(w + 8, p2)));
            s3 = vaddq_s32(s3, vmulq_s32(vldrbq_z_s32(x + 12, p3), vldrbq_z_s32(w + 12, p3)));
            w += oc;
        }
        vstrwq_p_s32(acc, s0, p0);
        vstrwq_p_s32(acc + 4, s1, p1);
        vstrwq_p_s32(acc + 8, s2, p2);
        vstrwq_p_s32(acc + 12, s3, p3);
    }
}

/*
 * Bias, requantization and store of one pixel's block of nc channel sums, four channels per vector, same bytes as
 * dw_out_s8_plain: each lane gathers its own channel's fields from rq (one gather per field, lanes sizeof(tgrs_rq)
 * apart) and takes tgrs_rq_fast_lanes, whose arithmetic is tgrs_rq_s8_fast's; a group with a channel the fast form
 * does not cover (mult <= 0, tflm numerics, shift above -2) goes through the scalar tgrs_rq_s8. The tail group is
 * predicated: nothing is read or written past nc.
 */
static void dw_out_s8_mve(int8_t *o, const uint32_t *acc, const int32_t *bias, const tgrs_rq *rq, int32_t nc,
                          int32_t lo, int32_t hi)
{
    const uint32x4_t off = vmulq_n_u32(vidupq_n_u32(0u, 1), (uint32_t)sizeof(tgrs_rq));
    int32_t cc, k;
    for (cc = 0; cc < nc; cc += 4) {
        const mve_pred16_t p = vctp32q((uint32_t)(nc - cc));
        const char *r = (const char *)&rq[cc];
        const int32x4_t m = vldrwq_gather_offset_z_s32((const int32_t *)(r + offsetof(tgrs_rq, mult)), off, p);
        const int32x4_t fast = vldrwq_gather_offset_z_s32((const int32_t *)(r + offsetof(tgrs_rq, fast)), off, p);
        const mve_pred16_t ok = vcmpgtq_m_n_s32(m, 0, vcmpneq_m_n_s32(fast, 0, p));
        if (ok == p) {
            const uint32x4_t add2 = vldrwq_gather_offset_z_u32((const uint32_t *)(r + offsetof(tgrs_rq, add2)), off, p);
            const int32x4_t n2 = vldrwq_gather_offset_z_s32((const int32_t *)(r + offsetof(tgrs_rq, n2)), off, p);
            const int32x4_t sub2 = vldrwq_gather_offset_z_s32((const int32_t *)(r + offsetof(tgrs_rq, sub2)), off, p);
            const int32x4_t a = vaddq_s32(vldrwq_z_s32((const int32_t *)acc + cc, p), vldrwq_z_s32(bias + cc, p));
            vstrbq_p_s32(o + cc, tgrs_rq_fast_lanes(a, m, add2, vnegq_s32(n2), sub2, lo, hi), p);
        } else {
            for (k = cc; k < nc && k < cc + 4; ++k) {
                o[k] = tgrs_rq_s8(&rq[k], tgrs_wrap_add((int32_t)acc[k], bias[k]), lo, hi);
            }
        }
    }
}

/*
 * The fused multiplier-1 path (TGRS_DW_FUSED_S8, target.h): the tap sums, bias, requantization and store without
 * leaving vector registers. Lanes are channels as int16 (VLDRB.S16 of eight inputs and eight weights); VMULLB /
 * VMULLT multiply the even and the odd lanes into exact int32 products (|x * w| <= 2^14), so eight channels' sums
 * are two int32 vectors, the even and the odd channels. Their bias, multiplier and shift are gathered in the same
 * even/odd order, tgrs_rq_vec2 requantizes them (lane by lane the scalar requantization), and VQMOVNB / VQMOVNT
 * interleave the two results back into channel order for one 8-byte store. Interior pixels go in pairs over
 * 8-channel halves (dw_mve_pairs, dw_mve_pair8: each weight load serves both pixels); the odd one out and border
 * pixels go one at a time in blocks of up to 16 channels (dw_mve_block). A padded tap adds zp_in * w (the bias fold
 * expects the input zero point there). The 32-bit lanes wrap like the plain loop's uint32 sums, so every sum and
 * byte is the plain path's.
 */

/* The taps of one pixel: n_in taps inside the image (input offset from base at channel 0, weight offset), then
 * n_pad padded taps (weight offsets only). Interior pixels share one table built per op (offsets from the pixel's
 * first tap); a border pixel gets its own (offsets from the image). */
typedef struct dw_mve_tap {
    int32_t x; /* the tap's input pixel, channel 0, from base */
    int32_t w; /* offset of the tap's weights */
} dw_mve_tap;

typedef struct dw_mve_taps {
    const int8_t *base;
    const dw_mve_tap *in;
    const int32_t *w_pad;
    int32_t n_in, n_pad;
} dw_mve_taps;

/*
 * The in-image taps of a full 16-channel block (nh = 2) or of 8 channels (nh = 1), in assembly: GCC 12 keeps only
 * three of the four accumulators in registers here and copies operands between Q registers (21 instructions per
 * tap instead of 17: one LDRD of the tap's input and weight offsets, two adds, four loads, four multiplies, four
 * adds, the loop). bc is the base at the block's first channel, wk the block's tap-0 weights.
 */
static inline void dw_mve_taps16(const dw_mve_tap *tp, int32_t n, const int8_t *bc, const int8_t *wk,
                                 int32x4_t *acc)
{
    int32x4_t e0 = acc[0], o0 = acc[1], e1 = acc[2], o1 = acc[3], xv, wv, pr;
    const int8_t *x, *w;
    __asm__("1:\n\t"
            "ldrd %[x], %[w], [%[tp]], #8\n\t"
            "add %[x], %[x], %[bc]\n\t"
            "add %[w], %[w], %[wk]\n\t"
            "vldrb.s16 %q[xv], [%[x]]\n\t"
            "vldrb.s16 %q[wv], [%[w]]\n\t"
            "vmullb.s16 %q[pr], %q[xv], %q[wv]\n\t"
            "vadd.i32 %q[e0], %q[e0], %q[pr]\n\t"
            "vmullt.s16 %q[pr], %q[xv], %q[wv]\n\t"
            "vadd.i32 %q[o0], %q[o0], %q[pr]\n\t"
            "vldrb.s16 %q[xv], [%[x], #8]\n\t"
            "vldrb.s16 %q[wv], [%[w], #8]\n\t"
            "vmullb.s16 %q[pr], %q[xv], %q[wv]\n\t"
            "vadd.i32 %q[e1], %q[e1], %q[pr]\n\t"
            "vmullt.s16 %q[pr], %q[xv], %q[wv]\n\t"
            "vadd.i32 %q[o1], %q[o1], %q[pr]\n\t"
            "subs %[n], %[n], #1\n\t"
            "bne 1b"
            : [e0] "+w"(e0), [o0] "+w"(o0), [e1] "+w"(e1), [o1] "+w"(o1), [xv] "=&w"(xv), [wv] "=&w"(wv),
              [pr] "=&w"(pr), [x] "=&l"(x), [w] "=&l"(w), [tp] "+r"(tp), [n] "+r"(n)
            : [bc] "r"(bc), [wk] "r"(wk)
            : "cc", "memory");
    acc[0] = e0;
    acc[1] = o0;
    acc[2] = e1;
    acc[3] = o1;
}

static inline void dw_mve_taps8(const dw_mve_tap *tp, int32_t n, const int8_t *bc, const int8_t *wk, int32x4_t *acc)
{
    int32x4_t e0 = acc[0], o0 = acc[1], xv, wv, pr;
    const int8_t *x, *w;
    __asm__("1:\n\t"
            "ldrd %[x], %[w], [%[tp]], #8\n\t"
            "add %[x], %[x], %[bc]\n\t"
            "add %[w], %[w], %[wk]\n\t"
            "vldrb.s16 %q[xv], [%[x]]\n\t"
            "vldrb.s16 %q[wv], [%[w]]\n\t"
            "vmullb.s16 %q[pr], %q[xv], %q[wv]\n\t"
            "vadd.i32 %q[e0], %q[e0], %q[pr]\n\t"
            "vmullt.s16 %q[pr], %q[xv], %q[wv]\n\t"
            "vadd.i32 %q[o0], %q[o0], %q[pr]\n\t"
            "subs %[n], %[n], #1\n\t"
            "bne 1b"
            : [e0] "+w"(e0), [o0] "+w"(o0), [xv] "=&w"(xv), [wv] "=&w"(wv), [pr] "=&w"(pr), [x] "=&l"(x),
              [w] "=&l"(w), [tp] "+r"(tp), [n] "+r"(n)
            : [bc] "r"(bc), [wk] "r"(wk)
            : "cc", "memory");
    acc[0] = e0;
    acc[1] = o0;
}

/* Whether no weight of the n bytes at w is -128 (the condition of dw_mve_pair8's two-tap steps), 16 bytes per step. */
static int dw_mve_no_min(const int8_t *w, int32_t n)
{
    int8_t lo = 0;
    for (; n > 0; n -= 16, w += 16) {
        lo = vminvq_p_s8(lo, vldrbq_z_s8(w, vctp8q((uint32_t)n)), vctp8q((uint32_t)n));
    }
    return lo != INT8_MIN;
}

typedef struct dw_mve_par {
    const int8_t *wt; /* weights of tap 0, channel 0 */
    const int32_t *bias, *mult, *shift;
    int32_t zp_in, zp_out, lo, hi;
    int32_t tap_pairs; /* no weight is -128: dw_mve_pair8 may sum two taps in int16 */
} dw_mve_par;

/* Even channel offsets 0, 2, 4, 6 (words): a half's even lanes; the odd lanes are the same from channel c + 1. */
#define DW_MVE_EVEN vidupq_n_u32(0u, 2)

/* Narrow one half's requantized even (re) and odd (ro) lanes back into channel order, saturated to int16, then add
 * the zero point (saturating) and clamp: the same bytes as clamping the int32 results (a saturated lane stays beyond
 * every int8 bound after the zero point). */
static inline int16x8_t dw_mve_narrow(const dw_mve_par *pp, int32x4_t re, int32x4_t ro)
{
    int16x8_t r = vqmovntq_s32(vqmovnbq_s32(vreinterpretq_s16_s32(re), re), ro);
    r = vqaddq_n_s16(r, (int16_t)pp->zp_out);
    return vminq_s16(vmaxq_s16(r, vdupq_n_s16((int16_t)pp->lo)), vdupq_n_s16((int16_t)pp->hi));
}

/*
 * Requantize and store 8 channels of one pixel: e and od the even and odd lanes' sums (bias included), m2e/m2o the
 * doubled multipliers and se/so the shifts in the same order. tgrs_rq_vec2 on both, then dw_mve_narrow's narrowing,
 * zero point and clamp, and one 8-byte store: 20 instructions, in assembly because GCC 12 spills the clamp bounds
 * and the narrowing's operand to the stack here (about twice the instructions).
 */
static inline void dw_mve_rq8(int32x4_t e, int32x4_t od, uint32x4_t m2e, uint32x4_t m2o, int32x4_t se,
                              int32x4_t so, const dw_mve_par *pp, int8_t *o)
{
    int32x4_t t;
    __asm__ volatile("vabs.s32 %q[t], %q[e]\n\t"
            "vmulh.u32 %q[t], %q[t], %q[me]\n\t"
            "vrshl.u32 %q[t], %q[t], %q[se]\n\t"
            "vshr.s32 %q[e], %q[e], #31\n\t"
            "veor %q[t], %q[t], %q[e]\n\t"
            "vsub.i32 %q[e], %q[t], %q[e]\n\t"
            "vabs.s32 %q[t], %q[od]\n\t"
            "vmulh.u32 %q[t], %q[t], %q[mo]\n\t"
            "vrshl.u32 %q[t], %q[t], %q[so]\n\t"
            "vshr.s32 %q[od], %q[od], #31\n\t"
            "veor %q[t], %q[t], %q[od]\n\t"
            "vsub.i32 %q[od], %q[t], %q[od]\n\t"
            "vqmovnb.s32 %q[t], %q[e]\n\t"
            "vqmovnt.s32 %q[t], %q[od]\n\t"
            "vqadd.s16 %q[t], %q[t], %[zp]\n\t"
            "vdup.16 %q[e], %[lo]\n\t"
            "vmax.s16 %q[t], %q[t], %q[e]\n\t"
            "vdup.16 %q[e], %[hi]\n\t"
            "vmin.s16 %q[t], %q[t], %q[e]\n\t"
            "vstrb.16 %q[t], [%[o]]"
            : [t] "=&w"(t), [e] "+&w"(e), [od] "+&w"(od)
            : [me] "w"(m2e), [mo] "w"(m2o), [se] "w"(se), [so] "w"(so), [zp] "r"(pp->zp_out), [lo] "r"(pp->lo),
              [hi] "r"(pp->hi), [o] "l"(o)
            : "memory");
}

/* The fields dw_mve_rq8 takes of the 8 channels at c: doubled multipliers and shifts, even and odd lanes. */
static inline void dw_mve_fields(const dw_mve_par *pp, int32_t c, uint32x4_t *m2e, uint32x4_t *m2o, int32x4_t *se,
                                 int32x4_t *so)
{
    const uint32x4_t me = vreinterpretq_u32_s32(vldrwq_gather_shifted_offset_s32(pp->mult + c, DW_MVE_EVEN));
    const uint32x4_t mo = vreinterpretq_u32_s32(vldrwq_gather_shifted_offset_s32(pp->mult + c + 1, DW_MVE_EVEN));
    *m2e = vaddq_u32(me, me);
    *m2o = vaddq_u32(mo, mo);
    *se = vldrwq_gather_shifted_offset_s32(pp->shift + c, DW_MVE_EVEN);
    *so = vldrwq_gather_shifted_offset_s32(pp->shift + c + 1, DW_MVE_EVEN);
}

/* Requantize and store 8 channels at c (e: even lanes, od: odd lanes, bias included) of one pixel. */
static inline void dw_mve_st8(const dw_mve_par *pp, int32_t c, int32x4_t e, int32x4_t od, int8_t *o)
{
    uint32x4_t m2e, m2o;
    int32x4_t se, so;
    dw_mve_fields(pp, c, &m2e, &m2o, &se, &so);
    dw_mve_rq8(e, od, m2e, m2o, se, so, pp, o);
}

/* The predicated twin of dw_mve_st8 for nh < 8 channels: nothing is read or written past them. */
static inline void dw_mve_st_p(const dw_mve_par *pp, int32_t c, int32_t nh, int32x4_t e, int32x4_t od, int8_t *o)
{
    const mve_pred16_t pe = vctp32q((uint32_t)(nh + 1) >> 1), po = vctp32q((uint32_t)nh >> 1);
    const uint32x4_t me = vreinterpretq_u32_s32(vldrwq_gather_shifted_offset_z_s32(pp->mult + c, DW_MVE_EVEN, pe));
    const uint32x4_t mo =
        vreinterpretq_u32_s32(vldrwq_gather_shifted_offset_z_s32(pp->mult + c + 1, DW_MVE_EVEN, po));
    e = tgrs_rq_vec2(e, vaddq_u32(me, me), vldrwq_gather_shifted_offset_z_s32(pp->shift + c, DW_MVE_EVEN, pe));
    od = tgrs_rq_vec2(od, vaddq_u32(mo, mo), vldrwq_gather_shifted_offset_z_s32(pp->shift + c + 1, DW_MVE_EVEN, po));
    vstrbq_p_s16(o, dw_mve_narrow(pp, e, od), vctp16q((uint32_t)nh));
}

/* The bias of nh <= 8 channels at c in the even/odd lane order (the accumulators' start). */
static inline void dw_mve_bias(const dw_mve_par *pp, int32_t c, int32_t nh, int32x4_t *e, int32x4_t *od)
{
    if (nh == 8) {
        *e = vldrwq_gather_shifted_offset_s32(pp->bias + c, DW_MVE_EVEN);
        *od = vldrwq_gather_shifted_offset_s32(pp->bias + c + 1, DW_MVE_EVEN);
        return;
    }
    *e = vldrwq_gather_shifted_offset_z_s32(pp->bias + c, DW_MVE_EVEN, vctp32q((uint32_t)(nh + 1) >> 1));
    *od = vldrwq_gather_shifted_offset_z_s32(pp->bias + c + 1, DW_MVE_EVEN, vctp32q((uint32_t)nh >> 1));
}

/* One pixel, channels [c0, c0 + nc), nc <= 16, into o (the pixel's channel c0). */
__attribute__((noinline)) static void dw_mve_block(const dw_mve_taps *tp, const dw_mve_par *pp, int32_t c0,
                                                   int32_t nc, int8_t *o)
{
    const int8_t *const wk = pp->wt + c0;
    const int16x8_t zv = vdupq_n_s16((int16_t)pp->zp_in);
    int32x4_t acc[4];
    int32_t t;
    dw_mve_bias(pp, c0, nc < 8 ? nc : 8, &acc[0], &acc[1]);
    acc[2] = acc[3] = vdupq_n_s32(0);
    if (nc > 8) {
        dw_mve_bias(pp, c0 + 8, nc - 8, &acc[2], &acc[3]);
    }
    if (nc == 16 || nc == 8) { /* whole halves: nothing predicated */
        if (tp->n_in > 0) {
            if (nc == 16) {
                dw_mve_taps16(tp->in, tp->n_in, tp->base + c0, wk, acc);
            } else {
                dw_mve_taps8(tp->in, tp->n_in, tp->base + c0, wk, acc);
            }
        }
        for (t = 0; t < tp->n_pad; ++t) {
            const int8_t *w = wk + tp->w_pad[t];
            int16x8_t wv = vldrbq_s16(w);
            acc[0] = vaddq_s32(acc[0], vmullbq_int_s16(zv, wv));
            acc[1] = vaddq_s32(acc[1], vmulltq_int_s16(zv, wv));
            if (nc == 16) {
                wv = vldrbq_s16(w + 8);
                acc[2] = vaddq_s32(acc[2], vmullbq_int_s16(zv, wv));
                acc[3] = vaddq_s32(acc[3], vmulltq_int_s16(zv, wv));
            }
        }
    } else { /* channels past nc are predicated off: nothing is read beyond them */
        const mve_pred16_t pa = vctp16q((uint32_t)nc), pb = vctp16q((uint32_t)(nc > 8 ? nc - 8 : 0));
        int32x4_t e0 = acc[0], o0 = acc[1], e1 = acc[2], o1 = acc[3];
        for (t = 0; t < tp->n_in; ++t) {
            const int8_t *x = tp->base + tp->in[t].x + c0, *w = wk + tp->in[t].w;
            int16x8_t xv = vldrbq_z_s16(x, pa), wv = vldrbq_z_s16(w, pa);
            e0 = vaddq_s32(e0, vmullbq_int_s16(xv, wv));
            o0 = vaddq_s32(o0, vmulltq_int_s16(xv, wv));
            xv = vldrbq_z_s16(x + 8, pb);
            wv = vldrbq_z_s16(w + 8, pb);
            e1 = vaddq_s32(e1, vmullbq_int_s16(xv, wv));
            o1 = vaddq_s32(o1, vmulltq_int_s16(xv, wv));
        }
        for (t = 0; t < tp->n_pad; ++t) {
            const int8_t *w = wk + tp->w_pad[t];
            int16x8_t wv = vldrbq_z_s16(w, pa);
            e0 = vaddq_s32(e0, vmullbq_int_s16(zv, wv));
            o0 = vaddq_s32(o0, vmulltq_int_s16(zv, wv));
            wv = vldrbq_z_s16(w + 8, pb);
            e1 = vaddq_s32(e1, vmullbq_int_s16(zv, wv));
            o1 = vaddq_s32(o1, vmulltq_int_s16(zv, wv));
        }
        acc[0] = e0;
        acc[1] = o0;
        acc[2] = e1;
        acc[3] = o1;
    }
    if (nc >= 8) {
        dw_mve_st8(pp, c0, acc[0], acc[1], o);
    } else {
        dw_mve_st_p(pp, c0, nc, acc[0], acc[1], o);
    }
    if (nc == 16) {
        dw_mve_st8(pp, c0 + 8, acc[2], acc[3], o + 8);
    } else if (nc > 8) {
        dw_mve_st_p(pp, c0 + 8, nc - 8, acc[2], acc[3], o + 8);
    }
}

/* One half's fields for dw_mve_pair8 (offsets fixed: the assembly reads them): the bias and the doubled multipliers
 * and shifts in even/odd lane order, the zero point, the clamp bounds and the pixel stride of the output. */
typedef struct dw_mve_fld {
    int32x4_t be, bo;    /* +0, +16 */
    uint32x4_t m2e, m2o; /* +32, +48 */
    int32x4_t se, so;    /* +64, +80 */
    int32_t zp, lo, hi, oc; /* +96, +100, +104, +108 */
    int32_t n2, n1;         /* +112, +116: two-tap steps and single taps per pixel */
} dw_mve_fld;

typedef char dw_mve_fld_offsets_are_fixed[(offsetof(dw_mve_fld, se) == 64 && offsetof(dw_mve_fld, zp) == 96 &&
                                           offsetof(dw_mve_fld, oc) == 108 && offsetof(dw_mve_fld, n1) == 116) ? 1 : -1];

/* tgrs_rq_vec2 of the lanes in register A with the fields at offsets M (doubled multiplier) and S (shift) of f; W and
 * T are scratch. */
#define DW_MVE_RQ(A, M, S)                                                                                        \
    "vldrw.32 %q[w1], [%[f], #" #M "]\n\t"                                                                         \
    "vabs.s32 %q[tv], %q[" A "]\n\t"                                                                               \
    "vmulh.u32 %q[tv], %q[tv], %q[w1]\n\t"                                                                         \
    "vldrw.32 %q[w1], [%[f], #" #S "]\n\t"                                                                         \
    "vrshl.u32 %q[tv], %q[tv], %q[w1]\n\t"                                                                         \
    "vshr.s32 %q[" A "], %q[" A "], #31\n\t"                                                                       \
    "veor %q[tv], %q[tv], %q[" A "]\n\t"                                                                           \
    "vsub.i32 %q[" A "], %q[tv], %q[" A "]\n\t"

/* Narrow the requantized even (E) and odd (O) lanes into channel order (saturating), add the zero point (p1),
 * clamp to [p2, x2] and store 8 bytes at D (dw_mve_narrow's arithmetic). */
#define DW_MVE_NARROW(E, O, D)                                                                                    \
    "vqmovnb.s32 %q[tv], %q[" E "]\n\t"                                                                            \
    "vqmovnt.s32 %q[tv], %q[" O "]\n\t"                                                                            \
    "vqadd.s16 %q[tv], %q[tv], %[p1]\n\t"                                                                          \
    "vdup.16 %q[" E "], %[p2]\n\t"                                                                                 \
    "vmax.s16 %q[tv], %q[tv], %q[" E "]\n\t"                                                                       \
    "vdup.16 %q[" E "], %[x2]\n\t"                                                                                 \
    "vmin.s16 %q[tv], %q[tv], %q[" E "]\n\t"                                                                       \
    "vstrb.16 %q[tv], [%[" D "]]\n\t"

/*
 * Two adjacent interior pixels, 8 channels, everything in registers (GCC 12 moves the accumulators through the stack
 * and general registers around separate assembly blocks): the accumulators start at the bias; then f->n2 steps of
 * two taps and f->n1 single taps, both pixels loading each weight vector once; then both pixels are requantized
 * (tgrs_rq_vec2) and stored at o and o + f->oc. 2 * n2 + n1 table entries are read. A single tap widens the int8 values
 * to int16 lanes and VMULLB/VMULLT give the even and odd lanes' exact int32 products (17 instructions per tap and
 * 16 MACs). A two-tap step, only for an op none of whose weights is -128: every product |x * w| <= 128 * 127 and
 * the sum of two, at most 32512, is exact in int16, so each pixel takes one VMUL.I16 per tap, one VADD.I16 per two
 * taps, and widens the sums once (VMOVLB/VMOVLT: the even and odd lanes, the accumulators' order), 30 instructions
 * per two taps and 32 MACs.
 */
static inline void dw_mve_pair8(const dw_mve_tap *tp, const int8_t *bc, int32_t pstep, const int8_t *wk,
                                const dw_mve_fld *f, int8_t *o)
{
    int32x4_t e0, o0, e1, o1, w1, w2, sv, tv;
    int32_t n;
    const int8_t *x1, *x2, *p1, *p2;
    __asm__ volatile(
        "vldrw.32 %q[e0], [%[f]]\n\t"
        "vldrw.32 %q[o0], [%[f], #16]\n\t"
        "vmov %q[e1], %q[e0]\n\t"
        "vmov %q[o1], %q[o0]\n\t"
        "ldr %[n], [%[f], #112]\n\t"
        "cmp %[n], #0\n\t"
        "beq 2f\n"
        "1:\n\t"
        "ldrd %[x1], %[p1], [%[tp]], #8\n\t"
        "ldrd %[x2], %[p2], [%[tp]], #8\n\t"
        "add %[p1], %[p1], %[wk]\n\t"
        "add %[p2], %[p2], %[wk]\n\t"
        "add %[x1], %[x1], %[bc]\n\t"
        "add %[x2], %[x2], %[bc]\n\t"
        "vldrb.s16 %q[w1], [%[p1]]\n\t"
        "vldrb.s16 %q[w2], [%[p2]]\n\t"
        "vldrb.s16 %q[sv], [%[x1]]\n\t"
        "vmul.i16 %q[sv], %q[sv], %q[w1]\n\t"
        "vldrb.s16 %q[tv], [%[x2]]\n\t"
        "vmul.i16 %q[tv], %q[tv], %q[w2]\n\t"
        "vadd.i16 %q[sv], %q[sv], %q[tv]\n\t"
        "vmovlb.s16 %q[tv], %q[sv]\n\t"
        "vadd.i32 %q[e0], %q[e0], %q[tv]\n\t"
        "vmovlt.s16 %q[tv], %q[sv]\n\t"
        "vadd.i32 %q[o0], %q[o0], %q[tv]\n\t"
        "add %[x1], %[x1], %[ps]\n\t"
        "add %[x2], %[x2], %[ps]\n\t"
        "vldrb.s16 %q[sv], [%[x1]]\n\t"
        "vmul.i16 %q[sv], %q[sv], %q[w1]\n\t"
        "vldrb.s16 %q[tv], [%[x2]]\n\t"
        "vmul.i16 %q[tv], %q[tv], %q[w2]\n\t"
        "vadd.i16 %q[sv], %q[sv], %q[tv]\n\t"
        "vmovlb.s16 %q[tv], %q[sv]\n\t"
        "vadd.i32 %q[e1], %q[e1], %q[tv]\n\t"
        "vmovlt.s16 %q[tv], %q[sv]\n\t"
        "vadd.i32 %q[o1], %q[o1], %q[tv]\n\t"
        "subs %[n], %[n], #1\n\t"
        "bne 1b\n"
        "2:\n\t"
        "ldr %[n], [%[f], #116]\n\t"
        "cmp %[n], #0\n\t"
        "beq 4f\n"
        "3:\n\t"
        "ldrd %[x1], %[p1], [%[tp]], #8\n\t"
        "add %[x1], %[x1], %[bc]\n\t"
        "add %[p1], %[p1], %[wk]\n\t"
        "vldrb.s16 %q[w1], [%[p1]]\n\t"
        "vldrb.s16 %q[sv], [%[x1]]\n\t"
        "add %[x1], %[x1], %[ps]\n\t"
        "vmullb.s16 %q[tv], %q[sv], %q[w1]\n\t"
        "vadd.i32 %q[e0], %q[e0], %q[tv]\n\t"
        "vmullt.s16 %q[tv], %q[sv], %q[w1]\n\t"
        "vadd.i32 %q[o0], %q[o0], %q[tv]\n\t"
        "vldrb.s16 %q[sv], [%[x1]]\n\t"
        "vmullb.s16 %q[tv], %q[sv], %q[w1]\n\t"
        "vadd.i32 %q[e1], %q[e1], %q[tv]\n\t"
        "vmullt.s16 %q[tv], %q[sv], %q[w1]\n\t"
        "vadd.i32 %q[o1], %q[o1], %q[tv]\n\t"
        "subs %[n], %[n], #1\n\t"
        "bne 3b\n"
        "4:\n\t"
        "ldr %[p1], [%[f], #96]\n\t"
        "ldr %[p2], [%[f], #100]\n\t"
        "ldr %[x2], [%[f], #104]\n\t"
        "mov %[x1], %[o]\n\t"
        DW_MVE_RQ("e0", 32, 64)
        DW_MVE_RQ("o0", 48, 80)
        DW_MVE_NARROW("e0", "o0", "x1")
        "ldr %[n], [%[f], #108]\n\t"
        "add %[x1], %[x1], %[n]\n\t"
        DW_MVE_RQ("e1", 32, 64)
        DW_MVE_RQ("o1", 48, 80)
        DW_MVE_NARROW("e1", "o1", "x1")
        : [e0] "=&w"(e0), [o0] "=&w"(o0), [e1] "=&w"(e1), [o1] "=&w"(o1), [w1] "=&w"(w1), [w2] "=&w"(w2),
          [sv] "=&w"(sv), [tv] "=&w"(tv), [x1] "=&l"(x1), [x2] "=&l"(x2), [p1] "=&l"(p1), [p2] "=&l"(p2),
          [tp] "+r"(tp), [n] "=&r"(n)
        : [bc] "r"(bc), [wk] "r"(wk), [ps] "r"(pstep), [f] "r"(f), [o] "r"(o)
        : "cc", "memory");
}

/* A run of np pairs of adjacent interior pixels (the first pixel's tap (0, 0) at b0, each next pixel pstep further),
 * every channel, into o (the first pixel's channel 0; pixels follow oc bytes apart): per whole 8-channel half, its
 * bias and requantization fields are prepared once for the run (dw_mve_fld), and each pair shares every weight
 * load (dw_mve_pair8); a tail of fewer than 8 channels goes through dw_mve_block pixel by pixel. */
__attribute__((noinline)) static void dw_mve_pairs(const dw_mve_tap *inner, int32_t ntaps, const int8_t *b0,
                                                   int32_t pstep, const dw_mve_par *pp, int32_t oc, int8_t *o,
                                                   int32_t np)
{
    const int32_t ostep = 2 * oc, istep = 2 * pstep;
    dw_mve_fld f;
    int32_t c0, i;
    f.n2 = pp->tap_pairs ? ntaps >> 1 : 0;
    f.n1 = ntaps - 2 * f.n2;
    f.zp = pp->zp_out;
    f.lo = pp->lo;
    f.hi = pp->hi;
    f.oc = oc;
    for (c0 = 0; c0 + 8 <= oc; c0 += 8) {
        const int8_t *b = b0 + c0;
        int8_t *oo = o + c0;
        dw_mve_fields(pp, c0, &f.m2e, &f.m2o, &f.se, &f.so);
        dw_mve_bias(pp, c0, 8, &f.be, &f.bo);
        for (i = 0; i < np; ++i, b += istep, oo += ostep) {
            dw_mve_pair8(inner, b, pstep, pp->wt + c0, &f, oo);
        }
    }
    if (c0 < oc) {
        dw_mve_taps tp;
        tp.in = inner;
        tp.n_in = ntaps;
        tp.n_pad = 0;
        tp.w_pad = NULL;
        for (i = 0; i < 2 * np; ++i) {
            tp.base = b0 + i * pstep;
            dw_mve_block(&tp, pp, c0, oc - c0, o + i * oc + c0);
        }
    }
}

/*
 * Two vertically adjacent output rows oh and oh + 1, every column, both rows with all their tap rows in the image:
 * the interior columns go as horizontal pairs, row by row (dw_mve_pairs); every other column's two pixels are a
 * dw_mve_pair8 pair (the second pixel's taps one output row, vstep input bytes, further), so border columns and a
 * row's odd pixel out take the pair path too. An interior column uses the
 * shared table (offsets from the pixel's tap (0, 0)); a border column lists its in-image taps (offsets from row
 * ih0, column 0 of the band) and folds its padded taps' zp_in * w into the accumulators' start, which is the same
 * for both pixels. o is row oh's first pixel; a tail of fewer than 8 channels goes through dw_mve_block.
 */
__attribute__((noinline)) static void dw_mve_vpairs(const dw_geom *dg, const dw_mve_par *pp, const dw_mve_tap *inner,
                                                    int32_t ntaps, int32_t clo, int32_t chi, const int8_t *img,
                                                    int32_t oh, int8_t *o)
{
    const tgrs_window *w = &dg->w;
    const int32_t c = dg->c, oc = dg->oc;
    const int32_t vstep = w->sh * dg->wd * c, ih0 = oh * w->sh - w->pt;
    const int8_t *const rowbase = img + (ih0 - dg->in_row0) * dg->wd * c; /* row ih0, column 0 */
    const int16x8_t zv = vdupq_n_s16((int16_t)pp->zp_in);
    dw_mve_tap border[DW_MAX_TAPS];
    int32_t wpad[DW_MAX_TAPS];
    dw_mve_fld f;
    dw_mve_taps tp;
    int32_t ow, i, j, t, c0;
    f.zp = pp->zp_out;
    f.lo = pp->lo;
    f.hi = pp->hi;
    const int32_t nh = (chi - clo) / 2; /* horizontal pairs of interior pixels per row */
    f.oc = dg->ow * oc; /* the second pixel is one output row further */
    tp.w_pad = wpad;
    if (nh > 0) { /* the interior columns in horizontal runs (fields once per run), row by row */
        const int8_t *b0 = rowbase + (clo * w->sw - w->pl) * c;
        dw_mve_pairs(inner, ntaps, b0, w->sw * c, pp, oc, o + clo * oc, nh);
        dw_mve_pairs(inner, ntaps, b0 + vstep, w->sw * c, pp, oc, o + f.oc + clo * oc, nh);
    }
    for (ow = 0; ow < dg->ow; ++ow) {
        const int32_t iw0 = ow * w->sw - w->pl;
        if (ow == clo && nh > 0) {
            ow += 2 * nh - 1; /* done above */
            continue;
        }
        int8_t *const oo = o + ow * oc;
        const int8_t *bc;
        if (ow >= clo && ow < chi) {
            bc = rowbase + iw0 * c;
            tp.in = inner;
            tp.n_in = ntaps;
            tp.n_pad = 0;
        } else {
            bc = rowbase;
            tp.in = border;
            tp.n_in = 0;
            tp.n_pad = 0;
            for (i = 0, t = 0; i < w->kh; ++i) {
                for (j = 0; j < w->kw; ++j, ++t) {
                    const int32_t iw = iw0 + j * w->dw;
                    if (iw >= 0 && iw < dg->wd) {
                        border[tp.n_in].x = (i * w->dh * dg->wd + iw) * c;
                        border[tp.n_in++].w = t * oc;
                    } else {
                        wpad[tp.n_pad++] = t * oc;
                    }
                }
            }
        }
        f.n2 = pp->tap_pairs ? tp.n_in >> 1 : 0;
        f.n1 = tp.n_in - 2 * f.n2;
        for (c0 = 0; c0 + 8 <= oc; c0 += 8) {
            dw_mve_fields(pp, c0, &f.m2e, &f.m2o, &f.se, &f.so);
            dw_mve_bias(pp, c0, 8, &f.be, &f.bo);
            for (t = 0; t < tp.n_pad; ++t) {
                const int16x8_t wv = vldrbq_s16(pp->wt + c0 + wpad[t]);
                f.be = vaddq_s32(f.be, vmullbq_int_s16(zv, wv));
                f.bo = vaddq_s32(f.bo, vmulltq_int_s16(zv, wv));
            }
            if (tp.n_in > 0) {
                dw_mve_pair8(tp.in, bc + c0, vstep, pp->wt + c0, &f, oo + c0);
            } else { /* every tap padded (a window wider than the image): the start is the whole sum */
                dw_mve_st8(pp, c0, f.be, f.bo, oo + c0);
                dw_mve_st8(pp, c0, f.be, f.bo, oo + f.oc + c0);
            }
        }
        if (c0 < oc) {
            tp.base = bc;
            dw_mve_block(&tp, pp, c0, oc - c0, oo + c0);
            tp.base = bc + vstep;
            dw_mve_block(&tp, pp, c0, oc - c0, oo + f.oc + c0);
        }
    }
}

/* The whole op on the fused path; 0 (nothing done) when it does not apply: a depth multiplier above 1, a window of
 * more than DW_MAX_TAPS taps, or a requantization tgrs_rq_vec2 does not cover (tgrs_rq_vec_ok). Offsets are int32:
 * the views of a Helium core's arena are far below 2^31 bytes. Two rows whose taps are all in the image go as vertical
 * pairs (dw_mve_vpairs); in any other row the interior pixels go in pairs (dw_mve_pairs), the odd one out and border
 * pixels one at a time in blocks of up to 16 channels (dw_mve_block). */
static int dw_fused_s8_mve(const tgrs_op_ctx *ctx, const dw_geom *dg, const int64_t *toff, int32_t ntaps)
{
    const tgrs_window *w = &dg->w;
    const int8_t *in = (const int8_t *)ctx->in[0]->data;
    int8_t *out = (int8_t *)ctx->out->data;
    const int64_t in_img = (int64_t)dg->in_rows * dg->wd * dg->c;
    const int64_t out_img = (int64_t)dg->out_rows * dg->ow * dg->oc;
    dw_mve_par pp;
    dw_mve_taps tp;
    dw_mve_tap inner[DW_MAX_TAPS], border[DW_MAX_TAPS];
    int32_t wpad[DW_MAX_TAPS];
    const int32_t pstep = w->sw * dg->c; /* input distance between adjacent output pixels */
    int32_t clo, chi, n, r, ow, i, j, t, c0;
    if (dg->m != 1 || ntaps == 0 ||
        !tgrs_rq_vec_ok((const int32_t *)ctx->c[TGRS_C_DWCONV_SHIFT], dg->oc, ctx->p[TGRS_P_DWCONV_NUMERICS])) {
        return 0;
    }
    pp.wt = (const int8_t *)ctx->c[TGRS_C_DWCONV_WEIGHT];
    pp.bias = (const int32_t *)ctx->c[TGRS_C_DWCONV_BIAS];
    pp.mult = (const int32_t *)ctx->c[TGRS_C_DWCONV_MULT];
    pp.shift = (const int32_t *)ctx->c[TGRS_C_DWCONV_SHIFT];
    pp.zp_in = ctx->p[TGRS_P_DWCONV_ZP_IN];
    pp.zp_out = ctx->p[TGRS_P_DWCONV_ZP_OUT];
    pp.lo = ctx->p[TGRS_P_DWCONV_ACT_MIN];
    pp.hi = ctx->p[TGRS_P_DWCONV_ACT_MAX];
    pp.tap_pairs = dw_mve_no_min(pp.wt, ntaps * dg->oc);
    for (t = 0; t < ntaps; ++t) {
        inner[t].x = (int32_t)toff[t];
        inner[t].w = t * dg->oc;
    }
    tp.w_pad = wpad;
    dw_inner_cols(dg, &clo, &chi);
    for (n = 0; n < dg->n; ++n) {
        const int8_t *img = in + n * in_img;
        for (r = 0; r < dg->out_rows; ++r) {
            const int32_t oh = dg->out_row0 + r, ih0 = oh * w->sh - w->pt;
            const int rin = ih0 >= 0 && ih0 + (w->kh - 1) * w->dh < dg->h; /* dw_interior's row half */
            if (rin && r + 1 < dg->out_rows && ih0 + w->sh + (w->kh - 1) * w->dh < dg->h) {
                dw_mve_vpairs(dg, &pp, inner, ntaps, clo, chi, img, oh, out + n * out_img + (int64_t)r * dg->ow * dg->oc);
                ++r; /* rows r and r + 1 are done */
                continue;
            }
            /* column 0's tap (0, 0), formed only for a row whose taps are in the band */
            const int8_t *row = rin ? img + ((ih0 - dg->in_row0) * dg->wd - w->pl) * dg->c : img;
            for (ow = 0; ow < dg->ow; ++ow) {
                int8_t *o = out + n * out_img + ((int64_t)r * dg->ow + ow) * dg->oc;
                if (rin && ow >= clo && ow < chi) {
                    if (ow + 1 < chi) { /* every pair of interior pixels left in the row, in one call */
                        const int32_t np = (chi - ow) / 2;
                        dw_mve_pairs(inner, ntaps, row + ow * pstep, pstep, &pp, dg->oc, o, np);
                        ow += 2 * np - 1;
                        continue;
                    }
                    tp.base = row + ow * pstep;
                    tp.in = inner;
                    tp.n_in = ntaps;
                    tp.n_pad = 0;
                } else {
                    tp.base = img;
                    tp.in = border;
                    tp.n_in = 0;
                    tp.n_pad = 0;
                    for (i = 0, t = 0; i < w->kh; ++i) {
                        const int32_t ih = oh * w->sh - w->pt + i * w->dh;
                        for (j = 0; j < w->kw; ++j, ++t) {
                            const int32_t iw = ow * w->sw - w->pl + j * w->dw;
                            if (ih >= 0 && ih < dg->h && iw >= 0 && iw < dg->wd) {
                                border[tp.n_in].x = ((ih - dg->in_row0) * dg->wd + iw) * dg->c;
                                border[tp.n_in++].w = t * dg->oc;
                            } else {
                                wpad[tp.n_pad++] = t * dg->oc;
                            }
                        }
                    }
                }
                for (c0 = 0; c0 < dg->oc; c0 += DW_CB) {
                    dw_mve_block(&tp, &pp, c0, dg->oc - c0 < DW_CB ? dg->oc - c0 : DW_CB, o + c0);
                }
            }
        }
    }
    return 1;
}

#endif /* TGRS_HAVE_MVE */
#endif /* TGRS_DWCONV_MVE_H */
