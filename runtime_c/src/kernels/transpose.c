/*
 * transpose.c - Transpose: out = transpose(in_view, (P0, P1, P2, P3)) on whole rank-4 views, any 1/2/4-byte type.
 * The logical perm was mapped to view axes by tigris/ops/transpose.py. Untiled (a structural op).
 * int8 with MULT != 0 (input and output encodings differ): every moved code becomes
 * clamp(zo + requant_even(q - zi, MULT, SHIFT), -128, 127) (halves to even), in place in the output.
 */
#include <stddef.h>
#include <stdint.h>

#include "kview.h"
#include "permute.h"
#include "requant.h"
#include "tgrs_op.h"

/* The kind's check: the kernel and the loader (check.c, once per op) call it. */
int tgrs_check_transpose(const tgrs_op_ctx *ctx)
{
    const tgrs_tview *in = ctx->in[0];
    const tgrs_tview *out = ctx->out;
    int32_t perm[4];
    size_t es;
    int j;
    if (ctx->n_in != 1 || !tgrs_kv_sane(in) || !tgrs_kv_sane(out)) {
        return TGRS_ERR_SHAPE;
    }
    for (j = 0; j < 4; ++j) {
        perm[j] = ctx->p[TGRS_P_TRANSPOSE_P0 + j];
    }
    if (!tgrs_perm4_ok(perm)) {
        return TGRS_ERR_PARAM;
    }
    for (j = 0; j < 4; ++j) {
        if (out->dims[j] != in->dims[perm[j]]) {
            return TGRS_ERR_SHAPE;
        }
    }
    es = tgrs_dtype_size(in->dtype);
    if (in->dtype != out->dtype || es == 0u) {
        return TGRS_ERR_DTYPE;
    }
    if (!tgrs_kv_whole(in) || !tgrs_kv_whole(out)) {
        return TGRS_ERR_TILE;
    }
    if (ctx->p[TGRS_P_TRANSPOSE_MULT] != 0) {
        if (in->dtype != TGRS_DT_S8 || ctx->p[TGRS_P_TRANSPOSE_MULT] < 0 ||
            ctx->p[TGRS_P_TRANSPOSE_SHIFT] > TGRS_SHIFT_MAX || in->zero_point < -128 || in->zero_point > 127 ||
            out->zero_point < -128 || out->zero_point > 127) {
            return TGRS_ERR_PARAM;
        }
    }
    return TGRS_OK;
}

int tgrs_kernel_transpose(const tgrs_op_ctx *ctx)
{
    int32_t perm[4];
    int j;
    int st = tgrs_check_transpose(ctx);
    if (st != TGRS_OK) {
        return st;
    }
    for (j = 0; j < 4; ++j) {
        perm[j] = ctx->p[TGRS_P_TRANSPOSE_P0 + j];
    }
    tgrs_permute4(ctx->out->data, ctx->in[0]->data, ctx->in[0]->dims, perm, tgrs_dtype_size(ctx->in[0]->dtype));
    if (ctx->p[TGRS_P_TRANSPOSE_MULT] != 0) {
        int8_t *q = (int8_t *)ctx->out->data;
        const int32_t m = ctx->p[TGRS_P_TRANSPOSE_MULT], s = ctx->p[TGRS_P_TRANSPOSE_SHIFT];
        const int32_t zi = ctx->in[0]->zero_point, zo = ctx->out->zero_point;
        const size_t n = (size_t)ctx->out->dims[0] * (size_t)ctx->out->dims[1] * (size_t)ctx->out->dims[2] *
                         (size_t)ctx->out->dims[3];
        size_t k;
        for (k = 0; k < n; ++k) {
            q[k] = tgrs_requant_even_s8((int32_t)q[k] - zi, m, s, zo, -128, 127);
        }
    }
    return TGRS_OK;
}
