/*
 * requant.h - the int8 requantization every int8 kernel uses: the C twin of tigris/ops/qmath.py.
 *
 * docs/numerics.md is the prose. The definition, stated once:
 *
 *   A positive real scale s is stored as (mult, shift) with mult in [2^30, 2^31) and s = mult * 2^(shift - 31).
 *   shift > 0 means a net LEFT shift (s >= 1); shift <= 0 a net right shift. shift is at most 31.
 *
 *   requant(acc, mult, shift) = round(acc * mult / 2^(31 - shift))
 *
 * computed with the exact 64-bit product and a single rounding, halves away from zero. A divisor exponent
 * n = 31 - shift of 63 or more gives 0: |acc * mult| < 2^62, so the true quotient is below one half.
 * The caller then adds the output zero point and clamps to the op's bounds (tgrs_requant_s8).
 *
 * Two numerics contracts (docs/numerics.md, "Numerics contracts"); a kernel reads its op's NUMERICS parameter and
 * passes it here: 0 (TGRS_NUMERICS_ONNX) is the single rounding above; 1 (TGRS_NUMERICS_TFLM) is TensorFlow Lite
 * Micro's double rounding, tgrs_requant_tflm: srdhm(acc << max(shift, 0), mult), then rdbpot(., max(-shift, 0)).
 *
 * The per-element helpers are static inline, with no globals. The rarely taken paths (tgrs_rq_s8_slow: the 64-bit
 * form and TFLM's rounding of the prepared requantization; tgrs_requant_nm_s8) are out of line in kcheck.c, one copy
 * per image rather than one inlined into every kernel (docs/runtime.md "Code size").
 * Kernels validate shift <= 31 once per op (tgrs_requant_check) before the inner loops call these.
 */
#ifndef TGRS_REQUANT_H
#define TGRS_REQUANT_H

#include <stdint.h>

/* Largest shift the format allows (a divisor of 2^0). Anything above it is a corrupt parameter. */
#define TGRS_SHIFT_MAX 31

/* Numerics codes as stored in op parameters (the same values as TGRS_NUMERICS_* in tgrs_format.h). */
#define TGRS_RQ_ONNX 0
#define TGRS_RQ_TFLM 1

/*
 * Divide x by 2^n rounding halves away from zero, for 0 <= n; n >= 63 gives 0.
 * |x| must be below 2^62 so |x| + 2^(n-1) cannot overflow (true for any int32 * int32 product but INT32_MIN^2,
 * which a multiplier in [0, 2^31) never produces).
 */
static inline int64_t tgrs_rounding_rshift64(int64_t x, int32_t n)
{
    /* Branch-free in the sign of x (random in practice, so a branch would mispredict half the time):
     * s is all ones for negative x, |x| = (x ^ s) - s, and the same trick restores the sign. */
    const uint64_t s = (uint64_t)0 - (uint64_t)(x < 0);
    const uint64_t ax = ((uint64_t)x ^ s) - s;
    uint64_t q;
    if (n <= 0) {
        return x;
    }
    if (n >= 63) {
        return 0;
    }
    q = (ax + ((uint64_t)1 << (n - 1))) >> n;
    return (int64_t)((q ^ s) - s); /* |q| < 2^62: the conversion back is exact */
}

/* round(acc * mult * 2^(shift - 31)), not yet offset or clamped. Requires shift <= TGRS_SHIFT_MAX. */
static inline int64_t tgrs_requant(int32_t acc, int32_t mult, int32_t shift)
{
    int64_t prod = (int64_t)acc * (int64_t)mult;
    if (shift <= -32) { /* n >= 63: written this way so 31 - shift cannot overflow for shift near INT32_MIN */
        return 0;
    }
    return tgrs_rounding_rshift64(prod, 31 - shift);
}

/*
 * a + b wrapping modulo 2^32 (defined behaviour). Kernels accumulate with it because the compiler proved the true
 * sums fit in int32; a corrupted plan then yields a wrong number, never undefined behaviour. The conversion back to
 * int32 is the two's-complement one every supported compiler uses.
 */
static inline int32_t tgrs_wrap_add(int32_t a, int32_t b)
{
    return (int32_t)((uint32_t)a + (uint32_t)b);
}

/* a - b wrapping modulo 2^32, like tgrs_wrap_add. */
static inline int32_t tgrs_wrap_sub(int32_t a, int32_t b)
{
    return (int32_t)((uint32_t)a - (uint32_t)b);
}

/* Arithmetic right shift of an int32 by 0..31 (floor division by 2^e), without relying on the implementation-defined
 * >> of a negative value: offset by 2^31 into an unsigned value, shift, subtract the shifted offset. */
static inline int32_t tgrs_asr32(int32_t x, int32_t e)
{
    const uint32_t u = (uint32_t)x ^ 0x80000000u; /* x + 2^31 */
    return (int32_t)((int64_t)(u >> e) - (int64_t)(0x80000000u >> e));
}

/*
 * Saturating rounding doubling high multiply: round(a * b / 2^31) with halves rounded toward +infinity, i.e.
 * floor((a * b + 2^30) / 2^31); a = b = INT32_MIN saturates to INT32_MAX. The sum is offset by 2^62 so an unsigned
 * shift computes the floor (|a * b| <= 2^62).
 */
static inline int32_t tgrs_srdhm(int32_t a, int32_t b)
{
    const int64_t ab = (int64_t)a * (int64_t)b;
    if (a == INT32_MIN && b == INT32_MIN) {
        return INT32_MAX;
    }
    return (int32_t)((int64_t)(((uint64_t)ab + ((uint64_t)1 << 30) + ((uint64_t)1 << 62)) >> 31) -
                     ((int64_t)1 << 31));
}

/* Rounding divide by a power of two: x / 2^e for 0 <= e <= 31, halves away from zero. */
static inline int32_t tgrs_rdbpot(int32_t x, int32_t e)
{
    const int32_t mask = (int32_t)(((uint32_t)1 << e) - 1u);
    const int32_t rem = (int32_t)((uint32_t)x & (uint32_t)mask);
    const int32_t thr = (mask >> 1) + (x < 0 ? 1 : 0);
    return tgrs_asr32(x, e) + (rem > thr ? 1 : 0);
}

/*
 * TFLM's requantization (qmath.requantize_tflm): srdhm(acc << shift, mult) for shift > 0 (the left shift wraps in
 * 32 bits, as TFLM's int32 multiply does), rdbpot(srdhm(acc, mult), -shift) for shift <= 0; shift <= -32 gives 0.
 * Requires shift <= TGRS_SHIFT_MAX, mult >= 0. Not yet offset or clamped.
 */
static inline int32_t tgrs_requant_tflm(int32_t acc, int32_t mult, int32_t shift)
{
    if (shift <= -32) {
        return 0;
    }
    if (shift > 0) {
        return tgrs_srdhm((int32_t)((uint32_t)acc << shift), mult);
    }
    return tgrs_rdbpot(tgrs_srdhm(acc, mult), -shift);
}

/* x * 2^e for 0 <= e <= 30, saturated to int32 (a fixed-point rescale to fewer integer bits). */
static inline int32_t tgrs_sat_lshift(int32_t x, int32_t e)
{
    const int32_t thr = (int32_t)(((uint32_t)1 << (31 - e)) - 1u);
    if (x > thr) {
        return INT32_MAX;
    }
    if (x < -thr) {
        return INT32_MIN;
    }
    return (int32_t)((uint32_t)x << e);
}

/*
 * 1 / (1 + a) for a in [0, 1), 0 integer bits in and out (qmath.one_over_one_plus_x): half the denominator, rounded,
 * then three Newton steps x += x * (1 - d * x) from 48/17 - 32/17 * d, with 2 integer bits.
 */
static inline int32_t tgrs_one_over_one_plus_x(int32_t a)
{
    const int64_t sum = (int64_t)a + INT32_MAX;
    const int32_t d = (int32_t)((sum + (sum >= 0 ? 1 : -1)) / 2); /* C99 division truncates toward zero */
    int32_t x = tgrs_wrap_add(1515870810, tgrs_srdhm(d, -1010580540));
    int i;
    for (i = 0; i < 3; ++i) {
        const int32_t one_minus = tgrs_wrap_sub(1 << 29, tgrs_srdhm(d, x));
        x = tgrs_wrap_add(x, tgrs_sat_lshift(tgrs_srdhm(x, one_minus), 2));
    }
    return tgrs_sat_lshift(x, 1);
}

/*
 * For a positive raw s with int_bits integer bits: r (0 integer bits) and *e with r ~ 2^*e / s
 * (qmath.reciprocal_q31): s is normalized by its leading zeros, *e = int_bits - leading zeros.
 */
static inline int32_t tgrs_reciprocal_q31(int32_t s, int32_t int_bits, int32_t *e)
{
    uint32_t u = (uint32_t)s;
    int32_t clz = 0;
    while (clz < 32 && (u & 0x80000000u) == 0u) { /* once per softmax line: a loop, not a builtin */
        u <<= 1;
        ++clz;
    }
    *e = int_bits - clz;
    return tgrs_one_over_one_plus_x((int32_t)(u - 0x80000000u));
}

/* The requantization of a numerics code: tgrs_requant (TGRS_RQ_ONNX) or tgrs_requant_tflm (TGRS_RQ_TFLM). */
static inline int64_t tgrs_requant_nm(int32_t acc, int32_t mult, int32_t shift, int32_t numerics)
{
    return numerics == TGRS_RQ_TFLM ? (int64_t)tgrs_requant_tflm(acc, mult, shift) : tgrs_requant(acc, mult, shift);
}


/* Clamp a 64-bit value into [lo, hi]. Written as two selects so compilers emit conditional moves: whether an
 * output clamps is data dependent (about half the outputs of a Relu layer), so a branch would mispredict often. */
static inline int32_t tgrs_clamp64(int64_t v, int32_t lo, int32_t hi)
{
    const int64_t a = (v < (int64_t)lo) ? (int64_t)lo : v;
    const int64_t b = (a > (int64_t)hi) ? (int64_t)hi : a;
    return (int32_t)b;
}

/*
 * The full int8 output step: requantize, add the output zero point, clamp to [lo, hi] (the op's int8 bounds, which
 * carry a fused Relu/Relu6; the caller guarantees -128 <= lo <= hi <= 127).
 */
static inline int8_t tgrs_requant_s8(int32_t acc, int32_t mult, int32_t shift, int32_t zp_out, int32_t lo, int32_t hi)
{
    return (int8_t)tgrs_clamp64(tgrs_requant(acc, mult, shift) + (int64_t)zp_out, lo, hi);
}

/* tgrs_requant_s8 for either numerics code. Out of line (kcheck.c): its callers are the plain paths (weight zero
 * points, the TFLM mean), which run rarely, and one copy per image keeps each from inlining both roundings. */
int8_t tgrs_requant_nm_s8(int32_t acc, int32_t mult, int32_t shift, int32_t zp_out, int32_t lo, int32_t hi,
                          int32_t numerics);

/*
 * The same requantization, output zero point included, prepared once per channel for inner loops:
 * tgrs_rq_s8(tgrs_rq_make(m, s, zp, nm), acc, lo, hi) equals tgrs_requant_nm_s8(acc, m, s, zp, lo, hi, nm) for
 * every input (tested exhaustively at the edges and randomly elsewhere). Requires shift <= TGRS_SHIFT_MAX, mult >= 0.
 * The numerics code is a field, so one loop serves both contracts; the branch on it is the same for every element.
 *
 * The 32-bit form below (tgrs_rq_s8_fast) is what every real layer takes; the rest (shift above -2 with onnx
 * numerics, and TFLM's rounding) goes through the out-of-line tgrs_rq_s8_slow, which evaluates the definition.
 */
typedef struct tgrs_rq {
    int64_t mult;  /* 0 when shift <= -32 (the result is then zp_out) */
    int32_t n;     /* 31 - shift, in [0, 62]; 0 when mult is 0 */
    int32_t tflm;  /* TGRS_RQ_TFLM: the fields below apply instead */
    int32_t m32;   /* tflm: multiplier (0 when shift <= -32) */
    int32_t lsh;   /* tflm: max(shift, 0) */
    int32_t rsh;   /* tflm: max(-shift, 0) */
    int32_t zp;    /* output zero point */
    /* The 32-bit form, for onnx numerics with n >= 33 (every real layer's shift <= -2): see tgrs_rq_s8_fast. */
    int32_t fast;  /* 1 when it applies */
    int32_t n2;    /* n - 32, in [1, 30]; 1 when mult is 0 */
    uint32_t add2; /* 2^31 + 2^(n2 - 1) */
    int32_t sub2;  /* (2^31 >> n2) - zp_out */
} tgrs_rq;

static inline tgrs_rq tgrs_rq_make(int32_t mult, int32_t shift, int32_t zp_out, int32_t numerics)
{
    tgrs_rq r;
    r.tflm = numerics == TGRS_RQ_TFLM;
    r.m32 = shift <= -32 ? 0 : mult;
    r.lsh = shift > 0 ? shift : 0;
    r.rsh = (shift < 0 && shift > -32) ? -shift : 0;
    r.zp = zp_out;
    if (shift <= -32) {
        r.mult = 0;
        r.n = 0;
    } else {
        r.mult = mult;
        r.n = 31 - shift;
    }
    r.fast = !r.tflm && (r.mult == 0 || r.n >= 33);
    r.n2 = r.fast && r.mult != 0 ? r.n - 32 : 1;
    r.add2 = ((uint32_t)1 << 31) + ((uint32_t)1 << (r.n2 - 1));
    r.sub2 = (int32_t)(((uint32_t)1 << 31) >> r.n2) - zp_out;
    return r;
}

/*
 * The 32-bit form (r->fast: onnx numerics, n >= 33): only the high word of the corrected product P = p - [p < 0]
 * matters, since floor((P + 2^(n-1)) / 2^n) = floor((hi(P) + 2^(n-33)) / 2^(n-32)) (nested floors; 2^(n-1) is a
 * multiple of 2^32). |p| < 2^62 puts hi(P) in [-2^30, 2^30), so hi(P) + 2^(n-33) + 2^31 lies in (0, 2^32) and an
 * unsigned shift computes the floor; 2^31 >> (n - 32) (minus the zero point) is subtracted back. mult 0
 * (shift <= -32) gives hi(P) = 0 and the result zp_out, as the 64-bit form does. One 32x32->64 multiply, a 64-bit
 * decrement and 32-bit work: about a third of the 64-bit form's instructions on a 32-bit core. Inner loops that test
 * r->fast once per channel call it directly; tgrs_rq_s8 picks it by itself.
 */
static inline int8_t tgrs_rq_s8_fast(const tgrs_rq *r, int32_t acc, int32_t lo, int32_t hi)
{
    const int64_t prod = (int64_t)acc * (int32_t)r->mult;
    const uint64_t pc = (uint64_t)prod - (uint64_t)(prod < 0);
    const uint32_t u = (uint32_t)(pc >> 32) + r->add2;
    const int32_t q = (int32_t)(u >> r->n2) - r->sub2;
    return (int8_t)((q < lo) ? lo : ((q > hi) ? hi : q));
}

/* tgrs_rq_s8 outside the 32-bit form, out of line (kcheck.c): the 64-bit definition (shift above -2, which no real
 * layer has) and TFLM's double rounding. One copy per image, shared by every kernel, instead of one inlined into each
 * kernel's output loop; the common case stays inline. */
int8_t tgrs_rq_s8_slow(const tgrs_rq *r, int32_t acc, int32_t lo, int32_t hi);

static inline int8_t tgrs_rq_s8(const tgrs_rq *r, int32_t acc, int32_t lo, int32_t hi)
{
    return r->fast ? tgrs_rq_s8_fast(r, acc, lo, hi) : tgrs_rq_s8_slow(r, acc, lo, hi);
}

/*
 * 1 when every one of an op's n channels has the 32-bit form's range: onnx numerics and shift in [-31, -2] (every
 * real layer). The DSP kernels that requantize straight from the (mult, shift) arrays (tgrs_rq_abs) take an op only
 * then; anything else goes through tgrs_rq_s8 per output. The Helium ones take shifts in [-128, -1] (requant_mve.h's
 * tgrs_rq_vec2, tgrs_rq_vec_ok).
 */
static inline int tgrs_rq_fast_all(const int32_t *shift, int32_t n, int32_t numerics)
{
    int32_t i;
    if (numerics != TGRS_RQ_ONNX) {
        return 0;
    }
    for (i = 0; i < n; ++i) {
        if (shift[i] < -31 || shift[i] > -2) {
            return 0;
        }
    }
    return 1;
}

/*
 * requant(acc, mult, shift) + zp_out, not yet clamped, computed straight from (mult, shift) where tgrs_rq_fast_all
 * holds (shift in [-31, -2]): with n = 31 - shift, round-half-away(acc * m / 2^n) = sign(acc) *
 * floor((floor(|acc| * m / 2^32) / 2^(n-33) + 1) / 2) (nested floors, 2^(n-1) a multiple of 2^32; |acc| unsigned, so
 * every int32 acc is exact). One 32x32->64 multiply and a few 32-bit operations, no per-channel preparation; the
 * same identity as requant_mve.h's tgrs_rq_vec2 (there with the multiplier doubled).
 */
static inline int32_t tgrs_rq_abs(int32_t acc, int32_t mult, int32_t shift, int32_t zp_out)
{
    const uint32_t s = 0u - ((uint32_t)acc >> 31); /* all ones when acc < 0 */
    const uint32_t u = ((uint32_t)acc ^ s) - s;
    const uint32_t h = (uint32_t)(((uint64_t)u * (uint32_t)mult) >> 32);
    const uint32_t q = ((h >> (~(uint32_t)shift - 1u)) + 1u) >> 1; /* h >> (-2 - shift) */
    return (int32_t)((q ^ s) - s) + zp_out;
}

/*
 * Validate per-channel (mult, shift) arrays read from a plan: shift must be <= 31 and mult non-negative.
 * Returns 1 when valid, 0 otherwise (the kernel then returns TGRS_ERR_PARAM).
 */
int tgrs_requant_check(const int32_t *mult, const int32_t *shift, int32_t n); /* kcheck.c */

/* Validate int8 clamp bounds and a zero point read from a plan. Returns 1 when valid. */
static inline int tgrs_s8_bounds_ok(int32_t lo, int32_t hi, int32_t zp)
{
    return lo >= -128 && hi <= 127 && lo <= hi && zp >= -128 && zp <= 127;
}

/* Round half to even of v, for |v| <= 2^16 (the caller clamps first): exact, because the fraction is. The scalar
   rounding of a float quantize, shared by the quantize kernel and the int8 resize that computes its bytes. */
static inline int32_t tgrs_rne_small(float v)
{
    int32_t t = (int32_t)v; /* toward zero */
    float f = v - (float)t;
    if (f > 0.5f) {
        return t + 1;
    }
    if (f < -0.5f) {
        return t - 1;
    }
    if (f == 0.5f) {
        return (t % 2 != 0) ? t + 1 : t;
    }
    if (f == -0.5f) {
        return (t % 2 != 0) ? t - 1 : t;
    }
    return t;
}

#endif /* TGRS_REQUANT_H */
