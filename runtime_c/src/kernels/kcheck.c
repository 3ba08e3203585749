/*
 * kcheck.c - the parameter and view checks the kinds share, out of line.
 *
 * The loader makes them once per op and tile through the kinds' tgrs_check_<kind> (check.c), and the kernels reach
 * the same functions when they derive their geometry, so one shared copy keeps a firmware image from carrying one
 * inlined copy per kernel file (docs/runtime.md "Code size"). Declared in kview.h, window.h, kcheck.h and
 * requant.h; no state.
 *
 * A check never reads tensor data: the loader calls it on views that hold dims and bands only (data NULL). It reads
 * a constant's bytes only through a non-NULL ctx->c[k]: the loader passes NULL for constants it cannot see (an LZ4
 * unit's, decoded only at run time), so their values are checked when the kernel runs.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kview.h"
#include "kcheck.h"
#include "requant.h"
#include "target.h"
#include "tgrs_op.h"
#include "window.h"

int tgrs_kv_sane(const tgrs_tview *v)
{
    /* data is not checked: the executor always points it into the arena (TGRS_DCHECK in exec.c), and the loader's
       check views have none. */
    return v != NULL && v->dims[0] > 0 && v->dims[1] > 0 && v->dims[2] > 0 && v->dims[3] > 0 && v->row0 >= 0 &&
           v->rows >= 0 && (int64_t)v->row0 + v->rows <= v->dims[1];
}

int tgrs_requant_check(const int32_t *mult, const int32_t *shift, int32_t n)
{
    int32_t i;
    for (i = 0; i < n; ++i) {
        if (shift[i] > TGRS_SHIFT_MAX || mult[i] < 0) {
            return 0;
        }
    }
    return 1;
}

int tgrs_window_load(tgrs_window *w, const int32_t *p)
{
    /* kernel, strides, dilations in [1, MAX], pads in [0, MAX]: one unsigned compare each (a negative value wraps
       above MAX), OR-ed without branches, since a kernel call runs this on every tile */
    uint32_t bad = 0u;
    int i;
    for (i = 0; i < 6; ++i) {
        bad |= (uint32_t)((uint32_t)p[i] - 1u > (uint32_t)TGRS_WINDOW_MAX - 1u);
    }
    for (i = 6; i < 10; ++i) {
        bad |= (uint32_t)((uint32_t)p[i] > (uint32_t)TGRS_WINDOW_MAX);
    }
    if (bad != 0u) {
        return 0;
    }
    w->kh = p[0]; w->kw = p[1]; w->sh = p[2]; w->sw = p[3]; w->dh = p[4];
    w->dw = p[5]; w->pt = p[6]; w->pl = p[7]; w->pb = p[8]; w->pr = p[9];
    return 1;
}

void tgrs_window_get(tgrs_window *w, const int32_t *p)
{
    memcpy(w, p, sizeof *w);
}

/* The loader proves COLS band-relative pads for windows within the kernels' limit: the two limits are one. */
typedef char tgrs_check_cols_window_max[(TGRS_COLS_WINDOW_MAX == TGRS_WINDOW_MAX) ? 1 : -1];

/* requant.h spells the codes without the generated header; they must agree. */
typedef char tgrs_check_rq_onnx[(TGRS_RQ_ONNX == TGRS_NUMERICS_ONNX) ? 1 : -1];
typedef char tgrs_check_rq_tflm[(TGRS_RQ_TFLM == TGRS_NUMERICS_TFLM) ? 1 : -1];

int tgrs_zp_s8_ok(const int32_t *zp, int32_t n)
{
    int32_t i;
    for (i = 0; i < n; ++i) {
        if (zp[i] < -128 || zp[i] > 127) {
            return 0;
        }
    }
    return 1;
}

int tgrs_numerics_ok(int32_t numerics)
{
    return numerics == TGRS_NUMERICS_ONNX || numerics == TGRS_NUMERICS_TFLM;
}

int tgrs_mac_s8_check(const tgrs_op_ctx *ctx, int mult_slot, int shift_slot, int32_t oc, int32_t lo, int32_t hi,
                      int32_t zp_in, int32_t zp_out, int32_t numerics)
{
    const int32_t *mult = (const int32_t *)ctx->c[mult_slot];
    const int32_t *shift = (const int32_t *)ctx->c[shift_slot];
    if ((ctx->proven & TGRS_PROVEN_CONSTS) != 0u) {
        return TGRS_OK; /* the loader made this very check on these bytes (a per-channel loop, on every tile) */
    }
    if (oc < 1 || ctx->clen[mult_slot] != (uint64_t)oc * 4u || ctx->clen[shift_slot] != (uint64_t)oc * 4u) {
        return TGRS_ERR_SHAPE;
    }
    if (!tgrs_s8_bounds_ok(lo, hi, zp_out) || zp_in < -128 || zp_in > 127 ||
        (mult != NULL && shift != NULL && !tgrs_requant_check(mult, shift, oc)) || !tgrs_numerics_ok(numerics)) {
        return TGRS_ERR_PARAM;
    }
    return TGRS_OK;
}

/*
 * Output length along one axis (floor mode), or -1 when the window does not fit even once. With n < 2^31 and
 * k, s, d, p0, p1 in [0, 4096] (tgrs_window_load), 0 <= avail < 2^32: the division is a 32-bit one (a hardware
 * divide on Cortex-M, not a 64-bit library call).
 */
static int64_t tgrs_window_out_len(int32_t n, int32_t k, int32_t s, int32_t d, int32_t p0, int32_t p1)
{
    int64_t span = (int64_t)(k - 1) * d + 1;
    int64_t avail = (int64_t)n + p0 + p1 - span;
    return (avail < 0) ? -1 : (int64_t)((uint32_t)avail / (uint32_t)s) + 1;
}

int tgrs_window_check(const tgrs_window *w, const tgrs_tview *in, const tgrs_tview *out)
{
    int64_t lo, hi;
    if (!tgrs_kv_sane(in) || !tgrs_kv_sane(out) || in->dims[0] != out->dims[0]) {
        return TGRS_ERR_SHAPE;
    }
    if (tgrs_window_out_len(in->dims[1], w->kh, w->sh, w->dh, w->pt, w->pb) != out->dims[1] ||
        tgrs_window_out_len(in->dims[2], w->kw, w->sw, w->dw, w->pl, w->pr) != out->dims[2]) {
        return TGRS_ERR_SHAPE;
    }
    if (out->rows == 0) {
        return TGRS_OK;
    }
    lo = (int64_t)out->row0 * w->sh - w->pt;
    hi = (int64_t)(out->row0 + out->rows - 1) * w->sh - w->pt + (int64_t)(w->kh - 1) * w->dh + 1;
    if (lo < 0) {
        lo = 0;
    }
    if (hi > in->dims[1]) {
        hi = in->dims[1];
    }
    if (lo < hi && (lo < in->row0 || hi > (int64_t)in->row0 + in->rows)) {
        return TGRS_ERR_TILE;
    }
    return TGRS_OK;
}

/* Out-of-line copies of the prepared requantization (requant.h) for the fast-path kernels, which prepare once per
 * channel and take the general form only for rare channels: one copy per image instead of one inlined per kernel
 * (the int8 CNN subset's 16 KiB at -Os). */
void tgrs_rq_prepare(tgrs_rq *r, int32_t mult, int32_t shift, int32_t zp_out, int32_t numerics)
{
    *r = tgrs_rq_make(mult, shift, zp_out, numerics);
}

int8_t tgrs_rq_s8_call(const tgrs_rq *r, int32_t acc, int32_t lo, int32_t hi)
{
    return tgrs_rq_s8(r, acc, lo, hi);
}

int8_t tgrs_rq_s8_slow(const tgrs_rq *r, int32_t acc, int32_t lo, int32_t hi)
{
    if (r->tflm) {
        const int32_t t = tgrs_srdhm((int32_t)((uint32_t)acc << r->lsh), r->m32);
        return (int8_t)tgrs_clamp64((int64_t)tgrs_rdbpot(t, r->rsh) + r->zp, lo, hi);
    }
    /* tgrs_requant itself: mult 0 (shift <= -32) gives 0, n = 0 (shift 31) no rounding */
    return (int8_t)tgrs_clamp64(tgrs_rounding_rshift64((int64_t)acc * r->mult, r->n) + r->zp, lo, hi);
}

int8_t tgrs_requant_nm_s8(int32_t acc, int32_t mult, int32_t shift, int32_t zp_out, int32_t lo, int32_t hi,
                          int32_t numerics)
{
    return (int8_t)tgrs_clamp64(tgrs_requant_nm(acc, mult, shift, numerics) + (int64_t)zp_out, lo, hi);
}

/* The widened size of an IEEE-half constant of `len` bytes, rounded up to the 16-byte alignment of the format. */
static uint32_t f16_wide_bytes(uint32_t len)
{
    return ((len / 2u) * 4u + 15u) & ~15u;
}

int tgrs_f16_view(tgrs_op_ctx *wide, const tgrs_op_ctx *ctx, int slot, int32_t wf16)
{
    uint32_t len, need;
    *wide = *ctx;
    if (wf16 == 0) {
        return TGRS_OK;
    }
    len = ctx->clen[slot];
    if (wf16 != 1 || (len & 1u) != 0u || len > 0x1FFFFFF0u) {
        return TGRS_ERR_PARAM;
    }
    need = f16_wide_bytes(len);
    if (ctx->scratch_size < need) {
        return TGRS_ERR_SCRATCH;
    }
    wide->c[slot] = NULL;
    wide->clen[slot] = (len / 2u) * 4u;
    wide->scratch_size = ctx->scratch_size - need;
    wide->scratch = (ctx->scratch != NULL && wide->scratch_size > 0u) ? (uint8_t *)ctx->scratch + need : NULL;
    return TGRS_OK;
}

/* One IEEE half (binary16) as the float32 of the same value: every half is exactly a float32. */
static uint32_t f16_bits_to_f32_bits(uint32_t h)
{
    const uint32_t sign = (h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1Fu;
    uint32_t m = h & 0x3FFu;
    if (e == 0x1Fu) {
        return sign | 0x7F800000u | (m << 13); /* infinity, NaN (payload kept) */
    }
    if (e != 0u) {
        return sign | ((e + 112u) << 23) | (m << 13); /* normal: rebias 15 -> 127 */
    }
    if (m == 0u) {
        return sign; /* signed zero */
    }
    e = 113u; /* subnormal m * 2^-24: normalize */
    while ((m & 0x400u) == 0u) {
        m <<= 1;
        e--;
    }
    return sign | (e << 23) | ((m & 0x3FFu) << 13);
}

int tgrs_f16_widen(tgrs_op_ctx *wide, const tgrs_op_ctx *ctx, int slot, int32_t wf16)
{
    int st = tgrs_f16_view(wide, ctx, slot, wf16);
    if (st != TGRS_OK || wf16 == 0) {
        return st;
    }
    if (ctx->c[slot] == NULL || ctx->scratch == NULL) {
        return TGRS_ERR_SCRATCH;
    }
    {
        const uint8_t *src = (const uint8_t *)ctx->c[slot];
        uint8_t *dst = (uint8_t *)ctx->scratch;
        const uint32_t n = ctx->clen[slot] / 2u;
        uint32_t i;
        for (i = 0; i < n; i++) {
            const uint32_t f = f16_bits_to_f32_bits((uint32_t)src[2u * i] | ((uint32_t)src[2u * i + 1u] << 8));
            memcpy(dst + 4u * i, &f, 4);
        }
        wide->c[slot] = dst;
    }
    return TGRS_OK;
}

int tgrs_reads_target(uint32_t target)
{
    return TGRS_READS_TARGET(target) ? 1 : 0;
}
