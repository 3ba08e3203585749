/*
 * quant.c - QuantizeLinear (float32 -> int8/uint8) and DequantizeLinear (int8/uint8 -> float32), band-aware.
 *
 * Defined by tigris/ops/quant.py and docs/numerics.md ("Quantize, Dequantize"):
 *   quantize  : q = clamp(rne(x / SCALE) + ZP, QMIN, QMAX)   float32 division, round half to even
 *   dequantize: x = (float)(q - ZP) * SCALE                   float32
 * rne is written out here (no libm) so the host and the freestanding build round identically.
 * A per-tensor dequantize whose output the plan grew over its input (the same first byte) runs backwards.
 * PER_ELEM = 1 (a per-axis or blocked boundary QuantizeLinear/DequantizeLinear): SCALE and ZP are instead the
 * float32 and int32 constants SCALE_E and ZP_E, one per element of the full tensor in its physical order.
 */
#include <stddef.h>
#include <stdint.h>

#include "kview.h"
#include "requant.h"
#include "target.h"
#include "tgrs_op.h"

#if !TGRS_HAVE_AVX2
/* No vector loop: the scalar loop quantizes every element (target.h TGRS_QUANT_S8). */
static size_t quant_s8_none(const float *x, void *y, size_t len, float scale, int32_t zp, int32_t lo, int32_t hi, int u8)
{
    (void)x;
    (void)y;
    (void)len;
    (void)scale;
    (void)zp;
    (void)lo;
    (void)hi;
    (void)u8;
    return 0;
}
#endif

#include "quant_avx2.h" /* quant_s8_avx2 */

static int elementwise_io(const tgrs_op_ctx *ctx, int32_t in_dt, int32_t out_dt)
{
    const tgrs_tview *in = ctx->in[0];
    const tgrs_tview *out = ctx->out;
    if (ctx->n_in != 1 || !tgrs_kv_sane(in) || !tgrs_kv_sane(out) || !tgrs_kv_same_dims(in, out)) {
        return TGRS_ERR_SHAPE;
    }
    if (in->dtype != in_dt || out->dtype != out_dt) {
        return TGRS_ERR_DTYPE;
    }
    if (!tgrs_kv_has_rows(in, out->row0, out->row0 + out->rows)) {
        return TGRS_ERR_TILE;
    }
    return TGRS_OK;
}

/* Per-element scale and zero point (PER_ELEM): one float32 and one int32 per element of the full tensor; when the
 * constants are visible every scale is positive and every zero point within [lo, hi]. */
static int per_elem_ok(const tgrs_op_ctx *ctx, int scale_slot, int zp_slot, int32_t lo, int32_t hi)
{
    const tgrs_tview *out = ctx->out;
    const size_t n = (size_t)out->dims[0] * (size_t)out->dims[1] * tgrs_kv_row_elems(out);
    size_t i;
    if (ctx->clen[scale_slot] != n * 4u || ctx->clen[zp_slot] != n * 4u) {
        return TGRS_ERR_SHAPE;
    }
    if (ctx->c[scale_slot] != NULL && ctx->c[zp_slot] != NULL) {
        const float *s = (const float *)ctx->c[scale_slot];
        const int32_t *z = (const int32_t *)ctx->c[zp_slot];
        for (i = 0; i < n; ++i) {
            if (!(s[i] > 0.0f) || z[i] < lo || z[i] > hi) {
                return TGRS_ERR_PARAM;
            }
        }
    }
    return TGRS_OK;
}

/* The kinds' checks: the kernels and the loader (check.c, once per op and tile) call them. */
int tgrs_check_quantize(const tgrs_op_ctx *ctx)
{
    float scale = tgrs_p_f32(ctx, TGRS_P_QUANTIZE_SCALE);
    int32_t zp = ctx->p[TGRS_P_QUANTIZE_ZP];
    int32_t lo = ctx->p[TGRS_P_QUANTIZE_QMIN];
    int32_t hi = ctx->p[TGRS_P_QUANTIZE_QMAX];
    int u8 = ctx->p[TGRS_P_QUANTIZE_U8] != 0;
    int st = elementwise_io(ctx, TGRS_DT_F32, u8 ? TGRS_DT_U8 : TGRS_DT_S8);
    if (st != TGRS_OK) {
        return st;
    }
    if (lo > hi || (u8 ? (lo < 0 || hi > 255) : (lo < -128 || hi > 127))) {
        return TGRS_ERR_PARAM;
    }
    if (ctx->p[TGRS_P_QUANTIZE_PER_ELEM] != 0) {
        return ctx->p[TGRS_P_QUANTIZE_PER_ELEM] == 1
                   ? per_elem_ok(ctx, TGRS_C_QUANTIZE_SCALE_E, TGRS_C_QUANTIZE_ZP_E, lo, hi)
                   : TGRS_ERR_PARAM;
    }
    if (!(scale > 0.0f) || zp < lo || zp > hi) {
        return TGRS_ERR_PARAM;
    }
    return TGRS_OK;
}

int tgrs_check_dequantize(const tgrs_op_ctx *ctx)
{
    int32_t zp = ctx->p[TGRS_P_DEQUANTIZE_ZP];
    int u8 = ctx->p[TGRS_P_DEQUANTIZE_U8] != 0;
    int st = elementwise_io(ctx, u8 ? TGRS_DT_U8 : TGRS_DT_S8, TGRS_DT_F32);
    if (st != TGRS_OK) {
        return st;
    }
    if (ctx->p[TGRS_P_DEQUANTIZE_PER_ELEM] != 0) {
        return ctx->p[TGRS_P_DEQUANTIZE_PER_ELEM] == 1
                   ? per_elem_ok(ctx, TGRS_C_DEQUANTIZE_SCALE_E, TGRS_C_DEQUANTIZE_ZP_E, u8 ? 0 : -128, u8 ? 255 : 127)
                   : TGRS_ERR_PARAM;
    }
    return (u8 ? (zp < 0 || zp > 255) : (zp < -128 || zp > 127)) ? TGRS_ERR_PARAM : TGRS_OK;
}

int tgrs_kernel_quantize(const tgrs_op_ctx *ctx)
{
    const tgrs_tview *in = ctx->in[0];
    tgrs_tview *out = ctx->out;
    float scale = tgrs_p_f32(ctx, TGRS_P_QUANTIZE_SCALE);
    int32_t zp = ctx->p[TGRS_P_QUANTIZE_ZP];
    int32_t lo = ctx->p[TGRS_P_QUANTIZE_QMIN];
    int32_t hi = ctx->p[TGRS_P_QUANTIZE_QMAX];
    int u8 = ctx->p[TGRS_P_QUANTIZE_U8] != 0;
    const int pe = ctx->p[TGRS_P_QUANTIZE_PER_ELEM] != 0;
    const float *pe_s = pe ? (const float *)ctx->c[TGRS_C_QUANTIZE_SCALE_E] : NULL;
    const int32_t *pe_z = pe ? (const int32_t *)ctx->c[TGRS_C_QUANTIZE_ZP_E] : NULL;
    int32_t n;
    size_t i, len;
    int st = tgrs_check_quantize(ctx);
    if (st != TGRS_OK) {
        return st;
    }
    if (pe && (pe_s == NULL || pe_z == NULL)) {
        return TGRS_ERR_SHAPE;
    }
    len = (size_t)out->rows * tgrs_kv_row_elems(out);
    for (n = 0; n < out->dims[0]; ++n) {
        const float *x = (const float *)in->data + tgrs_kv_row_off(in, n, out->row0);
        size_t o = tgrs_kv_row_off(out, n, out->row0);
        /* element 0 of this band's batch row in the full tensor: the per-element constants' index */
        const size_t e0 = ((size_t)n * (size_t)out->dims[1] + (size_t)out->row0) * tgrs_kv_row_elems(out);
        /* per-tensor: the target's vector loop first (target.h), the rest here */
        for (i = pe_s == NULL ? TGRS_QUANT_S8(x, (int8_t *)out->data + o, len, scale, zp, lo, hi, u8) : 0; i < len;
             ++i) {
            float v;
            int32_t q;
            if (pe_s != NULL) {
                scale = pe_s[e0 + i];
                zp = pe_z[e0 + i];
            }
            v = x[i] / scale;
            if (v != v) { /* NaN: no meaningful code; the zero point is the defined answer */
                q = zp;
            } else {
                v = v > 65536.0f ? 65536.0f : (v < -65536.0f ? -65536.0f : v);
                q = tgrs_rne_small(v) + zp;
                q = q < lo ? lo : (q > hi ? hi : q);
            }
            if (u8) {
                ((uint8_t *)out->data)[o + i] = (uint8_t)q;
            } else {
                ((int8_t *)out->data)[o + i] = (int8_t)q;
            }
        }
    }
    return TGRS_OK;
}

int tgrs_kernel_dequantize(const tgrs_op_ctx *ctx)
{
    const tgrs_tview *in = ctx->in[0];
    tgrs_tview *out = ctx->out;
    float scale = tgrs_p_f32(ctx, TGRS_P_DEQUANTIZE_SCALE);
    int32_t zp = ctx->p[TGRS_P_DEQUANTIZE_ZP];
    int u8 = ctx->p[TGRS_P_DEQUANTIZE_U8] != 0;
    const int pe = ctx->p[TGRS_P_DEQUANTIZE_PER_ELEM] != 0;
    int32_t n;
    size_t i, len;
    int st = tgrs_check_dequantize(ctx);
    if (st != TGRS_OK) {
        return st;
    }
    if (pe && (ctx->c[TGRS_C_DEQUANTIZE_SCALE_E] == NULL || ctx->c[TGRS_C_DEQUANTIZE_ZP_E] == NULL)) {
        return TGRS_ERR_SHAPE;
    }
    len = (size_t)out->rows * tgrs_kv_row_elems(out);
    for (n = 0; n < out->dims[0]; ++n) {
        size_t ioff = tgrs_kv_row_off(in, n, out->row0);
        float *y = (float *)out->data + tgrs_kv_row_off(out, n, out->row0);
        if (pe) {
            const size_t e0 = ((size_t)n * (size_t)out->dims[1] + (size_t)out->row0) * tgrs_kv_row_elems(out);
            const float *s = (const float *)ctx->c[TGRS_C_DEQUANTIZE_SCALE_E] + e0;
            const int32_t *z = (const int32_t *)ctx->c[TGRS_C_DEQUANTIZE_ZP_E] + e0;
            for (i = 0; i < len; ++i) {
                const int32_t q = u8 ? (int32_t)((const uint8_t *)in->data)[ioff + i]
                                     : (int32_t)((const int8_t *)in->data)[ioff + i];
                y[i] = (float)(q - z[i]) * s[i];
            }
        } else if ((const void *)((const uint8_t *)in->data + ioff) == (const void *)y) {
            /* the plan grew the output over its input (one image): from the last element down, element i's bytes
               [4i, 4i + 4) lie above every input byte still to be read */
            const uint8_t *x = (const uint8_t *)in->data + ioff;
            if (out->dims[0] != 1) {
                return TGRS_ERR_TILE;
            }
            for (i = len; i-- > 0u;) {
                const int32_t q = u8 ? (int32_t)x[i] : (int32_t)(int8_t)x[i];
                y[i] = (float)(q - zp) * scale;
            }
        } else if (u8) {
            const uint8_t *x = (const uint8_t *)in->data + ioff;
            for (i = 0; i < len; ++i) {
                y[i] = (float)((int32_t)x[i] - zp) * scale;
            }
        } else {
            const int8_t *x = (const int8_t *)in->data + ioff;
            for (i = 0; i < len; ++i) {
                y[i] = (float)((int32_t)x[i] - zp) * scale;
            }
        }
    }
    return TGRS_OK;
}
