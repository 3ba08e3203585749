/*
 * transpose.c - Transpose: out = transpose(in_view, (P0, P1, P2, P3)) on whole rank-4 views, any 1/2/4-byte type.
 * The logical perm was mapped to view axes by tigris/ops/transpose.py. Untiled, except a permutation that keeps N
 * and the rows (P0 = 0, P1 = 1): it runs on a row band, each row's W and C axes permuted (or kept) on their own.
 * A whole Transpose whose output the plan placed over its input permutes in place (tgrs_permute4_in_place).
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
        if (perm[0] != 0 || perm[1] != 1 || !tgrs_kv_has_rows(in, out->row0, out->row0 + out->rows)) {
            return TGRS_ERR_TILE;
        }
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
    if (tgrs_kv_whole(ctx->in[0]) && tgrs_kv_whole(ctx->out) && ctx->out->data == ctx->in[0]->data) {
        /* the plan put the output over its dying input (a structural Transpose in place) */
        tgrs_permute4_in_place(ctx->out->data, ctx->in[0]->dims, perm, tgrs_dtype_size(ctx->in[0]->dtype));
    } else if (tgrs_kv_whole(ctx->in[0]) && tgrs_kv_whole(ctx->out)) {
        tgrs_permute4(ctx->out->data, ctx->in[0]->data, ctx->in[0]->dims, perm, tgrs_dtype_size(ctx->in[0]->dtype));
    } else {
        /* a row band: rows are independent, so each one is a {1, 1, W, C} permutation of its own */
        const tgrs_tview *in = ctx->in[0];
        const tgrs_tview *out = ctx->out;
        const size_t es = tgrs_dtype_size(in->dtype);
        int32_t row[4];
        int32_t n;
        int32_t h;
        row[0] = 1;
        row[1] = 1;
        row[2] = in->dims[2];
        row[3] = in->dims[3];
        for (n = 0; n < in->dims[0]; ++n) {
            for (h = out->row0; h < out->row0 + out->rows; ++h) {
                tgrs_permute4((uint8_t *)out->data + tgrs_kv_row_off(out, n, h) * es,
                              (const uint8_t *)in->data + tgrs_kv_row_off(in, n, h) * es, row, perm, es);
            }
        }
    }
    if (ctx->p[TGRS_P_TRANSPOSE_MULT] != 0) {
        int8_t *q = (int8_t *)ctx->out->data;
        const int32_t m = ctx->p[TGRS_P_TRANSPOSE_MULT], s = ctx->p[TGRS_P_TRANSPOSE_SHIFT];
        const int32_t zi = ctx->in[0]->zero_point, zo = ctx->out->zero_point;
        const size_t n = (size_t)ctx->out->dims[0] * (size_t)ctx->out->rows * (size_t)ctx->out->dims[2] *
                         (size_t)ctx->out->dims[3];
        size_t k;
        for (k = 0; k < n; ++k) {
            q[k] = tgrs_requant_even_s8((int32_t)q[k] - zi, m, s, zo, -128, 127);
        }
    }
    return TGRS_OK;
}
