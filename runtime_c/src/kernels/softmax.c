/*
 * softmax.c - Softmax along one physical axis (AXIS 0..3), float32 and int8.
 *
 * Defined by tigris/ops/softmax.py and docs/numerics.md ("Softmax"):
 *   float: e = expf(x - max), y = e / sum(e) (sum in line order)
 *   int8 : d = max(q) - q; E = EXP[d] (int32 table); S = sum(E) (int64);
 *          y = clamp(zo + round(E * MULT / (S << (31 - SHIFT))), -128, 127), one rounding, halves to even
 * Lines run along AXIS with that axis's stride; along the row axis the views must be whole, otherwise the input
 * band must hold the output's rows.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "kview.h"
#include "requant.h"
#include "tgrs_op.h"

/* Element offset of (n, h, w, c) in a band view (h global). */
static size_t sm_off(const tgrs_tview *v, int32_t n, int32_t h, int32_t w, int32_t c)
{
    return tgrs_kv_row_off(v, n, h) + (size_t)w * (size_t)v->dims[3] + (size_t)c;
}

int tgrs_kernel_softmax(const tgrs_op_ctx *ctx)
{
    const tgrs_tview *in = ctx->in[0];
    tgrs_tview *out = ctx->out;
    int32_t axis = ctx->p[TGRS_P_SOFTMAX_AXIS];
    int32_t cnt[4], idx[4];
    int32_t len, k;
    size_t step_in, step_out;
    const int32_t *table = NULL;
    int32_t mult = ctx->p[TGRS_P_SOFTMAX_MULT];
    int32_t shift = ctx->p[TGRS_P_SOFTMAX_SHIFT];
    int is_f32;
    if (ctx->n_in != 1 || !tgrs_kv_sane(in) || !tgrs_kv_sane(out) || !tgrs_kv_same_dims(in, out)) {
        return TGRS_ERR_SHAPE;
    }
    if (axis < 0 || axis > 3) {
        return TGRS_ERR_PARAM;
    }
    if (in->dtype != out->dtype) {
        return TGRS_ERR_DTYPE;
    }
    if (axis == 1 ? (!tgrs_kv_whole(in) || !tgrs_kv_whole(out))
                  : !tgrs_kv_has_rows(in, out->row0, out->row0 + out->rows)) {
        return TGRS_ERR_TILE;
    }
    is_f32 = out->dtype == TGRS_DT_F32;
    if (!is_f32) {
        if (out->dtype != TGRS_DT_S8) {
            return TGRS_ERR_DTYPE;
        }
        if (ctx->c[TGRS_C_SOFTMAX_EXP] == NULL || ctx->clen[TGRS_C_SOFTMAX_EXP] != 256u * 4u || mult < 0 ||
            shift > TGRS_SHIFT_MAX || shift < -31 || out->zero_point < -128 || out->zero_point > 127) {
            return TGRS_ERR_PARAM;
        }
        table = (const int32_t *)ctx->c[TGRS_C_SOFTMAX_EXP];
        {
            int32_t tmax = 0;
            int32_t n = 31 - shift;
            for (k = 0; k < 256; ++k) {
                if (table[k] < 0 || table[k] > (1 << 20)) {
                    return TGRS_ERR_PARAM; /* the numerator bound of the module doc relies on E <= 2^20 */
                }
                tmax = table[k] > tmax ? table[k] : tmax;
            }
            /* S << (31 - shift) must stay below 2^62, and S <= len * max(E). */
            if (n > 62 || (uint64_t)out->dims[axis] * (uint64_t)tmax >= ((uint64_t)1 << (62 - n))) {
                return TGRS_ERR_PARAM;
            }
        }
    }
    cnt[0] = out->dims[0];
    cnt[1] = out->rows;
    cnt[2] = out->dims[2];
    cnt[3] = out->dims[3];
    len = out->dims[axis];
    cnt[axis] = 1;
    step_in = axis == 3 ? 1u : axis == 2 ? (size_t)in->dims[3]
              : axis == 1 ? tgrs_kv_row_elems(in) : (size_t)in->rows * tgrs_kv_row_elems(in);
    step_out = axis == 3 ? 1u : axis == 2 ? (size_t)out->dims[3]
               : axis == 1 ? tgrs_kv_row_elems(out) : (size_t)out->rows * tgrs_kv_row_elems(out);
    for (idx[0] = 0; idx[0] < cnt[0]; ++idx[0]) {
        for (idx[1] = 0; idx[1] < cnt[1]; ++idx[1]) {
            for (idx[2] = 0; idx[2] < cnt[2]; ++idx[2]) {
                for (idx[3] = 0; idx[3] < cnt[3]; ++idx[3]) {
                    int32_t h = out->row0 + idx[1];
                    size_t bi = sm_off(in, idx[0], h, idx[2], idx[3]);
                    size_t bo = sm_off(out, idx[0], h, idx[2], idx[3]);
                    if (is_f32) {
                        const float *x = (const float *)in->data + bi;
                        float *y = (float *)out->data + bo;
                        float m = x[0];
                        float s = 0.0f;
                        for (k = 1; k < len; ++k) {
                            m = x[(size_t)k * step_in] > m ? x[(size_t)k * step_in] : m;
                        }
                        for (k = 0; k < len; ++k) {
                            float e = expf(x[(size_t)k * step_in] - m);
                            y[(size_t)k * step_out] = e;
                            s += e;
                        }
                        for (k = 0; k < len; ++k) {
                            y[(size_t)k * step_out] = y[(size_t)k * step_out] / s;
                        }
                    } else {
                        const int8_t *x = (const int8_t *)in->data + bi;
                        int8_t *y = (int8_t *)out->data + bo;
                        int32_t m = x[0];
                        int64_t s = 0;
                        int64_t den;
                        for (k = 1; k < len; ++k) {
                            m = (int32_t)x[(size_t)k * step_in] > m ? (int32_t)x[(size_t)k * step_in] : m;
                        }
                        for (k = 0; k < len; ++k) {
                            s += table[m - (int32_t)x[(size_t)k * step_in]];
                        }
                        den = s * ((int64_t)1 << (31 - shift)); /* s >= E[0] > 0 for the max element */
                        for (k = 0; k < len; ++k) {
                            int64_t e = table[m - (int32_t)x[(size_t)k * step_in]];
                            int64_t q = tgrs_div_round_half_even(e * (int64_t)mult, den > 0 ? den : 1);
                            y[(size_t)k * step_out] = (int8_t)tgrs_clamp64(q + out->zero_point, -128, 127);
                        }
                    }
                }
            }
        }
    }
    return TGRS_OK;
}
