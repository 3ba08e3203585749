/*
 * requant_mve.h - the Helium (MVE) twin of requant.h's tgrs_rq_s8_fast, four outputs at a time (of one channel, or
 * of four channels lane by lane)
 * (TGRS_HAVE_MVE, target.h). Same arithmetic, lane by lane, bit for bit:
 *
 *   prod = acc * mult (exact 64 bits): VMULH gives hi(prod) = floor(prod / 2^32), VMUL the low word.
 *   P = prod - [prod < 0]: with mult > 0, prod < 0 exactly when acc < 0 (acc = 0 gives prod = 0); the decrement
 *       borrows from the high word only when the low word is 0, so hi(P) = hi(prod) - [acc < 0 and lo(prod) = 0].
 *   u = hi(P) + add2 (unsigned, in (0, 2^32)), q = (u >> n2) - sub2, clamped to [lo, hi].
 *
 * Valid exactly where tgrs_rq_s8_fast is (rq->fast with mult > 0: onnx numerics, shift in [-31, -2]); callers take
 * the scalar tgrs_rq_s8 for any other channel. tests/cortex_m/test_kernel_variants.py runs it against the host.
 */
#ifndef TGRS_REQUANT_MVE_H
#define TGRS_REQUANT_MVE_H

#if TGRS_HAVE_MVE

/* Requantized int32 lanes (still to be narrowed) of four accumulators, lane i with its own channel's fields
 * (m = mult > 0, add2, nn2 = -n2, sub2 of a fast tgrs_rq). */
static inline int32x4_t tgrs_rq_fast_lanes(int32x4_t acc, int32x4_t m, uint32x4_t add2, int32x4_t nn2,
                                           int32x4_t sub2, int32_t lo, int32_t hi)
{
    const int32x4_t h = vmulhq_s32(acc, m);
    const int32x4_t l = vmulq_s32(acc, m);
    const int32x4_t neg = vshrq_n_s32(acc, 31); /* -1 where acc < 0 */
    /* -1 where l != 0: l | -l has its sign bit set for every non-zero l (INT32_MIN included). A compare-and-select
       here makes GCC 12 fail (internal compiler error), so the mask is arithmetic. */
    const int32x4_t nonzero = vshrq_n_s32(vorrq_s32(l, vnegq_s32(l)), 31);
    const int32x4_t borrow = vbicq_s32(neg, nonzero); /* -1 where acc < 0 and l == 0 */
    const uint32x4_t u = vaddq_u32(vreinterpretq_u32_s32(vaddq_s32(h, borrow)), add2);
    const int32x4_t q = vsubq_s32(vreinterpretq_s32_u32(vshlq_u32(u, nn2)), sub2);
    return vminq_s32(vmaxq_s32(q, vdupq_n_s32(lo)), vdupq_n_s32(hi));
}

/* Requantized int32 lanes (still to be narrowed) of four accumulators of channel r. */
static inline int32x4_t tgrs_rq_fast_x4(const tgrs_rq *r, int32x4_t acc, int32_t lo, int32_t hi)
{
    return tgrs_rq_fast_lanes(acc, vdupq_n_s32((int32_t)r->mult), vdupq_n_u32(r->add2), vdupq_n_s32(-r->n2),
                              vdupq_n_s32(r->sub2), lo, hi);
}

/*
 * The per-lane form the GEMM and depthwise kernels take, lanes being four output channels with their own (mult,
 * shift), for every shift in [-128, -1] (tgrs_rq_vec_ok). With m2 = 2 * mult read unsigned (below 2^32)
 * and the rounding shift by n2 = -shift >= 1 (VRSHL.U32 by the lane's shift itself):
 * round-half-away(acc * mult / 2^(31 - shift)) = sign(acc) * floor((h + 2^(n2-1)) / 2^n2) with
 * h = floor(|acc| * m2 / 2^32) = floor(|acc| * mult / 2^31) < 2^31 (2^(n2-1+31) is a multiple of 2^31, so the inner
 * floor changes nothing). Shifts from -32 down give 0 like requant.h (h < 2^31; VRSHL reads the low byte of the
 * amount as signed, hence the -128 bound). Returns the signed requantized lanes before the zero point and the clamp.
 */
static inline int32x4_t tgrs_rq_vec2(int32x4_t acc, uint32x4_t m2, int32x4_t shift)
{
    const int32x4_t sg = vshrq_n_s32(acc, 31); /* -1 where acc < 0: (q ^ sg) - sg negates there */
    const uint32x4_t h = vmulhq_u32(vreinterpretq_u32_s32(vabsq_s32(acc)), m2);
    const int32x4_t q = vreinterpretq_s32_u32(vrshlq_u32(h, shift));
    return vsubq_s32(veorq_s32(q, sg), sg);
}

/* tgrs_rq_vec2 plus the zero point and the clamp: int32 lanes ready to narrow. */
static inline int32x4_t tgrs_rq_vec2_s8(int32x4_t acc, uint32x4_t m2, int32x4_t shift, int32_t zp, int32_t lo,
                                        int32_t hi)
{
    const int32x4_t r = vaddq_n_s32(tgrs_rq_vec2(acc, m2, shift), zp);
    return vminq_s32(vmaxq_s32(r, vdupq_n_s32(lo)), vdupq_n_s32(hi));
}

/* Whether tgrs_rq_vec2 covers an op: onnx numerics and every shift in [-128, -1] (multipliers are validated >= 0). */
static inline int tgrs_rq_vec_ok(const int32_t *shift, int32_t n, int32_t numerics)
{
    int32_t i;
    if (numerics != TGRS_RQ_ONNX) {
        return 0;
    }
    for (i = 0; i < n; ++i) {
        if (shift[i] < -128 || shift[i] > -1) {
            return 0;
        }
    }
    return 1;
}

#endif /* TGRS_HAVE_MVE */
#endif /* TGRS_REQUANT_MVE_H */
