/*
 * fc.c - the fc kind: fully connected, y[n][oc] = act(bias[oc] + sum_k x[n][k] * W[oc * K + k]), float32 and int8.
 *
 * Layouts (tigris/ops/fc.py is the other half of this contract):
 *   input  any untiled view whose element count is a multiple of K (param k): N = count / K rows of K features
 *   output untiled view of N * OC elements, same dtype
 *   weight [OC][K]; bias [OC] float32, or int32 with zp_in * sum_k(w) already subtracted (int8); int8 weights may
 *          be arranged FC_ROWS4 for the Cortex-M4 (param ARRANGE, docs/format.md "Weight arrangements": rows in
 *          blocks of four, each block's groups of four features interleaved, fc_dot4r_s8_plain says where each sits)
 *   mult, shift [OC] int32 Q0.31 requantization (int8 only)
 *
 * Method: float, one dot product per output, with FC_LANES independent partial sums (a fixed summation order, so
 * results do not depend on the compiler, and the lanes vectorize without reassociating float adds), two outputs per
 * pass through the target's lanes (target.h TGRS_FC_LANES_F32: fc_fpu.h, fc_mvef.h). int8, the dot
 * products of two outputs at once through the target's loop (target.h: TGRS_FC_DOT2_S8; the DSP and Helium forms in
 * fc_dsp.h and fc_mve.h), exact int32 sums in any order. No scratch.
 */

#include "kcheck.h"
#include "requant.h"
#include "target.h"
#include "tgrs_op.h"
#include "variants.h"
#include "vec.h"

#define FC_LANES 8
#define FC_KC 16        /* int8 dot-product chunk */
#define FC_BLOCK 32768  /* int8 products summed in plain int32 before a wrapping add (|block sum| <= 2^29) */

typedef struct fc_geom {
    int32_t n, k, oc;
} fc_geom;

static uint64_t fc_count(const tgrs_tview *v)
{
    return (uint64_t)v->dims[0] * (uint64_t)v->dims[1] * (uint64_t)v->dims[2] * (uint64_t)v->dims[3];
}

static int fc_prepare(const tgrs_op_ctx *ctx, fc_geom *fg, size_t elem)
{
    const tgrs_tview *in = ctx->in[0];
    const tgrs_tview *out = ctx->out;
    const int32_t k = ctx->p[TGRS_P_FC_K];
    uint64_t nin, nout, oc;
    if (k <= 0) {
        return TGRS_ERR_PARAM;
    }
    if (in->dims[0] <= 0 || in->dims[1] <= 0 || in->dims[2] <= 0 || in->dims[3] <= 0 || out->dims[0] <= 0 ||
        out->dims[1] <= 0 || out->dims[2] <= 0 || out->dims[3] <= 0) {
        return TGRS_ERR_SHAPE;
    }
    /* fc reads and writes whole tensors: a band view would be a planning error */
    if (in->row0 != 0 || in->rows != in->dims[1] || out->row0 != 0 || out->rows != out->dims[1]) {
        return TGRS_ERR_TILE;
    }
    nin = fc_count(in);
    nout = fc_count(out);
    if (ctx->clen[TGRS_C_FC_WEIGHT] % ((uint64_t)k * elem) != 0) {
        return TGRS_ERR_SHAPE;
    }
    oc = ctx->clen[TGRS_C_FC_WEIGHT] / ((uint64_t)k * elem);
    if (oc == 0 || nin % (uint64_t)k != 0 || nout != nin / (uint64_t)k * oc || nout > INT32_MAX ||
        ctx->clen[TGRS_C_FC_BIAS] != oc * 4u * (elem == 1u && ctx->p[TGRS_P_FC_WZP] == 1 ? 2u : 1u)) { /* oc > 0 */
        return TGRS_ERR_SHAPE;
    }
    fg->k = k;
    fg->oc = (int32_t)oc;
    fg->n = (int32_t)(nin / (uint64_t)k);
    return TGRS_OK;
}

/*
 * The float dot product's FC_LANES partial sums over the whole chunks of FC_LANES values: lane[r][j] = sum over
 * chunks i of x[i + j] * w_r[i + j], in order of i, for one weight row w_0 = w, and w_1 = w + k when two (the second
 * row shares every input load on the Arm variants, target.h TGRS_FC_LANES_F32: fc_fpu.h, fc_mvef.h). Returns the
 * number of values the chunks covered; fc_dot_finish adds the rest.
 */
#if TGRS_FISA != TGRS_FISA_FPU && TGRS_FISA != TGRS_FISA_MVEF
static int32_t fc_lanes_f32(const float *x, const float *w, int32_t k, int two, float lane[2][FC_LANES])
{
    int32_t i, j, r;
    for (r = 0; r < 2; ++r) {
        const float *wr = w + (two ? (int64_t)r * k : 0);
        for (j = 0; j < FC_LANES; ++j) {
            lane[r][j] = 0.0f;
        }
        for (i = 0; i + FC_LANES <= k; i += FC_LANES) {
            for (j = 0; j < FC_LANES; ++j) {
                lane[r][j] += x[i + j] * wr[i + j];
            }
        }
    }
    return k - k % FC_LANES;
}
#endif

#include "fc_fpu.h" /* fc_lanes_f32_fpu */
#include "fc_mvef.h" /* fc_lanes_f32_mvef */

/* The dot product from its lanes: the tail [i0, k) into lane 0, in order, then the lanes in a fixed tree. */
static float fc_dot_finish(float *lane, const float *x, const float *w, int32_t i0, int32_t k)
{
    int32_t i;
    for (i = i0; i < k; ++i) {
        lane[0] += x[i] * w[i];
    }
    return ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
}

#if !(TGRS_ISA == TGRS_ISA_DSP || TGRS_HAVE_MVE) /* those targets have their own loops (fc_dsp.h, fc_mve.h) */

/* int8 is a character type and may alias anything: restrict lets the widening copy vectorize. */
static void fc_widen(const int8_t *restrict src, int16_t *restrict dst)
{
    int32_t t;
    for (t = 0; t < FC_KC; ++t) {
        dst[t] = src[t];
    }
}

/*
 * Integer dot product. Fixed-size int16 chunks are the pattern compilers turn into multiply-add-pairs. Each block of
 * at most FC_BLOCK products sums to at most 2^29 in magnitude, so plain int32 arithmetic cannot overflow whatever the
 * plan holds; blocks are combined with a wrapping add (the lowering proved the true total fits in int32).
 */
static int32_t fc_dot_s8(const int8_t *x, const int8_t *w, int32_t k)
{
    int32_t total = 0;
    int32_t b0;
    for (b0 = 0; b0 < k; b0 += FC_BLOCK) {
        const int32_t end = (k - b0 < FC_BLOCK) ? k : b0 + FC_BLOCK;
        int32_t s = 0, i = b0, t;
        for (; TGRS_VECTOR_CHUNKS && i + FC_KC <= end; i += FC_KC) { /* vec.h */
            int16_t a[FC_KC], c[FC_KC];
            fc_widen(x + i, a);
            fc_widen(w + i, c);
            for (t = 0; t < FC_KC; ++t) {
                s += a[t] * c[t];
            }
        }
        for (; i < end; ++i) {
            s += x[i] * w[i];
        }
        total = tgrs_wrap_add(total, s);
    }
    return total;
}

#include "fc_avx2.h" /* fc_dot_s8_avx2 */

/* The plain form of target.h's TGRS_FC_DOT2_S8, one row at a time through TGRS_FC_DOT_S8 (the plain loop, or the
 * host's AVX2 one): s[0] = x . w[0, k), and s[1] = x . w[k, 2k) when two. */
static void fc_dot2_s8_plain(const int8_t *x, const int8_t *w, int32_t k, int two, int32_t s[2])
{
    s[0] = TGRS_FC_DOT_S8(x, w, k);
    s[1] = two ? TGRS_FC_DOT_S8(x, w + k, k) : 0;
}

#endif

#if TGRS_ISA != TGRS_ISA_DSP /* the Cortex-M4 build reads FC_ROWS4 with its own loop (fc_dsp.h) */
/*
 * The plain reader of FC_ROWS4 weights (a host build reads them for `tigris verify --target cortex-m4`; other
 * builds refer to it only in code their TGRS_READS_FC_ROWS4 removes): s[r] = x . row r of the block at w, whose
 * K4 = K & ~3 features come as groups of 16 bytes (the four bytes of row 0, of row 1, 2, 3), then each row's
 * K - K4 tail features in row order. Wrapping int32 sums, like every variant's.
 */
static void fc_dot4r_s8_plain(const int8_t *x, const int8_t *w, int32_t k, int32_t s[4])
{
    const int32_t k4 = k & ~3, t = k - k4;
    int32_t g, r, e;
    for (r = 0; r < 4; ++r) {
        int32_t a = 0;
        for (g = 0; g < k4; g += 4) {
            for (e = 0; e < 4; ++e) {
                a = tgrs_wrap_add(a, (int32_t)x[g + e] * (int32_t)w[4 * g + 4 * r + e]);
            }
        }
        for (e = 0; e < t; ++e) {
            a = tgrs_wrap_add(a, (int32_t)x[k4 + e] * (int32_t)w[4 * k4 + r * t + e]);
        }
        s[r] = a;
    }
}
#endif

#include "fc_dsp.h" /* fc_dot2_s8_dsp, fc_dot4r_s8_dsp */
#include "fc_mve.h" /* fc_dot2_s8_mve */

static int fc_f32(const tgrs_op_ctx *ctx, const fc_geom *fg)
{
    const float *wt = (const float *)ctx->c[TGRS_C_FC_WEIGHT];
    const float *bias = (const float *)ctx->c[TGRS_C_FC_BIAS];
    const float lo = tgrs_p_f32(ctx, TGRS_P_FC_FMIN);
    const float hi = tgrs_p_f32(ctx, TGRS_P_FC_FMAX);
    const float *in = (const float *)ctx->in[0]->data;
    float *out = (float *)ctx->out->data;
    float lane[2][FC_LANES];
    int32_t n, o, r;
    for (n = 0; n < fg->n; ++n) {
        const float *x = in + (int64_t)n * fg->k;
        for (o = 0; o < fg->oc; o += 2) {
            const int two = o + 1 < fg->oc;
            const float *w = wt + (int64_t)o * fg->k;
            const int32_t i0 = TGRS_FC_LANES_F32(x, w, fg->k, two, lane);
            for (r = 0; r <= two; ++r) {
                float v = fc_dot_finish(lane[r], x, w + (int64_t)r * fg->k, i0, fg->k) + bias[o + r];
                v = (v < lo) ? lo : v;
                v = (v > hi) ? hi : v;
                out[(int64_t)n * fg->oc + o + r] = v;
            }
        }
    }
    return TGRS_OK;
}

/*
 * Weight zero points (param WZP = 1; the bias const holds [bias, zp_w], docs/numerics.md): acc = bias + sum (x -
 * zp_in) * (w - zp_w), each factor in [-255, 255], accumulated in uint32 (wrapping is defined; the lowering proved
 * the true sum fits). A plain loop: only legacy uint8-weight models take it.
 */
static int fc_s8_wzp(const tgrs_op_ctx *ctx, const fc_geom *fg)
{
    const int8_t *wt = (const int8_t *)ctx->c[TGRS_C_FC_WEIGHT];
    const int32_t *bias = (const int32_t *)ctx->c[TGRS_C_FC_BIAS];
    const int32_t *zw = bias + fg->oc;
    const int32_t *mult = (const int32_t *)ctx->c[TGRS_C_FC_MULT];
    const int32_t *shift = (const int32_t *)ctx->c[TGRS_C_FC_SHIFT];
    const int32_t lo = ctx->p[TGRS_P_FC_ACT_MIN], hi = ctx->p[TGRS_P_FC_ACT_MAX];
    const int32_t zp_in = ctx->p[TGRS_P_FC_ZP_IN], zp_out = ctx->p[TGRS_P_FC_ZP_OUT];
    const int32_t nm = ctx->p[TGRS_P_FC_NUMERICS];
    const int8_t *in = (const int8_t *)ctx->in[0]->data;
    int8_t *out = (int8_t *)ctx->out->data;
    int32_t n, o, k;
    if (!tgrs_zp_s8_ok(zw, fg->oc)) {
        return TGRS_ERR_PARAM;
    }
    for (n = 0; n < fg->n; ++n) {
        const int8_t *x = in + (int64_t)n * fg->k;
        for (o = 0; o < fg->oc; ++o) {
            const int8_t *w = wt + (int64_t)o * fg->k;
            uint32_t acc = (uint32_t)bias[o];
            for (k = 0; k < fg->k; ++k) {
                acc += (uint32_t)(((int32_t)x[k] - zp_in) * ((int32_t)w[k] - zw[o]));
            }
            out[(int64_t)n * fg->oc + o] = tgrs_requant_nm_s8((int32_t)acc, mult[o], shift[o], zp_out, lo, hi, nm);
        }
    }
    return TGRS_OK;
}

/* The op's weight arrangement (param ARRANGE): TGRS_OK for the plain layout and for FC_ROWS4 on an int8 op without
 * weight zero points in a build that reads it; TGRS_ERR_TARGET for FC_ROWS4 in a build that does not, TGRS_ERR_PARAM
 * for anything else. */
static int fc_arrange_check(const tgrs_op_ctx *ctx, int int8)
{
    const int32_t a = ctx->p[TGRS_P_FC_ARRANGE];
    if (a == (int32_t)TGRS_ARRANGE_PLAIN) {
        return TGRS_OK;
    }
    if (a != (int32_t)TGRS_ARRANGE_FC_ROWS4 || !int8 || ctx->p[TGRS_P_FC_WZP] != 0) {
        return TGRS_ERR_PARAM;
    }
    return TGRS_READS_FC_ROWS4 ? TGRS_OK : TGRS_ERR_TARGET;
}

/* The weight-zero-point path an entry point links: fc_s8_wzp, or NULL in tgrs_fc_s8_sym. */
typedef int (*fc_wzp_fn)(const tgrs_op_ctx *ctx, const fc_geom *fg);

static int fc_s8(const tgrs_op_ctx *ctx, const fc_geom *fg, fc_wzp_fn wzp)
{
    const int8_t *wt = (const int8_t *)ctx->c[TGRS_C_FC_WEIGHT];
    const int32_t *bias = (const int32_t *)ctx->c[TGRS_C_FC_BIAS];
    const int32_t *mult = (const int32_t *)ctx->c[TGRS_C_FC_MULT];
    const int32_t *shift = (const int32_t *)ctx->c[TGRS_C_FC_SHIFT];
    const int32_t lo = ctx->p[TGRS_P_FC_ACT_MIN], hi = ctx->p[TGRS_P_FC_ACT_MAX];
    const int32_t zp_in = ctx->p[TGRS_P_FC_ZP_IN], zp_out = ctx->p[TGRS_P_FC_ZP_OUT];
    const int32_t nm = ctx->p[TGRS_P_FC_NUMERICS];
    const int8_t *in = (const int8_t *)ctx->in[0]->data;
    int8_t *out = (int8_t *)ctx->out->data;
    int32_t n, o, j, nr, o4 = 0, direct;
    int st = tgrs_mac_s8_check(ctx, TGRS_C_FC_MULT, TGRS_C_FC_SHIFT, fg->oc, lo, hi, zp_in, zp_out, nm);
    if (st == TGRS_OK) {
        st = fc_arrange_check(ctx, 1);
    }
    if (st != TGRS_OK) {
        return st;
    }
    if (ctx->p[TGRS_P_FC_WZP] != 0) {
        return ctx->p[TGRS_P_FC_WZP] != 1 ? TGRS_ERR_PARAM : (wzp != NULL ? wzp(ctx, fg) : TGRS_ERR_UNSUPPORTED);
    }
    /* every channel in tgrs_rq_abs's range (requant.h): the speed build requantizes without preparing */
    direct = TGRS_SPEED_PATHS && tgrs_rq_fast_all(shift, fg->oc, nm);
    if (TGRS_READS_FC_ROWS4 && ctx->p[TGRS_P_FC_ARRANGE] == (int32_t)TGRS_ARRANGE_FC_ROWS4) {
        if (((uintptr_t)wt & 3u) != 0) {
            return TGRS_ERR_PARAM; /* the blocks are read a word at a time; planned constants are 16-byte aligned */
        }
        o4 = fg->oc & ~3; /* rows in whole blocks of four; the rest keep the plain order */
    }
    for (n = 0; n < fg->n; ++n) {
        const int8_t *x = in + (int64_t)n * fg->k;
        for (o = 0; o < fg->oc; o += nr) {
            /* four rows per pass in FC_ROWS4 blocks, else two: the target's loop loads and widens each input value
               once for all of them (s is cleared: GCC -O3 cannot see that only the first nr sums are read) */
            int32_t s[4] = {0, 0, 0, 0};
            if (o < o4) {
                TGRS_FC_DOT4R_S8(x, wt + (int64_t)o * fg->k, fg->k, s);
                nr = 4;
            } else {
                nr = o + 1 < fg->oc ? 2 : 1;
                TGRS_FC_DOT2_S8(x, wt + (int64_t)o * fg->k, fg->k, nr == 2, s);
            }
            for (j = 0; j < nr; ++j) {
                const int32_t acc = tgrs_wrap_add(s[j], bias[o + j]);
                if (direct) { /* straight from (mult, shift): no per-output preparation, no call */
                    const int32_t r = tgrs_rq_abs(acc, mult[o + j], shift[o + j], zp_out);
                    out[(int64_t)n * fg->oc + o + j] = (int8_t)(r < lo ? lo : (r > hi ? hi : r));
                } else {
                    tgrs_rq rq;
                    tgrs_rq_prepare(&rq, mult[o + j], shift[o + j], zp_out, nm);
                    out[(int64_t)n * fg->oc + o + j] = tgrs_rq_s8_call(&rq, acc, lo, hi);
                }
            }
        }
    }
    return TGRS_OK;
}

/* The dtype variants (registry.c picks one per op): each checks its own dtypes, then the shared geometry. */
static int fc_entry(const tgrs_op_ctx *ctx, int32_t dt, fc_geom *fg)
{
    if (ctx->n_in < 1 || ctx->in[0] == NULL || ctx->out == NULL) {
        return TGRS_ERR_SHAPE;
    }
    if (ctx->in[0]->dtype != dt || ctx->out->dtype != dt) {
        return TGRS_ERR_DTYPE;
    }
    return fc_prepare(ctx, fg, dt == TGRS_DT_S8 ? 1u : 4u);
}

/* The loops get a copy of the geometry whose address never escapes (see conv.c: char stores alias escaped locals). */
int tgrs_fc_f32(const tgrs_op_ctx *ctx)
{
    fc_geom fg;
    tgrs_op_ctx wide; /* float16 weights widened into the scratch (kcheck.h) */
    int st = tgrs_f16_widen(&wide, ctx, TGRS_C_FC_WEIGHT, ctx->p[TGRS_P_FC_WF16]);
    if (st == TGRS_OK) {
        st = fc_entry(&wide, TGRS_DT_F32, &fg);
    }
    if (st == TGRS_OK) {
        st = fc_arrange_check(ctx, 0);
    }
    if (st != TGRS_OK) {
        return st;
    }
    {
        const fc_geom g = fg;
        return fc_f32(&wide, &g);
    }
}

static int fc_s8_run(const tgrs_op_ctx *ctx, fc_wzp_fn wzp)
{
    fc_geom fg;
    int st = fc_entry(ctx, TGRS_DT_S8, &fg);
    if (st != TGRS_OK) {
        return st;
    }
    {
        const fc_geom g = fg;
        return fc_s8(ctx, &g, wzp);
    }
}

int tgrs_fc_s8(const tgrs_op_ctx *ctx)
{
    return fc_s8_run(ctx, fc_s8_wzp);
}

/* Without the weight-zero-point path: such an op is TGRS_ERR_UNSUPPORTED (tgrs_check_fc_sym refuses it). */
int tgrs_fc_s8_sym(const tgrs_op_ctx *ctx)
{
    return fc_s8_run(ctx, NULL);
}

/* The kind's check (check.c calls it at load, once per op): what the dtype variant registry.c picks would check
 * before computing, in the same order. */
static int fc_check(const tgrs_op_ctx *ctx, int wzp)
{
    fc_geom fg;
    tgrs_op_ctx wide;
    const int32_t dt = ctx->out->dtype == TGRS_DT_F32 ? TGRS_DT_F32 : TGRS_DT_S8;
    int st;
    if (dt == TGRS_DT_F32) {
        st = tgrs_check_f32_weights(&wide, ctx, TGRS_C_FC_WEIGHT, ctx->p[TGRS_P_FC_WF16]);
        st = st != TGRS_OK ? st : fc_entry(&wide, dt, &fg);
        return st != TGRS_OK ? st : fc_arrange_check(ctx, 0);
    }
    if (ctx->p[TGRS_P_FC_WF16] != 0) {
        return TGRS_ERR_PARAM; /* int8 weights are never halves */
    }
    st = fc_entry(ctx, dt, &fg);
    if (st != TGRS_OK) {
        return st;
    }
    st = tgrs_mac_s8_check(ctx, TGRS_C_FC_MULT, TGRS_C_FC_SHIFT, fg.oc, ctx->p[TGRS_P_FC_ACT_MIN],
                           ctx->p[TGRS_P_FC_ACT_MAX], ctx->p[TGRS_P_FC_ZP_IN], ctx->p[TGRS_P_FC_ZP_OUT],
                           ctx->p[TGRS_P_FC_NUMERICS]);
    if (st == TGRS_OK) {
        st = fc_arrange_check(ctx, 1);
    }
    return (st == TGRS_OK && !wzp && ctx->p[TGRS_P_FC_WZP] == 1) ? TGRS_ERR_UNSUPPORTED : st;
}

int tgrs_check_fc(const tgrs_op_ctx *ctx)
{
    return fc_check(ctx, 1);
}

/* The check of tgrs_kernel_fc_sym: an op with weight zero points is TGRS_ERR_UNSUPPORTED. */
int tgrs_check_fc_sym(const tgrs_op_ctx *ctx)
{
    return fc_check(ctx, 0);
}
