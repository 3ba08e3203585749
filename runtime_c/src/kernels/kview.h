/*
 * kview.h - small view helpers shared by the non-conv kernels (pool, binary, concat, resize, unary, softmax, pad,
 * transpose, quant, copy). Everything is static inline so each kernel file compiles alone with no globals.
 *
 * A view holds rows [row0, row0 + rows) of axis 1 of its rank-4 dims {N, H, W, C}; element (n, h, w, c) of a band
 * is at ((n * rows + (h - row0)) * W + w) * C + c.
 */
#ifndef TGRS_KVIEW_H
#define TGRS_KVIEW_H

#include <stddef.h>
#include <stdint.h>

#include "tgrs_op.h"

/* Elements of one row (W * C) and of the whole band. */
static inline size_t tgrs_kv_row_elems(const tgrs_tview *v)
{
    return (size_t)v->dims[2] * (size_t)v->dims[3];
}

/* Offset in elements of (n, h) in a band view; h is a global row index the caller checked with tgrs_kv_has_rows. */
static inline size_t tgrs_kv_row_off(const tgrs_tview *v, int32_t n, int32_t h)
{
    return ((size_t)n * (size_t)v->rows + (size_t)(h - v->row0)) * tgrs_kv_row_elems(v);
}

/* 1 when the band holds global rows [first, last) (an empty range always holds). */
static inline int tgrs_kv_has_rows(const tgrs_tview *v, int32_t first, int32_t last)
{
    if (last <= first) {
        return 1;
    }
    return first >= v->row0 && last <= v->row0 + v->rows;
}

/* 1 when dims are positive and the band lies inside them. */
int tgrs_kv_sane(const tgrs_tview *v); /* out of line in kcheck.c: checked once per op */

/* 1 when the view covers the whole tensor (untiled). */
static inline int tgrs_kv_whole(const tgrs_tview *v)
{
    return v->row0 == 0 && v->rows == v->dims[1];
}

static inline int tgrs_kv_same_dims(const tgrs_tview *a, const tgrs_tview *b)
{
    return a->dims[0] == b->dims[0] && a->dims[1] == b->dims[1] && a->dims[2] == b->dims[2] &&
           a->dims[3] == b->dims[3];
}

/* num / den for den > 0, rounded to nearest with halves to even, exact in 64 bits (|num| < 2^62). Averages use
 * it: their ties are common and the ONNX model states them as QuantizeLinear's rounding (docs/numerics.md). */
static inline int64_t tgrs_div_round_half_even(int64_t num, int64_t den)
{
    uint64_t a = (num < 0) ? (uint64_t)0 - (uint64_t)num : (uint64_t)num;
    uint64_t d = (uint64_t)den;
    uint64_t q = a / d;
    uint64_t r2 = (a - q * d) * 2u;
    if (r2 > d || (r2 == d && (q & 1u) != 0u)) {
        ++q;
    }
    return (num < 0) ? -(int64_t)q : (int64_t)q;
}

/* The 32-bit twin of tgrs_div_round_half_even (den > 0): a hardware divide on Cortex-M, not a library call. */
static inline int32_t tgrs_div_round_half_even32(int32_t num, int32_t den)
{
    uint32_t a = (num < 0) ? 0u - (uint32_t)num : (uint32_t)num;
    uint32_t d = (uint32_t)den;
    uint32_t q = a / d;
    uint32_t r2 = (a - q * d) * 2u;
    if (r2 > d || (r2 == d && (q & 1u) != 0u)) {
        ++q;
    }
    return (num < 0) ? -(int32_t)q : (int32_t)q;
}

/*
 * x / 2^n rounded to nearest with halves to even (|x| < 2^62; n <= 0 returns x; n >= 63 gives 0). The non-MAC int8
 * kernels round this way (docs/numerics.md): power-of-two related scales put exact results on halves, and the ONNX
 * model states those as QuantizeLinear's rounding.
 */
static inline int64_t tgrs_rshift_half_even(int64_t x, int32_t n)
{
    uint64_t a, q, r, half;
    if (n <= 0) {
        return x;
    }
    if (n >= 63) {
        return 0;
    }
    a = (x < 0) ? (uint64_t)0 - (uint64_t)x : (uint64_t)x;
    q = a >> n;
    r = a & (((uint64_t)1 << n) - 1u);
    half = (uint64_t)1 << (n - 1);
    if (r > half || (r == half && (q & 1u) != 0u)) {
        ++q;
    }
    return (x < 0) ? -(int64_t)q : (int64_t)q;
}

/* round(acc * mult / 2^(31 - shift)) halves to even, + zp, clamped to [lo, hi]; shift <= 31 (validated). */
static inline int8_t tgrs_requant_even_s8(int32_t acc, int32_t mult, int32_t shift, int32_t zp, int32_t lo,
                                          int32_t hi)
{
    int64_t q = tgrs_rshift_half_even((int64_t)acc * (int64_t)mult, shift <= -32 ? 63 : 31 - shift) + zp;
    return (int8_t)(q < lo ? lo : (q > hi ? hi : q));
}

/* Number of bits needed to hold the positive value v (0 for 0). */
static inline int32_t tgrs_bitlen(uint32_t v)
{
    int32_t n = 0;
    while (v != 0u) {
        ++n;
        v >>= 1;
    }
    return n;
}

#endif /* TGRS_KVIEW_H */
