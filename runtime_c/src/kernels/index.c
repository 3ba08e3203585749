/*
 * index.c - ArgMax/ArgMin (kind argmax), TopK (topk) and NonMaxSuppression (nms): index ops on small, whole tensors.
 *
 * Defined by tigris/ops/index.py. argmax and topk walk their input through per-logical-axis element strides
 * (D0..D3 logical dims, IS0..IS3 input strides, OS0..OS3 output strides, AXIS the reduced or selected axis):
 *   argmax: the index of the largest (MIN 0) or smallest element along AXIS, the first of equal ones (LAST: the
 *           last); int8 compares codes. Output int32. PIXEL 1: over the channels of an NHWC image into one channel,
 *           pixel by pixel from the views' own dims (row bands and column tiles; D/IS/OS are not read).
 *   topk  : the K best along AXIS, best first, equal values in index order; pick j is the best element strictly
 *           after pick j-1 in that order (no scratch). INDICES 0: the values (float32 or int8 codes), 1: int32.
 *   nms   : ONNX NonMaxSuppression (boxes [B, N, 4], scores [B, C, N], float32 or int8 read as the dequantize
 *           kernel's (float)(q - ZP) * SCALE, BQ/SQ); the selected (batch, class, box)
 *           rows first, the rest of the [rows, 3] int32 output -1. The previously kept boxes of a class are read
 *           back from the output rows, so no scratch either.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kview.h"
#include "tgrs_op.h"

static size_t view_numel(const tgrs_tview *v)
{
    return (size_t)v->dims[0] * (size_t)v->dims[1] * (size_t)v->dims[2] * (size_t)v->dims[3];
}

typedef struct idx_geo {
    int32_t d[4];
    size_t is[4];
    size_t os[4];
    int32_t axis;
} idx_geo;

/* D/IS/OS/AXIS starting at parameter slot `first` of the kind (AXIS, D0..D3, IS0..IS3, OS0..OS3 in that order):
 * every offset the walk makes stays inside the input (numel_in elements) and the output (numel_out), and the
 * logical dims cover the input exactly. `out_axis` is the extent the output has along AXIS (1 when reduced). */
static int idx_geometry(const int32_t *p, idx_geo *g, size_t numel_in, size_t numel_out, int32_t out_axis)
{
    size_t count = 1u, span_in = 0u, span_out = 0u, count_out = 1u;
    int i;
    g->axis = p[0];
    if (g->axis < 0 || g->axis > 3) {
        return TGRS_ERR_PARAM;
    }
    for (i = 0; i < 4; ++i) {
        int32_t d = p[1 + i], s = p[5 + i], o = p[9 + i];
        if (d < 1 || s < 0 || o < 0) {
            return TGRS_ERR_PARAM;
        }
        g->d[i] = d;
        g->is[i] = (size_t)s;
        g->os[i] = (size_t)o;
        count *= (size_t)d;
        span_in += (size_t)(d - 1) * (size_t)s;
        if (i == g->axis) {
            count_out *= (size_t)out_axis;
            span_out += (size_t)(out_axis - 1) * (size_t)o;
        } else {
            count_out *= (size_t)d;
            span_out += (size_t)(d - 1) * (size_t)o;
        }
        if (count > numel_in) {
            return TGRS_ERR_SHAPE;
        }
    }
    if (count != numel_in || count_out != numel_out || span_in >= numel_in || span_out >= numel_out ||
        out_axis < 1 || out_axis > g->d[g->axis]) {
        return TGRS_ERR_SHAPE;
    }
    return TGRS_OK;
}

/* An int8 value as float without a conversion instruction: 1.5 * 2^23 + v is exact in binary32 for |v| < 2^22, so
 * the subtraction gives v exactly. GCC 12 for Helium cores at -Os otherwise if-converts idx_value's two loads into
 * an IT block holding a conditional VCVT, which the assembler rejects on Armv8.1-M. */
static float idx_s8_to_f32(int8_t v)
{
    uint32_t bits = 0x4B400000u + (uint32_t)(int32_t)v;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f - 12582912.0f;
}

static float idx_value(const tgrs_tview *in, size_t i)
{
    return in->dtype == TGRS_DT_F32 ? ((const float *)in->data)[i] : idx_s8_to_f32(((const int8_t *)in->data)[i]);
}

/* ---- argmax ---------------------------------------------------------------------------------------------------- */

static int argmax_setup(const tgrs_op_ctx *ctx, idx_geo *g)
{
    const tgrs_tview *in = ctx->in[0];
    const tgrs_tview *out = ctx->out;
    if (ctx->n_in != 1 || !tgrs_kv_sane(in) || !tgrs_kv_sane(out)) {
        return TGRS_ERR_SHAPE;
    }
    if ((in->dtype != TGRS_DT_F32 && in->dtype != TGRS_DT_S8) || out->dtype != TGRS_DT_S32) {
        return TGRS_ERR_DTYPE;
    }
    if ((ctx->p[TGRS_P_ARGMAX_MIN] & ~1) != 0 || (ctx->p[TGRS_P_ARGMAX_LAST] & ~1) != 0 ||
        (ctx->p[TGRS_P_ARGMAX_PIXEL] & ~1) != 0) {
        return TGRS_ERR_PARAM;
    }
    if (ctx->p[TGRS_P_ARGMAX_PIXEL] != 0) { /* per pixel: the output band's pixels, each over its channels */
        if (ctx->p[TGRS_P_ARGMAX_AXIS] != 1 || out->dims[3] != 1 || in->dims[0] != out->dims[0] ||
            in->dims[1] != out->dims[1] || in->dims[2] != out->dims[2]) {
            return TGRS_ERR_SHAPE;
        }
        return tgrs_kv_has_rows(in, out->row0, out->row0 + out->rows) ? TGRS_OK : TGRS_ERR_TILE;
    }
    if (!tgrs_kv_whole(in) || !tgrs_kv_whole(out)) {
        return TGRS_ERR_TILE;
    }
    return idx_geometry(ctx->p + TGRS_P_ARGMAX_AXIS, g, view_numel(in), view_numel(out), 1);
}

/* PIXEL: every pixel (n, h, w) of the output band takes the index along its input pixel's C channels, compared
 * in channel order as the strided walk compares them. */
static int argmax_pixels(const tgrs_op_ctx *ctx, int is_min, int last)
{
    const tgrs_tview *in = ctx->in[0];
    const tgrs_tview *out = ctx->out;
    int32_t *y = (int32_t *)out->data;
    int32_t n, h, w, c, nc = in->dims[3];
    for (n = 0; n < out->dims[0]; ++n) {
        for (h = out->row0; h < out->row0 + out->rows; ++h) {
            size_t ib = tgrs_kv_row_off(in, n, h), ob = tgrs_kv_row_off(out, n, h);
            for (w = 0; w < out->dims[2]; ++w) {
                size_t px = ib + (size_t)w * (size_t)nc;
                float best = idx_value(in, px);
                int32_t bi = 0;
                for (c = 1; c < nc; ++c) {
                    float v = idx_value(in, px + (size_t)c);
                    int better = is_min ? v < best : v > best;
                    if (better || (last && v == best)) {
                        best = v;
                        bi = c;
                    }
                }
                y[ob + (size_t)w] = bi;
            }
        }
    }
    return TGRS_OK;
}

int tgrs_check_argmax(const tgrs_op_ctx *ctx)
{
    idx_geo g;
    return argmax_setup(ctx, &g);
}

int tgrs_kernel_argmax(const tgrs_op_ctx *ctx)
{
    const tgrs_tview *in = ctx->in[0];
    int32_t *y = (int32_t *)ctx->out->data;
    int is_min = ctx->p[TGRS_P_ARGMAX_MIN] != 0;
    int last = ctx->p[TGRS_P_ARGMAX_LAST] != 0;
    int32_t k[4], r;
    idx_geo g;
    int st = argmax_setup(ctx, &g);
    if (st != TGRS_OK) {
        return st;
    }
    if (ctx->p[TGRS_P_ARGMAX_PIXEL] != 0) {
        return argmax_pixels(ctx, is_min, last);
    }
    for (k[0] = 0; k[0] < (g.axis == 0 ? 1 : g.d[0]); ++k[0]) {
        for (k[1] = 0; k[1] < (g.axis == 1 ? 1 : g.d[1]); ++k[1]) {
            for (k[2] = 0; k[2] < (g.axis == 2 ? 1 : g.d[2]); ++k[2]) {
                for (k[3] = 0; k[3] < (g.axis == 3 ? 1 : g.d[3]); ++k[3]) {
                    size_t ib = (size_t)k[0] * g.is[0] + (size_t)k[1] * g.is[1] + (size_t)k[2] * g.is[2] +
                                (size_t)k[3] * g.is[3];
                    size_t ob = (size_t)k[0] * g.os[0] + (size_t)k[1] * g.os[1] + (size_t)k[2] * g.os[2] +
                                (size_t)k[3] * g.os[3];
                    float best = idx_value(in, ib);
                    int32_t bi = 0;
                    for (r = 1; r < g.d[g.axis]; ++r) {
                        float v = idx_value(in, ib + (size_t)r * g.is[g.axis]);
                        int better = is_min ? v < best : v > best;
                        if (better || (last && v == best)) {
                            best = v;
                            bi = r;
                        }
                    }
                    y[ob] = bi;
                }
            }
        }
    }
    return TGRS_OK;
}

/* ---- topk ------------------------------------------------------------------------------------------------------ */

static int topk_setup(const tgrs_op_ctx *ctx, idx_geo *g)
{
    const tgrs_tview *in = ctx->in[0];
    const tgrs_tview *out = ctx->out;
    int ind = ctx->p[TGRS_P_TOPK_INDICES];
    if (ctx->n_in != 1 || !tgrs_kv_sane(in) || !tgrs_kv_sane(out)) {
        return TGRS_ERR_SHAPE;
    }
    if ((ind & ~1) != 0 || (ctx->p[TGRS_P_TOPK_LARGEST] & ~1) != 0) {
        return TGRS_ERR_PARAM;
    }
    if ((in->dtype != TGRS_DT_F32 && in->dtype != TGRS_DT_S8) ||
        out->dtype != (ind ? TGRS_DT_S32 : in->dtype)) {
        return TGRS_ERR_DTYPE;
    }
    if (!ind && in->dtype == TGRS_DT_S8 && (in->zero_point != out->zero_point || in->scale != out->scale)) {
        return TGRS_ERR_PARAM;
    }
    if (!tgrs_kv_whole(in) || !tgrs_kv_whole(out)) {
        return TGRS_ERR_TILE;
    }
    if (ctx->p[TGRS_P_TOPK_K] < 1) {
        return TGRS_ERR_PARAM;
    }
    return idx_geometry(ctx->p + TGRS_P_TOPK_AXIS, g, view_numel(in), view_numel(out), ctx->p[TGRS_P_TOPK_K]);
}

int tgrs_check_topk(const tgrs_op_ctx *ctx)
{
    idx_geo g;
    return topk_setup(ctx, &g);
}

/* a before b in TopK's order: the better value first, equal values by index */
static int topk_before(float a, int32_t ia, float b, int32_t ib, int largest)
{
    if (a != b) {
        return largest ? a > b : a < b;
    }
    return ia < ib;
}

int tgrs_kernel_topk(const tgrs_op_ctx *ctx)
{
    const tgrs_tview *in = ctx->in[0];
    tgrs_tview *out = ctx->out;
    int ind = ctx->p[TGRS_P_TOPK_INDICES];
    int largest = ctx->p[TGRS_P_TOPK_LARGEST];
    int32_t K = ctx->p[TGRS_P_TOPK_K];
    int32_t k[4], r, j;
    idx_geo g;
    int st = topk_setup(ctx, &g);
    if (st != TGRS_OK) {
        return st;
    }
    for (k[0] = 0; k[0] < (g.axis == 0 ? 1 : g.d[0]); ++k[0]) {
        for (k[1] = 0; k[1] < (g.axis == 1 ? 1 : g.d[1]); ++k[1]) {
            for (k[2] = 0; k[2] < (g.axis == 2 ? 1 : g.d[2]); ++k[2]) {
                for (k[3] = 0; k[3] < (g.axis == 3 ? 1 : g.d[3]); ++k[3]) {
                    size_t ib = (size_t)k[0] * g.is[0] + (size_t)k[1] * g.is[1] + (size_t)k[2] * g.is[2] +
                                (size_t)k[3] * g.is[3];
                    size_t ob = (size_t)k[0] * g.os[0] + (size_t)k[1] * g.os[1] + (size_t)k[2] * g.os[2] +
                                (size_t)k[3] * g.os[3];
                    float pv = 0.0f;
                    int32_t pi = -1;
                    for (j = 0; j < K; ++j) {
                        float bv = 0.0f;
                        int32_t bi = -1;
                        size_t o = ob + (size_t)j * g.os[g.axis];
                        for (r = 0; r < g.d[g.axis]; ++r) {
                            float v = idx_value(in, ib + (size_t)r * g.is[g.axis]);
                            if (pi >= 0 && !topk_before(pv, pi, v, r, largest)) {
                                continue; /* taken by an earlier pick */
                            }
                            if (bi < 0 || topk_before(v, r, bv, bi, largest)) {
                                bv = v;
                                bi = r;
                            }
                        }
                        if (bi < 0) {
                            bi = pi; /* only NaNs left: repeat the last pick */
                        }
                        pv = bv;
                        pi = bi;
                        if (ind) {
                            ((int32_t *)out->data)[o] = bi;
                        } else if (in->dtype == TGRS_DT_F32) {
                            ((float *)out->data)[o] = ((const float *)in->data)[ib + (size_t)bi * g.is[g.axis]];
                        } else {
                            ((int8_t *)out->data)[o] = ((const int8_t *)in->data)[ib + (size_t)bi * g.is[g.axis]];
                        }
                    }
                }
            }
        }
    }
    return TGRS_OK;
}

/* ---- nms ------------------------------------------------------------------------------------------------------- */

static int nms_setup(const tgrs_op_ctx *ctx)
{
    const tgrs_tview *bx = ctx->in[0];
    const tgrs_tview *sc = ctx->in[1];
    const tgrs_tview *out = ctx->out;
    const int32_t *p = ctx->p;
    int32_t B = p[TGRS_P_NMS_B], N = p[TGRS_P_NMS_N], C = p[TGRS_P_NMS_C], M = p[TGRS_P_NMS_MAXPC];
    int32_t C0 = p[TGRS_P_NMS_C0], CT = p[TGRS_P_NMS_CT];
    uint64_t rows;
    if ((ctx->n_in != 2 && ctx->n_in != 3) || !tgrs_kv_sane(bx) || !tgrs_kv_sane(sc) || !tgrs_kv_sane(out)) {
        return TGRS_ERR_SHAPE;
    }
    if (C0 < 0 || CT < 1 || C < 1 || C > CT || C0 > CT - C) {
        return TGRS_ERR_PARAM;
    }
    /* the rows of the classes before: an int32 tensor of the output's dims, whole */
    if (ctx->n_in == 3 && (!tgrs_kv_sane(ctx->in[2]) || !tgrs_kv_same_dims(ctx->in[2], out) ||
                           !tgrs_kv_whole(ctx->in[2]))) {
        return TGRS_ERR_SHAPE;
    }
    if (ctx->n_in == 3 && ctx->in[2]->dtype != TGRS_DT_S32) {
        return TGRS_ERR_DTYPE;
    }
    if ((p[TGRS_P_NMS_BQ] & ~1) != 0 || (p[TGRS_P_NMS_SQ] & ~1) != 0) {
        return TGRS_ERR_PARAM;
    }
    if (bx->dtype != (p[TGRS_P_NMS_BQ] ? TGRS_DT_S8 : TGRS_DT_F32) ||
        sc->dtype != (p[TGRS_P_NMS_SQ] ? TGRS_DT_S8 : TGRS_DT_F32) || out->dtype != TGRS_DT_S32) {
        return TGRS_ERR_DTYPE;
    }
    if ((p[TGRS_P_NMS_BQ] && (p[TGRS_P_NMS_BZP] < -128 || p[TGRS_P_NMS_BZP] > 127)) ||
        (p[TGRS_P_NMS_SQ] && (p[TGRS_P_NMS_SZP] < -128 || p[TGRS_P_NMS_SZP] > 127))) {
        return TGRS_ERR_PARAM;
    }
    if (!tgrs_kv_whole(bx) || !tgrs_kv_whole(sc) || !tgrs_kv_whole(out)) {
        return TGRS_ERR_TILE;
    }
    if (B < 1 || N < 1 || C < 1 || M < 1 || (p[TGRS_P_NMS_CENTER] & ~1) != 0 || (p[TGRS_P_NMS_HAS_THR] & ~1) != 0 ||
        p[TGRS_P_NMS_BS0] < 0 || p[TGRS_P_NMS_BS1] < 0 || p[TGRS_P_NMS_BS2] < 0 || p[TGRS_P_NMS_SS0] < 0 ||
        p[TGRS_P_NMS_SS1] < 0 || p[TGRS_P_NMS_SS2] < 0 || p[TGRS_P_NMS_OS0] < 0 || p[TGRS_P_NMS_OS1] < 0) {
        return TGRS_ERR_PARAM;
    }
    rows = (uint64_t)B * (uint64_t)CT * (uint64_t)(M < N ? M : N);
    /* the views hold exactly [B, N, 4], [B, C, N] and [rows, 3], and every strided offset stays inside them */
    if ((uint64_t)view_numel(bx) != (uint64_t)B * (uint64_t)N * 4u ||
        (uint64_t)view_numel(sc) != (uint64_t)B * (uint64_t)C * (uint64_t)N || (uint64_t)view_numel(out) != rows * 3u ||
        (uint64_t)(B - 1) * (uint64_t)p[TGRS_P_NMS_BS0] + (uint64_t)(N - 1) * (uint64_t)p[TGRS_P_NMS_BS1] +
                3u * (uint64_t)p[TGRS_P_NMS_BS2] >= (uint64_t)view_numel(bx) ||
        (uint64_t)(B - 1) * (uint64_t)p[TGRS_P_NMS_SS0] + (uint64_t)(C - 1) * (uint64_t)p[TGRS_P_NMS_SS1] +
                (uint64_t)(N - 1) * (uint64_t)p[TGRS_P_NMS_SS2] >= (uint64_t)view_numel(sc) ||
        (rows - 1u) * (uint64_t)p[TGRS_P_NMS_OS0] + 2u * (uint64_t)p[TGRS_P_NMS_OS1] >= rows * 3u) {
        return TGRS_ERR_SHAPE;
    }
    return TGRS_OK;
}

int tgrs_check_nms(const tgrs_op_ctx *ctx)
{
    return nms_setup(ctx);
}

static float fmin2(float a, float b)
{
    return a <= b ? a : b;
}

static float fmax2(float a, float b)
{
    return a >= b ? a : b;
}

/* ONNX's suppression test: IoU of boxes a and b above thr, every step one float32 operation */
static int nms_iou_above(const float *a, const float *b, int center, float thr)
{
    float ax0, ax1, ay0, ay1, bx0, bx1, by0, by1, ix0, ix1, iy0, iy1, inter, area_a, area_b, uni;
    if (!center) {
        ax0 = fmin2(a[1], a[3]);
        ax1 = fmax2(a[1], a[3]);
        bx0 = fmin2(b[1], b[3]);
        bx1 = fmax2(b[1], b[3]);
        ay0 = fmin2(a[0], a[2]);
        ay1 = fmax2(a[0], a[2]);
        by0 = fmin2(b[0], b[2]);
        by1 = fmax2(b[0], b[2]);
    } else {
        ax0 = a[0] - a[2] / 2.0f;
        ax1 = a[0] + a[2] / 2.0f;
        bx0 = b[0] - b[2] / 2.0f;
        bx1 = b[0] + b[2] / 2.0f;
        ay0 = a[1] - a[3] / 2.0f;
        ay1 = a[1] + a[3] / 2.0f;
        by0 = b[1] - b[3] / 2.0f;
        by1 = b[1] + b[3] / 2.0f;
    }
    ix0 = fmax2(ax0, bx0);
    ix1 = fmin2(ax1, bx1);
    if (ix1 <= ix0) {
        return 0;
    }
    iy0 = fmax2(ay0, by0);
    iy1 = fmin2(ay1, by1);
    if (iy1 <= iy0) {
        return 0;
    }
    inter = (ix1 - ix0) * (iy1 - iy0);
    if (inter <= 0.0f) {
        return 0;
    }
    area_a = (ax1 - ax0) * (ay1 - ay0);
    area_b = (bx1 - bx0) * (by1 - by0);
    uni = (area_a + area_b) - inter;
    if (area_a <= 0.0f || area_b <= 0.0f || uni <= 0.0f) {
        return 0;
    }
    return inter / uni > thr;
}

/* Element i of input `which` (0 boxes, 1 scores) as float32: an int8 code q as (float)(q - ZP) * SCALE, the
 * dequantize kernel's value (quant.c). */
static float nms_value(const tgrs_op_ctx *ctx, int which, size_t i)
{
    const tgrs_tview *v = ctx->in[which];
    int32_t zp;
    if (v->dtype == TGRS_DT_F32) {
        return ((const float *)v->data)[i];
    }
    zp = ctx->p[which == 0 ? TGRS_P_NMS_BZP : TGRS_P_NMS_SZP];
    return (float)((int32_t)((const int8_t *)v->data)[i] - zp) *
           tgrs_p_f32(ctx, which == 0 ? TGRS_P_NMS_BSCALE : TGRS_P_NMS_SSCALE);
}

static void nms_box(const tgrs_op_ctx *ctx, int32_t b, int32_t i, float *box)
{
    size_t base = (size_t)b * (size_t)ctx->p[TGRS_P_NMS_BS0] + (size_t)i * (size_t)ctx->p[TGRS_P_NMS_BS1];
    int k;
    for (k = 0; k < 4; ++k) {
        box[k] = nms_value(ctx, 0, base + (size_t)k * (size_t)ctx->p[TGRS_P_NMS_BS2]);
    }
}

int tgrs_kernel_nms(const tgrs_op_ctx *ctx)
{
    const int32_t *p = ctx->p;
    int32_t *y = (int32_t *)ctx->out->data;
    int32_t B = p[TGRS_P_NMS_B], N = p[TGRS_P_NMS_N], C = p[TGRS_P_NMS_C], M = p[TGRS_P_NMS_MAXPC];
    int center = p[TGRS_P_NMS_CENTER], has_thr = p[TGRS_P_NMS_HAS_THR];
    float iou = tgrs_p_f32(ctx, TGRS_P_NMS_IOU), thr = tgrs_p_f32(ctx, TGRS_P_NMS_THR);
    size_t os0 = (size_t)p[TGRS_P_NMS_OS0], os1 = (size_t)p[TGRS_P_NMS_OS1];
    size_t rows, row = 0u, r;
    int32_t b, c, i;
    int st = nms_setup(ctx);
    if (st != TGRS_OK) {
        return st;
    }
    rows = (size_t)B * (size_t)p[TGRS_P_NMS_CT] * (size_t)(M < N ? M : N);
    if (ctx->n_in == 3) {
        /* the classes before: their rows stay (copied unless in place), this op's follow their valid ones */
        const int32_t *prev = (const int32_t *)ctx->in[2]->data;
        if (prev != y) {
            memcpy(y, prev, rows * 3u * sizeof(int32_t));
        }
        while (row < rows && (y[row * os0] != -1 || y[row * os0 + os1] != -1 || y[row * os0 + 2u * os1] != -1)) {
            ++row;
        }
    }
    for (r = row; r < rows; ++r) {
        y[r * os0] = y[r * os0 + os1] = y[r * os0 + 2u * os1] = -1;
    }
    for (b = 0; b < B; ++b) {
        for (c = 0; c < C; ++c) {
            size_t sb = (size_t)b * (size_t)p[TGRS_P_NMS_SS0] + (size_t)c * (size_t)p[TGRS_P_NMS_SS1];
            size_t first = row;
            int32_t kept = 0, pi = -1;
            float ps = 0.0f;
            while (kept < M && row < rows) {
                int32_t bi = -1;
                float bs = 0.0f, cand[4], other[4];
                int drop = 0;
                size_t q;
                /* the next candidate: the best score strictly after the previous one (equal scores by index) */
                for (i = 0; i < N; ++i) {
                    float v = nms_value(ctx, 1, sb + (size_t)i * (size_t)p[TGRS_P_NMS_SS2]);
                    if (v != v || (has_thr && !(v > thr))) {
                        continue;
                    }
                    if (pi >= 0 && !(v < ps || (v == ps && i > pi))) {
                        continue;
                    }
                    if (bi < 0 || v > bs) {
                        bs = v;
                        bi = i;
                    }
                }
                if (bi < 0) {
                    break;
                }
                ps = bs;
                pi = bi;
                nms_box(ctx, b, bi, cand);
                for (q = first; q < row && !drop; ++q) {
                    nms_box(ctx, b, y[q * os0 + 2u * os1], other);
                    drop = nms_iou_above(cand, other, center, iou);
                }
                if (!drop) {
                    y[row * os0] = b;
                    y[row * os0 + os1] = c + p[TGRS_P_NMS_C0];
                    y[row * os0 + 2u * os1] = bi;
                    ++row;
                    ++kept;
                }
            }
        }
    }
    return TGRS_OK;
}
