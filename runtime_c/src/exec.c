/*
 * exec.c - tgrs_run: execute a validated plan on the caller's arenas (docs/format.md "Executing a plan").
 *
 * Per unit: bring the unit's weights into the fast prefix (copy or LZ4-decode; nothing with XIP), then for each tile
 * (one pass when untiled) reload the tile's input bands from the slow arena, run the unit's ops on views whose rows
 * come from the plan's per-tile bands, and spill the tile's output bands. In a ROLLING unit a carrying buffer's
 * first rows come from its line buffer (copied to the top of the band just before its producer or reload; without a
 * line buffer, moved there from the end of the band the buffer kept since the tile before), the producer or reload
 * fills only the rows after them, and the rows the next tile carries are copied into the line buffer right after. Ops are dispatched by kind through a const
 * table. Everything runs on the caller's memory: the only state is this call's stack frame.
 *
 * High-water marks: every buffer the run touches (a unit's weight prefix, a placement an op / reload / spill uses, a
 * kernel scratch, an interface home, a slow home) raises the peak of its arena to the buffer's end. Placements count
 * with their full reserved size, which is what the compiler's peaks count, so the two must agree exactly.
 */
#include "tgrs_dcheck.h"
#include "tgrs_internal.h"
#include "tgrs_lz4.h"
#include "tgrs_op.h"
#include "tgrs_shuffle.h"

/* Kernel per op kind, expanded from TGRS_KINDS (tgrs_format.h): designated initializers tie each entry to its
   TGRS_OP_* number, and the loader's check table (check.c) comes from the same list. */
#define TGRS_KERNEL_ENTRY(KIND, kind) [TGRS_OP_##KIND] = tgrs_kernel_##kind,
static const tgrs_kernel_fn tgrs_kernel_table[TGRS_OP_COUNT + 1u] = {TGRS_KINDS(TGRS_KERNEL_ENTRY)};
#undef TGRS_KERNEL_ENTRY

/* One run's context, on the stack of tgrs_run. */
typedef struct tgrs_exec {
    const tgrs_plan *plan;
    const tgrs_kernel_fn *kernels; /* the caller's op resolver; tgrs_first_missing proved every used entry set */
    uint8_t *fast;
    uint8_t *slow;
    const uint8_t *weights; /* WEIGHTS section */
    uint32_t fast_peak;
    uint32_t slow_peak;
    tgrs_pos_cache pos; /* the current unit's placement positions (tgrs_op_frame_fill) */
} tgrs_exec;

/* The unit being run and the tile within it. */
typedef struct tgrs_at {
    const uint8_t *unit;
    uint32_t place_first;
    uint32_t place_count;
    uint32_t tile;
    uint32_t tiles;
    int tiled;
    int rolling; /* ROLLING: carrying placements keep rows in their line buffers from tile to tile */
    int cols;    /* COLS: bands are also cut along W and stored dense */
    int accum;   /* ROLLING and ACCUM: the last op's output is the accumulating GAP's (it never carries) */
    const uint8_t *band; /* ROLLING: the TILE_ROWS record of the unit's first placement in this tile */
} tgrs_at;

static void tgrs_touch(uint32_t *peak, uint32_t off, uint32_t size)
{
    /* off + size <= arena size <= UINT32_MAX: proven by the loader. */
    if (off + size > *peak) {
        *peak = off + size;
    }
}

/* Raise the fast peak to the end of placement p (absolute index). */
static void tgrs_touch_placement(tgrs_exec *ex, uint32_t p)
{
    const uint8_t *pr = tgrs_placement(ex->plan, p);
    tgrs_touch(&ex->fast_peak, tgrs_rd_u32(pr + TGRS_PLACEMENT_OFF_OFFSET), tgrs_rd_u32(pr + TGRS_PLACEMENT_OFF_SIZE));
}

/* The placement record of root tensor `root` in the current unit (the loader proved it exists). */
static const uint8_t *tgrs_place_of(const tgrs_exec *ex, const tgrs_at *at, uint32_t root, uint32_t *pidx)
{
    uint32_t p = tgrs_find_placement(ex->plan, at->place_first, at->place_count, root);
    *pidx = p - at->place_first;
    return tgrs_placement(ex->plan, p);
}

/* Rows [row0, row0 + rows) of the placement at position pidx of the unit, in the current tile. */
static void tgrs_band(const tgrs_exec *ex, const tgrs_at *at, const uint8_t *root_rec, uint32_t pidx, int32_t *row0,
                      int32_t *rows)
{
    if (at->tiled) {
        const uint8_t *r = tgrs_rec(ex->plan, TGRS_SEC_TILE_ROWS,
                                    tgrs_rd_u32(at->unit + TGRS_UNIT_OFF_ROWS_FIRST) + at->tile * at->place_count + pidx,
                                    TGRS_TILE_ROW_SIZE);
        *row0 = tgrs_rd_i32(r + TGRS_TILE_ROW_OFF_ROW0);
        *rows = tgrs_rd_i32(r + TGRS_TILE_ROW_OFF_ROWS);
    } else {
        *row0 = 0;
        *rows = tgrs_rd_i32(root_rec + TGRS_TENSOR_OFF_DIMS + 4u);
    }
}

/* Halo reuse (ROLLING units, docs/format.md): placement `pos` is about to be filled in this tile. The rows it
   carries from the tile before go to the top of the band, where the band's first rows belong: from its line
   buffer, or (no line buffer: the band buffer survived the tile) from the end of the band they ended there.
   c: the rows it carries, tgrs_carried_rows of this tile (the caller has it: the op's frame, or the reload's own
   call); nothing to do when 0. band: the placement's buffer in the fast arena, rb: its row bytes. */
static void tgrs_carry_in(tgrs_exec *ex, const tgrs_at *at, uint32_t pos, int32_t c, uint8_t *band, uint32_t rb)
{
    int32_t row0 = 0;
    int32_t cur0;
    int32_t rows;
    uint32_t off;
    uint32_t size;
    if (c == 0) {
        return;
    }
    tgrs_line_buffer(ex->plan, at->unit, pos, &off, &size);
    if (off != TGRS_NONE) {
        /* c rows fit the line buffer and the band (step 15) */
        memcpy(band, ex->fast + off, (size_t)c * rb);
        tgrs_touch(&ex->fast_peak, off, size);
    } else {
        /* the earlier band held rows row0.. and ends with the c carried ones, which start at this band's row0 */
        (void)tgrs_carried_rows(ex->plan, at->unit, at->tile, pos, &row0);
        tgrs_band(ex, at, NULL, pos, &cur0, &rows);
        if (cur0 > row0) {
            memmove(band, band + (size_t)(cur0 - row0) * rb, (size_t)c * rb);
        }
    }
}

/* Placement `pos` now holds its whole band of this tile (rows of rb bytes from `band`): keep the rows the next tile
   carries (the last rows of this band) in its line buffer. Only a placement with a line buffer has anything to do
   here (one carrying in place keeps its rows in the band buffer until the next tile moves them), so that is looked
   up first; the rows carried are the overlap of this band with the next (tgrs_carried_rows of the next tile, read
   here from the two records). */
static void tgrs_carry_out(tgrs_exec *ex, const tgrs_at *at, uint32_t pos, const uint8_t *band, uint32_t rb)
{
    const uint8_t *now;
    int32_t r0;
    int32_t rows;
    int32_t r1;
    int32_t c;
    uint32_t off;
    uint32_t size;
    if (at->tile + 1u >= at->tiles) {
        return;
    }
    tgrs_line_buffer(ex->plan, at->unit, pos, &off, &size);
    if (off == TGRS_NONE ||
        (at->accum && tgrs_rd_u32(tgrs_placement(ex->plan, at->place_first + pos) + TGRS_PLACEMENT_OFF_TENSOR) ==
                          ex->pos.acc)) {
        return; /* no line buffer, or the accumulating GAP's output (it never carries) */
    }
    now = at->band + (size_t)pos * TGRS_TILE_ROW_SIZE;
    r0 = tgrs_rd_i32(now + TGRS_TILE_ROW_OFF_ROW0);
    rows = tgrs_rd_i32(now + TGRS_TILE_ROW_OFF_ROWS);
    r1 = tgrs_rd_i32(now + (size_t)at->place_count * TGRS_TILE_ROW_SIZE + TGRS_TILE_ROW_OFF_ROW0);
    c = (rows > 0 && r1 < r0 + rows) ? r0 + rows - r1 : 0; /* as tgrs_carried_rows: rows >= 0, no overflow */
    if (c != 0) {
        /* the next band starts c rows before this one ends, no earlier than it starts (step 15): 0 < c <= rows */
        memcpy(ex->fast + off, band + (size_t)(rows - c) * rb, (size_t)c * rb);
        tgrs_touch(&ex->fast_peak, off, size);
    }
}

/* Copy tensor t's band of this tile between its slow home and its fast placement. */
static void tgrs_move(tgrs_exec *ex, const tgrs_at *at, uint32_t t, int to_fast)
{
    uint32_t root = tgrs_root(ex->plan, t);
    const uint8_t *rr = tgrs_tensor(ex->plan, root);
    uint32_t pidx;
    const uint8_t *pr = tgrs_place_of(ex, at, root, &pidx);
    uint32_t poff = tgrs_rd_u32(pr + TGRS_PLACEMENT_OFF_OFFSET);
    uint32_t soff = tgrs_rd_u32(rr + TGRS_TENSOR_OFF_SLOW_OFFSET);
    uint32_t rb = tgrs_row_bytes(rr);
    int32_t row0;
    int32_t rows;
    size_t n;
    tgrs_band(ex, at, rr, pidx, &row0, &rows);
    if (TGRS_ROLLING && to_fast && at->rolling) {
        /* A carrying input: its first rows come from its line buffer; load only the rows after them. */
        int32_t c = tgrs_carried_rows(ex->plan, at->unit, at->tile, pidx, NULL);
        tgrs_carry_in(ex, at, pidx, c, ex->fast + poff, rb);
        row0 += c;
        rows -= c;
        poff += (uint32_t)c * rb;
    }
    n = (size_t)rows * rb;
    if (TGRS_COLS && at->cols) {
        /* A dense [rows, cols, C] band <-> the same pixels of the full-width home, one row run at a time. */
        int32_t col0;
        int32_t cols;
        int32_t r;
        size_t pixel = rb / (uint32_t)tgrs_rd_i32(rr + TGRS_TENSOR_OFF_DIMS + 8u);
        tgrs_tile_cols(ex->plan, at->unit, at->tile, pidx, &col0, &cols);
        for (r = 0; r < rows; ++r) {
            uint8_t *f = ex->fast + poff + (size_t)r * (size_t)cols * pixel;
            uint8_t *s = ex->slow + soff + (size_t)(row0 + r) * rb + (size_t)col0 * pixel;
            if (to_fast) {
                memcpy(f, s, (size_t)cols * pixel);
            } else {
                memcpy(s, f, (size_t)cols * pixel);
            }
        }
        n = 0u;
    }
    if (n != 0u) {
        uint8_t *f = ex->fast + poff;
        uint8_t *s = ex->slow + soff + (size_t)row0 * rb;
        if (to_fast) {
            memcpy(f, s, n);
        } else {
            memcpy(s, f, n);
        }
    }
    tgrs_touch_placement(ex, at->place_first + pidx);
    tgrs_touch(&ex->slow_peak, soff, tgrs_rd_u32(rr + TGRS_TENSOR_OFF_SLOW_SIZE));
    if (TGRS_ROLLING && to_fast && at->rolling) {
        tgrs_carry_out(ex, at, pidx, ex->fast + tgrs_rd_u32(pr + TGRS_PLACEMENT_OFF_OFFSET), rb);
    }
}

static void tgrs_move_list(tgrs_exec *ex, const tgrs_at *at, int to_fast)
{
    uint32_t first = tgrs_rd_u32(at->unit + (to_fast ? TGRS_UNIT_OFF_RELOAD_FIRST : TGRS_UNIT_OFF_SPILL_FIRST));
    uint32_t count = tgrs_rd_u32(at->unit + (to_fast ? TGRS_UNIT_OFF_RELOAD_COUNT : TGRS_UNIT_OFF_SPILL_COUNT));
    uint32_t i;
    for (i = 0; i < count; ++i) {
        tgrs_move(ex, at, tgrs_index_at(ex->plan, first + i), to_fast);
    }
}

static int tgrs_run_op(tgrs_exec *ex, const tgrs_at *at, uint32_t op_index)
{
    const uint8_t *r = tgrs_op(ex->plan, op_index);
    uint32_t kind = tgrs_rd_u32(r + TGRS_OP_OFF_KIND);
    uint32_t n_in = tgrs_rd_u32(r + TGRS_OP_OFF_N_IN);
    int xip = (ex->plan->flags & TGRS_FLAG_XIP) != 0u;
    tgrs_op_frame f;
    uint32_t k;
    uint32_t opos;
    uint8_t *band;
    int rc;

    /* The same context the loader's check of this op and tile saw (check.c), now with addresses. */
    tgrs_op_frame_fill(&f, ex->plan, at->unit, at->tile, op_index, ex->fast, xip ? ex->weights : ex->fast,
                       &ex->pos);
    /* step 17 checked this op in this tile on this frame, and with XIP on the constant bytes the kernel reads */
    f.ctx.proven = xip ? TGRS_PROVEN_SHAPE | TGRS_PROVEN_CONSTS : TGRS_PROVEN_SHAPE;
    tgrs_touch_placement(ex, f.place[0]);
    opos = f.place[0] - at->place_first;
    /* the output's band buffer: f.out (filled above) holds only the rows after the carried ones */
    band = (uint8_t *)f.out.data - (size_t)f.carried * f.out_rb;
    if (TGRS_ROLLING && at->rolling) {
        /* the carried rows first */
        tgrs_carry_in(ex, at, opos, f.carried, band, f.out_rb);
    }
    if (f.out.rows == 0) {
        if (TGRS_ROLLING && at->rolling) {
            tgrs_carry_out(ex, at, opos, band, f.out_rb);
        }
        return TGRS_OK; /* this tile computes no row of this tensor */
    }
    for (k = 0; k < n_in; ++k) {
        tgrs_touch_placement(ex, f.place[k + 1u]);
    }
    if (f.ctx.scratch_size != 0u) {
        tgrs_touch(&ex->fast_peak, tgrs_rd_u32(r + TGRS_OP_OFF_SCRATCH_OFF), f.ctx.scratch_size);
    }
    TGRS_DCHECK(f.out.data != NULL && (f.ctx.scratch_size == 0u || f.ctx.scratch != NULL));
    TGRS_DCHECK(kind >= 1u && kind <= TGRS_OP_COUNT && ex->kernels[kind] != NULL);
    if (TGRS_COLS && at->cols && tgrs_cols_rowwise(ex->plan, at->unit, at->tile, op_index, &f)) {
        /* an operand band wider than the output's (a branch buffer's hull): row by row on sub-band views */
        int32_t row;
        rc = TGRS_OK;
        for (row = f.out.row0; row < f.out.row0 + f.out.rows && rc == TGRS_OK; ++row) {
            tgrs_op_frame g;
            tgrs_op_frame_row(&g, &f, ex->plan, at->unit, at->tile, op_index, row);
            rc = ex->kernels[kind](&g.ctx);
        }
    } else {
        rc = ex->kernels[kind](&f.ctx);
    }
    if (TGRS_ROLLING && rc == TGRS_OK && at->rolling) {
        tgrs_carry_out(ex, at, opos, band, f.out_rb);
    }
    return rc;
}

/* Unit start: the unit's weights into the fast prefix [0, wraw_size). */
static int tgrs_load_weights(tgrs_exec *ex, const uint8_t *u)
{
    uint32_t wb = tgrs_rd_u32(u + TGRS_UNIT_OFF_WEIGHT_BYTES);
    uint32_t raw = tgrs_rd_u32(u + TGRS_UNIT_OFF_WRAW_SIZE);
    const uint8_t *blob = ex->weights + tgrs_rd_u32(u + TGRS_UNIT_OFF_WBLOB_OFF);
    if ((ex->plan->flags & TGRS_FLAG_XIP) != 0u) {
        return TGRS_OK;
    }
    tgrs_touch(&ex->fast_peak, 0u, wb);
    if (raw == 0u) {
        return TGRS_OK;
    }
    if ((ex->plan->flags & TGRS_FLAG_LZ4) != 0u) {
        if (tgrs_lz4_decode(blob, tgrs_rd_u32(u + TGRS_UNIT_OFF_WBLOB_SIZE), ex->fast, raw) != TGRS_LZ4_OK) {
            return TGRS_ERR_LZ4;
        }
        if ((tgrs_rd_u32(u + TGRS_UNIT_OFF_FLAGS) & TGRS_UNIT_F_SHUFFLE) != 0u) {
            /* In place over [0, raw), which the loader proved lies inside the fast arena. */
            (void)tgrs_unshuffle(ex->fast, raw);
        }
    } else {
        memcpy(ex->fast, blob, raw);
    }
    return TGRS_OK;
}

/* Write (input) or read (output) interface record i, converting a declared uint8 boundary to the stored int8. */
static void tgrs_exchange(tgrs_exec *ex, uint32_t i, const uint8_t *src, uint8_t *dst)
{
    const uint8_t *r = tgrs_io(ex->plan, i);
    uint32_t arena = tgrs_rd_u32(r + TGRS_IO_OFF_ARENA);
    uint32_t off = tgrs_rd_u32(r + TGRS_IO_OFF_OFFSET);
    uint32_t n = tgrs_rd_u32(r + TGRS_IO_OFF_NBYTES);
    /* The only conversion the runtime makes; any other declared dtype is exchanged in the stored dtype. */
    int flip = tgrs_rd_u32(r + TGRS_IO_OFF_DECL_DTYPE) == (uint32_t)TGRS_DT_U8 &&
               tgrs_rd_u32(r + TGRS_IO_OFF_DTYPE) == (uint32_t)TGRS_DT_S8;
    uint8_t *home;
    uint32_t k;
    if (arena == TGRS_ARENA_SLOW) {
        const uint8_t *rr = tgrs_tensor(ex->plan, tgrs_root(ex->plan, tgrs_rd_u32(r + TGRS_IO_OFF_TENSOR)));
        home = ex->slow + off;
        tgrs_touch(&ex->slow_peak, off, tgrs_rd_u32(rr + TGRS_TENSOR_OFF_SLOW_SIZE));
    } else {
        home = ex->fast + off;
        tgrs_touch(&ex->fast_peak, off, n);
    }
    if (src == NULL && dst == NULL) {
        return; /* I/O in the arena: the caller wrote (or reads) the home itself, in the stored form */
    }
    if (src == NULL) {
        src = home; /* output: home -> dst */
    } else {
        dst = home; /* input: src -> home */
    }
    if (flip) {
        /* uint8 v and int8 v - 128 are the same real number under zero points that differ by 128: flip bit 7. */
        for (k = 0; k < n; ++k) {
            dst[k] = (uint8_t)(src[k] ^ 0x80u);
        }
    } else if (n != 0u) {
        memcpy(dst, src, n);
    }
}

static int tgrs_run_unit(tgrs_exec *ex, uint32_t ui, tgrs_stats *st)
{
    tgrs_at at;
    uint32_t i;
    uint32_t of;
    uint32_t oc;
    uint32_t tiles;
    int rc;

    at.unit = tgrs_unit(ex->plan, ui);
    at.place_first = tgrs_rd_u32(at.unit + TGRS_UNIT_OFF_PLACE_FIRST);
    at.place_count = tgrs_rd_u32(at.unit + TGRS_UNIT_OFF_PLACE_COUNT);
    at.tiled = (tgrs_rd_u32(at.unit + TGRS_UNIT_OFF_FLAGS) & TGRS_UNIT_F_TILED) != 0u;
    at.rolling = TGRS_ROLLING && (tgrs_rd_u32(at.unit + TGRS_UNIT_OFF_FLAGS) & TGRS_UNIT_F_ROLLING) != 0u;
    at.cols = TGRS_COLS && (tgrs_rd_u32(at.unit + TGRS_UNIT_OFF_FLAGS) & TGRS_UNIT_F_COLS) != 0u;
    at.accum = TGRS_ROLLING && (tgrs_rd_u32(at.unit + TGRS_UNIT_OFF_FLAGS) & TGRS_UNIT_F_ACCUM) != 0u;
    of = tgrs_rd_u32(at.unit + TGRS_UNIT_OFF_OP_FIRST);
    oc = tgrs_rd_u32(at.unit + TGRS_UNIT_OFF_OP_COUNT);
    tiles = tgrs_rd_u32(at.unit + TGRS_UNIT_OFF_TILES);
    at.tiles = tiles;

    for (i = 0; i < TGRS_POS_SLOTS; ++i) {
        ex->pos.tensor[i] = TGRS_NONE; /* positions are per unit */
    }
    ex->pos.acc = TGRS_NONE;
    if ((tgrs_rd_u32(at.unit + TGRS_UNIT_OFF_FLAGS) & TGRS_UNIT_F_ACCUM) != 0u) {
        /* the accumulating GAP's output never carries (tgrs_is_accumulator), looked up once per unit */
        ex->pos.acc = tgrs_root(ex->plan, tgrs_rd_u32(tgrs_op(ex->plan, tgrs_rd_u32(at.unit + TGRS_UNIT_OFF_OP_FIRST) +
                                                                      tgrs_rd_u32(at.unit + TGRS_UNIT_OFF_OP_COUNT) -
                                                                      1u) +
                                                          TGRS_OP_OFF_OUTPUT));
    }
    rc = tgrs_load_weights(ex, at.unit);
    if (rc != TGRS_OK) {
        return rc;
    }
    for (at.tile = 0; at.tile < tiles; ++at.tile) {
        at.band = TGRS_ROLLING && at.rolling ? tgrs_rec(ex->plan, TGRS_SEC_TILE_ROWS,
                                                        tgrs_rd_u32(at.unit + TGRS_UNIT_OFF_ROWS_FIRST) +
                                                            at.tile * at.place_count,
                                                        TGRS_TILE_ROW_SIZE)
                                            : NULL; /* only tgrs_carry_out reads it */
        tgrs_move_list(ex, &at, 1);
        for (i = of; i < of + oc; ++i) {
            rc = tgrs_run_op(ex, &at, i);
            if (rc != TGRS_OK) {
                st->failed_op = (int32_t)i;
                return rc > 0 ? TGRS_ERR_UNSUPPORTED : rc; /* a kernel returning a positive value is a bug */
            }
            st->ops++;
        }
        tgrs_move_list(ex, &at, 0);
    }
    return TGRS_OK;
}

/* The first op whose kind has no kernel in `kernels` (n_kernels entries, indexed by TGRS_OP_*), or TGRS_NONE. The
   loader proved every kind lies in 1..TGRS_OP_COUNT; a table may be shorter and may leave kinds NULL. */
static uint32_t tgrs_first_missing(const tgrs_plan *plan, const tgrs_kernel_fn *kernels, uint32_t n_kernels)
{
    uint32_t i;
    for (i = 0; i < plan->sec_count[TGRS_SEC_OPS]; ++i) {
        uint32_t kind = tgrs_rd_u32(tgrs_op(plan, i) + TGRS_OP_OFF_KIND);
        if (kind >= n_kernels || kernels[kind] == NULL) {
            return i;
        }
    }
    return TGRS_NONE;
}

int tgrs_check_kernels(const tgrs_plan *plan, const tgrs_kernel_fn *kernels, uint32_t n_kernels)
{
    if (plan == NULL || kernels == NULL) {
        return TGRS_ERR_NULL;
    }
    if (plan->loaded != TGRS_PLAN_LOADED) {
        return TGRS_ERR_STATE;
    }
    return tgrs_first_missing(plan, kernels, n_kernels) == TGRS_NONE ? TGRS_OK : TGRS_ERR_UNSUPPORTED;
}

int tgrs_arenas_ok(const tgrs_plan *plan, const void *fast, size_t fast_len, const void *slow, size_t slow_len)
{
    if ((fast == NULL && plan->fast_arena != 0u) || (slow == NULL && plan->slow_arena != 0u)) {
        return TGRS_ERR_NULL;
    }
    if ((uintptr_t)fast % TGRS_ARENA_ALIGN != 0u || (uintptr_t)slow % TGRS_ARENA_ALIGN != 0u) {
        return TGRS_ERR_ALIGN;
    }
    if (fast_len < plan->fast_arena || slow_len < plan->slow_arena) {
        return TGRS_ERR_ARENA_SMALL;
    }
    if (TGRS_REGION && (plan->flags & TGRS_FLAG_ONE_REGION) != 0u && slow != fast) {
        /* One region: the loader proved the slow homes clear of each unit's buffers only within the same memory. */
        return TGRS_ERR_REGION;
    }
    return TGRS_OK;
}

int tgrs_run(const tgrs_plan *plan, void *fast, size_t fast_len, void *slow, size_t slow_len,
             const void *const *inputs, void *const *outputs, tgrs_stats *stats)
{
    return tgrs_run_kernels(plan, tgrs_kernel_table, TGRS_OP_COUNT + 1u, fast, fast_len, slow, slow_len, inputs,
                            outputs, stats);
}

/* The in-place entry points pass these as inputs/outputs: the caller wrote each input at its home
   (tgrs_input_home) and reads each output at its home after the run. The homes are where the copying run copies to
   before unit 0 and from after the last unit, so both modes compute on the same bytes. Private addresses no caller
   can pass, so tgrs_run_kernels stays the one body (no wrapper on the copying path). */
static const void *const tgrs_no_inputs[1] = {NULL};
static void *const tgrs_no_outputs[1] = {NULL};

int tgrs_run_kernels(const tgrs_plan *plan, const tgrs_kernel_fn *kernels, uint32_t n_kernels, void *fast,
                     size_t fast_len, void *slow, size_t slow_len, const void *const *inputs, void *const *outputs,
                     tgrs_stats *stats)
{
    const int in_place = inputs == tgrs_no_inputs;
    tgrs_stats local;
    tgrs_stats *st = stats != NULL ? stats : &local;
    tgrs_exec ex;
    uint32_t i;
    int rc;

    memset(st, 0, sizeof *st);
    st->failed_op = -1;
    st->failed_unit = -1;
    if (plan == NULL || kernels == NULL || inputs == NULL || outputs == NULL) {
        return TGRS_ERR_NULL;
    }
    if (plan->loaded != TGRS_PLAN_LOADED) {
        return TGRS_ERR_STATE;
    }
    rc = tgrs_arenas_ok(plan, fast, fast_len, slow, slow_len);
    if (rc != TGRS_OK) {
        return rc;
    }
    for (i = 0; !in_place && i < plan->n_inputs; ++i) {
        if (inputs[i] == NULL) {
            return TGRS_ERR_NULL;
        }
    }
    for (i = 0; !in_place && i < plan->n_outputs; ++i) {
        if (outputs[i] == NULL) {
            return TGRS_ERR_NULL;
        }
    }
    i = tgrs_first_missing(plan, kernels, n_kernels);
    if (i != TGRS_NONE) {
        /* Refused before anything runs: a kind the firmware did not link is never called through NULL. */
        st->failed_op = (int32_t)i;
        return TGRS_ERR_UNSUPPORTED;
    }
    ex.plan = plan;
    ex.kernels = kernels;
    ex.fast = (uint8_t *)fast;
    ex.slow = (uint8_t *)slow;
    ex.weights = plan->base + plan->sec_off[TGRS_SEC_WEIGHTS];
    ex.fast_peak = 0u;
    ex.slow_peak = 0u;

    for (i = 0; i < plan->n_inputs; ++i) {
        tgrs_exchange(&ex, i, in_place ? NULL : (const uint8_t *)inputs[i], NULL);
    }
    rc = TGRS_OK;
    for (i = 0; i < plan->sec_count[TGRS_SEC_UNITS]; ++i) {
        rc = tgrs_run_unit(&ex, i, st);
        if (rc != TGRS_OK) {
            st->failed_unit = (int32_t)i;
            break;
        }
        st->units++;
    }
    if (rc == TGRS_OK) {
        for (i = 0; i < plan->n_outputs; ++i) {
            tgrs_exchange(&ex, plan->n_inputs + i, NULL, in_place ? NULL : (uint8_t *)outputs[i]);
        }
    }
    st->fast_peak = ex.fast_peak;
    st->slow_peak = ex.slow_peak;
    return rc;
}

int tgrs_run_kernels_in_place(const tgrs_plan *plan, const tgrs_kernel_fn *kernels, uint32_t n_kernels, void *fast,
                              size_t fast_len, void *slow, size_t slow_len, tgrs_stats *stats)
{
    return tgrs_run_kernels(plan, kernels, n_kernels, fast, fast_len, slow, slow_len, tgrs_no_inputs, tgrs_no_outputs,
                            stats);
}

int tgrs_run_in_place(const tgrs_plan *plan, void *fast, size_t fast_len, void *slow, size_t slow_len,
                      tgrs_stats *stats)
{
    return tgrs_run_kernels_in_place(plan, tgrs_kernel_table, TGRS_OP_COUNT + 1u, fast, fast_len, slow, slow_len,
                                     stats);
}
