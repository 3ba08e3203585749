/*
 * conv.c - the conv kind: regular and grouped 2-D convolution (and Conv1D as a conv with W = 1), float32 and int8.
 *
 * Layouts (tigris/ops/conv.py is the other half of this contract):
 *   input  NHWC view of a band of rows, dtype F32 or S8
 *   output NHWC view, same dtype; the kernel computes exactly out->rows rows from out->row0
 *   weight float: [G][ceil(OCg/CONV_NR)][K][CONV_NR] panels, K = KH*KW*ICg in (kh, kw, ic) order, tail channels 0
 *          int8:  [G][OCg][K], i.e. plain OHWI rows (panels of one channel)
 *   bias   [OC] float32 (float) or int32 with the input zero point folded in (int8)
 *   mult, shift [OC] int32 Q0.31 requantization (int8 only; see requant.h)
 *
 * Method: a GEMM per group. float: each micro-kernel call multiplies CONV_MR patch rows by one CONV_NR-wide weight
 * panel, written out as scalar statements so that compilers' straight-line vectorizers (GCC -O2 included) turn each
 * row into a few vector multiply-adds. int8: each call takes dot products of CONV_MR patch rows with two weight rows,
 * in fixed-size chunks widened to int16 so that compilers emit 16-bit multiply-add-pairs (SSE2 pmaddwd, Arm SMLAD
 * class instructions); integer sums are exact in any order.
 * float: a 1x1 unpadded conv ("direct") points the patch rows straight into the input; otherwise CONV_MR patches
 * are gathered into the planned scratch (blocked im2col; padded taps hold 0; a band of fewer pixels needs only as
 * many patch rows, e.g. a one-pixel column tile of a COLS unit). int8: CONV_MR patches are always
 * gathered, widened to int16 (padded taps hold the input zero point, whose real value is 0). Scratch:
 * tgrs_conv_scratch_size, mirrored by Conv.scratch_bytes in Python; an int8 band of fewer than CONV_MR output pixels
 * (a column tile of a COLS unit, a row band of a 1-D conv or a narrow image) may have scratch for just its pixels,
 * which conv_s8_narrow computes one by one.
 */
#include <string.h>

#include "kcheck.h"
#include "requant.h"
#include "target.h"
#include "tgrs_op.h"
#include "variants.h"
#include "vec.h"
#include "window.h"

#define CONV_MR 4 /* output pixels per micro-kernel call: CONV_MR in tigris/ops/conv.py */
#define CONV_NR 8 /* float output channels per weight panel: PACK_NR in tigris/ops/conv.py (int8 packs 1) */
#define CONV_KC 16 /* int8 dot-product chunk */
/* Largest patch: with |x * w| <= 2^14, 2^16 products sum to at most 2^30, so int32 dot products cannot overflow
 * whatever the plan's bytes hold (CONV_MAX_PATCH in tigris/ops/conv.py). */
#define CONV_MAX_PATCH 65536

typedef struct conv_geom {
    tgrs_window w;
    int32_t n, h, wd, c;  /* input dims */
    int32_t ow, oc;       /* output width and channels */
    int32_t g, icg, ocg;  /* groups and channels per group */
    int32_t k, npan;      /* patch length and panels per group */
    int32_t in_row0, in_rows, out_row0, out_rows;
    int direct;
} conv_geom;

/* An int8 conv's constants and requantization params, read from its record in one place (every int8 driver and
   step reads the same ones). */
typedef struct conv_s8_consts {
    const int8_t *wt;
    const int32_t *bias, *mult, *shift;
    int32_t lo, hi, zp_in, zp_out, nm;
} conv_s8_consts;

static inline conv_s8_consts conv_s8_consts_of(const tgrs_op_ctx *ctx)
{
    conv_s8_consts cs;
    cs.wt = (const int8_t *)ctx->c[TGRS_C_CONV_WEIGHT];
    cs.bias = (const int32_t *)ctx->c[TGRS_C_CONV_BIAS];
    cs.mult = (const int32_t *)ctx->c[TGRS_C_CONV_MULT];
    cs.shift = (const int32_t *)ctx->c[TGRS_C_CONV_SHIFT];
    cs.lo = ctx->p[TGRS_P_CONV_ACT_MIN];
    cs.hi = ctx->p[TGRS_P_CONV_ACT_MAX];
    cs.zp_in = ctx->p[TGRS_P_CONV_ZP_IN];
    cs.zp_out = ctx->p[TGRS_P_CONV_ZP_OUT];
    cs.nm = ctx->p[TGRS_P_CONV_NUMERICS];
    return cs;
}

/* The window params are 10 consecutive slots in tgrs_window_load's order (a build error if the header changes). */
typedef char conv_window_params_are_consecutive[(TGRS_P_CONV_KW == TGRS_P_CONV_KH + 1 &&
                                                 TGRS_P_CONV_SH == TGRS_P_CONV_KH + 2 &&
                                                 TGRS_P_CONV_SW == TGRS_P_CONV_KH + 3 &&
                                                 TGRS_P_CONV_DH == TGRS_P_CONV_KH + 4 &&
                                                 TGRS_P_CONV_DW == TGRS_P_CONV_KH + 5 &&
                                                 TGRS_P_CONV_PT == TGRS_P_CONV_KH + 6 &&
                                                 TGRS_P_CONV_PL == TGRS_P_CONV_KH + 7 &&
                                                 TGRS_P_CONV_PB == TGRS_P_CONV_KH + 8 &&
                                                 TGRS_P_CONV_PR == TGRS_P_CONV_KH + 9) ? 1 : -1];

static void conv_load_window(tgrs_window *w, const int32_t *p, int *ok)
{
    *ok = tgrs_window_load(w, p + TGRS_P_CONV_KH);
}

static int conv_is_direct(const tgrs_window *w)
{
    return w->kh == 1 && w->kw == 1 && w->pt == 0 && w->pl == 0 && w->pb == 0 && w->pr == 0;
}

/* Patch rows the scratch must hold for a band of npix output pixels: a float im2col stores one row per pixel of
   the block, so a band of fewer pixels than CONV_MR (a column tile of one or two pixels) needs only that many; the
   int8 drivers' block layouts are CONV_MR wide, so a smaller int8 scratch (at least npix widened patches) sends
   the band to conv_s8_narrow, which widens one patch at a time. */
static uint32_t conv_patch_rows(size_t elem, int64_t npix)
{
    return (npix >= CONV_MR || (elem == 1u && !TGRS_CONV_NARROW)) ? (uint32_t)CONV_MR
                                                                  : (uint32_t)(npix < 1 ? 1 : npix);
}

uint32_t tgrs_conv_scratch_size(const int32_t *p, const tgrs_tview *in, const tgrs_tview *out)
{
    tgrs_window w;
    int ok;
    int32_t patch = p[TGRS_P_CONV_PATCH];
    conv_load_window(&w, p, &ok);
    if (!ok || patch <= 0 || patch > CONV_MAX_PATCH) {
        return 0;
    }
    if (in->dtype == TGRS_DT_S8) { /* int16 patch rows, direct convs included (fewer: conv_s8_narrow) */
        return conv_patch_rows(1u, (int64_t)out->rows * out->dims[2]) * (uint32_t)patch * 2u;
    }
    return conv_is_direct(&w) ? 0u : conv_patch_rows(4u, (int64_t)out->rows * out->dims[2]) * (uint32_t)patch * 4u;
}

/* Validate everything the kernel relies on and derive the geometry. With ctx->proven (the loader ran these checks on
   this context) only the derivation runs; the values are the same either way. */
static int conv_prepare(const tgrs_op_ctx *ctx, conv_geom *cg, size_t elem)
{
    const int32_t *p = ctx->p;
    const tgrs_tview *in = ctx->in[0];
    const tgrs_tview *out = ctx->out;
    const int check = (ctx->proven & TGRS_PROVEN_SHAPE) == 0u;
    int ok;
    int st;
    uint64_t wbytes;
    if (check) {
        conv_load_window(&cg->w, p, &ok);
        if (!ok || p[TGRS_P_CONV_PACK_NR] != (elem == 1 ? 1 : CONV_NR) || p[TGRS_P_CONV_GROUP] < 1) {
            return TGRS_ERR_PARAM;
        }
        st = tgrs_window_check(&cg->w, in, out);
        if (st != TGRS_OK) {
            return st;
        }
    } else {
        tgrs_window_get(&cg->w, p + TGRS_P_CONV_KH);
    }
    cg->n = in->dims[0];
    cg->h = in->dims[1];
    cg->wd = in->dims[2];
    cg->c = in->dims[3];
    cg->ow = out->dims[2];
    cg->oc = out->dims[3];
    cg->g = p[TGRS_P_CONV_GROUP];
    if (check && (cg->c % cg->g != 0 || cg->oc % cg->g != 0)) {
        return TGRS_ERR_SHAPE;
    }
    cg->icg = cg->c / cg->g;
    cg->ocg = cg->oc / cg->g;
    if (check &&
        ((int64_t)cg->w.kh * cg->w.kw * cg->icg != p[TGRS_P_CONV_PATCH] || p[TGRS_P_CONV_PATCH] > CONV_MAX_PATCH)) {
        return TGRS_ERR_PARAM;
    }
    cg->k = p[TGRS_P_CONV_PATCH];
    cg->npan = (elem == 1) ? cg->ocg : (cg->ocg + CONV_NR - 1) / CONV_NR;
    wbytes = (uint64_t)cg->g * (uint64_t)cg->npan * (uint64_t)cg->k * (elem == 1 ? 1u : CONV_NR) * elem;
    /* lengths only (both are > 0, so a matching length means a present constant) */
    if (check && (ctx->clen[TGRS_C_CONV_WEIGHT] != wbytes ||
                  ctx->clen[TGRS_C_CONV_BIAS] !=
                      (uint64_t)cg->oc * 4u * (elem == 1 && p[TGRS_P_CONV_WZP] == 1 ? 2u : 1u))) {
        return TGRS_ERR_SHAPE;
    }
    cg->in_row0 = in->row0;
    cg->in_rows = in->rows;
    cg->out_row0 = out->row0;
    cg->out_rows = out->rows;
    cg->direct = conv_is_direct(&cg->w);
    /* the size only: the executor points scratch into the arena whenever scratch_size > 0 (the loader's check has
       no arena) */
    if (check && (elem == 1 || !cg->direct) &&
        ctx->scratch_size < conv_patch_rows(elem, (int64_t)out->rows * out->dims[2]) * (uint32_t)cg->k *
                                (elem == 1 ? 2u : 4u)) { /* tgrs_conv_scratch_size */
        return TGRS_ERR_SCRATCH;
    }
    return TGRS_OK;
}

#if !TGRS_HAVE_AVXVNNI /* the AVX-VNNI build's conv drivers step their pixels (conv_avx2.h conv_pixel_step) */
/* Output pixel q of the band (row-major over rows x OW): its output row and column. */
static inline void conv_pixel(const conv_geom *cg, int64_t q, int32_t *oh, int32_t *ow)
{
    *oh = cg->out_row0 + (int32_t)(q / cg->ow);
    *ow = (int32_t)(q % cg->ow);
}
#endif

/* Offset (elements) of input pixel (ih, iw) in a batch image of the band; ih must be inside the band. */
static int64_t conv_in_off(const conv_geom *cg, int32_t ih, int32_t iw)
{
    return ((int64_t)(ih - cg->in_row0) * cg->wd + iw) * cg->c;
}

/* ---------------------------------------------------------------------------------------------------- float32 -- */

#if TGRS_ISA != TGRS_ISA_AVX2 /* the AVX2 host build has its own float im2col and GEMM (conv_avx2.h) */
/*
 * One pixel's patch (padded taps 0). With one group and no horizontal dilation a kernel row's in-image taps are
 * adjacent in the input, so they are copied as one run (a conv with few input channels, such as kws_dscnn's first
 * one, would otherwise pay a library call per tap).
 */
static void conv_im2col_f32(const conv_geom *cg, const float *img, int32_t oh, int32_t ow, int32_t g, float *dst)
{
    const tgrs_window *w = &cg->w;
    const int32_t iw0 = ow * w->sw - w->pl;
    const int runs = cg->g == 1 && w->dw == 1;
    int32_t i, j, e;
    for (i = 0; i < w->kh; ++i) {
        int32_t ih = oh * w->sh - w->pt + i * w->dh;
        if (runs && ih >= 0 && ih < cg->h) {
            const int32_t j0 = iw0 >= 0 ? 0 : (-iw0 < w->kw ? -iw0 : w->kw); /* in-image taps: [j0, j1) */
            const int32_t j1 = iw0 + w->kw <= cg->wd ? w->kw : (cg->wd - iw0 > 0 ? cg->wd - iw0 : 0);
            for (e = 0; e < j0 * cg->icg; ++e) {
                dst[e] = 0.0f;
            }
            if (j1 > j0) {
                memcpy(dst + (int64_t)j0 * cg->icg, img + conv_in_off(cg, ih, iw0 + j0),
                       (size_t)(j1 - j0) * (size_t)cg->icg * sizeof(float));
            }
            for (e = (j1 > j0 ? j1 : j0) * cg->icg; e < w->kw * cg->icg; ++e) {
                dst[e] = 0.0f;
            }
            dst += (int64_t)w->kw * cg->icg;
            continue;
        }
        for (j = 0; j < w->kw; ++j) {
            int32_t iw = iw0 + j * w->dw;
            if (ih >= 0 && ih < cg->h && iw >= 0 && iw < cg->wd) {
                memcpy(dst, img + conv_in_off(cg, ih, iw) + (int64_t)g * cg->icg, (size_t)cg->icg * sizeof(float));
            } else {
                for (e = 0; e < cg->icg; ++e) {
                    dst[e] = 0.0f;
                }
            }
            dst += cg->icg;
        }
    }
}


/* The CONV_MR rows of the float GEMM's pixel block at q0 of group g, shared by the plain, FPU and MVE-F drivers:
   each row's input (the pixel's patch in place when the conv is direct, else its im2col copy in scr) and output
   pointer. Tail rows past the band repeat the last pixel and are not stored. Returns the rows that are stored. */
static int32_t conv_f32_rows(const conv_geom *cg, const float *img, float *oimg, int32_t g, int64_t q0, float *scr,
                             const float **a, float **o)
{
    const int64_t npix = (int64_t)cg->out_rows * cg->ow;
    const int32_t nv = (npix - q0 < CONV_MR) ? (int32_t)(npix - q0) : CONV_MR;
    int32_t i;
    for (i = 0; i < CONV_MR; ++i) {
        int32_t oh, ow;
        const int64_t q = q0 + (i < nv ? i : nv - 1);
        conv_pixel(cg, q, &oh, &ow);
        o[i] = oimg + q * cg->oc + (int64_t)g * cg->ocg;
        if (cg->direct) {
            a[i] = img + conv_in_off(cg, oh * cg->w.sh, ow * cg->w.sw) + (int64_t)g * cg->icg;
        } else if (i < nv) {
            conv_im2col_f32(cg, img, oh, ow, g, scr + (int64_t)i * cg->k);
            a[i] = scr + (int64_t)i * cg->k;
        } else {
            a[i] = a[nv - 1];
        }
    }
    return nv;
}
#endif

#if TGRS_FISA == TGRS_FISA_PLAIN /* the FPU, MVE-F and AVX2 variants have their own */
/*
 * acc[i][j] = sum_k a[i][k] * b[k][j] for CONV_MR = 4 rows and one CONV_NR = 8 panel. The 32 accumulators are
 * scalars on purpose: each CONV_ROW is eight isomorphic statements on adjacent b[], which straight-line (SLP)
 * vectorizers turn into two 4-wide multiply-adds, with no float reassociation (results equal the scalar order).
 */
#define CONV_ROW(c, x)                                                                                               \
    c##0 += (x) * b0; c##1 += (x) * b1; c##2 += (x) * b2; c##3 += (x) * b3;                                         \
    c##4 += (x) * b4; c##5 += (x) * b5; c##6 += (x) * b6; c##7 += (x) * b7
#define CONV_STORE(c, row)                                                                                           \
    acc[row][0] = c##0; acc[row][1] = c##1; acc[row][2] = c##2; acc[row][3] = c##3;                               \
    acc[row][4] = c##4; acc[row][5] = c##5; acc[row][6] = c##6; acc[row][7] = c##7

static void conv_mk_f32(int32_t k, const float *const a[CONV_MR], const float *b, float acc[CONV_MR][CONV_NR])
{
    float c00 = 0, c01 = 0, c02 = 0, c03 = 0, c04 = 0, c05 = 0, c06 = 0, c07 = 0;
    float c10 = 0, c11 = 0, c12 = 0, c13 = 0, c14 = 0, c15 = 0, c16 = 0, c17 = 0;
    float c20 = 0, c21 = 0, c22 = 0, c23 = 0, c24 = 0, c25 = 0, c26 = 0, c27 = 0;
    float c30 = 0, c31 = 0, c32 = 0, c33 = 0, c34 = 0, c35 = 0, c36 = 0, c37 = 0;
    const float *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3];
    int32_t kk;
    for (kk = 0; kk < k; ++kk) {
        const float b0 = b[0], b1 = b[1], b2 = b[2], b3 = b[3], b4 = b[4], b5 = b[5], b6 = b[6], b7 = b[7];
        const float x0 = a0[kk], x1 = a1[kk], x2 = a2[kk], x3 = a3[kk];
        CONV_ROW(c0, x0);
        CONV_ROW(c1, x1);
        CONV_ROW(c2, x2);
        CONV_ROW(c3, x3);
        b += CONV_NR;
    }
    CONV_STORE(c0, 0);
    CONV_STORE(c1, 1);
    CONV_STORE(c2, 2);
    CONV_STORE(c3, 3);
}

/* A pixel block's tail (1 to CONV_MR - 1 pixels: a band narrower than the block, such as a one-row tile of a
   5-pixel image) would cost the 4-row kernel's full work through repeated rows. It runs one row at a time against
   four panels at once instead (conv_mk1x4_f32: as many multiply-adds per weight load as conv_mk_f32), and the panels
   left over (fewer than four) through conv_mk1_f32. Each accumulator sums the same products in the same order as
   conv_mk_f32, so a pixel's result does not depend on its place in a block. */
#define CONV_PAN(c, x, p)                                                                                            \
    c##0 += (x) * (p)[0]; c##1 += (x) * (p)[1]; c##2 += (x) * (p)[2]; c##3 += (x) * (p)[3];                         \
    c##4 += (x) * (p)[4]; c##5 += (x) * (p)[5]; c##6 += (x) * (p)[6]; c##7 += (x) * (p)[7]

static void conv_mk1x4_f32(int32_t k, const float *a0, const float *b, int64_t pstride, float acc[4][CONV_NR])
{
    float c00 = 0, c01 = 0, c02 = 0, c03 = 0, c04 = 0, c05 = 0, c06 = 0, c07 = 0;
    float c10 = 0, c11 = 0, c12 = 0, c13 = 0, c14 = 0, c15 = 0, c16 = 0, c17 = 0;
    float c20 = 0, c21 = 0, c22 = 0, c23 = 0, c24 = 0, c25 = 0, c26 = 0, c27 = 0;
    float c30 = 0, c31 = 0, c32 = 0, c33 = 0, c34 = 0, c35 = 0, c36 = 0, c37 = 0;
    /* one pointer steps through the first panel; the other three are fixed offsets from it (base + index
       addressing), so a step costs one increment instead of four */
    const int64_t s1 = pstride, s2 = 2 * pstride, s3 = 3 * pstride;
    const float *p0 = b;
    int32_t kk;
    for (kk = 0; kk < k; ++kk) {
        const float x = a0[kk];
        CONV_PAN(c0, x, p0);
        CONV_PAN(c1, x, p0 + s1);
        CONV_PAN(c2, x, p0 + s2);
        CONV_PAN(c3, x, p0 + s3);
        p0 += CONV_NR;
    }
    CONV_STORE(c0, 0);
    CONV_STORE(c1, 1);
    CONV_STORE(c2, 2);
    CONV_STORE(c3, 3);
}

static void conv_mk1_f32(int32_t k, const float *a0, const float *b, float acc[CONV_NR])
{
    float c00 = 0, c01 = 0, c02 = 0, c03 = 0, c04 = 0, c05 = 0, c06 = 0, c07 = 0;
    int32_t kk;
    for (kk = 0; kk < k; ++kk) {
        const float x = a0[kk];
        CONV_PAN(c0, x, b);
        b += CONV_NR;
    }
    acc[0] = c00; acc[1] = c01; acc[2] = c02; acc[3] = c03; acc[4] = c04; acc[5] = c05; acc[6] = c06; acc[7] = c07;
}

#undef CONV_PAN
#undef CONV_ROW
#undef CONV_STORE

/* Bias, clamp and store one row of one panel (its first ncol channels). A whole panel reads its accumulators and
   biases into locals before it stores (o may alias neither, but the compiler cannot know): eight isomorphic
   statements, which SLP vectorizers turn into two-vector steps. */
#define CONV_OUT(j)                                                                                                  \
    v##j = acc[j] + bs[j];                                                                                           \
    v##j = (v##j < lo) ? lo : v##j;                                                                                  \
    v##j = (v##j > hi) ? hi : v##j
static void conv_store_f32(float *o, const float *acc, const float *bs, int32_t ncol, float lo, float hi)
{
    int32_t j;
    if (ncol == CONV_NR) {
        float v0, v1, v2, v3, v4, v5, v6, v7;
        CONV_OUT(0); CONV_OUT(1); CONV_OUT(2); CONV_OUT(3); CONV_OUT(4); CONV_OUT(5); CONV_OUT(6); CONV_OUT(7);
        o[0] = v0; o[1] = v1; o[2] = v2; o[3] = v3; o[4] = v4; o[5] = v5; o[6] = v6; o[7] = v7;
        return;
    }
    for (j = 0; j < ncol; ++j) {
        float v = acc[j] + bs[j];
        v = (v < lo) ? lo : v;
        v = (v > hi) ? hi : v;
        o[j] = v;
    }
}
#undef CONV_OUT

/* The nv < CONV_MR rows of a tail block of group g (weights wg, bias bg): each row against four panels at a time,
   then the panels left over. Out of line: inlined, its pointers crowd the main block's registers. */
TGRS_NOINLINE static void conv_tail_f32(const conv_geom *cg, int32_t nv, const float *const a[CONV_MR],
                                        float *const o[CONV_MR], const float *wg, const float *bg, float lo, float hi)
{
    const int64_t pstride = (int64_t)cg->k * CONV_NR; /* floats from one panel to the next */
    const int32_t pan4 = cg->npan - cg->npan % 4;
    float acc[4][CONV_NR];
    int32_t i, p, pan;
    for (i = 0; i < nv; ++i) {
        for (pan = 0; pan < cg->npan; pan += (pan < pan4) ? 4 : 1) {
            const int32_t np = (pan < pan4) ? 4 : 1;
            if (np == 4) {
                conv_mk1x4_f32(cg->k, a[i], wg + pan * pstride, pstride, acc);
            } else {
                conv_mk1_f32(cg->k, a[i], wg + pan * pstride, acc[0]);
            }
            for (p = 0; p < np; ++p) {
                const int32_t oc0 = (pan + p) * CONV_NR;
                conv_store_f32(o[i] + oc0, acc[p], bg + oc0, cg->ocg - oc0 < CONV_NR ? cg->ocg - oc0 : CONV_NR, lo,
                               hi);
            }
        }
    }
}

static int conv_f32(const tgrs_op_ctx *ctx, const conv_geom *cg)
{
    const float *wt = (const float *)ctx->c[TGRS_C_CONV_WEIGHT];
    const float *bias = (const float *)ctx->c[TGRS_C_CONV_BIAS];
    const float lo = tgrs_p_f32(ctx, TGRS_P_CONV_FMIN);
    const float hi = tgrs_p_f32(ctx, TGRS_P_CONV_FMAX);
    const float *in = (const float *)ctx->in[0]->data;
    float *out = (float *)ctx->out->data;
    float *scr = (float *)ctx->scratch;
    const int64_t npix = (int64_t)cg->out_rows * cg->ow;
    const int64_t in_img = (int64_t)cg->in_rows * cg->wd * cg->c;
    float acc[CONV_MR][CONV_NR];
    int32_t n, g, i, pan;
    int64_t q0;
    for (n = 0; n < cg->n; ++n) {
        const float *img = in + n * in_img;
        float *oimg = out + n * npix * cg->oc;
        for (g = 0; g < cg->g; ++g) {
            for (q0 = 0; q0 < npix; q0 += CONV_MR) {
                const float *a[CONV_MR];
                float *o[CONV_MR];
                const int32_t nv = conv_f32_rows(cg, img, oimg, g, q0, scr, a, o);
                if (nv < CONV_MR) {
                    conv_tail_f32(cg, nv, a, o, wt + (int64_t)g * cg->npan * cg->k * CONV_NR,
                                  bias + (int64_t)g * cg->ocg, lo, hi);
                    continue;
                }
                for (pan = 0; pan < cg->npan; ++pan) {
                    const int32_t oc0 = pan * CONV_NR;
                    const int32_t ncol = (cg->ocg - oc0 < CONV_NR) ? cg->ocg - oc0 : CONV_NR;
                    const float *bs = bias + (int64_t)g * cg->ocg + oc0;
                    conv_mk_f32(cg->k, a, wt + ((int64_t)g * cg->npan + pan) * cg->k * CONV_NR, acc);
                    for (i = 0; i < CONV_MR; ++i) {
                        conv_store_f32(o[i] + oc0, acc[i], bs, ncol, lo, hi);
                    }
                }
            }
        }
    }
    return TGRS_OK;
}

#endif

/* ------------------------------------------------------------------------------------------------------- int8 -- */

#if TGRS_ISA == TGRS_ISA_PLAIN /* the reference loops; target.h selects another variant on DSP/MVE cores */

/* int8 is a character type and may alias anything: restrict tells the compiler the copy can be vectorized. */
static void conv_widen(const int8_t *restrict src, int16_t *restrict dst)
{
    int32_t t;
    for (t = 0; t < CONV_KC; ++t) {
        dst[t] = src[t];
    }
}

/*
 * int8 patches are widened to int16 once per pixel block, into the scratch (CONV_MR rows of K int16), for direct
 * convs too: the dot products then only widen the two weight rows they stream.
 */
static void conv_rows_s16(const conv_geom *cg, const int8_t *img, int32_t oh, int32_t ow, int32_t g, int32_t zp,
                          int16_t *dst)
{
    const tgrs_window *w = &cg->w;
    int32_t i, j, e;
    for (i = 0; i < w->kh; ++i) {
        int32_t ih = oh * w->sh - w->pt + i * w->dh;
        for (j = 0; j < w->kw; ++j) {
            int32_t iw = ow * w->sw - w->pl + j * w->dw;
            if (ih >= 0 && ih < cg->h && iw >= 0 && iw < cg->wd) {
                const int8_t *src = img + conv_in_off(cg, ih, iw) + (int64_t)g * cg->icg;
                for (e = 0; TGRS_VECTOR_CHUNKS && e + CONV_KC <= cg->icg; e += CONV_KC) { /* vectorize at -O2 */
                    conv_widen(src + e, dst + e);
                }
                for (; e < cg->icg; ++e) {
                    dst[e] = src[e];
                }
            } else {
                for (e = 0; e < cg->icg; ++e) {
                    dst[e] = (int16_t)zp; /* the zero point encodes real 0; the bias fold expects it */
                }
            }
            dst += cg->icg;
        }
    }
}

static void conv_widen_half(const int8_t *restrict src, int16_t *restrict dst)
{
    int32_t t;
    for (t = 0; t < CONV_KC / 2; ++t) {
        dst[t] = src[t];
    }
}

/*
 * acc[i][j] = sum_k a[i][k] * w_j[k] for CONV_MR = 4 int16 patch rows and two int8 weight rows w0, w1. K runs in
 * chunks of CONV_KC with the weights widened into int16 locals: a fixed-length int16 dot product is the pattern
 * compilers map to multiply-add-pairs. Exact in int32 whatever the bytes: K <= CONV_MAX_PATCH (checked), so
 * |sum| <= 2^30.
 */
static void conv_mk_s8(int32_t k, const int16_t *const a[CONV_MR], const int8_t *w0, const int8_t *w1,
                       int32_t acc[CONV_MR][2])
{
    int32_t s00 = 0, s01 = 0, s10 = 0, s11 = 0, s20 = 0, s21 = 0, s30 = 0, s31 = 0;
    const int16_t *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3];
    int32_t kk, t;
    for (kk = 0; TGRS_VECTOR_CHUNKS && kk + CONV_KC <= k; kk += CONV_KC) { /* vec.h */
        int16_t u[CONV_KC], v[CONV_KC];
        conv_widen(w0 + kk, u);
        conv_widen(w1 + kk, v);
        for (t = 0; t < CONV_KC; ++t) {
            s00 += a0[kk + t] * u[t];
            s01 += a0[kk + t] * v[t];
            s10 += a1[kk + t] * u[t];
            s11 += a1[kk + t] * v[t];
            s20 += a2[kk + t] * u[t];
            s21 += a2[kk + t] * v[t];
            s30 += a3[kk + t] * u[t];
            s31 += a3[kk + t] * v[t];
        }
    }
    if (TGRS_VECTOR_CHUNKS && kk + CONV_KC / 2 <= k) { /* a half chunk: channel counts 8, 24, 40... are common */
        int16_t u[CONV_KC / 2], v[CONV_KC / 2];
        conv_widen_half(w0 + kk, u);
        conv_widen_half(w1 + kk, v);
        for (t = 0; t < CONV_KC / 2; ++t) {
            s00 += a0[kk + t] * u[t];
            s01 += a0[kk + t] * v[t];
            s10 += a1[kk + t] * u[t];
            s11 += a1[kk + t] * v[t];
            s20 += a2[kk + t] * u[t];
            s21 += a2[kk + t] * v[t];
            s30 += a3[kk + t] * u[t];
            s31 += a3[kk + t] * v[t];
        }
        kk += CONV_KC / 2;
    }
    for (; kk < k; ++kk) {
        const int32_t u = w0[kk], v = w1[kk];
        s00 += a0[kk] * u;
        s01 += a0[kk] * v;
        s10 += a1[kk] * u;
        s11 += a1[kk] * v;
        s20 += a2[kk] * u;
        s21 += a2[kk] * v;
        s30 += a3[kk] * u;
        s31 += a3[kk] * v;
    }
    acc[0][0] = s00;
    acc[0][1] = s01;
    acc[1][0] = s10;
    acc[1][1] = s11;
    acc[2][0] = s20;
    acc[2][1] = s21;
    acc[3][0] = s30;
    acc[3][1] = s31;
}

/* conv_mk_s8 for one patch row: a block's tail of one or two pixels (a one-row band of a 9-pixel-wide image ends
   every row in one) then computes only its own rows instead of repeating its last pixel up to CONV_MR. The sums are
   exact integers, so they equal conv_mk_s8's. */
static void conv_mk1_s8(int32_t k, const int16_t *a0, const int8_t *w0, const int8_t *w1, int32_t acc[2])
{
    int32_t s0 = 0, s1 = 0;
    int32_t kk, t;
    for (kk = 0; TGRS_VECTOR_CHUNKS && kk + CONV_KC <= k; kk += CONV_KC) {
        int16_t u[CONV_KC], v[CONV_KC];
        conv_widen(w0 + kk, u);
        conv_widen(w1 + kk, v);
        for (t = 0; t < CONV_KC; ++t) {
            s0 += a0[kk + t] * u[t];
            s1 += a0[kk + t] * v[t];
        }
    }
    for (; kk < k; ++kk) {
        s0 += a0[kk] * w0[kk];
        s1 += a0[kk] * w1[kk];
    }
    acc[0] = s0;
    acc[1] = s1;
}

/* Requantizes the int32 sums acc[i][j] of the block's nv pixels and channels ch + j (j < ncol) into o[i][oc + j]. */
static void conv_store_pair_s8(const conv_s8_consts *cs, int64_t ch, int32_t ncol, int32_t nv, int32_t (*acc)[2],
                               int8_t *const o[CONV_MR], int32_t oc)
{
    int32_t i, j;
    for (j = 0; j < ncol; ++j) {
        const tgrs_rq rq = tgrs_rq_make(cs->mult[ch + j], cs->shift[ch + j], cs->zp_out, cs->nm);
        const int32_t b = cs->bias[ch + j];
        for (i = 0; i < nv; ++i) {
            o[i][oc + j] = tgrs_rq_s8(&rq, tgrs_wrap_add(acc[i][j], b), cs->lo, cs->hi);
        }
    }
}

/* conv_ch_s8_plain for a tail block of nv <= 2 pixels, one patch row at a time (conv_mk1_s8); out of line, so the
   full blocks' step compiles as it would without it. */
TGRS_NOINLINE static int32_t conv_ch_s8_few(const tgrs_op_ctx *ctx, const conv_geom *cg,
                                            const int16_t *const a[CONV_MR], int8_t *const o[CONV_MR], int32_t g,
                                            int32_t oc, int32_t nv)
{
    const conv_s8_consts cs = conv_s8_consts_of(ctx);
    const int32_t ncol = (cg->ocg - oc < 2) ? 1 : 2;
    const int64_t ch = (int64_t)g * cg->ocg + oc;
    const int8_t *w0 = cs.wt + ch * cg->k;
    int32_t acc[2][2];
    int32_t i;
    for (i = 0; i < nv; ++i) {
        conv_mk1_s8(cg->k, a[i], w0, (ncol == 2) ? w0 + cg->k : w0, acc[i]);
    }
    conv_store_pair_s8(&cs, ch, ncol, nv, acc, o, oc);
    return 2;
}

/* The plain form of the shared driver's channel step (conv_s8_blocks): the dot products of the block's patches with
 * two weight rows from channel oc (an odd last channel pairs with itself; its second column is not stored), each
 * channel requantized through its prepared tgrs_rq. Returns the channels it took. */
static int32_t conv_ch_s8_plain(const tgrs_op_ctx *ctx, const conv_geom *cg, const int16_t *const a[CONV_MR],
                                int8_t *const o[CONV_MR], int32_t g, int32_t oc, int32_t nv, int mode)
{
    const conv_s8_consts cs = conv_s8_consts_of(ctx);
    const int32_t ncol = (cg->ocg - oc < 2) ? 1 : 2;
    const int64_t ch = (int64_t)g * cg->ocg + oc;
    const int8_t *w0 = cs.wt + ch * cg->k;
    int32_t acc[CONV_MR][2];
    (void)mode;
    if (nv <= 2) {
        return conv_ch_s8_few(ctx, cg, a, o, g, oc, nv);
    }
    conv_mk_s8(cg->k, a, w0, (ncol == 2) ? w0 + cg->k : w0, acc);
    conv_store_pair_s8(&cs, ch, ncol, nv, acc, o, oc);
    return 2;
}

/* The plain loops need no per-op requantization mode. */
static int conv_mode_s8_plain(const tgrs_op_ctx *ctx, const conv_geom *cg)
{
    (void)ctx;
    (void)cg;
    return 0;
}

#endif /* TGRS_ISA_PLAIN */

#include "conv_dsp.h" /* conv_s8_dsp */
#include "conv_mve.h" /* conv_s8_mve */
#include "conv_avx2.h" /* conv_s8_avx2 */
#include "conv_vnni.h" /* conv_s8_vnni */
#include "conv_fpu.h" /* conv_f32_fpu */
#include "conv_mvef.h" /* conv_f32_mvef */

#ifdef TGRS_CONV_CH_S8 /* target.h: the plain loops and the AVX2 level share this driver */
/*
 * The int8 GEMM driver of the plain loops and of the AVX2 level: per block of CONV_MR output pixels, their patches
 * widened to int16 into the scratch by the target's TGRS_CONV_ROWS_S16 (padded taps: the input zero point, which the
 * bias fold expects; a tail block repeats its last patch, unstored), then the target's channel step TGRS_CONV_CH_S8
 * from each channel oc, which stores the block's outputs of the channels it takes and says how many.
 * TGRS_CONV_MODE_S8 is the step's per-op choice (the AVX2 step's vector requantization form).
 */
static int conv_s8_blocks(const tgrs_op_ctx *ctx, const conv_geom *cg)
{
    const int32_t zp_in = ctx->p[TGRS_P_CONV_ZP_IN];
    const int8_t *in = (const int8_t *)ctx->in[0]->data;
    int8_t *out = (int8_t *)ctx->out->data;
    int16_t *scr = (int16_t *)ctx->scratch;
    const int64_t npix = (int64_t)cg->out_rows * cg->ow;
    const int64_t in_img = (int64_t)cg->in_rows * cg->wd * cg->c;
    const int mode = TGRS_CONV_MODE_S8(ctx, cg);
    int32_t n, g, i, oc;
    int64_t q0;
    for (n = 0; n < cg->n; ++n) {
        const int8_t *img = in + n * in_img;
        int8_t *oimg = out + n * npix * cg->oc;
        for (g = 0; g < cg->g; ++g) {
            for (q0 = 0; q0 < npix; q0 += CONV_MR) {
                const int16_t *a[CONV_MR];
                int8_t *o[CONV_MR];
                const int32_t nv = (npix - q0 < CONV_MR) ? (int32_t)(npix - q0) : CONV_MR;
                for (i = 0; i < CONV_MR; ++i) {
                    int32_t oh, ow;
                    const int64_t q = q0 + (i < nv ? i : nv - 1);
                    conv_pixel(cg, q, &oh, &ow);
                    o[i] = oimg + q * cg->oc + (int64_t)g * cg->ocg;
                    if (i < nv) {
                        TGRS_CONV_ROWS_S16(cg, img, oh, ow, g, zp_in, scr + (int64_t)i * cg->k);
                        a[i] = scr + (int64_t)i * cg->k;
                    } else {
                        a[i] = a[nv - 1];
                    }
                }
                for (oc = 0; oc < cg->ocg; oc += TGRS_CONV_CH_S8(ctx, cg, a, o, g, oc, nv, mode)) {
                }
            }
        }
    }
    return TGRS_OK;
}
#endif

/*
 * Weight zero points (param WZP = 1; the bias const holds [bias, zp_w], docs/numerics.md): acc = bias + sum over the
 * image taps of (x - zp_in) * (w - zp_w); a padded tap is real 0 and contributes nothing. Accumulated in uint32
 * (defined wrapping; the lowering proved the true sum fits). A direct loop without im2col (the scratch goes unused):
 * only legacy uint8-weight models take it. int8 weights are packed with PACK_NR 1, i.e. [OC][K] in patch order.
 */
static int conv_s8_wzp(const tgrs_op_ctx *ctx, const conv_geom *cg)
{
    const tgrs_window *w = &cg->w;
    const conv_s8_consts cs = conv_s8_consts_of(ctx);
    const int32_t *zw = cs.bias + cg->oc;
    const int8_t *in = (const int8_t *)ctx->in[0]->data;
    int8_t *out = (int8_t *)ctx->out->data;
    const int64_t in_img = (int64_t)cg->in_rows * cg->wd * cg->c;
    const int64_t out_img = (int64_t)cg->out_rows * cg->ow * cg->oc;
    int32_t n, r, ow, oc, i, j, ic;
    if (!tgrs_zp_s8_ok(zw, cg->oc)) {
        return TGRS_ERR_PARAM;
    }
    for (n = 0; n < cg->n; ++n) {
        for (r = 0; r < cg->out_rows; ++r) {
            const int32_t oh = cg->out_row0 + r;
            for (ow = 0; ow < cg->ow; ++ow) {
                int8_t *o = out + n * out_img + ((int64_t)r * cg->ow + ow) * cg->oc;
                for (oc = 0; oc < cg->oc; ++oc) {
                    const int8_t *wk = cs.wt + (int64_t)oc * cg->k;
                    const int32_t c0 = (oc / cg->ocg) * cg->icg; /* the group's first input channel */
                    uint32_t acc = (uint32_t)cs.bias[oc];
                    for (i = 0; i < w->kh; ++i) {
                        const int32_t ih = oh * w->sh - w->pt + i * w->dh;
                        if (ih < 0 || ih >= cg->h) {
                            continue;
                        }
                        for (j = 0; j < w->kw; ++j) {
                            const int32_t iw = ow * w->sw - w->pl + j * w->dw;
                            const int8_t *x;
                            const int8_t *wp;
                            if (iw < 0 || iw >= cg->wd) {
                                continue;
                            }
                            x = in + n * in_img + ((int64_t)(ih - cg->in_row0) * cg->wd + iw) * cg->c + c0;
                            wp = wk + ((int64_t)i * w->kw + j) * cg->icg;
                            for (ic = 0; ic < cg->icg; ++ic) {
                                acc += (uint32_t)(((int32_t)x[ic] - cs.zp_in) * ((int32_t)wp[ic] - zw[oc]));
                            }
                        }
                    }
                    o[oc] = tgrs_requant_nm_s8((int32_t)acc, cs.mult[oc], cs.shift[oc], cs.zp_out, cs.lo, cs.hi,
                                               cs.nm);
                }
            }
        }
    }
    return TGRS_OK;
}

/*
 * A band of fewer than CONV_MR output pixels whose planned scratch holds only its own patches (conv_prepare proved
 * npix * K int16): every build's drivers take CONV_MR patches at a time, so this plain loop computes such a band
 * pixel by pixel instead. Each patch is widened as the drivers widen it (padded taps: the input zero point), its
 * dot product with each weight row is the same exact int32 sum and is requantized through the same tgrs_rq, so the
 * bytes are the drivers'. It runs on a column tile of one or a few pixels, where the drivers' blocks are tails too.
 */
static int conv_s8_narrow(const tgrs_op_ctx *ctx, const conv_geom *cg)
{
    const tgrs_window *w = &cg->w;
    const conv_s8_consts cs = conv_s8_consts_of(ctx);
    const int8_t *in = (const int8_t *)ctx->in[0]->data;
    int8_t *out = (int8_t *)ctx->out->data;
    int16_t *a = (int16_t *)ctx->scratch;
    const int64_t npix = (int64_t)cg->out_rows * cg->ow;
    const int64_t in_img = (int64_t)cg->in_rows * cg->wd * cg->c;
    int32_t n, g, i, j, e, oc, kk;
    int64_t q;
    for (n = 0; n < cg->n; ++n) {
        const int8_t *img = in + n * in_img;
        for (q = 0; q < npix; ++q) {
            const int32_t oh = cg->out_row0 + (int32_t)(q / cg->ow);
            const int32_t ow = (int32_t)(q % cg->ow);
            int8_t *o = out + (n * npix + q) * cg->oc;
            for (g = 0; g < cg->g; ++g) {
                int16_t *dst = a;
                for (i = 0; i < w->kh; ++i) {
                    const int32_t ih = oh * w->sh - w->pt + i * w->dh;
                    for (j = 0; j < w->kw; ++j) {
                        const int32_t iw = ow * w->sw - w->pl + j * w->dw;
                        const int in_img_tap = ih >= 0 && ih < cg->h && iw >= 0 && iw < cg->wd;
                        const int8_t *src = in_img_tap ? img + conv_in_off(cg, ih, iw) + (int64_t)g * cg->icg : NULL;
                        for (e = 0; e < cg->icg; ++e) {
                            dst[e] = (int16_t)(src != NULL ? src[e] : cs.zp_in);
                        }
                        dst += cg->icg;
                    }
                }
                for (oc = 0; oc < cg->ocg; ++oc) {
                    const int64_t ch = (int64_t)g * cg->ocg + oc;
                    const int8_t *wk = cs.wt + ch * cg->k;
                    const tgrs_rq rq = tgrs_rq_make(cs.mult[ch], cs.shift[ch], cs.zp_out, cs.nm);
                    int32_t acc = 0;
                    for (kk = 0; kk < cg->k; ++kk) {
                        acc += (int32_t)a[kk] * wk[kk];
                    }
                    o[ch] = tgrs_rq_s8(&rq, tgrs_wrap_add(acc, cs.bias[ch]), cs.lo, cs.hi);
                }
            }
        }
    }
    return TGRS_OK;
}

/* The weight-zero-point path an entry point links: conv_s8_wzp, or NULL in tgrs_conv_s8_sym (docs/runtime.md
 * "Code size": an image whose plan has no such op leaves it out). */
typedef int (*conv_wzp_fn)(const tgrs_op_ctx *ctx, const conv_geom *cg);

/* The int8 GEMM of the target (target.h picks it): the same exact sums, requantized through requant.h. */
static int conv_s8(const tgrs_op_ctx *ctx, const conv_geom *cg, conv_wzp_fn wzp)
{
    const int st = tgrs_mac_s8_check(ctx, TGRS_C_CONV_MULT, TGRS_C_CONV_SHIFT, cg->oc, ctx->p[TGRS_P_CONV_ACT_MIN],
                                     ctx->p[TGRS_P_CONV_ACT_MAX], ctx->p[TGRS_P_CONV_ZP_IN],
                                     ctx->p[TGRS_P_CONV_ZP_OUT], ctx->p[TGRS_P_CONV_NUMERICS]);
    if (st != TGRS_OK) {
        return st;
    }
    if (ctx->p[TGRS_P_CONV_WZP] != 0) {
        return ctx->p[TGRS_P_CONV_WZP] != 1 ? TGRS_ERR_PARAM : (wzp != NULL ? wzp(ctx, cg) : TGRS_ERR_UNSUPPORTED);
    }
    if (TGRS_CONV_NARROW && ctx->scratch_size < (uint32_t)CONV_MR * (uint32_t)cg->k * 2u) {
        return conv_s8_narrow(ctx, cg); /* fewer than CONV_MR pixels, scratch for just them (conv_prepare) */
    }
    return TGRS_CONV_S8(ctx, cg);
}

/* The dtype variants (registry.c picks one per op): each checks its own dtypes, then the shared geometry. */
static int conv_entry(const tgrs_op_ctx *ctx, int32_t dt, conv_geom *cg)
{
    if (ctx->n_in < 1 || ctx->in[0] == NULL || ctx->out == NULL) {
        return TGRS_ERR_SHAPE;
    }
    if (ctx->in[0]->dtype != dt || ctx->out->dtype != dt) {
        return TGRS_ERR_DTYPE;
    }
    return conv_prepare(ctx, cg, dt == TGRS_DT_S8 ? 1u : 4u);
}

/*
 * The GEMM gets a copy of the geometry: cg's address went to conv_prepare, so the compiler must assume the int8 (char)
 * output stores may change it and would reload its fields in the inner loops; the copy's address never escapes.
 */
int tgrs_conv_f32(const tgrs_op_ctx *ctx)
{
    conv_geom cg;
    tgrs_op_ctx wide; /* float16 weights widened into the scratch (kcheck.h) */
    const tgrs_op_ctx *use = ctx; /* float32 weights are used as they are: no copy of the context per call */
    int st = TGRS_OK;
    if (ctx->p[TGRS_P_CONV_WF16] != 0) {
        st = tgrs_f16_widen(&wide, ctx, TGRS_C_CONV_WEIGHT, ctx->p[TGRS_P_CONV_WF16]);
        use = &wide;
    }
    if (st == TGRS_OK) {
        st = conv_entry(use, TGRS_DT_F32, &cg);
    }
    if (st != TGRS_OK || cg.out_rows == 0) {
        return st;
    }
    {
        const conv_geom g = cg;
        return TGRS_CONV_F32(use, &g);
    }
}

static int conv_s8_run(const tgrs_op_ctx *ctx, conv_wzp_fn wzp)
{
    conv_geom cg;
    int st = conv_entry(ctx, TGRS_DT_S8, &cg);
    if (st != TGRS_OK || cg.out_rows == 0) {
        return st;
    }
    {
        const conv_geom g = cg;
        return conv_s8(ctx, &g, wzp);
    }
}

int tgrs_conv_s8(const tgrs_op_ctx *ctx)
{
    return conv_s8_run(ctx, conv_s8_wzp);
}

/* Without the weight-zero-point path: such an op is TGRS_ERR_UNSUPPORTED (tgrs_check_conv_sym refuses it at load). */
int tgrs_conv_s8_sym(const tgrs_op_ctx *ctx)
{
    return conv_s8_run(ctx, NULL);
}

/* The kind's check (check.c calls it at load, once per op and tile): what the dtype variant registry.c picks would
 * check before computing, in the same order, so a plan the loader accepts passes it at run time. */
static int conv_check(const tgrs_op_ctx *ctx, int wzp)
{
    conv_geom cg;
    tgrs_op_ctx wide;
    const int32_t dt = ctx->out->dtype == TGRS_DT_F32 ? TGRS_DT_F32 : TGRS_DT_S8;
    int st;
    if (dt == TGRS_DT_F32) {
        st = tgrs_check_f32_weights(&wide, ctx, TGRS_C_CONV_WEIGHT, ctx->p[TGRS_P_CONV_WF16]);
        return st != TGRS_OK ? st : conv_entry(&wide, dt, &cg);
    }
    if (ctx->p[TGRS_P_CONV_WF16] != 0) {
        return TGRS_ERR_PARAM; /* int8 weights are never halves */
    }
    st = conv_entry(ctx, dt, &cg);
    if (st != TGRS_OK || cg.out_rows == 0) {
        return st;
    }
    st = tgrs_mac_s8_check(ctx, TGRS_C_CONV_MULT, TGRS_C_CONV_SHIFT, cg.oc, ctx->p[TGRS_P_CONV_ACT_MIN],
                           ctx->p[TGRS_P_CONV_ACT_MAX], ctx->p[TGRS_P_CONV_ZP_IN], ctx->p[TGRS_P_CONV_ZP_OUT],
                           ctx->p[TGRS_P_CONV_NUMERICS]);
    return (st == TGRS_OK && !wzp && ctx->p[TGRS_P_CONV_WZP] == 1) ? TGRS_ERR_UNSUPPORTED : st;
}

int tgrs_check_conv(const tgrs_op_ctx *ctx)
{
    return conv_check(ctx, 1);
}

/* The check of tgrs_kernel_conv_sym: an op with weight zero points is TGRS_ERR_UNSUPPORTED. */
int tgrs_check_conv_sym(const tgrs_op_ctx *ctx)
{
    return conv_check(ctx, 0);
}
