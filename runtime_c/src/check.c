/*
 * check.c - validate once, compute many: the loader's per-kind check of every op, and the op context both it and the
 * executor build.
 *
 * tgrs_load's structural steps prove every index, offset and size; this last step (docs/format.md, step 17) proves
 * the kind-specific semantics: it calls tgrs_check_<kind> for every op in every tile of its unit, on the context the
 * executor will pass to tgrs_kernel_<kind> for that tile (tgrs_op_frame_fill builds both), without addresses. An op
 * whose output band is empty in a tile is skipped there, as the executor skips it. The constants' bytes are visible
 * to the checks for XIP plans (in the WEIGHTS section) and for uncompressed copied units (the unit's blob is what the
 * run copies into the fast prefix); an LZ4 unit's constants exist only after the run decodes them, so only their
 * lengths are checked here and their values when the kernel runs.
 *
 * The checks come through a table indexed by kind, like the kernels: tgrs_load passes the full one (loader.c, from
 * TGRS_KINDS, the list the executor's kernel table comes from, so a kind has its check or the runtime does not
 * link); firmware with an op resolver passes one with only its kinds (tgrs_load_checks), so --gc-sections drops the
 * other kinds' checks with their kernels. A kind with no check entry is refused (TGRS_ERR_UNSUPPORTED).
 */
#include "tgrs_dcheck.h"
#include "tgrs_internal.h"

/* The unit fields every view of one frame reads, read once per frame instead of once per view. */
typedef struct tgrs_unit_fields {
    uint32_t pf;            /* the unit's first PLACEMENT */
    uint32_t pc;            /* its placement count */
    uint32_t flags;         /* its UNIT flags */
    const uint8_t *place;   /* PLACEMENT record pf */
    const uint8_t *tensors; /* TENSORS record 0 */
    const uint8_t *band;    /* the TILE_ROWS record of placement pf in this tile; NULL when the unit is untiled */
} tgrs_unit_fields;

static void tgrs_unit_fields_at(tgrs_unit_fields *uf, const tgrs_plan *plan, const uint8_t *u, uint32_t tile)
{
    uf->pf = tgrs_rd_u32(u + TGRS_UNIT_OFF_PLACE_FIRST);
    uf->pc = tgrs_rd_u32(u + TGRS_UNIT_OFF_PLACE_COUNT);
    uf->flags = tgrs_rd_u32(u + TGRS_UNIT_OFF_FLAGS);
    uf->place = tgrs_placement(plan, uf->pf);
    uf->tensors = tgrs_tensor(plan, 0u);
    uf->band = (uf->flags & TGRS_UNIT_F_TILED) != 0u
                   ? tgrs_rec(plan, TGRS_SEC_TILE_ROWS, tgrs_rd_u32(u + TGRS_UNIT_OFF_ROWS_FIRST) + tile * uf->pc,
                              TGRS_TILE_ROW_SIZE)
                   : NULL;
}

/* The view of tensor t in tile `tile` of unit u: its own dims and quantization, its root's band; returns the root's
   absolute PLACEMENT index (the loader proved it exists). */
static uint32_t tgrs_view_fill(const tgrs_plan *plan, const tgrs_unit_fields *uf, const uint8_t *u, uint32_t tile,
                               uint32_t t, uint8_t *fast, tgrs_tview *v, tgrs_pos_cache *cache)
{
    const uint8_t *tr = uf->tensors + (size_t)t * TGRS_TENSOR_SIZE;
    const uint32_t root = tgrs_rd_u32(tr + TGRS_TENSOR_OFF_ROOT);
    const uint32_t slot = root % TGRS_POS_SLOTS;
    uint32_t pos = 0;
    uint32_t k;
    if (cache != NULL && cache->tensor[slot] == root) {
        pos = cache->pos[slot]; /* found in an earlier tile (or op) of this unit */
    } else {
        /* tgrs_find_placement on the unit's records: the loader proved them strictly increasing by tensor, and the
           root among them */
        uint32_t lo = 0;
        uint32_t hi = uf->pc;
        while (lo < hi) {
            uint32_t mid = lo + (hi - lo) / 2u;
            uint32_t at = tgrs_rd_u32(uf->place + (size_t)mid * TGRS_PLACEMENT_SIZE + TGRS_PLACEMENT_OFF_TENSOR);
            if (at == root) {
                pos = mid;
                break;
            }
            if (at < root) {
                lo = mid + 1u;
            } else {
                hi = mid;
            }
        }
        TGRS_DCHECK(lo < hi);
        if (cache != NULL) {
            cache->tensor[slot] = root;
            cache->pos[slot] = pos;
        }
    }
    if (TGRS_NATIVE_LE) {
        memcpy(v->dims, tr + TGRS_TENSOR_OFF_DIMS, sizeof v->dims); /* four little-endian int32 in a row */
    } else {
        for (k = 0; k < 4u; ++k) {
            v->dims[k] = tgrs_rd_i32(tr + TGRS_TENSOR_OFF_DIMS + 4u * k);
        }
    }
    if (uf->band != NULL) {
        const uint8_t *r = uf->band + (size_t)pos * TGRS_TILE_ROW_SIZE;
        v->row0 = tgrs_rd_i32(r + TGRS_TILE_ROW_OFF_ROW0);
        v->rows = tgrs_rd_i32(r + TGRS_TILE_ROW_OFF_ROWS);
        if (TGRS_COLS && (uf->flags & TGRS_UNIT_F_COLS) != 0u) {
            /* A column band is a standalone tensor of its width: its buffer holds it dense (docs/format.md). */
            int32_t col0;
            tgrs_tile_cols(plan, u, tile, pos, &col0, &v->dims[2]);
        }
    } else {
        /* An alias may have other dims than its root (same bytes): the whole tensor in its own rows. */
        v->row0 = 0;
        v->rows = v->dims[1];
    }
    v->data = fast != NULL
                  ? (void *)(fast + tgrs_rd_u32(uf->place + (size_t)pos * TGRS_PLACEMENT_SIZE + TGRS_PLACEMENT_OFF_OFFSET) +
                             (TGRS_VIEWS ? tgrs_rd_u32(tr + TGRS_TENSOR_OFF_VIEW_OFF) : 0u))
                  : NULL; /* a view's run starts view_off bytes into its root's buffer (0 for every other tensor) */
    v->dtype = (int32_t)tgrs_rd_u32(tr + TGRS_TENSOR_OFF_DTYPE);
    v->zero_point = tgrs_rd_i32(tr + TGRS_TENSOR_OFF_ZERO_POINT);
    v->scale = tgrs_rd_f32(tr + TGRS_TENSOR_OFF_SCALE);
    return uf->pf + pos;
}

/* The overlap of placement pos's band in tile `tile` (record `now`) with its band in the tile before (the record
   pc records earlier): the rows it carries. */
static int32_t tgrs_overlap(const uint8_t *now, uint32_t pc, int32_t *prev_row0)
{
    const uint8_t *before = now - (size_t)pc * TGRS_TILE_ROW_SIZE;
    int32_t r0 = tgrs_rd_i32(before + TGRS_TILE_ROW_OFF_ROW0);
    int32_t n0 = tgrs_rd_i32(before + TGRS_TILE_ROW_OFF_ROWS);
    int32_t r1 = tgrs_rd_i32(now + TGRS_TILE_ROW_OFF_ROW0);
    if (prev_row0 != NULL) {
        *prev_row0 = r0;
    }
    /* row0 and rows are proven non-negative and within the tensor (step 14), so these sums do not overflow. */
    return (n0 > 0 && r1 < r0 + n0) ? r0 + n0 - r1 : 0;
}

int tgrs_is_accumulator(const tgrs_plan *plan, const uint8_t *unit, uint32_t pf, uint32_t pos)
{
    const uint8_t *last = tgrs_op(plan, tgrs_rd_u32(unit + TGRS_UNIT_OFF_OP_FIRST) +
                                            tgrs_rd_u32(unit + TGRS_UNIT_OFF_OP_COUNT) - 1u);
    uint32_t acc = tgrs_root(plan, tgrs_rd_u32(last + TGRS_OP_OFF_OUTPUT));
    return tgrs_rd_u32(tgrs_placement(plan, pf + pos) + TGRS_PLACEMENT_OFF_TENSOR) == acc;
}

int32_t tgrs_carried_rows(const tgrs_plan *plan, const uint8_t *unit, uint32_t tile, uint32_t pos, int32_t *prev_row0)
{
    uint32_t flags = tgrs_rd_u32(unit + TGRS_UNIT_OFF_FLAGS);
    uint32_t pc = tgrs_rd_u32(unit + TGRS_UNIT_OFF_PLACE_COUNT);
    if (!TGRS_ROLLING || (flags & TGRS_UNIT_F_ROLLING) == 0u || tile == 0u) {
        return 0;
    }
    if ((flags & TGRS_UNIT_F_ACCUM) != 0u &&
        tgrs_is_accumulator(plan, unit, tgrs_rd_u32(unit + TGRS_UNIT_OFF_PLACE_FIRST), pos)) {
        return 0;
    }
    if (tgrs_never_carries(plan, unit, pos)) {
        return 0; /* its producer computes the whole band in every tile */
    }
    return tgrs_overlap(tgrs_rec(plan, TGRS_SEC_TILE_ROWS, tgrs_rd_u32(unit + TGRS_UNIT_OFF_ROWS_FIRST) + tile * pc + pos,
                                 TGRS_TILE_ROW_SIZE),
                        pc, prev_row0);
}

int tgrs_col_window(const uint8_t *op, uint32_t kind, int64_t *w)
{
    uint32_t slots = tgrs_op_col_window(kind);
    int i;
    for (i = 0; i < 5; ++i) {
        int32_t v = tgrs_rd_i32(op + TGRS_OP_OFF_PARAMS + 4u * (uint32_t)TGRS_COL_SLOT(slots, i));
        if (v < (i < 3 ? 1 : 0) || v > TGRS_COLS_WINDOW_MAX) {
            return 0;
        }
        w[i] = v;
    }
    return 1;
}

/*
 * A COLS unit (docs/format.md "COLS units"): the op sees its bands as standalone tensors, so the parameters that
 * speak of W speak of the band. A windowed op's W pads become band-relative: with output columns [a, b) and input
 * columns [c0, c1), pl' = c0 - (a*sw - pl) and pr' = (b-1)*sw - pl + (kw-1)*dw + 1 - c1 (the loader proved the input
 * band the clipped need of the output band, so both are >= 0 and the window gives exactly b - a columns). A per-pixel
 * op's stated W extents equal to the output's full W become the band's cols.
 */
static void tgrs_cols_params(tgrs_op_frame *f, const tgrs_plan *plan, const uint8_t *unit, uint32_t tile,
                             const uint8_t *r)
{
    uint32_t kind = tgrs_rd_u32(r + TGRS_OP_OFF_KIND);
    uint32_t pf = tgrs_rd_u32(unit + TGRS_UNIT_OFF_PLACE_FIRST);
    int32_t a;
    int32_t n;
    tgrs_tile_cols(plan, unit, tile, f->place[0] - pf, &a, &n);
    if (tgrs_op_cols_class(kind) == TGRS_COLS_WINDOW) {
        uint32_t slots = tgrs_op_col_window(kind);
        int64_t w[5];
        int32_t c0;
        int32_t cn;
        if (!tgrs_col_window(r, kind, w)) {
            return; /* outside the kernels' window limit: the kind check refuses the op */
        }
        tgrs_tile_cols(plan, unit, tile, f->place[1] - pf, &c0, &cn);
        f->params[TGRS_COL_SLOT(slots, 3)] = (int32_t)(c0 - ((int64_t)a * w[1] - w[3]));
        f->params[TGRS_COL_SLOT(slots, 4)] =
            (int32_t)((int64_t)(a + n - 1) * w[1] - w[3] + (w[0] - 1) * w[2] + 1 - ((int64_t)c0 + cn));
    } else {
        int32_t full = tgrs_rd_i32(tgrs_tensor(plan, tgrs_rd_u32(r + TGRS_OP_OFF_OUTPUT)) + TGRS_TENSOR_OFF_DIMS + 8u);
        uint32_t dims;
        for (dims = tgrs_op_col_dims(kind); dims != 0u; dims >>= 5) {
            int32_t *d = &f->params[(dims & 31u) - 1u];
            if (*d == full && full > 1) {
                *d = n;
            }
        }
    }
}

void tgrs_op_frame_fill(tgrs_op_frame *f, const tgrs_plan *plan, const uint8_t *unit, uint32_t tile, uint32_t op_index,
                        uint8_t *fast, const uint8_t *consts, tgrs_pos_cache *cache)
{
    const uint8_t *r = tgrs_op(plan, op_index);
    uint32_t n_in = tgrs_rd_u32(r + TGRS_OP_OFF_N_IN);
    tgrs_unit_fields uf;
    uint32_t uflags;
    uint32_t k;
    tgrs_unit_fields_at(&uf, plan, unit, tile);
    uflags = uf.flags;
    /* every field of ctx is stored below (no memset: this runs for every op in every tile) */
    for (k = 0; k < (uint32_t)TGRS_MAX_INPUTS; ++k) {
        f->ctx.in[k] = NULL;
    }
    f->ctx.scratch = NULL;
    f->ctx.phase = 0u;
    f->ctx.acc_w = 0;
    f->ctx.proven = 0u;
    f->place[0] = tgrs_view_fill(plan, &uf, unit, tile, tgrs_rd_u32(r + TGRS_OP_OFF_OUTPUT), fast, &f->out, cache);
    f->carried = 0;
    f->out_rb = 0u;
    if (TGRS_ROLLING && (uflags & TGRS_UNIT_F_ROLLING) != 0u) {
        f->out_rb = tgrs_row_bytes(uf.tensors + (size_t)tgrs_rd_u32(r + TGRS_OP_OFF_OUTPUT) * TGRS_TENSOR_SIZE);
        if (tile != 0u &&
            ((uflags & TGRS_UNIT_F_ACCUM) == 0u ||
             (cache != NULL ? tgrs_rd_u32(tgrs_placement(plan, f->place[0]) + TGRS_PLACEMENT_OFF_TENSOR) != cache->acc
                            : !tgrs_is_accumulator(plan, unit, uf.pf, f->place[0] - uf.pf))) &&
            !tgrs_never_carries(plan, unit, f->place[0] - uf.pf)) {
            /* A carrying output: the op computes only the rows after the carried ones, which the executor moved to
               the top of the buffer when the tile started (its consumers read the whole band). */
            int32_t c = tgrs_overlap(uf.band + (size_t)(f->place[0] - uf.pf) * TGRS_TILE_ROW_SIZE, uf.pc, NULL);
            f->carried = c;
            if (c > 0) {
                f->out.row0 += c;
                f->out.rows -= c;
                if (f->out.data != NULL) {
                    f->out.data = (uint8_t *)f->out.data + (size_t)c * f->out_rb;
                }
            }
        }
    }
    for (k = 0; k < n_in; ++k) {
        f->place[k + 1u] =
            tgrs_view_fill(plan, &uf, unit, tile, tgrs_rd_u32(r + TGRS_OP_OFF_INPUTS + 4u * k), fast, &f->views[k],
                           cache);
        f->ctx.in[k] = &f->views[k];
    }
    if (TGRS_NATIVE_LE) {
        memcpy(f->params, r + TGRS_OP_OFF_PARAMS, sizeof f->params); /* one block copy per op and tile */
    } else {
        for (k = 0; k < (uint32_t)TGRS_MAX_PARAMS; ++k) {
            f->params[k] = tgrs_rd_i32(r + TGRS_OP_OFF_PARAMS + 4u * k);
        }
    }
    for (k = 0; k < (uint32_t)TGRS_MAX_CONSTS; ++k) {
        uint32_t len = tgrs_rd_u32(r + TGRS_OP_OFF_CONST_LEN + 4u * k);
        f->ctx.c[k] = (len != 0u && consts != NULL)
                          ? (const void *)(consts + tgrs_rd_u32(r + TGRS_OP_OFF_CONST_OFF + 4u * k))
                          : NULL;
        f->ctx.clen[k] = len;
    }
    if (TGRS_COLS && (uflags & TGRS_UNIT_F_COLS) != 0u) {
        tgrs_cols_params(f, plan, unit, tile, r);
    }
    f->ctx.p = f->params;
    f->ctx.n_in = (int32_t)n_in;
    f->ctx.out = &f->out;
    f->ctx.scratch_size = tgrs_rd_u32(r + TGRS_OP_OFF_SCRATCH_SIZE);
    if (f->ctx.scratch_size != 0u && fast != NULL) {
        f->ctx.scratch = fast + tgrs_rd_u32(r + TGRS_OP_OFF_SCRATCH_OFF);
    }
    if (TGRS_ACCUM && (uflags & TGRS_UNIT_F_ACCUM) != 0u &&
        op_index + 1u == tgrs_rd_u32(unit + TGRS_UNIT_OFF_OP_FIRST) + tgrs_rd_u32(unit + TGRS_UNIT_OFF_OP_COUNT)) {
        /* The accumulating GAP (the loader proved it the unit's last op): clear with the first tile, add every
           tile's band, average after the last tile. */
        uint32_t tiles = tgrs_rd_u32(unit + TGRS_UNIT_OFF_TILES);
        if (TGRS_COLS && (uflags & TGRS_UNIT_F_COLS) != 0u) {
            /* its views are column bands; the average is over the whole image (the loader proved the grid covers it
               once) */
            f->ctx.acc_w = tgrs_rd_i32(tgrs_tensor(plan, tgrs_rd_u32(r + TGRS_OP_OFF_INPUTS)) + TGRS_TENSOR_OFF_DIMS + 8u);
        }
        f->ctx.phase = TGRS_PHASE_ACCUMULATE | (tile == 0u ? TGRS_PHASE_BEGIN : 0u) |
                       (tile + 1u == tiles ? TGRS_PHASE_FINISH : 0u);
    }
}

int tgrs_col_pointwise(const uint8_t *op, uint32_t kind)
{
    int64_t w[5];
    return tgrs_op_cols_class(kind) == TGRS_COLS_WINDOW && tgrs_col_window(op, kind, w) && w[0] == 1 && w[1] == 1 &&
           w[3] == 0 && w[4] == 0;
}

int tgrs_cols_rowwise(const tgrs_plan *plan, const uint8_t *unit, uint32_t tile, uint32_t op_index,
                      const tgrs_op_frame *f)
{
    const uint8_t *r = tgrs_op(plan, op_index);
    uint32_t kind = tgrs_rd_u32(r + TGRS_OP_OFF_KIND);
    uint32_t pf = tgrs_rd_u32(unit + TGRS_UNIT_OFF_PLACE_FIRST);
    uint32_t n_in = tgrs_rd_u32(r + TGRS_OP_OFF_N_IN);
    int32_t ow = tgrs_rd_i32(tgrs_tensor(plan, tgrs_rd_u32(r + TGRS_OP_OFF_OUTPUT)) + TGRS_TENSOR_OFF_DIMS + 8u);
    int32_t o0;
    int32_t on;
    uint32_t k;
    if (!TGRS_COLS || (tgrs_rd_u32(unit + TGRS_UNIT_OFF_FLAGS) & TGRS_UNIT_F_COLS) == 0u ||
        (tgrs_op_cols_class(kind) != TGRS_COLS_PIXEL && !tgrs_col_pointwise(r, kind))) {
        return 0;
    }
    tgrs_tile_cols(plan, unit, tile, f->place[0] - pf, &o0, &on);
    for (k = 0; k < n_in; ++k) {
        int32_t c0;
        int32_t cn;
        if (tgrs_rd_i32(tgrs_tensor(plan, tgrs_rd_u32(r + TGRS_OP_OFF_INPUTS + 4u * k)) + TGRS_TENSOR_OFF_DIMS + 8u) !=
            ow) {
            continue;
        }
        tgrs_tile_cols(plan, unit, tile, f->place[k + 1u] - pf, &c0, &cn);
        if (c0 != o0 || cn != on) {
            return 1;
        }
    }
    return 0;
}

void tgrs_op_frame_row(tgrs_op_frame *d, const tgrs_op_frame *f, const tgrs_plan *plan, const uint8_t *unit,
                       uint32_t tile, uint32_t op_index, int32_t r)
{
    const uint8_t *rec = tgrs_op(plan, op_index);
    uint32_t pf = tgrs_rd_u32(unit + TGRS_UNIT_OFF_PLACE_FIRST);
    uint32_t n_in = tgrs_rd_u32(rec + TGRS_OP_OFF_N_IN);
    const uint8_t *otr = tgrs_tensor(plan, tgrs_rd_u32(rec + TGRS_OP_OFF_OUTPUT));
    int32_t ow = tgrs_rd_i32(otr + TGRS_TENSOR_OFF_DIMS + 8u);
    int32_t o0;
    int32_t on;
    uint32_t k;
    *d = *f;
    d->ctx.p = d->params;
    d->ctx.out = &d->out;
    tgrs_tile_cols(plan, unit, tile, f->place[0] - pf, &o0, &on);
    /* the output band is dense [rows, on, C]: row r starts (r - row0) rows of on pixels in */
    if (f->out.data != NULL) {
        d->out.data = (uint8_t *)f->out.data +
                      (size_t)(r - f->out.row0) * (size_t)on * (tgrs_row_bytes(otr) / (uint32_t)ow);
    }
    d->out.row0 = r;
    d->out.rows = 1;
    if (tgrs_op_cols_class(tgrs_rd_u32(rec + TGRS_OP_OFF_KIND)) == TGRS_COLS_WINDOW) {
        /* a 1-wide unpadded window along W on exactly its output's columns: no pad either side */
        uint32_t slots = tgrs_op_col_window(tgrs_rd_u32(rec + TGRS_OP_OFF_KIND));
        d->params[TGRS_COL_SLOT(slots, 3)] = 0;
        d->params[TGRS_COL_SLOT(slots, 4)] = 0;
    }
    for (k = 0; k < n_in; ++k) {
        const tgrs_tview *v = &f->views[k];
        tgrs_tview *w = &d->views[k];
        const uint8_t *tr = tgrs_tensor(plan, tgrs_rd_u32(rec + TGRS_OP_OFF_INPUTS + 4u * k));
        int32_t full = tgrs_rd_i32(tr + TGRS_TENSOR_OFF_DIMS + 8u);
        size_t pixel = tgrs_row_bytes(tr) / (uint32_t)full;
        int32_t c0 = 0;
        int32_t cn = v->dims[2];
        int64_t skip = 0; /* pixels of the dense band before the view's first */
        d->ctx.in[k] = w;
        if (full == ow) {
            tgrs_tile_cols(plan, unit, tile, f->place[k + 1u] - pf, &c0, &cn);
            skip = (int64_t)o0 - c0;
            w->dims[2] = on;
        }
        if (tgrs_rd_i32(tr + TGRS_TENSOR_OFF_DIMS + 4u) > 1) { /* a broadcast along H keeps its one row */
            if (r < v->row0 || r >= v->row0 + v->rows) {
                w->rows = 0; /* the band lacks the row: the kind check refuses the op */
                continue;
            }
            skip += (int64_t)(r - v->row0) * cn;
            w->row0 = r;
            w->rows = 1;
        }
        if (v->data != NULL) {
            w->data = (uint8_t *)v->data + (size_t)skip * pixel;
        }
    }
}

/* The base the constants of unit u count from at load, or NULL when their bytes exist only at run time. */
static const uint8_t *tgrs_visible_consts(const tgrs_plan *plan, const uint8_t *u)
{
    const uint8_t *weights = plan->base + plan->sec_off[TGRS_SEC_WEIGHTS];
    if ((plan->flags & TGRS_FLAG_XIP) != 0u) {
        return weights;
    }
    if ((plan->flags & TGRS_FLAG_LZ4) != 0u) {
        return NULL;
    }
    /* Uncompressed: the run copies the blob (wblob_size == wraw_size bytes, step 14) to the fast prefix unchanged. */
    return weights + tgrs_rd_u32(u + TGRS_UNIT_OFF_WBLOB_OFF);
}

int tgrs_check_kinds(const tgrs_plan *plan, const tgrs_check_fn *checks, uint32_t n_checks, int32_t *failed_op)
{
    uint32_t n = plan->sec_count[TGRS_SEC_UNITS];
    uint32_t ui;
    for (ui = 0; ui < n; ++ui) {
        const uint8_t *u = tgrs_unit(plan, ui);
        const uint8_t *consts = tgrs_visible_consts(plan, u);
        uint32_t of = tgrs_rd_u32(u + TGRS_UNIT_OFF_OP_FIRST);
        uint32_t oc = tgrs_rd_u32(u + TGRS_UNIT_OFF_OP_COUNT);
        uint32_t tiles = tgrs_rd_u32(u + TGRS_UNIT_OFF_TILES);
        uint32_t tile;
        for (tile = 0; tile < tiles; ++tile) {
            uint32_t i;
            for (i = of; i < of + oc; ++i) {
                tgrs_op_frame f;
                uint32_t kind = tgrs_rd_u32(tgrs_op(plan, i) + TGRS_OP_OFF_KIND);
                int rc;
                if (kind >= n_checks || checks[kind] == NULL) {
                    *failed_op = (int32_t)i; /* a kind the firmware did not link */
                    return TGRS_ERR_UNSUPPORTED;
                }
                tgrs_op_frame_fill(&f, plan, u, tile, i, NULL, consts, NULL);
                if (f.out.rows == 0) {
                    continue; /* the executor does not call the kernel in this tile either */
                }
                if (TGRS_COLS && tgrs_cols_rowwise(plan, u, tile, i, &f)) {
                    /* the executor calls it once per output row on sub-band views: check each of those */
                    int32_t row;
                    rc = TGRS_OK;
                    for (row = f.out.row0; row < f.out.row0 + f.out.rows && rc == TGRS_OK; ++row) {
                        tgrs_op_frame g;
                        tgrs_op_frame_row(&g, &f, plan, u, tile, i, row);
                        rc = checks[kind](&g.ctx);
                    }
                } else {
                    rc = checks[kind](&f.ctx);
                }
                if (rc != TGRS_OK) {
                    *failed_op = (int32_t)i;
                    return rc > 0 ? TGRS_ERR_UNSUPPORTED : rc;
                }
            }
        }
    }
    return TGRS_OK;
}
