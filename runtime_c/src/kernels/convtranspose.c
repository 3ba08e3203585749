/*
 * convtranspose.c - the convtranspose kind: transposed convolution in 1-D and 2-D, float32 and int8, any group
 * count, strides, dilations, pads and output padding (tigris/ops/convtranspose.py is the other half of this
 * contract).
 *
 * Layouts:
 *   input  NHWC view of a band of rows (a 1-D signal is {N, L, 1, C}), dtype F32 or S8
 *   output NHWC view, same dtype; the kernel computes exactly out->rows rows from out->row0
 *   weight [G][OCg][KH][KW][ICg], float32 or int8 (rearranged from ONNX's [C_in][OCg][KH][KW] at compile time)
 *   bias   float: [OC] float32; int8: [OC] int32 bias followed by [OC] int32 weight zero points
 *   mult, shift [OC] int32 Q0.31 requantization (int8 only; requant.h)
 *
 * Method, output-stationary: output row oh is row oh + pt of the un-cropped result; input row ih reaches it
 * through kernel row kh exactly when ih * sh + kh * dh == oh + pt (likewise for columns). Per output row the kernel
 * lists the (kh, ih) pairs that land, per column the (kw, iw) pairs, then every output channel takes one dot
 * product of ICg contiguous input channels with ICg contiguous weights per landing tap. float accumulates in
 * float32; int8 sums (x - zp_in) * (w - zp_w) exactly (a tap that does not land contributes nothing, so the zero
 * point cannot be folded into the bias) and requantizes per channel. No scratch, except for float16 weights (param
 * WF16, docs/format.md "Float16 weights"): the float kernel first widens the IEEE-half weights exactly into the
 * first bytes of its scratch (tgrs_f16_widen, kcheck.h) and computes with them there.
 *
 * Rows an output band reads (the kind's row map, ConvTranspose.rows_needed): output rows [a, b) read input rows
 * [ceil((a + pt - (KH - 1) * dh) / sh), floor((b - 1 + pt) / sh) + 1), clipped to the input.
 */
#include <stddef.h>
#include <stdint.h>

#include "kcheck.h"
#include "kview.h"
#include "requant.h"
#include "tgrs_op.h"

#define CT_MAX_K 64       /* taps per axis: CT_MAX_K in tigris/ops/convtranspose.py */
#define CT_MAX_ICG 32768  /* |one tap's int8 dot product| <= 32768 * 255 * 255 < 2^31 */
#define CT_MAX_GEOM 4096  /* largest stride, dilation or |pad| a plan may state */
/* Largest input or output extent: with CT_MAX_K taps of dilation <= CT_MAX_GEOM and |pad| <= CT_MAX_GEOM, every row
 * and column index the kernel derives stays inside int32, so the tap search divides in 32 bits (a hardware divide
 * on Cortex-M, not a 64-bit library call). */
#define CT_MAX_DIM (1L << 30)

typedef struct ct_geom {
    int32_t kh, kw, sh, sw, dh, dw, pt, pl, pb, pr;
    int32_t n, h, wd, c, ow, oc, g, icg, ocg;
} ct_geom;

/* floor(a / b) for b > 0, any sign of a. */
static int32_t ct_floor_div(int32_t a, int32_t b)
{
    int32_t q = a / b;
    return (q * b > a) ? q - 1 : q;
}

/* Input rows [*lo, *hi) (unclipped) that output rows [a, b) read; input_rows() in convtranspose.py. */
static void ct_rows(const ct_geom *g, int32_t a, int32_t b, int32_t *lo, int32_t *hi)
{
    *lo = -ct_floor_div(-(a + g->pt - (g->kh - 1) * g->dh), g->sh);
    *hi = ct_floor_div(b - 1 + g->pt, g->sh) + 1;
}

static int64_t ct_out_len(int32_t n, int32_t k, int32_t s, int32_t d, int32_t p0, int32_t p1)
{
    return (int64_t)s * (n - 1) + (int64_t)(k - 1) * d + 1 - p0 - p1;
}

static int ct_setup(const tgrs_op_ctx *ctx, ct_geom *g)
{
    const int32_t *p = ctx->p;
    const tgrs_tview *in = ctx->in[0];
    const tgrs_tview *out = ctx->out;
    const int s8 = out != NULL && out->dtype == TGRS_DT_S8;
    uint64_t wlen;
    int i;
    if (ctx->n_in != 1 || !tgrs_kv_sane(in) || !tgrs_kv_sane(out) || in->dims[0] != out->dims[0] ||
        in->dims[1] > CT_MAX_DIM || in->dims[2] > CT_MAX_DIM || out->dims[1] > CT_MAX_DIM ||
        out->dims[2] > CT_MAX_DIM) {
        return TGRS_ERR_SHAPE;
    }
    if (in->dtype != out->dtype || (out->dtype != TGRS_DT_F32 && !s8)) {
        return TGRS_ERR_DTYPE;
    }
    for (i = 0; i < 6; ++i) {
        if (p[TGRS_P_CONVTRANSPOSE_KH + i] < 1 || p[TGRS_P_CONVTRANSPOSE_KH + i] > CT_MAX_GEOM) {
            return TGRS_ERR_PARAM;
        }
    }
    for (i = 6; i < 10; ++i) {
        if (p[TGRS_P_CONVTRANSPOSE_KH + i] < -CT_MAX_GEOM || p[TGRS_P_CONVTRANSPOSE_KH + i] > CT_MAX_GEOM) {
            return TGRS_ERR_PARAM;
        }
    }
    g->kh = p[TGRS_P_CONVTRANSPOSE_KH];
    g->kw = p[TGRS_P_CONVTRANSPOSE_KW];
    g->sh = p[TGRS_P_CONVTRANSPOSE_SH];
    g->sw = p[TGRS_P_CONVTRANSPOSE_SW];
    g->dh = p[TGRS_P_CONVTRANSPOSE_DH];
    g->dw = p[TGRS_P_CONVTRANSPOSE_DW];
    g->pt = p[TGRS_P_CONVTRANSPOSE_PT];
    g->pl = p[TGRS_P_CONVTRANSPOSE_PL];
    g->pb = p[TGRS_P_CONVTRANSPOSE_PB];
    g->pr = p[TGRS_P_CONVTRANSPOSE_PR];
    g->g = p[TGRS_P_CONVTRANSPOSE_GROUP];
    if (g->kh > CT_MAX_K || g->kw > CT_MAX_K || g->g < 1) {
        return TGRS_ERR_PARAM;
    }
    g->n = in->dims[0];
    g->h = in->dims[1];
    g->wd = in->dims[2];
    g->c = in->dims[3];
    g->ow = out->dims[2];
    g->oc = out->dims[3];
    if (g->c % g->g != 0 || g->oc % g->g != 0 ||
        ct_out_len(g->h, g->kh, g->sh, g->dh, g->pt, g->pb) != out->dims[1] ||
        ct_out_len(g->wd, g->kw, g->sw, g->dw, g->pl, g->pr) != out->dims[2]) {
        return TGRS_ERR_SHAPE;
    }
    g->icg = g->c / g->g;
    g->ocg = g->oc / g->g;
    if (g->icg > CT_MAX_ICG) {
        return TGRS_ERR_PARAM;
    }
    wlen = (uint64_t)g->oc * (uint64_t)g->kh * (uint64_t)g->kw * (uint64_t)g->icg * (s8 ? 1u : 4u);
    if (ctx->clen[TGRS_C_CONVTRANSPOSE_WEIGHT] != wlen ||
        ctx->clen[TGRS_C_CONVTRANSPOSE_BIAS] != (uint64_t)g->oc * (s8 ? 8u : 4u)) {
        return TGRS_ERR_SHAPE;
    }
    if (s8) {
        const int32_t *bz = (const int32_t *)ctx->c[TGRS_C_CONVTRANSPOSE_BIAS];
        int st = tgrs_mac_s8_check(ctx, TGRS_C_CONVTRANSPOSE_MULT, TGRS_C_CONVTRANSPOSE_SHIFT, g->oc,
                                   p[TGRS_P_CONVTRANSPOSE_ACT_MIN], p[TGRS_P_CONVTRANSPOSE_ACT_MAX],
                                   p[TGRS_P_CONVTRANSPOSE_ZP_IN], p[TGRS_P_CONVTRANSPOSE_ZP_OUT],
                                   p[TGRS_P_CONVTRANSPOSE_NUMERICS]);
        if (st != TGRS_OK) {
            return st;
        }
        if (bz != NULL && !tgrs_zp_s8_ok(bz + g->oc, g->oc)) {
            return TGRS_ERR_PARAM;
        }
    }
    if (out->rows > 0) {
        int32_t lo, hi;
        ct_rows(g, out->row0, out->row0 + out->rows, &lo, &hi);
        lo = lo < 0 ? 0 : lo;
        hi = hi > g->h ? g->h : hi;
        if (lo < hi && (lo < in->row0 || hi > in->row0 + in->rows)) {
            return TGRS_ERR_TILE;
        }
    }
    return TGRS_OK;
}

/* The load-time check: a float op is checked with its half weights viewed widened (tgrs_f16_view refuses a bad
 * WF16, an odd length or a short scratch); int8 weights are never halves. */
int tgrs_check_convtranspose(const tgrs_op_ctx *ctx)
{
    ct_geom g;
    tgrs_op_ctx wide;
    const int32_t wf16 = ctx->p[TGRS_P_CONVTRANSPOSE_WF16];
    int st;
    if (ctx->out != NULL && ctx->out->dtype == TGRS_DT_S8) {
        return wf16 != 0 ? TGRS_ERR_PARAM : ct_setup(ctx, &g);
    }
    st = tgrs_f16_view(&wide, ctx, TGRS_C_CONVTRANSPOSE_WEIGHT, wf16);
    return st != TGRS_OK ? st : ct_setup(&wide, &g);
}

/* The (tap, input index) pairs that land on output index o along one axis; returns their count. */
static int32_t ct_taps(int32_t o, int32_t k, int32_t s, int32_t d, int32_t p, int32_t n, int32_t tap[CT_MAX_K],
                       int32_t idx[CT_MAX_K])
{
    int32_t t, m = 0;
    for (t = 0; t < k; ++t) {
        const int32_t v = o + p - t * d;
        if (v >= 0 && v % s == 0 && v / s < n) {
            tap[m] = t;
            idx[m] = v / s;
            ++m;
        }
    }
    return m;
}

static int32_t ct_dot_s8(const int8_t *x, const int8_t *w, int32_t len, int32_t zx, int32_t zw)
{
    int32_t s = 0, i;
    for (i = 0; i < len; ++i) {
        s += ((int32_t)x[i] - zx) * ((int32_t)w[i] - zw);
    }
    return s;
}

static float ct_dot_f32(const float *x, const float *w, int32_t len)
{
    float s = 0.0f;
    int32_t i;
    for (i = 0; i < len; ++i) {
        s += x[i] * w[i];
    }
    return s;
}

static int ct_run(const tgrs_op_ctx *ctx)
{
    const tgrs_tview *in = ctx->in[0];
    tgrs_tview *out = ctx->out;
    const int32_t *p = ctx->p;
    int32_t htap[CT_MAX_K], hidx[CT_MAX_K], wtap[CT_MAX_K], widx[CT_MAX_K];
    int32_t n, r, ow, oc, a, b, nh, nw;
    ct_geom g;
    int st = ct_setup(ctx, &g);
    const int s8 = out->dtype == TGRS_DT_S8;
    const size_t in_row = (size_t)g.wd * (size_t)g.c;
    const size_t taps = (size_t)g.kh * (size_t)g.kw * (size_t)g.icg; /* weights per output channel */
    if (st != TGRS_OK) {
        return st;
    }
    for (n = 0; n < g.n; ++n) {
        for (r = 0; r < out->rows; ++r) {
            nh = ct_taps(out->row0 + r, g.kh, g.sh, g.dh, g.pt, g.h, htap, hidx);
            for (ow = 0; ow < g.ow; ++ow) {
                const size_t opix = (((size_t)n * (size_t)out->rows + (size_t)r) * (size_t)g.ow + (size_t)ow) *
                                    (size_t)g.oc;
                nw = ct_taps(ow, g.kw, g.sw, g.dw, g.pl, g.wd, wtap, widx);
                for (oc = 0; oc < g.oc; ++oc) {
                    const int32_t grp = oc / g.ocg;
                    const size_t cofs = (size_t)grp * (size_t)g.icg;
                    if (s8) {
                        const int8_t *x = (const int8_t *)in->data;
                        const int8_t *w = (const int8_t *)ctx->c[TGRS_C_CONVTRANSPOSE_WEIGHT] + (size_t)oc * taps;
                        const int32_t *bz = (const int32_t *)ctx->c[TGRS_C_CONVTRANSPOSE_BIAS];
                        int64_t acc = bz[oc];
                        for (a = 0; a < nh; ++a) {
                            const size_t rofs = ((size_t)n * (size_t)in->rows + (size_t)(hidx[a] - in->row0)) *
                                                in_row;
                            for (b = 0; b < nw; ++b) {
                                acc += ct_dot_s8(x + rofs + (size_t)widx[b] * (size_t)g.c + cofs,
                                                 w + ((size_t)htap[a] * (size_t)g.kw + (size_t)wtap[b]) *
                                                         (size_t)g.icg,
                                                 g.icg, p[TGRS_P_CONVTRANSPOSE_ZP_IN], bz[g.oc + oc]);
                            }
                        }
                        /* the lowering proves |acc| < 2^31; saturating keeps a hostile plan defined */
                        acc = acc > INT32_MAX ? INT32_MAX : (acc < INT32_MIN ? INT32_MIN : acc);
                        ((int8_t *)out->data)[opix + (size_t)oc] = tgrs_requant_nm_s8(
                            (int32_t)acc, ((const int32_t *)ctx->c[TGRS_C_CONVTRANSPOSE_MULT])[oc],
                            ((const int32_t *)ctx->c[TGRS_C_CONVTRANSPOSE_SHIFT])[oc],
                            p[TGRS_P_CONVTRANSPOSE_ZP_OUT], p[TGRS_P_CONVTRANSPOSE_ACT_MIN],
                            p[TGRS_P_CONVTRANSPOSE_ACT_MAX], p[TGRS_P_CONVTRANSPOSE_NUMERICS]);
                    } else {
                        const float *x = (const float *)in->data;
                        const float *w = (const float *)ctx->c[TGRS_C_CONVTRANSPOSE_WEIGHT] + (size_t)oc * taps;
                        const float lo = tgrs_p_f32(ctx, TGRS_P_CONVTRANSPOSE_FMIN);
                        const float hi = tgrs_p_f32(ctx, TGRS_P_CONVTRANSPOSE_FMAX);
                        float acc = 0.0f;
                        for (a = 0; a < nh; ++a) {
                            const size_t rofs = ((size_t)n * (size_t)in->rows + (size_t)(hidx[a] - in->row0)) *
                                                in_row;
                            for (b = 0; b < nw; ++b) {
                                acc += ct_dot_f32(x + rofs + (size_t)widx[b] * (size_t)g.c + cofs,
                                                  w + ((size_t)htap[a] * (size_t)g.kw + (size_t)wtap[b]) *
                                                          (size_t)g.icg,
                                                  g.icg);
                            }
                        }
                        acc += ((const float *)ctx->c[TGRS_C_CONVTRANSPOSE_BIAS])[oc];
                        acc = acc < lo ? lo : acc;
                        acc = acc > hi ? hi : acc;
                        ((float *)out->data)[opix + (size_t)oc] = acc;
                    }
                }
            }
        }
    }
    return TGRS_OK;
}

/* A float op with float16 weights (WF16 = 1) computes on its weights widened into the scratch (tgrs_f16_widen). */
int tgrs_kernel_convtranspose(const tgrs_op_ctx *ctx)
{
    tgrs_op_ctx wide;
    int st;
    if (ctx->out == NULL) {
        return TGRS_ERR_SHAPE;
    }
    if (ctx->out->dtype == TGRS_DT_S8) {
        return ctx->p[TGRS_P_CONVTRANSPOSE_WF16] != 0 ? TGRS_ERR_PARAM : ct_run(ctx);
    }
    st = tgrs_f16_widen(&wide, ctx, TGRS_C_CONVTRANSPOSE_WEIGHT, ctx->p[TGRS_P_CONVTRANSPOSE_WF16]);
    return st != TGRS_OK ? st : ct_run(&wide);
}
