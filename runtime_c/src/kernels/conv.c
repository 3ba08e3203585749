/*
 * conv.c - the conv kind: regular and grouped 2-D convolution (and Conv1D as a conv with W = 1), float32 and int8.
 *
 * Layouts (tigris/ops/conv.py is the other half of this contract):
 *   input  NHWC view of a band of rows, dtype F32 or S8
 *   output NHWC view, same dtype; the kernel computes exactly out->rows rows from out->row0
 *   weight [G][ceil(OCg/CONV_NR)][K][CONV_NR] panels, K = KH*KW*ICg in (kh, kw, ic) order, tail channels zero
 *   bias   [OC] float32 (float) or int32 with the input zero point folded in (int8)
 *   mult, shift [OC] int32 Q0.31 requantization (int8 only; see requant.h)
 *
 * Method: a GEMM per group. Each micro-kernel call multiplies CONV_MR patch rows by one CONV_NR-wide weight panel.
 * A 1x1 unpadded conv ("direct") points the patch rows straight into the input; otherwise CONV_MR patches are
 * gathered into the planned scratch (blocked im2col; padded taps hold 0, or the input zero point for int8, whose
 * real value is 0). Scratch: tgrs_conv_scratch_size, mirrored by Conv.scratch_bytes in Python.
 */
#include <string.h>

#include "requant.h"
#include "tgrs_op.h"
#include "window.h"

#define CONV_MR 4 /* output pixels per micro-kernel call: CONV_MR in tigris/ops/conv.py */
#define CONV_NR 8 /* output channels per weight panel: PACK_NR in tigris/ops/conv.py */
#define CONV_MAX_PATCH (1 << 24)

typedef struct conv_geom {
    tgrs_window w;
    int32_t n, h, wd, c;  /* input dims */
    int32_t ow, oc;       /* output width and channels */
    int32_t g, icg, ocg;  /* groups and channels per group */
    int32_t k, npan;      /* patch length and panels per group */
    int32_t in_row0, in_rows, out_row0, out_rows;
    int direct;
} conv_geom;

static void conv_load_window(tgrs_window *w, const int32_t *p, int *ok)
{
    const int32_t v[10] = {p[TGRS_P_CONV_KH], p[TGRS_P_CONV_KW], p[TGRS_P_CONV_SH], p[TGRS_P_CONV_SW],
                           p[TGRS_P_CONV_DH], p[TGRS_P_CONV_DW], p[TGRS_P_CONV_PT], p[TGRS_P_CONV_PL],
                           p[TGRS_P_CONV_PB], p[TGRS_P_CONV_PR]};
    *ok = tgrs_window_load(w, v);
}

static int conv_is_direct(const tgrs_window *w)
{
    return w->kh == 1 && w->kw == 1 && w->pt == 0 && w->pl == 0 && w->pb == 0 && w->pr == 0;
}

uint32_t tgrs_conv_scratch_size(const int32_t *p, const tgrs_tview *in, const tgrs_tview *out)
{
    tgrs_window w;
    int ok;
    int32_t patch = p[TGRS_P_CONV_PATCH];
    (void)out;
    conv_load_window(&w, p, &ok);
    if (!ok || patch <= 0 || patch > CONV_MAX_PATCH || conv_is_direct(&w)) {
        return 0;
    }
    return (uint32_t)CONV_MR * (uint32_t)patch * (in->dtype == TGRS_DT_S8 ? 1u : 4u);
}

/* Validate everything the kernel relies on and derive the geometry. */
static int conv_prepare(const tgrs_op_ctx *ctx, conv_geom *cg, size_t elem)
{
    const int32_t *p = ctx->p;
    const tgrs_tview *in = ctx->in[0];
    const tgrs_tview *out = ctx->out;
    int ok;
    int st;
    uint64_t wbytes;
    conv_load_window(&cg->w, p, &ok);
    if (!ok || p[TGRS_P_CONV_PACK_NR] != CONV_NR || p[TGRS_P_CONV_GROUP] < 1) {
        return TGRS_ERR_PARAM;
    }
    st = tgrs_window_check(&cg->w, in, out);
    if (st != TGRS_OK) {
        return st;
    }
    cg->n = in->dims[0];
    cg->h = in->dims[1];
    cg->wd = in->dims[2];
    cg->c = in->dims[3];
    cg->ow = out->dims[2];
    cg->oc = out->dims[3];
    cg->g = p[TGRS_P_CONV_GROUP];
    if (cg->c % cg->g != 0 || cg->oc % cg->g != 0) {
        return TGRS_ERR_SHAPE;
    }
    cg->icg = cg->c / cg->g;
    cg->ocg = cg->oc / cg->g;
    if ((int64_t)cg->w.kh * cg->w.kw * cg->icg != p[TGRS_P_CONV_PATCH] || p[TGRS_P_CONV_PATCH] > CONV_MAX_PATCH) {
        return TGRS_ERR_PARAM;
    }
    cg->k = p[TGRS_P_CONV_PATCH];
    cg->npan = (cg->ocg + CONV_NR - 1) / CONV_NR;
    wbytes = (uint64_t)cg->g * (uint64_t)cg->npan * (uint64_t)cg->k * CONV_NR * elem;
    if (ctx->c[TGRS_C_CONV_WEIGHT] == NULL || ctx->clen[TGRS_C_CONV_WEIGHT] != wbytes ||
        ctx->c[TGRS_C_CONV_BIAS] == NULL || ctx->clen[TGRS_C_CONV_BIAS] != (uint64_t)cg->oc * 4u) {
        return TGRS_ERR_SHAPE;
    }
    cg->in_row0 = in->row0;
    cg->in_rows = in->rows;
    cg->out_row0 = out->row0;
    cg->out_rows = out->rows;
    cg->direct = conv_is_direct(&cg->w);
    if (!cg->direct && (ctx->scratch == NULL || ctx->scratch_size < tgrs_conv_scratch_size(p, in, out))) {
        return TGRS_ERR_SCRATCH;
    }
    return TGRS_OK;
}

/* Output pixel q of the band (row-major over rows x OW): its output row and column. */
static void conv_pixel(const conv_geom *cg, int64_t q, int32_t *oh, int32_t *ow)
{
    *oh = cg->out_row0 + (int32_t)(q / cg->ow);
    *ow = (int32_t)(q % cg->ow);
}

/* Offset (elements) of input pixel (ih, iw) in a batch image of the band; ih must be inside the band. */
static int64_t conv_in_off(const conv_geom *cg, int32_t ih, int32_t iw)
{
    return ((int64_t)(ih - cg->in_row0) * cg->wd + iw) * cg->c;
}

/* ---------------------------------------------------------------------------------------------------- float32 -- */

static void conv_im2col_f32(const conv_geom *cg, const float *img, int32_t oh, int32_t ow, int32_t g, float *dst)
{
    const tgrs_window *w = &cg->w;
    int32_t i, j, e;
    for (i = 0; i < w->kh; ++i) {
        int32_t ih = oh * w->sh - w->pt + i * w->dh;
        for (j = 0; j < w->kw; ++j) {
            int32_t iw = ow * w->sw - w->pl + j * w->dw;
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

/* acc[i][j] = sum_k a[i][k] * b[k][j] for CONV_MR rows and one CONV_NR panel. */
static void conv_mk_f32(int32_t k, const float *const a[CONV_MR], const float *b, float acc[CONV_MR][CONV_NR])
{
    float c0[CONV_NR], c1[CONV_NR], c2[CONV_NR], c3[CONV_NR];
    const float *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3];
    int32_t kk, j;
    for (j = 0; j < CONV_NR; ++j) {
        c0[j] = 0.0f;
        c1[j] = 0.0f;
        c2[j] = 0.0f;
        c3[j] = 0.0f;
    }
    for (kk = 0; kk < k; ++kk) {
        const float x0 = a0[kk], x1 = a1[kk], x2 = a2[kk], x3 = a3[kk];
        for (j = 0; j < CONV_NR; ++j) {
            c0[j] += x0 * b[j];
            c1[j] += x1 * b[j];
            c2[j] += x2 * b[j];
            c3[j] += x3 * b[j];
        }
        b += CONV_NR;
    }
    for (j = 0; j < CONV_NR; ++j) {
        acc[0][j] = c0[j];
        acc[1][j] = c1[j];
        acc[2][j] = c2[j];
        acc[3][j] = c3[j];
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
    int32_t n, g, i, j, pan;
    int64_t q0;
    for (n = 0; n < cg->n; ++n) {
        const float *img = in + n * in_img;
        float *oimg = out + n * npix * cg->oc;
        for (g = 0; g < cg->g; ++g) {
            for (q0 = 0; q0 < npix; q0 += CONV_MR) {
                const float *a[CONV_MR];
                float *o[CONV_MR];
                const int32_t nv = (npix - q0 < CONV_MR) ? (int32_t)(npix - q0) : CONV_MR;
                for (i = 0; i < CONV_MR; ++i) {
                    int32_t oh, ow;
                    const int64_t q = q0 + (i < nv ? i : nv - 1); /* tail rows repeat the last pixel, unstored */
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
                for (pan = 0; pan < cg->npan; ++pan) {
                    const int32_t oc0 = pan * CONV_NR;
                    const int32_t ncol = (cg->ocg - oc0 < CONV_NR) ? cg->ocg - oc0 : CONV_NR;
                    const float *bs = bias + (int64_t)g * cg->ocg + oc0;
                    conv_mk_f32(cg->k, a, wt + ((int64_t)g * cg->npan + pan) * cg->k * CONV_NR, acc);
                    for (i = 0; i < nv; ++i) {
                        for (j = 0; j < ncol; ++j) {
                            float v = acc[i][j] + bs[j];
                            v = (v < lo) ? lo : v;
                            v = (v > hi) ? hi : v;
                            o[i][oc0 + j] = v;
                        }
                    }
                }
            }
        }
    }
    return TGRS_OK;
}

/* ------------------------------------------------------------------------------------------------------- int8 -- */

static void conv_im2col_s8(const conv_geom *cg, const int8_t *img, int32_t oh, int32_t ow, int32_t g, int8_t zp,
                           int8_t *dst)
{
    const tgrs_window *w = &cg->w;
    int32_t i, j;
    for (i = 0; i < w->kh; ++i) {
        int32_t ih = oh * w->sh - w->pt + i * w->dh;
        for (j = 0; j < w->kw; ++j) {
            int32_t iw = ow * w->sw - w->pl + j * w->dw;
            if (ih >= 0 && ih < cg->h && iw >= 0 && iw < cg->wd) {
                memcpy(dst, img + conv_in_off(cg, ih, iw) + (int64_t)g * cg->icg, (size_t)cg->icg);
            } else {
                memset(dst, zp, (size_t)cg->icg); /* the zero point encodes real 0; the bias fold expects it */
            }
            dst += cg->icg;
        }
    }
}

/*
 * Accumulation is done in uint32 (wrapping, defined behaviour): the lowering proves the true sum fits in int32, so the
 * result is identical, and a corrupted plan cannot trigger signed-overflow undefined behaviour.
 */
static void conv_mk_s8(int32_t k, const int8_t *const a[CONV_MR], const int8_t *b, int32_t acc[CONV_MR][CONV_NR])
{
    uint32_t c0[CONV_NR], c1[CONV_NR], c2[CONV_NR], c3[CONV_NR];
    const int8_t *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3];
    int32_t kk, j;
    for (j = 0; j < CONV_NR; ++j) {
        c0[j] = 0;
        c1[j] = 0;
        c2[j] = 0;
        c3[j] = 0;
    }
    for (kk = 0; kk < k; ++kk) {
        const int32_t x0 = a0[kk], x1 = a1[kk], x2 = a2[kk], x3 = a3[kk];
        for (j = 0; j < CONV_NR; ++j) {
            const int32_t wv = b[j];
            c0[j] += (uint32_t)(x0 * wv);
            c1[j] += (uint32_t)(x1 * wv);
            c2[j] += (uint32_t)(x2 * wv);
            c3[j] += (uint32_t)(x3 * wv);
        }
        b += CONV_NR;
    }
    for (j = 0; j < CONV_NR; ++j) {
        acc[0][j] = (int32_t)c0[j];
        acc[1][j] = (int32_t)c1[j];
        acc[2][j] = (int32_t)c2[j];
        acc[3][j] = (int32_t)c3[j];
    }
}

static int conv_s8(const tgrs_op_ctx *ctx, const conv_geom *cg)
{
    const int8_t *wt = (const int8_t *)ctx->c[TGRS_C_CONV_WEIGHT];
    const int32_t *bias = (const int32_t *)ctx->c[TGRS_C_CONV_BIAS];
    const int32_t *mult = (const int32_t *)ctx->c[TGRS_C_CONV_MULT];
    const int32_t *shift = (const int32_t *)ctx->c[TGRS_C_CONV_SHIFT];
    const int32_t lo = ctx->p[TGRS_P_CONV_ACT_MIN], hi = ctx->p[TGRS_P_CONV_ACT_MAX];
    const int32_t zp_in = ctx->p[TGRS_P_CONV_ZP_IN], zp_out = ctx->p[TGRS_P_CONV_ZP_OUT];
    const int8_t *in = (const int8_t *)ctx->in[0]->data;
    int8_t *out = (int8_t *)ctx->out->data;
    int8_t *scr = (int8_t *)ctx->scratch;
    const int64_t npix = (int64_t)cg->out_rows * cg->ow;
    const int64_t in_img = (int64_t)cg->in_rows * cg->wd * cg->c;
    int32_t acc[CONV_MR][CONV_NR];
    int32_t n, g, i, j, pan;
    int64_t q0;
    if (mult == NULL || shift == NULL || ctx->clen[TGRS_C_CONV_MULT] != (uint64_t)cg->oc * 4u ||
        ctx->clen[TGRS_C_CONV_SHIFT] != (uint64_t)cg->oc * 4u) {
        return TGRS_ERR_SHAPE;
    }
    if (!tgrs_s8_bounds_ok(lo, hi, zp_out) || zp_in < -128 || zp_in > 127 ||
        !tgrs_requant_check(mult, shift, cg->oc)) {
        return TGRS_ERR_PARAM;
    }
    for (n = 0; n < cg->n; ++n) {
        const int8_t *img = in + n * in_img;
        int8_t *oimg = out + n * npix * cg->oc;
        for (g = 0; g < cg->g; ++g) {
            for (q0 = 0; q0 < npix; q0 += CONV_MR) {
                const int8_t *a[CONV_MR];
                int8_t *o[CONV_MR];
                const int32_t nv = (npix - q0 < CONV_MR) ? (int32_t)(npix - q0) : CONV_MR;
                for (i = 0; i < CONV_MR; ++i) {
                    int32_t oh, ow;
                    const int64_t q = q0 + (i < nv ? i : nv - 1);
                    conv_pixel(cg, q, &oh, &ow);
                    o[i] = oimg + q * cg->oc + (int64_t)g * cg->ocg;
                    if (cg->direct) {
                        a[i] = img + conv_in_off(cg, oh * cg->w.sh, ow * cg->w.sw) + (int64_t)g * cg->icg;
                    } else if (i < nv) {
                        conv_im2col_s8(cg, img, oh, ow, g, (int8_t)zp_in, scr + (int64_t)i * cg->k);
                        a[i] = scr + (int64_t)i * cg->k;
                    } else {
                        a[i] = a[nv - 1];
                    }
                }
                for (pan = 0; pan < cg->npan; ++pan) {
                    const int32_t oc0 = pan * CONV_NR;
                    const int32_t ncol = (cg->ocg - oc0 < CONV_NR) ? cg->ocg - oc0 : CONV_NR;
                    const int64_t ch = (int64_t)g * cg->ocg + oc0;
                    conv_mk_s8(cg->k, a, wt + ((int64_t)g * cg->npan + pan) * cg->k * CONV_NR, acc);
                    for (i = 0; i < nv; ++i) {
                        for (j = 0; j < ncol; ++j) {
                            const int32_t v = tgrs_wrap_add(acc[i][j], bias[ch + j]);
                            o[i][oc0 + j] = tgrs_requant_s8(v, mult[ch + j], shift[ch + j], zp_out, lo, hi);
                        }
                    }
                }
            }
        }
    }
    return TGRS_OK;
}

int tgrs_kernel_conv(const tgrs_op_ctx *ctx)
{
    conv_geom cg;
    int st;
    int32_t dt;
    if (ctx->n_in < 1 || ctx->in[0] == NULL || ctx->out == NULL) {
        return TGRS_ERR_SHAPE;
    }
    dt = ctx->in[0]->dtype;
    if (dt != ctx->out->dtype || (dt != TGRS_DT_F32 && dt != TGRS_DT_S8)) {
        return TGRS_ERR_DTYPE;
    }
    st = conv_prepare(ctx, &cg, dt == TGRS_DT_S8 ? 1u : 4u);
    if (st != TGRS_OK) {
        return st;
    }
    if (cg.out_rows == 0) {
        return TGRS_OK;
    }
    return (dt == TGRS_DT_S8) ? conv_s8(ctx, &cg) : conv_f32(ctx, &cg);
}
