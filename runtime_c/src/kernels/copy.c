/*
 * copy.c - a reshape that moves bytes: out = transpose(src, (P0..P3)) where src is the input's bytes read as the
 * contiguous dims S0..S3 (tigris/ops/copy.py decides them; a reshape that moves nothing is an alias and never runs).
 * Untiled (a structural op); any 1/2/4-byte element type.
 */
#include <stddef.h>
#include <stdint.h>

#include "kview.h"
#include "permute.h"
#include "tgrs_op.h"

/* The kind's check: the kernel and the loader (check.c, once per op) call it. */
int tgrs_check_copy(const tgrs_op_ctx *ctx)
{
    const tgrs_tview *in = ctx->in[0];
    const tgrs_tview *out = ctx->out;
    int32_t sd[4], perm[4];
    size_t es, n_src = 1u, n_in, n_out;
    int j;
    if (ctx->n_in != 1 || !tgrs_kv_sane(in) || !tgrs_kv_sane(out)) {
        return TGRS_ERR_SHAPE;
    }
    for (j = 0; j < 4; ++j) {
        sd[j] = ctx->p[TGRS_P_COPY_S0 + j];
        perm[j] = ctx->p[TGRS_P_COPY_P0 + j];
        if (sd[j] < 1) {
            return TGRS_ERR_PARAM;
        }
        n_src *= (size_t)sd[j];
    }
    if (!tgrs_perm4_ok(perm)) {
        return TGRS_ERR_PARAM;
    }
    n_in = (size_t)in->dims[0] * (size_t)in->dims[1] * (size_t)in->dims[2] * (size_t)in->dims[3];
    n_out = (size_t)out->dims[0] * (size_t)out->dims[1] * (size_t)out->dims[2] * (size_t)out->dims[3];
    if (n_src != n_in || n_src != n_out) {
        return TGRS_ERR_SHAPE;
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

int tgrs_kernel_copy(const tgrs_op_ctx *ctx)
{
    int32_t sd[4], perm[4];
    int j;
    int st = tgrs_check_copy(ctx);
    if (st != TGRS_OK) {
        return st;
    }
    for (j = 0; j < 4; ++j) {
        sd[j] = ctx->p[TGRS_P_COPY_S0 + j];
        perm[j] = ctx->p[TGRS_P_COPY_P0 + j];
    }
    tgrs_permute4(ctx->out->data, ctx->in[0]->data, sd, perm, tgrs_dtype_size(ctx->in[0]->dtype));
    return TGRS_OK;
}
