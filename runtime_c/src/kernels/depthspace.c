/*
 * depthspace.c - DepthToSpace (DIR 0) and SpaceToDepth (DIR 1), modes DCR (MODE 0) and CRD (MODE 1), on NHWC views
 * of any 1/2/4-byte type, band-aware along the rows.
 *
 * Defined by tigris/ops/depthspace.py: deep view D = {N, h, w, C*b*b}, shallow view S = {N, h*b, w*b, C},
 * D[n, y, x, k] == S[n, y*b + i, x*b + j, c] with k = (i*b + j)*C + c (DCR) or c*b*b + i*b + j (CRD).
 * int8: y = clamp(zo + requant_even(q - zi, MULT, SHIFT), -128, 127), a byte copy when the encodings agree.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kview.h"
#include "requant.h"
#include "tgrs_op.h"

/* The kind's check: the kernel and the loader (check.c, once per op and tile) call it. */
int tgrs_check_depthspace(const tgrs_op_ctx *ctx)
{
    const tgrs_tview *in = ctx->in[0];
    const tgrs_tview *out = ctx->out;
    const tgrs_tview *deep, *shallow;
    int32_t b = ctx->p[TGRS_P_DEPTHSPACE_BLOCK];
    int32_t dir = ctx->p[TGRS_P_DEPTHSPACE_DIR];
    int32_t mode = ctx->p[TGRS_P_DEPTHSPACE_MODE];
    int32_t lo, hi;
    if (ctx->n_in != 1 || !tgrs_kv_sane(in) || !tgrs_kv_sane(out)) {
        return TGRS_ERR_SHAPE;
    }
    if (b < 1 || b > 4096 || (dir != 0 && dir != 1) || (mode != 0 && mode != 1)) {
        return TGRS_ERR_PARAM;
    }
    if (in->dtype != out->dtype || tgrs_dtype_size(out->dtype) == 0u) {
        return TGRS_ERR_DTYPE;
    }
    deep = dir == 0 ? in : out;
    shallow = dir == 0 ? out : in;
    if (deep->dims[0] != shallow->dims[0] || (int64_t)deep->dims[1] * b != shallow->dims[1] ||
        (int64_t)deep->dims[2] * b != shallow->dims[2] ||
        (int64_t)shallow->dims[3] * b * b != deep->dims[3]) {
        return TGRS_ERR_SHAPE;
    }
    if (out->dtype == TGRS_DT_S8 &&
        (ctx->p[TGRS_P_DEPTHSPACE_MULT] < 0 || ctx->p[TGRS_P_DEPTHSPACE_SHIFT] > TGRS_SHIFT_MAX ||
         in->zero_point < -128 || in->zero_point > 127 || out->zero_point < -128 || out->zero_point > 127)) {
        return TGRS_ERR_PARAM;
    }
    if (out->rows > 0) {
        if (dir == 0) {
            lo = out->row0 / b;
            hi = (out->row0 + out->rows - 1) / b + 1;
        } else {
            lo = out->row0 * b;
            hi = (out->row0 + out->rows) * b;
        }
        if (!tgrs_kv_has_rows(in, lo, hi)) {
            return TGRS_ERR_TILE;
        }
    }
    return TGRS_OK;
}

int tgrs_kernel_depthspace(const tgrs_op_ctx *ctx)
{
    const tgrs_tview *in = ctx->in[0];
    tgrs_tview *out = ctx->out;
    int32_t b = ctx->p[TGRS_P_DEPTHSPACE_BLOCK];
    int32_t dir = ctx->p[TGRS_P_DEPTHSPACE_DIR];
    int32_t crd = ctx->p[TGRS_P_DEPTHSPACE_MODE];
    int32_t mult = ctx->p[TGRS_P_DEPTHSPACE_MULT], shift = ctx->p[TGRS_P_DEPTHSPACE_SHIFT];
    size_t es = tgrs_dtype_size(out->dtype);
    int32_t n, y, x, k, c, i, j, sy, sx, sc;
    int copy;
    int st = tgrs_check_depthspace(ctx);
    if (st != TGRS_OK) {
        return st;
    }
    copy = out->dtype != TGRS_DT_S8 || (mult == (1 << 30) && shift == 1 && in->zero_point == out->zero_point);
    for (n = 0; n < out->dims[0]; ++n) {
        for (y = out->row0; y < out->row0 + out->rows; ++y) {
            for (x = 0; x < out->dims[2]; ++x) {
                char *dst = (char *)out->data + (tgrs_kv_row_off(out, n, y) + (size_t)x * (size_t)out->dims[3]) * es;
                for (k = 0; k < out->dims[3]; ++k) {
                    const char *src;
                    if (dir == 0) { /* out is shallow: (y, x, k = c) from deep (y / b, x / b, k') */
                        c = k;
                        i = y % b;
                        j = x % b;
                        sy = y / b;
                        sx = x / b;
                        sc = crd ? (c * b + i) * b + j : (i * b + j) * out->dims[3] + c;
                    } else { /* out is deep: channel k names (i, j, c) of the shallow input */
                        int32_t cs = in->dims[3];
                        if (crd) {
                            c = k / (b * b);
                            i = (k / b) % b;
                            j = k % b;
                        } else {
                            i = k / (b * cs);
                            j = (k / cs) % b;
                            c = k % cs;
                        }
                        sy = y * b + i;
                        sx = x * b + j;
                        sc = c;
                    }
                    src = (const char *)in->data +
                          (tgrs_kv_row_off(in, n, sy) + (size_t)sx * (size_t)in->dims[3] + (size_t)sc) * es;
                    if (copy) {
                        memcpy(dst + (size_t)k * es, src, es);
                    } else {
                        ((int8_t *)dst)[k] = tgrs_requant_even_s8((int32_t)*(const int8_t *)src - in->zero_point, mult,
                                                                  shift, out->zero_point, -128, 127);
                    }
                }
            }
        }
    }
    return TGRS_OK;
}
