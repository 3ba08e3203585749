/*
 * transpose.c - Transpose: out = transpose(in_view, (P0, P1, P2, P3)) on whole rank-4 views, any 1/2/4-byte type.
 * The logical perm was mapped to view axes by tigris/ops/transpose.py. Untiled (a structural op).
 */
#include <stddef.h>
#include <stdint.h>

#include "kview.h"
#include "permute.h"
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
    return TGRS_OK;
}
