/*
 * dwconv.c - the dwconv kind: depthwise convolution with depth multiplier m, float32 and int8.
 *
 * Layouts (tigris/ops/dwconv.py is the other half of this contract):
 *   input  NHWC band view [N, rows, W, C], dtype F32 or S8
 *   output NHWC band view [N, rows, OW, C*m], same dtype; exactly out->rows rows from out->row0
 *   weight [KH][KW][C*m]: output channel oc reads input channel oc / m
 *   bias   [C*m] float32, or int32 with zp_in * sum_taps(w) already subtracted (int8)
 *   mult, shift [C*m] int32 Q0.31 requantization (int8 only)
 *
 * Method: per output pixel, channels in blocks of DW_CB accumulate in a small local array over the taps; with m = 1
 * the block loop has a constant trip count so compilers keep it in vector registers. Interior pixels skip the bounds
 * tests. For int8, a tap outside the image stands for the input value zp_in (real 0), so it adds zp_in * w: the bias
 * fold subtracted that for every tap. No scratch, except the temporary of a dwconv run in place (dw_pieces).
 */
#include <string.h>

#include "kcheck.h"
#include "requant.h"
#include "target.h"
#include "tgrs_op.h"
#include "variants.h"
#include "window.h"

#define DW_CB 16 /* channels per accumulator block */
#define DW_MAX_TAPS 64 /* interior fast path for windows of up to 64 taps (8x8); larger ones go the generic way */

typedef struct dw_geom {
    tgrs_window w;
    int32_t n, h, wd, c;      /* input dims */
    int32_t ow, oc, m;        /* output width, channels, depth multiplier */
    int32_t in_row0, in_rows, out_row0, out_rows;
} dw_geom;

/* The window params are 10 consecutive slots in tgrs_window_load's order (a build error if the header changes). */
typedef char dw_window_params_are_consecutive[(TGRS_P_DWCONV_KW == TGRS_P_DWCONV_KH + 1 &&
                                               TGRS_P_DWCONV_SH == TGRS_P_DWCONV_KH + 2 &&
                                               TGRS_P_DWCONV_SW == TGRS_P_DWCONV_KH + 3 &&
                                               TGRS_P_DWCONV_DH == TGRS_P_DWCONV_KH + 4 &&
                                               TGRS_P_DWCONV_DW == TGRS_P_DWCONV_KH + 5 &&
                                               TGRS_P_DWCONV_PT == TGRS_P_DWCONV_KH + 6 &&
                                               TGRS_P_DWCONV_PL == TGRS_P_DWCONV_KH + 7 &&
                                               TGRS_P_DWCONV_PB == TGRS_P_DWCONV_KH + 8 &&
                                               TGRS_P_DWCONV_PR == TGRS_P_DWCONV_KH + 9) ? 1 : -1];

static int dw_prepare(const tgrs_op_ctx *ctx, dw_geom *dg, size_t elem)
{
    const int32_t *p = ctx->p;
    const tgrs_tview *in = ctx->in[0];
    const tgrs_tview *out = ctx->out;
    const int check = (ctx->proven & TGRS_PROVEN_SHAPE) == 0u; /* else the loader ran these checks on this context: derive only */
    int st;
    if (check) {
        if (!tgrs_window_load(&dg->w, p + TGRS_P_DWCONV_KH) || p[TGRS_P_DWCONV_DEPTH_MULT] < 1) {
            return TGRS_ERR_PARAM;
        }
        st = tgrs_window_check(&dg->w, in, out);
        if (st != TGRS_OK) {
            return st;
        }
    } else {
        tgrs_window_get(&dg->w, p + TGRS_P_DWCONV_KH);
    }
    dg->n = in->dims[0];
    dg->h = in->dims[1];
    dg->wd = in->dims[2];
    dg->c = in->dims[3];
    dg->ow = out->dims[2];
    dg->oc = out->dims[3];
    dg->m = p[TGRS_P_DWCONV_DEPTH_MULT];
    if (check && (int64_t)dg->c * dg->m != dg->oc) {
        return TGRS_ERR_SHAPE;
    }
    /* lengths only (both are > 0, so a matching length means a present constant) */
    if (check &&
        (ctx->clen[TGRS_C_DWCONV_WEIGHT] != (uint64_t)dg->w.kh * (uint64_t)dg->w.kw * (uint64_t)dg->oc * elem ||
         ctx->clen[TGRS_C_DWCONV_BIAS] != (uint64_t)dg->oc * 4u * (elem == 1u && p[TGRS_P_DWCONV_WZP] == 1 ? 2u : 1u))) {
        return TGRS_ERR_SHAPE;
    }
    dg->in_row0 = in->row0;
    dg->in_rows = in->rows;
    dg->out_row0 = out->row0;
    dg->out_rows = out->rows;
    return TGRS_OK;
}

/* Whether every tap of output pixel (oh, ow) lies inside the image. */
static int dw_interior(const dw_geom *dg, int32_t oh, int32_t ow)
{
    const tgrs_window *w = &dg->w;
    const int64_t ih0 = (int64_t)oh * w->sh - w->pt, iw0 = (int64_t)ow * w->sw - w->pl;
    return ih0 >= 0 && ih0 + (int64_t)(w->kh - 1) * w->dh < dg->h && iw0 >= 0 &&
           iw0 + (int64_t)(w->kw - 1) * w->dw < dg->wd;
}

/*
 * Offsets (elements) of every tap from tap (0, 0), for interior pixels whose taps all lie in the image: the fast path
 * then walks a table instead of recomputing and bounds-testing each tap. Returns 0 (no fast path) when the window has
 * more than DW_MAX_TAPS taps. Taps are in the same (i, j) order as the generic path, so both sum identically.
 */
static int32_t dw_tap_offsets(const dw_geom *dg, int64_t off[DW_MAX_TAPS])
{
    const tgrs_window *w = &dg->w;
    int32_t i, j, t = 0;
    if ((int64_t)w->kh * w->kw > DW_MAX_TAPS) {
        return 0;
    }
    for (i = 0; i < w->kh; ++i) {
        for (j = 0; j < w->kw; ++j) {
            off[t++] = ((int64_t)i * w->dh * dg->wd + (int64_t)j * w->dw) * dg->c;
        }
    }
    return t;
}

#if TGRS_ISA == TGRS_ISA_DSP || TGRS_ISA == TGRS_ISA_MVE || TGRS_FISA == TGRS_FISA_FPU || \
    TGRS_FISA == TGRS_FISA_MVEF /* only the Arm fused paths and the Arm float blocks use it (clang warns otherwise) */
/* The output columns [*lo, *hi) whose taps all lie inside the image horizontally (dw_interior's column half, once
 * per op for the fused paths). */
static inline void dw_inner_cols(const dw_geom *dg, int32_t *lo, int32_t *hi)
{
    const tgrs_window *w = &dg->w;
    int32_t a = 0, b = dg->ow;
    while (a < b && (int64_t)a * w->sw - w->pl < 0) {
        ++a;
    }
    while (b > a && (int64_t)(b - 1) * w->sw - w->pl + (int64_t)(w->kw - 1) * w->dw >= dg->wd) {
        --b;
    }
    *lo = a;
    *hi = b;
}
#endif

/* Offset (elements) of tap (0, 0) of output pixel (oh, ow) in a batch image of the band; the pixel is interior. */
static int64_t dw_base(const dw_geom *dg, int32_t oh, int32_t ow)
{
    const tgrs_window *w = &dg->w;
    return ((int64_t)(oh * w->sh - w->pt - dg->in_row0) * dg->wd + ((int64_t)ow * w->sw - w->pl)) * dg->c;
}

/* ---------------------------------------------------------------------------------------------------- float32 -- */

/* One pixel, one channel block, any pixel: taps outside the image are skipped (padding is real 0). */
static void dw_block_f32(const dw_geom *dg, const float *img, const float *wt, int32_t oh, int32_t ow, int32_t c0,
                         int32_t nc, float acc[DW_CB])
{
    const tgrs_window *w = &dg->w;
    int32_t i, j, cc;
    for (cc = 0; cc < DW_CB; ++cc) {
        acc[cc] = 0.0f;
    }
    for (i = 0; i < w->kh; ++i) {
        const int32_t ih = oh * w->sh - w->pt + i * w->dh;
        if (ih < 0 || ih >= dg->h) {
            continue;
        }
        for (j = 0; j < w->kw; ++j) {
            const int32_t iw = ow * w->sw - w->pl + j * w->dw;
            const float *x;
            const float *wk = wt + ((int64_t)i * w->kw + j) * dg->oc + c0;
            if (iw < 0 || iw >= dg->wd) {
                continue;
            }
            x = img + ((int64_t)(ih - dg->in_row0) * dg->wd + iw) * dg->c;
            if (dg->m == 1 && nc == DW_CB) {
                x += c0;
                for (cc = 0; cc < DW_CB; ++cc) {
                    acc[cc] += x[cc] * wk[cc];
                }
            } else {
                for (cc = 0; cc < nc; ++cc) {
                    acc[cc] += x[(c0 + cc) / dg->m] * wk[cc];
                }
            }
        }
    }
}

/*
 * Two horizontally adjacent interior pixels, one full channel block, m = 1: each weight vector is loaded once for
 * both. The taps are summed in the same order as dw_block_f32, so a pixel's result does not depend on pairing.
 */
static void dw_pair_f32(const float *base, int64_t step, const float *wk0, int32_t oc, const int64_t *toff,
                        int32_t ntaps, float acc0[DW_CB], float acc1[DW_CB])
{
    int32_t t, cc;
    for (cc = 0; cc < DW_CB; ++cc) {
        acc0[cc] = 0.0f;
        acc1[cc] = 0.0f;
    }
    for (t = 0; t < ntaps; ++t) {
        const float *x0 = base + toff[t];
        const float *x1 = x0 + step;
        const float *wk = wk0 + (int64_t)t * oc;
        for (cc = 0; cc < DW_CB; ++cc) {
            acc0[cc] += x0[cc] * wk[cc];
            acc1[cc] += x1[cc] * wk[cc];
        }
    }
}

/* dw_block_f32 for m = 1 and a last block of nc < DW_CB channels (a channel group of 72 ends in 8): the same sums
   in the same order, without an index division per element. Apart from dw_block_f32 so its loops stay as they are. */
static void dw_block_tail_f32(const dw_geom *dg, const float *img, const float *wt, int32_t oh, int32_t ow,
                              int32_t c0, int32_t nc, float acc[DW_CB])
{
    const tgrs_window *w = &dg->w;
    int32_t i, j, cc;
    for (cc = 0; cc < nc; ++cc) {
        acc[cc] = 0.0f;
    }
    for (i = 0; i < w->kh; ++i) {
        const int32_t ih = oh * w->sh - w->pt + i * w->dh;
        if (ih < 0 || ih >= dg->h) {
            continue;
        }
        for (j = 0; j < w->kw; ++j) {
            const int32_t iw = ow * w->sw - w->pl + j * w->dw;
            const float *x = img + ((int64_t)(ih - dg->in_row0) * dg->wd + iw) * dg->c + c0;
            const float *wk = wt + ((int64_t)i * w->kw + j) * dg->oc + c0;
            if (iw < 0 || iw >= dg->wd) {
                continue;
            }
            for (cc = 0; cc < nc; ++cc) {
                acc[cc] += x[cc] * wk[cc];
            }
        }
    }
}

/* dw_pair_f32 for a last block of nc < DW_CB channels: the same sums, in the same order. */
static void dw_pair_tail_f32(const float *base, int64_t step, const float *wk0, int32_t oc, const int64_t *toff,
                             int32_t ntaps, int32_t nc, float acc0[DW_CB], float acc1[DW_CB])
{
    int32_t t, cc;
    for (cc = 0; cc < nc; ++cc) {
        acc0[cc] = 0.0f;
        acc1[cc] = 0.0f;
    }
    for (t = 0; t < ntaps; ++t) {
        const float *x0 = base + toff[t];
        const float *x1 = x0 + step;
        const float *wk = wk0 + (int64_t)t * oc;
        for (cc = 0; cc < nc; ++cc) {
            acc0[cc] += x0[cc] * wk[cc];
            acc1[cc] += x1[cc] * wk[cc];
        }
    }
}

/* The last channel block (nc < DW_CB, m = 1) of one pixel, or of a pair of interior pixels (pair), into acc0 (and
   acc1): out of line, so the full blocks' loops compile as they would without it. */
TGRS_NOINLINE static void dw_tail_f32(const dw_geom *dg, const float *img, const float *wt, const int64_t *toff,
                                      int32_t ntaps, int pair, int32_t oh, int32_t ow, int32_t c0, int32_t nc,
                                      float acc0[DW_CB], float acc1[DW_CB])
{
    if (pair) {
        dw_pair_tail_f32(img + dw_base(dg, oh, ow) + c0, (int64_t)dg->w.sw * dg->c, wt + c0, dg->oc, toff, ntaps, nc,
                         acc0, acc1);
    } else {
        dw_block_tail_f32(dg, img, wt, oh, ow, c0, nc, acc0);
    }
}

static void dw_store_f32(float *o, const float *acc, const float *bias, int32_t nc, float lo, float hi)
{
    int32_t cc;
    for (cc = 0; cc < nc; ++cc) {
        float v = acc[cc] + bias[cc];
        v = (v < lo) ? lo : v;
        v = (v > hi) ? hi : v;
        o[cc] = v;
    }
}

static int dw_f32(const tgrs_op_ctx *ctx, const dw_geom *dg)
{
    const float *wt = (const float *)ctx->c[TGRS_C_DWCONV_WEIGHT];
    const float *bias = (const float *)ctx->c[TGRS_C_DWCONV_BIAS];
    const float lo = tgrs_p_f32(ctx, TGRS_P_DWCONV_FMIN);
    const float hi = tgrs_p_f32(ctx, TGRS_P_DWCONV_FMAX);
    const float *in = (const float *)ctx->in[0]->data;
    float *out = (float *)ctx->out->data;
    const int64_t in_img = (int64_t)dg->in_rows * dg->wd * dg->c;
    const int64_t out_img = (int64_t)dg->out_rows * dg->ow * dg->oc;
    const int64_t pstep = (int64_t)dg->w.sw * dg->c; /* input distance between adjacent output pixels */
    int64_t toff[DW_MAX_TAPS];
    const int32_t ntaps = (dg->m == 1) ? dw_tap_offsets(dg, toff) : 0;
    int32_t n, r, ow, c0, px;
    for (n = 0; n < dg->n; ++n) {
        const float *img = in + n * in_img;
        for (r = 0; r < dg->out_rows; ++r) {
            const int32_t oh = dg->out_row0 + r;
            int32_t step;
            for (ow = 0; ow < dg->ow; ow += step) {
                float *o = out + n * out_img + ((int64_t)r * dg->ow + ow) * dg->oc;
                const int inner = ntaps > 0 && dw_interior(dg, oh, ow);
                const int pair = inner && ow + 1 < dg->ow && dw_interior(dg, oh, ow + 1);
                step = pair ? 2 : 1;
                for (c0 = 0; c0 < dg->oc; c0 += DW_CB) {
                    const int32_t nc = (dg->oc - c0 < DW_CB) ? dg->oc - c0 : DW_CB;
                    float acc0[DW_CB], acc1[DW_CB];
                    if (pair && nc == DW_CB) {
                        dw_pair_f32(img + dw_base(dg, oh, ow) + c0, pstep, wt + c0, dg->oc, toff, ntaps, acc0, acc1);
                        dw_store_f32(o + c0, acc0, bias + c0, nc, lo, hi);
                        dw_store_f32(o + dg->oc + c0, acc1, bias + c0, nc, lo, hi);
                        continue;
                    }
                    if (dg->m == 1 && nc < DW_CB) {
                        /* the last block of a channel count that is not a multiple of DW_CB */
                        dw_tail_f32(dg, img, wt, toff, ntaps, pair, oh, ow, c0, nc, acc0, acc1);
                        for (px = 0; px < step; ++px) {
                            dw_store_f32(o + (int64_t)px * dg->oc + c0, px == 0 ? acc0 : acc1, bias + c0, nc, lo, hi);
                        }
                        continue;
                    }
                    for (px = 0; px < step; ++px) {
                        dw_block_f32(dg, img, wt, oh, ow + px, c0, nc, acc0);
                        dw_store_f32(o + (int64_t)px * dg->oc + c0, acc0, bias + c0, nc, lo, hi);
                    }
                }
            }
        }
    }
    return TGRS_OK;
}

#if TGRS_FISA == TGRS_FISA_FPU || TGRS_FISA == TGRS_FISA_MVEF
/*
 * The float blocks of the Arm FPU and MVE-F variants (target.h TGRS_DW_BLK_F32: dwconv_fpu.h, dwconv_mvef.h): one
 * call sums every tap of a tap table for every channel (blocks of DW_FB) of one pixel, or of two pixels pstep bytes
 * apart, then adds the bias, clamps and stores. A tap table lists (input byte offset from the call's base, weight byte offset from
 * the block's first weight) per tap in the image, in the plain loop's (i, j) order; padded taps are left out (real
 * 0), as the plain loop skips them.
 */
#define DW_FB 8 /* channels per float block */

#include "fpu.h"

typedef tgrs_fpu_ep dw_fout; /* what a block reads after the taps (fpu.h) */

#include "dwconv_fpu.h" /* dw_blk_f32_fpu */
#include "dwconv_mvef.h" /* dw_blk_f32_mvef */

/* Whether every input row of output row oh lies in the image. */
static int dw_rows_inside(const dw_geom *dg, int32_t oh)
{
    const tgrs_window *w = &dg->w;
    const int64_t ih0 = (int64_t)oh * w->sh - w->pt;
    return ih0 >= 0 && ih0 + (int64_t)(w->kh - 1) * w->dh < dg->h;
}

/*
 * Depth multiplier 1 with at most DW_MAX_TAPS taps (other ops take the plain dw_f32). Per output row, one tap table
 * of the taps whose input row is in the image, relative to the pixel's first column: it serves every pixel whose
 * taps are all in the image horizontally. A pixel at the left or right edge gets its own table (relative to the
 * image) of its in-image taps. Pixels go to the target's block (TGRS_DW_BLK_F32) two at a time, sharing each weight
 * load: a pixel and the one below it when both output rows have all their input rows in the image (the same table
 * then serves both, edge columns included: narrow images have few interior columns), otherwise two horizontally
 * adjacent pixels of the interior columns. Blocks of DW_FB channels, the last one shorter: every output sums the
 * taps in the plain loop's order.
 */
static int dw_f32_tab(const tgrs_op_ctx *ctx, const dw_geom *dg)
{
    const tgrs_window *w = &dg->w;
    const float *wt = (const float *)ctx->c[TGRS_C_DWCONV_WEIGHT];
    const float *bias = (const float *)ctx->c[TGRS_C_DWCONV_BIAS];
    const float lo = tgrs_p_f32(ctx, TGRS_P_DWCONV_FMIN);
    const float hi = tgrs_p_f32(ctx, TGRS_P_DWCONV_FMAX);
    const float *in = (const float *)ctx->in[0]->data;
    float *out = (float *)ctx->out->data;
    const int64_t in_img = (int64_t)dg->in_rows * dg->wd * dg->c;
    const int64_t out_img = (int64_t)dg->out_rows * dg->ow * dg->oc;
    int32_t rtab[2 * DW_MAX_TAPS], ptab[2 * DW_MAX_TAPS];
    int32_t n, r, ow, i, j, cl, ch, hstep, vstep;
    int vert;
    dw_fout fo;
    if (dg->m != 1 || (int64_t)w->kh * w->kw > DW_MAX_TAPS ||
        (int64_t)dg->in_rows * dg->wd * dg->c * 4 > INT32_MAX ||
        (int64_t)w->kh * w->kw * dg->oc * 4 > INT32_MAX) { /* the tables' byte offsets are int32 */
        return dw_f32(ctx, dg);
    }
    hstep = w->sw * dg->c * 4; /* bytes between horizontally adjacent output pixels' inputs */
    vstep = w->sh * dg->wd * dg->c * 4; /* and vertically adjacent ones' (used when both rows are in the band) */
    fo.lo = lo;
    fo.hi = hi;
    fo.has_lo = lo >= -3.402823466e38f; /* not -inf (nor NaN) */
    fo.has_hi = hi <= 3.402823466e38f;
    dw_inner_cols(dg, &cl, &ch);
    for (n = 0; n < dg->n; ++n) {
        const char *img = (const char *)(in + n * in_img);
        for (r = 0; r < dg->out_rows; r += vert ? 2 : 1) {
            const int32_t oh = dg->out_row0 + r;
            int32_t nrt = 0;
            float *orow = out + n * out_img + (int64_t)r * dg->ow * dg->oc;
            vert = r + 1 < dg->out_rows && dw_rows_inside(dg, oh) && dw_rows_inside(dg, oh + 1);
            for (i = 0; i < w->kh; ++i) {
                const int32_t ih = oh * w->sh - w->pt + i * w->dh;
                if (ih < 0 || ih >= dg->h) {
                    continue;
                }
                for (j = 0; j < w->kw; ++j) {
                    rtab[2 * nrt] = (((ih - dg->in_row0) * dg->wd + j * w->dw) * dg->c) * 4;
                    rtab[2 * nrt + 1] = ((i * w->kw + j) * dg->oc) * 4;
                    ++nrt;
                }
            }
            for (ow = 0; ow < dg->ow;) {
                float *o = orow + (int64_t)ow * dg->oc;
                const char *base;
                const int32_t *tab;
                int32_t nt, two, pstep;
                int64_t ostep;
                if (ow >= cl && ow < ch) {
                    base = img + ((int64_t)ow * w->sw - w->pl) * dg->c * 4;
                    tab = rtab;
                    nt = nrt;
                    two = vert || ow + 1 < ch;
                } else {
                    nt = 0;
                    for (i = 0; i < w->kh; ++i) {
                        const int32_t ih = oh * w->sh - w->pt + i * w->dh;
                        for (j = 0; j < w->kw && ih >= 0 && ih < dg->h; ++j) {
                            const int32_t iw = ow * w->sw - w->pl + j * w->dw;
                            if (iw >= 0 && iw < dg->wd) {
                                ptab[2 * nt] = (((ih - dg->in_row0) * dg->wd + iw) * dg->c) * 4;
                                ptab[2 * nt + 1] = ((i * w->kw + j) * dg->oc) * 4;
                                ++nt;
                            }
                        }
                    }
                    base = img;
                    tab = ptab;
                    two = vert;
                }
                pstep = vert ? vstep : hstep;
                ostep = vert ? (int64_t)dg->ow * dg->oc : dg->oc;
                fo.bias = bias;
                fo.o0 = o;
                fo.o1 = o + ostep;
                TGRS_DW_BLK_F32(base, tab, nt, (const char *)wt, pstep, two, dg->oc, &fo);
                ow += (two && !vert) ? 2 : 1;
            }
        }
    }
    return TGRS_OK;
}
#endif /* TGRS_FISA_FPU || TGRS_FISA_MVEF */

/* ------------------------------------------------------------------------------------------------------- int8 -- */

/*
 * The int8 sums over every tap of one pixel, channels [0, nc) of a block, depth multiplier 1: xp[t] is tap t's
 * input at the block's first channel (the zero-point block for a padded tap), wk the block's weights of tap 0 (taps
 * oc apart). With `two`, both pixels are interior and acc1 gets the next pixel's sums (inputs pstep further),
 * sharing each weight load. uint32: wrapping is defined; the lowering proved the true sums fit in int32. target.h picks this or a
 * variant of the same contract (dwconv_dsp.h).
 */
#if TGRS_ISA == TGRS_ISA_PLAIN /* the reference loops; target.h selects another variant on DSP/MVE cores */
static void dw_taps_s8_plain(const int8_t *const *xp, int64_t pstep, int32_t ntaps, const int8_t *wk, int32_t oc,
                             int32_t nc, int two, uint32_t *acc0, uint32_t *acc1)
{
    int32_t t, cc;
    for (cc = 0; cc < DW_CB; ++cc) {
        acc0[cc] = 0;
        acc1[cc] = 0;
    }
    for (t = 0; t < ntaps; ++t) {
        const int8_t *x0 = xp[t];
        const int8_t *x1 = x0 + (two ? pstep : 0);
        const int8_t *w = wk + (int64_t)t * oc;
        if (nc == DW_CB && two) { /* constant trip counts: compilers keep these in vector registers */
            for (cc = 0; cc < DW_CB; ++cc) {
                acc0[cc] += (uint32_t)((int32_t)x0[cc] * (int32_t)w[cc]);
                acc1[cc] += (uint32_t)((int32_t)x1[cc] * (int32_t)w[cc]);
            }
        } else if (nc == DW_CB) {
            for (cc = 0; cc < DW_CB; ++cc) {
                acc0[cc] += (uint32_t)((int32_t)x0[cc] * (int32_t)w[cc]);
            }
        } else {
            for (cc = 0; cc < nc; ++cc) {
                acc0[cc] += (uint32_t)((int32_t)x0[cc] * (int32_t)w[cc]);
                acc1[cc] += (uint32_t)((int32_t)x1[cc] * (int32_t)w[cc]);
            }
        }
    }
}
#endif /* TGRS_ISA_PLAIN */

/*
 * Bias, requantization and store of one pixel's block of nc channel sums (rq: the block's channels). target.h picks
 * this or the Helium one (dwconv_mve.h, same bytes).
 */
#if TGRS_ISA != TGRS_ISA_MVE && TGRS_ISA != TGRS_ISA_AVX2
static void dw_out_s8_plain(int8_t *o, const uint32_t *acc, const int32_t *bias, const tgrs_rq *rq, int32_t nc,
                            int32_t lo, int32_t hi)
{
    int32_t cc;
    for (cc = 0; cc < nc; ++cc) {
        o[cc] = tgrs_rq_s8(&rq[cc], tgrs_wrap_add((int32_t)acc[cc], bias[cc]), lo, hi);
    }
}
#endif

/* No fused path: every op takes the tap and output loops below. */
#if TGRS_ISA == TGRS_ISA_PLAIN || (TGRS_ISA == TGRS_ISA_DSP && defined(__OPTIMIZE_SIZE__))
static int dw_fused_s8_none(const tgrs_op_ctx *ctx, const dw_geom *dg, const int64_t *toff, int32_t ntaps)
{
    (void)ctx;
    (void)dg;
    (void)toff;
    (void)ntaps;
    return 0;
}
#endif

#include "dwconv_dsp.h" /* dw_taps_s8_dsp */
#include "dwconv_mve.h" /* dw_taps_s8_mve, dw_out_s8_mve */
#include "dwconv_avx2.h" /* dw_taps_s8_avx2, dw_out_s8_avx2 */

/*
 * Weight zero points (param WZP = 1; the bias const holds [bias, zp_w], docs/numerics.md): acc = bias + sum over the
 * image taps of (x - zp_in) * (w - zp_w); a padded tap is real 0 and contributes nothing. Accumulated in uint32
 * (defined wrapping; the lowering proved the true sum fits). A plain loop: only legacy uint8-weight models take it.
 */
static int dw_s8_wzp(const tgrs_op_ctx *ctx, const dw_geom *dg)
{
    const tgrs_window *w = &dg->w;
    const int8_t *wt = (const int8_t *)ctx->c[TGRS_C_DWCONV_WEIGHT];
    const int32_t *bias = (const int32_t *)ctx->c[TGRS_C_DWCONV_BIAS];
    const int32_t *zw = bias + dg->oc;
    const int32_t *mult = (const int32_t *)ctx->c[TGRS_C_DWCONV_MULT];
    const int32_t *shift = (const int32_t *)ctx->c[TGRS_C_DWCONV_SHIFT];
    const int32_t lo = ctx->p[TGRS_P_DWCONV_ACT_MIN], hi = ctx->p[TGRS_P_DWCONV_ACT_MAX];
    const int32_t zp_in = ctx->p[TGRS_P_DWCONV_ZP_IN], zp_out = ctx->p[TGRS_P_DWCONV_ZP_OUT];
    const int32_t nm = ctx->p[TGRS_P_DWCONV_NUMERICS];
    const int8_t *in = (const int8_t *)ctx->in[0]->data;
    int8_t *out = (int8_t *)ctx->out->data;
    const int64_t in_img = (int64_t)dg->in_rows * dg->wd * dg->c;
    const int64_t out_img = (int64_t)dg->out_rows * dg->ow * dg->oc;
    int32_t n, r, ow, oc, i, j;
    if (!tgrs_zp_s8_ok(zw, dg->oc)) {
        return TGRS_ERR_PARAM;
    }
    for (n = 0; n < dg->n; ++n) {
        for (r = 0; r < dg->out_rows; ++r) {
            const int32_t oh = dg->out_row0 + r;
            for (ow = 0; ow < dg->ow; ++ow) {
                int8_t *o = out + n * out_img + ((int64_t)r * dg->ow + ow) * dg->oc;
                for (oc = 0; oc < dg->oc; ++oc) {
                    uint32_t acc = (uint32_t)bias[oc];
                    for (i = 0; i < w->kh; ++i) {
                        const int32_t ih = oh * w->sh - w->pt + i * w->dh;
                        if (ih < 0 || ih >= dg->h) {
                            continue;
                        }
                        for (j = 0; j < w->kw; ++j) {
                            const int32_t iw = ow * w->sw - w->pl + j * w->dw;
                            int32_t xv, wv;
                            if (iw < 0 || iw >= dg->wd) {
                                continue;
                            }
                            xv = in[n * in_img + ((int64_t)(ih - dg->in_row0) * dg->wd + iw) * dg->c + oc / dg->m];
                            wv = wt[((int64_t)i * w->kw + j) * dg->oc + oc];
                            acc += (uint32_t)((xv - zp_in) * (wv - zw[oc]));
                        }
                    }
                    o[oc] = tgrs_requant_nm_s8((int32_t)acc, mult[oc], shift[oc], zp_out, lo, hi, nm);
                }
            }
        }
    }
    return TGRS_OK;
}

/* The weight-zero-point path an entry point links: dw_s8_wzp, or NULL in tgrs_dwconv_s8_sym. */
typedef int (*dw_wzp_fn)(const tgrs_op_ctx *ctx, const dw_geom *dg);

static int dw_s8(const tgrs_op_ctx *ctx, const dw_geom *dg, dw_wzp_fn wzp)
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
    const int64_t in_img = (int64_t)dg->in_rows * dg->wd * dg->c;
    const int64_t out_img = (int64_t)dg->out_rows * dg->ow * dg->oc;
    int64_t toff[DW_MAX_TAPS];
    const int32_t ntaps = (dg->m == 1) ? dw_tap_offsets(dg, toff) : 0;
    int8_t zpv[DW_CB]; /* the input zero point per channel of a block: what a padded tap reads */
    int32_t n, r, ow, i, j, c0, cc;
    const int st = tgrs_mac_s8_check(ctx, TGRS_C_DWCONV_MULT, TGRS_C_DWCONV_SHIFT, dg->oc, lo, hi, zp_in, zp_out, nm);
    if (st != TGRS_OK) {
        return st;
    }
    if (ctx->p[TGRS_P_DWCONV_WZP] != 0) {
        return ctx->p[TGRS_P_DWCONV_WZP] != 1 ? TGRS_ERR_PARAM : (wzp != NULL ? wzp(ctx, dg) : TGRS_ERR_UNSUPPORTED);
    }
    if (TGRS_DW_FUSED_S8(ctx, dg, toff, ntaps)) { /* the target's fused path took the whole op (target.h) */
        return TGRS_OK;
    }
    memset(zpv, (int)(int8_t)zp_in, sizeof zpv);
    /* channel blocks outermost: each block's requantization is prepared once per op (rows are often short) */
    for (c0 = 0; c0 < dg->oc; c0 += DW_CB) {
        const int32_t nc = (dg->oc - c0 < DW_CB) ? dg->oc - c0 : DW_CB;
        tgrs_rq rq[DW_CB];
        for (cc = 0; cc < nc; ++cc) {
            tgrs_rq_prepare(&rq[cc], mult[c0 + cc], shift[c0 + cc], zp_out, nm);
        }
        for (n = 0; n < dg->n; ++n) {
            const int8_t *img = in + n * in_img;
            for (r = 0; r < dg->out_rows; ++r) {
                const int32_t oh = dg->out_row0 + r;
                int32_t step;
                for (ow = 0; ow < dg->ow; ow += step) {
                    int8_t *o = out + n * out_img + ((int64_t)r * dg->ow + ow) * dg->oc;
                    const int inner = dw_interior(dg, oh, ow);
                    /* uint32: wrapping is defined; the lowering proved the true sums fit in int32 */
                    uint32_t acc[DW_CB];
                    /* every pixel of a multiplier-1 op takes the tap loop: a padded tap reads the block of
                       input zero points (real 0), which the bias fold expects */
                    const int fast = ntaps > 0;
                    step = 1;
                    if (fast) {
                        /* two adjacent interior pixels share every weight load */
                        const int two = inner && ow + 1 < dg->ow && dw_interior(dg, oh, ow + 1);
                        uint32_t acc1[DW_CB];
                        const int8_t *xp[DW_MAX_TAPS];
                        int32_t t = 0;
                        if (inner) {
                            const int8_t *base = img + dw_base(dg, oh, ow) + c0;
                            for (t = 0; t < ntaps; ++t) {
                                xp[t] = base + toff[t];
                            }
                        } else {
                            for (i = 0; i < w->kh; ++i) {
                                const int32_t ih = oh * w->sh - w->pt + i * w->dh;
                                for (j = 0; j < w->kw; ++j, ++t) {
                                    const int32_t iw = ow * w->sw - w->pl + j * w->dw;
                                    xp[t] = (ih >= 0 && ih < dg->h && iw >= 0 && iw < dg->wd)
                                                ? img + ((int64_t)(ih - dg->in_row0) * dg->wd + iw) * dg->c + c0
                                                : zpv;
                                }
                            }
                        }
                        TGRS_DW_TAPS_S8(xp, (int64_t)w->sw * dg->c, ntaps, wt + c0, dg->oc, nc, two, acc, acc1);
                        if (two) {
                            TGRS_DW_OUT_S8(o + dg->oc + c0, acc1, bias + c0, rq, nc, lo, hi);
                            step = 2;
                        }
                    } else {
                        for (cc = 0; cc < DW_CB; ++cc) {
                            acc[cc] = 0;
                        }
                    }
                    for (i = 0; i < w->kh && !fast; ++i) {
                        const int32_t ih = oh * w->sh - w->pt + i * w->dh;
                        const int row_in = inner || (ih >= 0 && ih < dg->h);
                        for (j = 0; j < w->kw; ++j) {
                            const int32_t iw = ow * w->sw - w->pl + j * w->dw;
                            const int8_t *wk = wt + ((int64_t)i * w->kw + j) * dg->oc + c0;
                            const int8_t *x;
                            if (!row_in || (!inner && (iw < 0 || iw >= dg->wd))) {
                                for (cc = 0; cc < nc; ++cc) { /* padded tap: the value zp_in */
                                    acc[cc] += (uint32_t)(zp_in * (int32_t)wk[cc]);
                                }
                                continue;
                            }
                            x = img + ((int64_t)(ih - dg->in_row0) * dg->wd + iw) * dg->c;
                            for (cc = 0; cc < nc; ++cc) { /* multipliers above 1, windows above 64 taps */
                                acc[cc] += (uint32_t)((int32_t)x[(c0 + cc) / dg->m] * (int32_t)wk[cc]);
                            }
                        }
                    }
                    TGRS_DW_OUT_S8(o + c0, acc, bias + c0, rq, nc, lo, hi);
                }
            }
        }
    }
    return TGRS_OK;
}

/* The dtype variants (registry.c picks one per op): each checks its own dtypes, then the shared geometry. */
static int dw_entry(const tgrs_op_ctx *ctx, int32_t dt, dw_geom *dg)
{
    if (ctx->n_in < 1 || ctx->in[0] == NULL || ctx->out == NULL) {
        return TGRS_ERR_SHAPE;
    }
    if (ctx->in[0]->dtype != dt || ctx->out->dtype != dt) {
        return TGRS_ERR_DTYPE;
    }
    return dw_prepare(ctx, dg, dt == TGRS_DT_S8 ? 1u : 4u);
}

/*
 * In place (param ip_rows > 0, docs/format.md "Window ops in place"): the output band starts at the address of the
 * input band (one image, C channels each, same dtype) and is at most as large. Output rows are computed top to bottom,
 * a few at a time, into a temporary of ip_rows rows at the start of the scratch (the kernel's own scratch follows at
 * the next 16-byte boundary); after each piece the finished rows that lie wholly below the first input row a row
 * still to compute reads are stored to their place and the others moved to the temporary's top. The loader walks the
 * same schedule without data (run == NULL) and refuses a temporary with which it would stall.
 */
/* A firmware whose plans run no dwconv in place may build with -DTGRS_NO_DW_PIECES: dw_pieces folds away (about
   0.5 KiB on a Cortex-M4F at -Os) and the check refuses an op with ip_rows > 0 (TGRS_ERR_UNSUPPORTED). tigris codegen
   says in the generated file whether its plan needs it. */
#if defined(TGRS_NO_DW_PIECES)
#define TGRS_DW_PIECES 0
#else
#define TGRS_DW_PIECES 1
#endif

typedef int (*dw_run_fn)(const tgrs_op_ctx *ctx);
static int dw_check(const tgrs_op_ctx *ctx, int wzp);

/* run == NULL: the loader's walk, after the kind's check of the whole band with the kernel's part of the scratch. */
static int dw_pieces(const tgrs_op_ctx *ctx, dw_run_fn run, int wzp)
{
    const tgrs_tview *in = ctx->in[0];
    const tgrs_tview *out = ctx->out;
    const int32_t rows = ctx->p[TGRS_P_DWCONV_IP_ROWS];
    /* Band sizes are below 2^32 bytes (the loader proved every band inside its placement), so are these products. */
    const uint32_t elem = out->dtype == TGRS_DT_F32 ? 4u : 1u;
    const uint32_t irb = (uint32_t)in->dims[2] * (uint32_t)in->dims[3] * elem;
    const uint32_t orb = (uint32_t)out->dims[2] * (uint32_t)out->dims[3] * elem;
    const uint32_t temp = ((uint32_t)rows * orb + 15u) & ~15u;
    int32_t next = 0, done = 0, held = 0; /* rows counted from out->row0 */
    tgrs_op_ctx sub = *ctx;
    tgrs_tview piece = *out;
    uint8_t *tmp = (uint8_t *)ctx->scratch;
    int st = TGRS_OK;
    if (rows < 1 || rows > out->rows || in->dims[0] != 1 || out->dims[3] != in->dims[3] ||
        ctx->p[TGRS_P_DWCONV_DEPTH_MULT] != 1) {
        return TGRS_ERR_PARAM;
    }
    if (temp > ctx->scratch_size) {
        return TGRS_ERR_SCRATCH;
    }
    sub.out = &piece;
    sub.scratch_size -= temp;
    sub.scratch = sub.scratch_size != 0u && tmp != NULL ? tmp + temp : NULL;
    if (run == NULL) {
        st = dw_check(&sub, wzp);
    }
    while (st == TGRS_OK && done < out->rows) {
        int32_t n = rows - held < out->rows - next ? rows - held : out->rows - next;
        /* input rows of the band below the first one a row still to compute reads; all of them at the end */
        int64_t live = (int64_t)(out->row0 + next + n) * ctx->p[TGRS_P_DWCONV_SH] - ctx->p[TGRS_P_DWCONV_PT] -
                       in->row0;
        int32_t w = done;
        if (run != NULL && n > 0) {
            piece.row0 = out->row0 + next;
            piece.rows = n;
            piece.data = tmp + (size_t)held * orb;
            st = run(&sub);
        }
        next += n;
        held += n;
        live = next == out->rows || live > in->rows ? in->rows : (live < 0 ? 0 : live);
        while (w < next && (next == out->rows || (uint32_t)(w + 1) * orb <= (uint32_t)live * irb)) {
            ++w;
        }
        if (w == done && n == 0) {
            st = TGRS_ERR_PARAM; /* the temporary is full and none of its rows may be stored yet */
        }
        if (run != NULL && st == TGRS_OK) {
            memcpy((uint8_t *)out->data + (size_t)done * orb, tmp, (size_t)(w - done) * orb);
            memmove(tmp, tmp + (size_t)(w - done) * orb, (size_t)(next - w) * orb);
        }
        held = next - w;
        done = w;
    }
    return st;
}

static int dw_f32_run(const tgrs_op_ctx *ctx);
static int dw_s8_full(const tgrs_op_ctx *ctx);
static int dw_s8_sym(const tgrs_op_ctx *ctx);

int tgrs_dwconv_f32(const tgrs_op_ctx *ctx)
{
    return TGRS_DW_PIECES && ctx->p[TGRS_P_DWCONV_IP_ROWS] != 0 ? dw_pieces(ctx, dw_f32_run, 1) : dw_f32_run(ctx);
}

int tgrs_dwconv_s8(const tgrs_op_ctx *ctx)
{
    return TGRS_DW_PIECES && ctx->p[TGRS_P_DWCONV_IP_ROWS] != 0 ? dw_pieces(ctx, dw_s8_full, 1) : dw_s8_full(ctx);
}

/* Without the weight-zero-point path: such an op is TGRS_ERR_UNSUPPORTED (tgrs_check_dwconv_sym refuses it). */
int tgrs_dwconv_s8_sym(const tgrs_op_ctx *ctx)
{
    return TGRS_DW_PIECES && ctx->p[TGRS_P_DWCONV_IP_ROWS] != 0 ? dw_pieces(ctx, dw_s8_sym, 0) : dw_s8_sym(ctx);
}

static int dw_f32_run(const tgrs_op_ctx *ctx)
{
    dw_geom dg;
    tgrs_op_ctx wide; /* float16 weights widened into the scratch (kcheck.h) */
    const tgrs_op_ctx *use = ctx; /* float32 weights are used as they are: no copy of the context per call */
    int st = TGRS_OK;
    if (ctx->p[TGRS_P_DWCONV_WF16] != 0) {
        st = tgrs_f16_widen(&wide, ctx, TGRS_C_DWCONV_WEIGHT, ctx->p[TGRS_P_DWCONV_WF16]);
        use = &wide;
    }
    if (st == TGRS_OK) {
        st = dw_entry(use, TGRS_DT_F32, &dg);
    }
    return (st != TGRS_OK || dg.out_rows == 0) ? st : TGRS_DW_F32(use, &dg);
}

static int dw_s8_run(const tgrs_op_ctx *ctx, dw_wzp_fn wzp)
{
    dw_geom dg;
    int st = dw_entry(ctx, TGRS_DT_S8, &dg);
    return (st != TGRS_OK || dg.out_rows == 0) ? st : dw_s8(ctx, &dg, wzp);
}

static int dw_s8_full(const tgrs_op_ctx *ctx)
{
    return dw_s8_run(ctx, dw_s8_wzp);
}

static int dw_s8_sym(const tgrs_op_ctx *ctx)
{
    return dw_s8_run(ctx, NULL);
}

/* The kind's check (check.c calls it at load, once per op and tile): what the dtype variant registry.c picks would
 * check before computing, in the same order. */
static int dw_check(const tgrs_op_ctx *ctx, int wzp)
{
    dw_geom dg;
    tgrs_op_ctx wide;
    const int32_t dt = ctx->out->dtype == TGRS_DT_F32 ? TGRS_DT_F32 : TGRS_DT_S8;
    int st;
    if (dt == TGRS_DT_F32) {
        st = tgrs_check_f32_weights(&wide, ctx, TGRS_C_DWCONV_WEIGHT, ctx->p[TGRS_P_DWCONV_WF16]);
        return st != TGRS_OK ? st : dw_entry(&wide, dt, &dg);
    }
    if (ctx->p[TGRS_P_DWCONV_WF16] != 0) {
        return TGRS_ERR_PARAM; /* int8 weights are never halves */
    }
    st = dw_entry(ctx, dt, &dg);
    if (st != TGRS_OK || dg.out_rows == 0) {
        return st;
    }
    st = tgrs_mac_s8_check(ctx, TGRS_C_DWCONV_MULT, TGRS_C_DWCONV_SHIFT, dg.oc, ctx->p[TGRS_P_DWCONV_ACT_MIN],
                           ctx->p[TGRS_P_DWCONV_ACT_MAX], ctx->p[TGRS_P_DWCONV_ZP_IN], ctx->p[TGRS_P_DWCONV_ZP_OUT],
                           ctx->p[TGRS_P_DWCONV_NUMERICS]);
    return (st == TGRS_OK && !wzp && ctx->p[TGRS_P_DWCONV_WZP] == 1) ? TGRS_ERR_UNSUPPORTED : st;
}

int tgrs_check_dwconv(const tgrs_op_ctx *ctx)
{
    return ctx->p[TGRS_P_DWCONV_IP_ROWS] == 0   ? dw_check(ctx, 1)
           : TGRS_DW_PIECES ? dw_pieces(ctx, NULL, 1)
                            : TGRS_ERR_UNSUPPORTED;
}

/* The check of tgrs_kernel_dwconv_sym: an op with weight zero points is TGRS_ERR_UNSUPPORTED. */
int tgrs_check_dwconv_sym(const tgrs_op_ctx *ctx)
{
    return ctx->p[TGRS_P_DWCONV_IP_ROWS] == 0   ? dw_check(ctx, 0)
           : TGRS_DW_PIECES ? dw_pieces(ctx, NULL, 0)
                            : TGRS_ERR_UNSUPPORTED;
}
