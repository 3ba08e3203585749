/*
 * cast.c - the cast kind: float32 -> int32 elementwise on a band, y = (int32)x truncating toward zero, NaN -> 0,
 * saturated to the int32 range (a plain conversion of an out-of-range value is undefined in C). tigris/ops/cast.py
 * is the other half of this contract. No parameters, no constants, no scratch.
 */
#include <stddef.h>
#include <stdint.h>

#include "kview.h"
#include "tgrs_op.h"

int tgrs_check_cast(const tgrs_op_ctx *ctx)
{
    const tgrs_tview *in = ctx->in[0];
    const tgrs_tview *out = ctx->out;
    if (ctx->n_in != 1 || !tgrs_kv_sane(in) || !tgrs_kv_sane(out) || !tgrs_kv_same_dims(in, out)) {
        return TGRS_ERR_SHAPE;
    }
    if (in->dtype != TGRS_DT_F32 || out->dtype != TGRS_DT_S32) {
        return TGRS_ERR_DTYPE;
    }
    if (!tgrs_kv_has_rows(in, out->row0, out->row0 + out->rows)) {
        return TGRS_ERR_TILE;
    }
    return TGRS_OK;
}

int tgrs_kernel_cast(const tgrs_op_ctx *ctx)
{
    const tgrs_tview *in = ctx->in[0];
    tgrs_tview *out = ctx->out;
    size_t row = tgrs_kv_row_elems(out), i;
    int32_t n, h;
    int st = tgrs_check_cast(ctx);
    if (st != TGRS_OK) {
        return st;
    }
    for (n = 0; n < out->dims[0]; ++n) {
        for (h = out->row0; h < out->row0 + out->rows; ++h) {
            const float *x = (const float *)in->data + tgrs_kv_row_off(in, n, h);
            int32_t *y = (int32_t *)out->data + tgrs_kv_row_off(out, n, h);
            for (i = 0; i < row; ++i) {
                float v = x[i];
                if (v != v) {
                    v = 0.0f;
                }
                v = v < -2147483648.0f ? -2147483648.0f : (v > 2147483520.0f ? 2147483520.0f : v);
                y[i] = (int32_t)v;
            }
        }
    }
    return TGRS_OK;
}
