/*
 * pool.c - MaxPool, AveragePool (band-aware) and GlobalAveragePool (untiled) on NHWC views, float32 and int8.
 *
 * The arithmetic is defined by tigris/ops/pool.py and docs/numerics.md ("Pooling"):
 *   max  int8: zp_out + requant_even(max(q) - zp_in, mult, shift) (halves to even), clamped to [lo, hi]
 *   avg  int8: zp_out + round(sum(q - zp_in) * mult / (count << (31 - shift))), one rounding, halves to even
 *   gap  int8: zp_out + round(sum(q - zp_in) * mult / ((H*W) << (31 - shift))), halves to even (mult/shift: s_in/s_out)
 *   gap  int8, NUMERICS 1 (tflm, TFLM's MEAN): zp_out + requantize_tflm(sum(q - zp_in), mult, shift), 1/(H*W) folded
 *        into (mult, shift) at lowering
 *   gap  int8, TFLM_AVG 1 (NUMERICS 1; TFLM's AVERAGE_POOL_2D over the whole image, equal encodings): the avg tflm
 *        formula below with count = H*W
 *   float: max of taps; sum of taps (row-major tap order) / (float)count; sum / (float)(H*W).
 *   avg  int8, NUMERICS 1 (tflm; input and output encodings equal): s = sum(q) of the raw codes,
 *        clamp(s > 0 ? (s + count/2) / count : (s - count/2) / count, lo, hi) with C's truncating division.
 * Padding taps never contribute; `count` is the taps inside the padded frame (count_include_pad) or the image.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "kview.h"
#include "requant.h"
#include "target.h"
#include "tgrs_op.h"
#include "variants.h"
#include "window.h"

/* Channels accumulated at once in int32 on the stack (no scratch needed, inner loop stays contiguous). */
#define POOL_CHUNK 32

/* acc[c] += x[c] for c < nc: one tap of the int8 average's sums. target.h picks this or the Helium loop (four
 * channels per vector, the tail predicated); the sums are the same exact integers. */
#if TGRS_ISA != TGRS_ISA_MVE
static inline void pool_add_s8_plain(int32_t *acc, const int8_t *x, int32_t nc)
{
    int32_t c;
    for (c = 0; c < nc; ++c) {
        acc[c] += (int32_t)x[c];
    }
}
#else
static inline void pool_add_s8_mve(int32_t *acc, const int8_t *x, int32_t nc)
{
    int32_t c;
    for (c = 0; c < nc; c += 4) {
        const mve_pred16_t p = vctp32q((uint32_t)(nc - c));
        vstrwq_p_s32(acc + c, vaddq_s32(vldrwq_z_s32(acc + c, p), vldrbq_z_s32(x + c, p)), p);
    }
}
#endif

typedef struct pool_geom {
    int32_t kh, kw, sh, sw, dh, dw, pt, pl, pb, pr, count_pad, mult, shift, lo, hi, numerics;
} pool_geom;

/* maxpool and avgpool share one PARAMS tuple in Python, so the indices of either kind describe both. */
static pool_geom pool_load(const int32_t *p)
{
    pool_geom g;
    g.kh = p[TGRS_P_MAXPOOL_KH];
    g.kw = p[TGRS_P_MAXPOOL_KW];
    g.sh = p[TGRS_P_MAXPOOL_SH];
    g.sw = p[TGRS_P_MAXPOOL_SW];
    g.dh = p[TGRS_P_MAXPOOL_DH];
    g.dw = p[TGRS_P_MAXPOOL_DW];
    g.pt = p[TGRS_P_MAXPOOL_PT];
    g.pl = p[TGRS_P_MAXPOOL_PL];
    g.pb = p[TGRS_P_MAXPOOL_PB];
    g.pr = p[TGRS_P_MAXPOOL_PR];
    g.count_pad = p[TGRS_P_MAXPOOL_COUNT_PAD];
    g.mult = p[TGRS_P_MAXPOOL_MULT];
    g.shift = p[TGRS_P_MAXPOOL_SHIFT];
    g.lo = p[TGRS_P_MAXPOOL_LO];
    g.hi = p[TGRS_P_MAXPOOL_HI];
    g.numerics = p[TGRS_P_MAXPOOL_NUMERICS];
    return g;
}

/* Number of taps k in [0, n) with lo <= start + k * step < hi. */
static int32_t taps_inside(int32_t start, int32_t step, int32_t n, int32_t lo, int32_t hi)
{
    int32_t k;
    int32_t c = 0;
    for (k = 0; k < n; ++k) {
        int32_t i = start + k * step;
        c += (i >= lo && i < hi) ? 1 : 0;
    }
    return c;
}

/* The window params are 10 consecutive slots in tgrs_window_load's order (a build error if the header changes). */
typedef char pool_window_params_are_consecutive[(TGRS_P_MAXPOOL_KW == TGRS_P_MAXPOOL_KH + 1 &&
                                                 TGRS_P_MAXPOOL_SH == TGRS_P_MAXPOOL_KH + 2 &&
                                                 TGRS_P_MAXPOOL_SW == TGRS_P_MAXPOOL_KH + 3 &&
                                                 TGRS_P_MAXPOOL_DH == TGRS_P_MAXPOOL_KH + 4 &&
                                                 TGRS_P_MAXPOOL_DW == TGRS_P_MAXPOOL_KH + 5 &&
                                                 TGRS_P_MAXPOOL_PT == TGRS_P_MAXPOOL_KH + 6 &&
                                                 TGRS_P_MAXPOOL_PL == TGRS_P_MAXPOOL_KH + 7 &&
                                                 TGRS_P_MAXPOOL_PB == TGRS_P_MAXPOOL_KH + 8 &&
                                                 TGRS_P_MAXPOOL_PR == TGRS_P_MAXPOOL_KH + 9) ? 1 : -1];

static int pool_check(const tgrs_op_ctx *ctx, const pool_geom *g, int avg, int32_t dt)
{
    tgrs_window w;
    const tgrs_tview *in = ctx->in[0];
    const tgrs_tview *out = ctx->out;
    if (ctx->n_in != 1 || !tgrs_kv_sane(in) || !tgrs_kv_sane(out)) {
        return TGRS_ERR_SHAPE;
    }
    if (in->dims[0] != out->dims[0] || in->dims[3] != out->dims[3]) {
        return TGRS_ERR_SHAPE;
    }
    if (!tgrs_window_load(&w, ctx->p + TGRS_P_MAXPOOL_KH)) { /* extents, strides, dilations >= 1, pads >= 0, <= 4096 */
        return TGRS_ERR_PARAM;
    }
    if (in->dtype != dt || out->dtype != dt) {
        return TGRS_ERR_DTYPE;
    }
    if (dt == TGRS_DT_F32) {
        return TGRS_OK;
    }
    if (g->shift > TGRS_SHIFT_MAX || g->mult < 0 || !tgrs_s8_bounds_ok(g->lo, g->hi, out->zero_point) ||
        in->zero_point < -128 || in->zero_point > 127 ||
        (g->numerics != TGRS_NUMERICS_ONNX && g->numerics != TGRS_NUMERICS_TFLM)) {
        return TGRS_ERR_PARAM;
    }
    if (avg && (g->shift < -31 || (31 - g->shift) + tgrs_bitlen((uint32_t)(g->kh * g->kw)) > 62)) {
        return TGRS_ERR_PARAM;
    }
    return TGRS_OK;
}

/* Checks shared by the dtype variants: parameters, dtypes, and every output row's image rows in the input band
 * before anything is written. */
static int pool_setup(const tgrs_op_ctx *ctx, int avg, int32_t dt)
{
    const tgrs_tview *in = ctx->in[0];
    tgrs_tview *out = ctx->out;
    pool_geom g = pool_load(ctx->p); /* its own copy: the caller's never escapes, so char stores cannot alias it */
    int32_t oh, kh, H;
    int st = pool_check(ctx, &g, avg, dt);
    if (st != TGRS_OK) {
        return st;
    }
    H = in->dims[1];
    for (oh = out->row0; oh < out->row0 + out->rows; ++oh) {
        int32_t first = oh * g.sh - g.pt;
        int32_t a = -1, b = -1;
        for (kh = 0; kh < g.kh; ++kh) {
            int32_t ih = first + kh * g.dh;
            if (ih >= 0 && ih < H) {
                if (a < 0) {
                    a = ih;
                }
                b = ih + 1;
            }
        }
        if (a >= 0 && !tgrs_kv_has_rows(in, a, b)) {
            return TGRS_ERR_TILE;
        }
    }
    return TGRS_OK;
}

static int pool_f32(const tgrs_op_ctx *ctx, int avg)
{
    const tgrs_tview *in = ctx->in[0];
    tgrs_tview *out = ctx->out;
    pool_geom g = pool_load(ctx->p);
    int32_t n, oh, ow, kh, kw;
    int32_t H, W, C, OW;
    int st = pool_setup(ctx, avg, TGRS_DT_F32);
    if (st != TGRS_OK) {
        return st;
    }
    H = in->dims[1];
    W = in->dims[2];
    C = in->dims[3];
    OW = out->dims[2];
    for (n = 0; n < out->dims[0]; ++n) {
        for (oh = out->row0; oh < out->row0 + out->rows; ++oh) {
            int32_t ih0 = oh * g.sh - g.pt;
            int32_t count_h = g.count_pad ? taps_inside(ih0, g.dh, g.kh, -g.pt, H + g.pb)
                                          : taps_inside(ih0, g.dh, g.kh, 0, H);
            for (ow = 0; ow < OW; ++ow) {
                int32_t iw0 = ow * g.sw - g.pl;
                int32_t count_w = g.count_pad ? taps_inside(iw0, g.dw, g.kw, -g.pl, W + g.pr)
                                              : taps_inside(iw0, g.dw, g.kw, 0, W);
                int32_t count = count_h * count_w;
                size_t o = tgrs_kv_row_off(out, n, oh) + (size_t)ow * (size_t)C;
                int32_t c;
                float *y = (float *)out->data + o;
                const float *x = (const float *)in->data;
                for (c = 0; c < C; ++c) {
                    y[c] = avg ? 0.0f : -HUGE_VALF;
                }
                for (kh = 0; kh < g.kh; ++kh) {
                    int32_t ih = ih0 + kh * g.dh;
                    if (ih < 0 || ih >= H) {
                        continue;
                    }
                    for (kw = 0; kw < g.kw; ++kw) {
                        int32_t iw = iw0 + kw * g.dw;
                        const float *xr;
                        if (iw < 0 || iw >= W) {
                            continue;
                        }
                        xr = x + tgrs_kv_row_off(in, n, ih) + (size_t)iw * (size_t)C;
                        if (avg) {
                            for (c = 0; c < C; ++c) {
                                y[c] += xr[c];
                            }
                        } else {
                            for (c = 0; c < C; ++c) {
                                y[c] = (xr[c] > y[c]) ? xr[c] : y[c];
                            }
                        }
                    }
                }
                if (avg) {
                    float den = (float)(count > 0 ? count : 1);
                    for (c = 0; c < C; ++c) {
                        y[c] = y[c] / den;
                    }
                }
            }
        }
    }
    return TGRS_OK;
}

/*
 * One int8 output pixel, every channel: the window's taps from (ih0, iw0), `count` of them counted for the average.
 * One function per kind (an avgpool-only image links no maxpool code: docs/runtime.md "Code size"); each copies the
 * geometry, whose address escaped, so the int8 stores cannot make it reload the fields in the loops.
 */
typedef void (*pool_px_fn)(const tgrs_op_ctx *ctx, const pool_geom *gp, int32_t n, int32_t ih0, int32_t iw0,
                           int32_t count, int8_t *y);

static void pool_px_avg_s8(const tgrs_op_ctx *ctx, const pool_geom *gp, int32_t n, int32_t ih0, int32_t iw0,
                           int32_t count, int8_t *y)
{
    const pool_geom g = *gp;
    const tgrs_tview *in = ctx->in[0];
    const int32_t H = in->dims[1], W = in->dims[2], C = in->dims[3];
    const int32_t zsub = g.numerics == TGRS_NUMERICS_TFLM ? 0 : in->zero_point; /* tflm: raw codes */
    const int32_t zo = ctx->out->zero_point;
    const int32_t cnt = count > 0 ? count : 1;
    const int8_t *x = (const int8_t *)in->data;
    int32_t c0, c, kh, kw, nin;
    for (c0 = 0; c0 < C; c0 += POOL_CHUNK) {
        int32_t acc[POOL_CHUNK];
        const int32_t nc = (C - c0 < POOL_CHUNK) ? C - c0 : POOL_CHUNK;
        for (c = 0; c < nc; ++c) {
            acc[c] = 0;
        }
        nin = 0; /* in-image taps: each adds x - zsub, so the sums of x lose nin * zsub at the end */
        for (kh = 0; kh < g.kh; ++kh) {
            const int32_t ih = ih0 + kh * g.dh;
            for (kw = 0; kw < g.kw; ++kw) {
                const int32_t iw = iw0 + kw * g.dw;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) {
                    continue;
                }
                TGRS_POOL_ADD_S8(acc, x + tgrs_kv_row_off(in, n, ih) + (size_t)iw * (size_t)C + c0, nc);
                ++nin;
            }
        }
        for (c = 0; c < nc; ++c) {
            int64_t q;
            acc[c] -= nin * zsub;
            if (g.numerics == TGRS_NUMERICS_TFLM) {
                /* |acc| <= 128 * 4096^2 cannot overflow; halves away from zero, as TFLM; no zero point */
                q = acc[c] > 0 ? (acc[c] + cnt / 2) / cnt : (acc[c] - cnt / 2) / cnt;
            } else if (g.mult == (1 << 30) && g.shift == 1) {
                /* equal scales: acc * 2^30 / (count * 2^30) is exactly acc / count, in 32 bits */
                q = (int64_t)tgrs_div_round_half_even32(acc[c], cnt) + zo;
            } else {
                q = tgrs_div_round_half_even((int64_t)acc[c] * (int64_t)g.mult,
                                             (int64_t)cnt * ((int64_t)1 << (31 - g.shift))) + zo;
            }
            y[c0 + c] = (int8_t)tgrs_clamp64(q, g.lo, g.hi);
        }
    }
}

static void pool_px_max_s8(const tgrs_op_ctx *ctx, const pool_geom *gp, int32_t n, int32_t ih0, int32_t iw0,
                           int32_t count, int8_t *y)
{
    const pool_geom g = *gp;
    const tgrs_tview *in = ctx->in[0];
    const int32_t H = in->dims[1], W = in->dims[2], C = in->dims[3];
    const int32_t zi = in->zero_point, zo = ctx->out->zero_point;
    const int8_t *x = (const int8_t *)in->data;
    int32_t c0, c, kh, kw;
    (void)count;
    for (c0 = 0; c0 < C; c0 += POOL_CHUNK) {
        int32_t acc[POOL_CHUNK];
        const int32_t nc = (C - c0 < POOL_CHUNK) ? C - c0 : POOL_CHUNK;
        for (c = 0; c < nc; ++c) {
            acc[c] = -128;
        }
        for (kh = 0; kh < g.kh; ++kh) {
            const int32_t ih = ih0 + kh * g.dh;
            for (kw = 0; kw < g.kw; ++kw) {
                const int32_t iw = iw0 + kw * g.dw;
                const int8_t *xr;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) {
                    continue;
                }
                xr = x + tgrs_kv_row_off(in, n, ih) + (size_t)iw * (size_t)C + c0;
                for (c = 0; c < nc; ++c) {
                    acc[c] = ((int32_t)xr[c] > acc[c]) ? (int32_t)xr[c] : acc[c];
                }
            }
        }
        for (c = 0; c < nc; ++c) {
            y[c0 + c] = tgrs_requant_even_s8(acc[c] - zi, g.mult, g.shift, zo, g.lo, g.hi);
        }
    }
}

static int pool_s8(const tgrs_op_ctx *ctx, int avg, pool_px_fn px)
{
    const tgrs_tview *in = ctx->in[0];
    tgrs_tview *out = ctx->out;
    pool_geom g = pool_load(ctx->p);
    int32_t n, oh, ow;
    int32_t H, W, C, OW;
    int st = pool_setup(ctx, avg, TGRS_DT_S8);
    if (st != TGRS_OK) {
        return st;
    }
    H = in->dims[1];
    W = in->dims[2];
    C = in->dims[3];
    OW = out->dims[2];
    for (n = 0; n < out->dims[0]; ++n) {
        for (oh = out->row0; oh < out->row0 + out->rows; ++oh) {
            int32_t ih0 = oh * g.sh - g.pt;
            int32_t count_h = g.count_pad ? taps_inside(ih0, g.dh, g.kh, -g.pt, H + g.pb)
                                          : taps_inside(ih0, g.dh, g.kh, 0, H);
            for (ow = 0; ow < OW; ++ow) {
                int32_t iw0 = ow * g.sw - g.pl;
                int32_t count_w = g.count_pad ? taps_inside(iw0, g.dw, g.kw, -g.pl, W + g.pr)
                                              : taps_inside(iw0, g.dw, g.kw, 0, W);
                px(ctx, &g, n, ih0, iw0, count_h * count_w,
                   (int8_t *)out->data + tgrs_kv_row_off(out, n, oh) + (size_t)ow * (size_t)C);
            }
        }
    }
    return TGRS_OK;
}

/* The dtype variants (registry.c picks one per op). */
int tgrs_maxpool_f32(const tgrs_op_ctx *ctx)
{
    return pool_f32(ctx, 0);
}

int tgrs_maxpool_s8(const tgrs_op_ctx *ctx)
{
    return pool_s8(ctx, 0, pool_px_max_s8);
}

int tgrs_avgpool_f32(const tgrs_op_ctx *ctx)
{
    return pool_f32(ctx, 1);
}

int tgrs_avgpool_s8(const tgrs_op_ctx *ctx)
{
    return pool_s8(ctx, 1, pool_px_avg_s8);
}

/* Shape, band and dtype checks shared by the gap variants. */
static int gap_check(const tgrs_op_ctx *ctx, int32_t dt)
{
    const tgrs_tview *in = ctx->in[0];
    const tgrs_tview *out = ctx->out;
    if (ctx->n_in != 1 || !tgrs_kv_sane(in) || !tgrs_kv_sane(out)) {
        return TGRS_ERR_SHAPE;
    }
    if (in->dims[0] != out->dims[0] || in->dims[3] != out->dims[3] || out->dims[1] != 1 || out->dims[2] != 1) {
        return TGRS_ERR_SHAPE;
    }
    if (!tgrs_kv_whole(in) || !tgrs_kv_whole(out)) {
        return TGRS_ERR_TILE;
    }
    return (in->dtype != dt || out->dtype != dt) ? TGRS_ERR_DTYPE : TGRS_OK;
}

int tgrs_gap_f32(const tgrs_op_ctx *ctx)
{
    const tgrs_tview *in = ctx->in[0];
    tgrs_tview *out = ctx->out;
    int32_t n, c;
    size_t i, hw, C;
    int st = gap_check(ctx, TGRS_DT_F32);
    if (st != TGRS_OK) {
        return st;
    }
    hw = (size_t)in->dims[1] * (size_t)in->dims[2];
    C = (size_t)in->dims[3];
    for (n = 0; n < in->dims[0]; ++n) {
        const float *x = (const float *)in->data + (size_t)n * hw * C;
        float *y = (float *)out->data + (size_t)n * C;
        for (c = 0; c < (int32_t)C; ++c) {
            y[c] = 0.0f;
        }
        for (i = 0; i < hw; ++i) {
            for (c = 0; c < (int32_t)C; ++c) {
                y[c] += x[i * C + (size_t)c];
            }
        }
        for (c = 0; c < (int32_t)C; ++c) {
            y[c] = y[c] / (float)hw;
        }
    }
    return TGRS_OK;
}

/* gap_check and, for int8, the requantization parameters (hw = H * W of the input). */
static int gap_s8_check(const tgrs_op_ctx *ctx)
{
    int32_t shift = ctx->p[TGRS_P_GAP_SHIFT];
    int32_t nm = ctx->p[TGRS_P_GAP_NUMERICS];
    size_t hw;
    int st = gap_check(ctx, TGRS_DT_S8);
    if (st != TGRS_OK) {
        return st;
    }
    hw = (size_t)ctx->in[0]->dims[1] * (size_t)ctx->in[0]->dims[2];
    if (shift > TGRS_SHIFT_MAX || ctx->p[TGRS_P_GAP_MULT] < 0 ||
        !tgrs_s8_bounds_ok(ctx->p[TGRS_P_GAP_LO], ctx->p[TGRS_P_GAP_HI], ctx->out->zero_point) || hw > (1u << 23) ||
        (nm != TGRS_NUMERICS_ONNX && nm != TGRS_NUMERICS_TFLM) ||
        (nm == TGRS_NUMERICS_ONNX && ((int64_t)31 - shift) + tgrs_bitlen((uint32_t)hw) > 62) ||
        !tgrs_gap_tflm_avg_ok(ctx)) {
        return TGRS_ERR_PARAM;
    }
    return TGRS_OK;
}

/* TFLM's two int8 averages of one channel's raw code sum: TFLM_AVG 1 is AVERAGE_POOL_2D over the whole image, else
   MEAN (1/(H*W) already in mult/shift). Only tgrs_gap_s8 passes it, so an image whose plan has no TFLM GAP (the
   _onnx entry) does not link it nor the TFLM requantization. */
typedef int8_t (*gap_tflm_fn)(const tgrs_op_ctx *ctx, int32_t acc, int32_t hw, int32_t zp_in);

static int8_t gap_tflm(const tgrs_op_ctx *ctx, int32_t acc, int32_t hw, int32_t zp_in)
{
    int32_t lo = ctx->p[TGRS_P_GAP_LO];
    int32_t hi = ctx->p[TGRS_P_GAP_HI];
    if (ctx->p[TGRS_P_GAP_TFLM_AVG] != 0) { /* raw codes, halves away from zero */
        return tgrs_gap_tflm_avg(acc, hw, lo, hi);
    }
    return tgrs_requant_nm_s8(acc - hw * zp_in, ctx->p[TGRS_P_GAP_MULT], ctx->p[TGRS_P_GAP_SHIFT],
                              ctx->out->zero_point, lo, hi, TGRS_RQ_TFLM);
}

static int gap_s8_run(const tgrs_op_ctx *ctx, gap_tflm_fn tflm)
{
    const tgrs_tview *in = ctx->in[0];
    tgrs_tview *out = ctx->out;
    int32_t mult = ctx->p[TGRS_P_GAP_MULT];
    int32_t shift = ctx->p[TGRS_P_GAP_SHIFT];
    int32_t lo = ctx->p[TGRS_P_GAP_LO];
    int32_t hi = ctx->p[TGRS_P_GAP_HI];
    int tflm_op = ctx->p[TGRS_P_GAP_NUMERICS] == TGRS_NUMERICS_TFLM;
    int32_t n, c;
    size_t i, hw, C;
    int st = gap_s8_check(ctx);
    if (st != TGRS_OK) {
        return st;
    }
    if (tflm_op && tflm == NULL) {
        return TGRS_ERR_UNSUPPORTED; /* the _onnx entry: built without the TFLM path */
    }
    hw = (size_t)in->dims[1] * (size_t)in->dims[2];
    C = (size_t)in->dims[3];
    for (n = 0; n < in->dims[0]; ++n) {
        const int8_t *x = (const int8_t *)in->data + (size_t)n * hw * C;
        int8_t *y = (int8_t *)out->data + (size_t)n * C;
        for (c = 0; c < (int32_t)C; ++c) {
            /* Column sum per channel: strided, but GAP runs once per network and reads each byte once. */
            int32_t acc = 0;
            for (i = 0; i < hw; ++i) {
                acc += (int32_t)x[i * C + (size_t)c];
            }
            if (tflm_op) {
                y[c] = tflm(ctx, acc, (int32_t)hw, in->zero_point);
                continue;
            }
            acc -= (int32_t)hw * in->zero_point;
            {
                int64_t q = tgrs_div_round_half_even((int64_t)acc * (int64_t)mult,
                                                     (int64_t)hw * ((int64_t)1 << (31 - shift))) +
                            out->zero_point;
                y[c] = (int8_t)(q < lo ? lo : (q > hi ? hi : q));
            }
        }
    }
    return TGRS_OK;
}

int tgrs_gap_s8(const tgrs_op_ctx *ctx)
{
    return gap_s8_run(ctx, gap_tflm);
}

/* Without the TFLM numerics: such an op is TGRS_ERR_UNSUPPORTED (tgrs_check_gap_onnx refuses it at load). */
int tgrs_gap_s8_onnx(const tgrs_op_ctx *ctx)
{
    return gap_s8_run(ctx, NULL);
}

/* The kinds' checks (check.c calls them at load, once per op and tile): what the dtype variant registry.c picks
 * would check before computing, in the same order. */
static int32_t pool_dtype_of(const tgrs_op_ctx *ctx)
{
    return ctx->out->dtype == TGRS_DT_F32 ? TGRS_DT_F32 : TGRS_DT_S8;
}

int tgrs_check_maxpool(const tgrs_op_ctx *ctx)
{
    return pool_setup(ctx, 0, pool_dtype_of(ctx));
}

int tgrs_check_avgpool(const tgrs_op_ctx *ctx)
{
    return pool_setup(ctx, 1, pool_dtype_of(ctx));
}

int tgrs_check_gap(const tgrs_op_ctx *ctx)
{
    if (TGRS_GAP_ACCUM && ctx->phase != 0u) {
        return tgrs_gap_accum_check(ctx); /* the GAP of an ACCUM unit (gap_accum.c) */
    }
    return pool_dtype_of(ctx) == TGRS_DT_F32 ? gap_check(ctx, TGRS_DT_F32) : gap_s8_check(ctx);
}

/* The check of tgrs_kernel_gap_onnx: an int8 op with TFLM numerics is TGRS_ERR_UNSUPPORTED. */
int tgrs_check_gap_onnx(const tgrs_op_ctx *ctx)
{
    int st = tgrs_check_gap(ctx);
    if (st == TGRS_OK && pool_dtype_of(ctx) == TGRS_DT_S8 && ctx->p[TGRS_P_GAP_NUMERICS] == TGRS_NUMERICS_TFLM) {
        return TGRS_ERR_UNSUPPORTED;
    }
    return st;
}
