/*
 * tgrs_internal.h - private helpers shared by the loader, the executor and the query functions.
 *
 * Every field of the plan is read through these little-endian readers at the TGRS_<REC>_OFF_<FIELD> offsets of
 * tgrs_format.h rather than through struct casts: the plan buffer is only guaranteed 4-byte aligned (a u64 field
 * would need 8 on some targets), and reading bytes keeps the runtime correct on a big-endian host too.
 */
#ifndef TGRS_INTERNAL_H
#define TGRS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tgrs_op.h"
#include "tigris.h"

/* The plan is little-endian. On a little-endian target a field is read with one load of the native word (memcpy:
 * no alignment assumed; a Cortex-M3/M4/M7/M33 emits a single unaligned LDR), which keeps the loader's couple of
 * hundred field reads from each becoming a call or four byte loads (docs/runtime.md "Code size"). Elsewhere the bytes
 * are assembled. The only place the byte order is chosen. */
/* Halo reuse (ROLLING units, docs/format.md). A firmware whose plans have no ROLLING unit may build with
 * -DTGRS_NO_ROLLING: the line-buffer moves of the executor and the loader's checks of them fold away (about 1.1 KiB
 * on a Cortex-M4F at -Os), and the loader refuses a ROLLING unit with TGRS_ERR_UNSUPPORTED. tigris codegen says in
 * the generated file whether its plan needs them. */
#if defined(TGRS_NO_ROLLING)
#define TGRS_ROLLING 0
#else
#define TGRS_ROLLING 1
#endif
/* Column tiling (COLS units, docs/format.md). Likewise -DTGRS_NO_COLS folds away the executor's strided band copies,
 * the band-relative parameters and the loader's column checks (about 1.5 KiB on a Cortex-M4F at -Os); the loader
 * then refuses a COLS unit with TGRS_ERR_UNSUPPORTED, and tigris codegen says whether its plan needs them. */
#if defined(TGRS_NO_COLS)
#define TGRS_COLS 0
#else
#define TGRS_COLS 1
#endif
/* The accumulating GlobalAveragePool (ACCUM units, docs/format.md). Likewise -DTGRS_NO_ACCUM folds away the
 * executor's phases and the GAP's accumulating kernel (kernels/variants.h); the loader then refuses an ACCUM unit with
 * TGRS_ERR_UNSUPPORTED, and tigris codegen says whether its plan needs them. */
#if defined(TGRS_NO_ACCUM)
#define TGRS_ACCUM 0
#else
#define TGRS_ACCUM 1
#endif
/* Outputs over dying inputs' slow homes (OVERWRITE units) and one SRAM region (header flag ONE_REGION; docs/format.md).
 * Both change nothing at run time but need the loader's proofs, which -DTGRS_NO_OVERWRITE and -DTGRS_NO_REGION fold
 * away (about 1.5 KiB and 0.5 KiB on a Cortex-M4F at -Os); the loader then refuses such a unit or plan with
 * TGRS_ERR_UNSUPPORTED, and tigris codegen says whether its plan needs them. */
#if defined(TGRS_NO_OVERWRITE)
#define TGRS_OVERWRITE 0
#else
#define TGRS_OVERWRITE 1
#endif
#if defined(TGRS_NO_REGION)
#define TGRS_REGION 0
#else
#define TGRS_REGION 1
#endif
/* Views (tensor flag VIEW, docs/format.md "Views"): a tensor whose bytes are a run of its root's buffer at view_off (a
 * Concat's input written straight into the Concat's output, a Slice's output read in place). -DTGRS_NO_VIEWS folds
 * away the loader's proof of the runs and the executor's offset; the loader then refuses a VIEW tensor with
 * TGRS_ERR_UNSUPPORTED, and tigris codegen says whether its plan needs them. */
#if defined(TGRS_NO_VIEWS)
#define TGRS_VIEWS 0
#else
#define TGRS_VIEWS 1
#endif

#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define TGRS_NATIVE_LE 1
#else
#define TGRS_NATIVE_LE 0
#endif

static inline uint32_t tgrs_rd_u32(const uint8_t *p)
{
    if (TGRS_NATIVE_LE) {
        uint32_t v;
        memcpy(&v, p, sizeof v);
        return v;
    }
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static inline uint16_t tgrs_rd_u16(const uint8_t *p)
{
    if (TGRS_NATIVE_LE) {
        uint16_t v;
        memcpy(&v, p, sizeof v);
        return v;
    }
    return (uint16_t)((uint16_t)p[0] | (uint16_t)((uint16_t)p[1] << 8));
}

static inline int32_t tgrs_rd_i32(const uint8_t *p)
{
    uint32_t u = tgrs_rd_u32(p);
    int32_t v;
    memcpy(&v, &u, sizeof v); /* two's complement reinterpretation without implementation-defined conversion */
    return v;
}

static inline float tgrs_rd_f32(const uint8_t *p)
{
    uint32_t u = tgrs_rd_u32(p);
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Record `idx` of section `sec` (the loader proved idx < count wherever this is used). */
static inline const uint8_t *tgrs_rec(const tgrs_plan *plan, uint32_t sec, uint32_t idx, uint32_t rec_size)
{
    return plan->base + plan->sec_off[sec] + (size_t)idx * rec_size;
}

static inline const uint8_t *tgrs_tensor(const tgrs_plan *plan, uint32_t t)
{
    return tgrs_rec(plan, TGRS_SEC_TENSORS, t, TGRS_TENSOR_SIZE);
}

static inline const uint8_t *tgrs_op(const tgrs_plan *plan, uint32_t i)
{
    return tgrs_rec(plan, TGRS_SEC_OPS, i, TGRS_OP_SIZE);
}

static inline const uint8_t *tgrs_unit(const tgrs_plan *plan, uint32_t u)
{
    return tgrs_rec(plan, TGRS_SEC_UNITS, u, TGRS_UNIT_SIZE);
}

static inline const uint8_t *tgrs_placement(const tgrs_plan *plan, uint32_t p)
{
    return tgrs_rec(plan, TGRS_SEC_PLACEMENTS, p, TGRS_PLACEMENT_SIZE);
}

static inline const uint8_t *tgrs_io(const tgrs_plan *plan, uint32_t i)
{
    return tgrs_rec(plan, TGRS_SEC_IO, i, TGRS_IO_SIZE);
}

static inline uint32_t tgrs_index_at(const tgrs_plan *plan, uint32_t i)
{
    return tgrs_rd_u32(tgrs_rec(plan, TGRS_SEC_INDEX, i, 4u));
}

static inline uint32_t tgrs_root(const tgrs_plan *plan, uint32_t t)
{
    return tgrs_rd_u32(tgrs_tensor(plan, t) + TGRS_TENSOR_OFF_ROOT);
}

/*
 * Position (absolute PLACEMENT index) of root tensor `t` among the unit's placements, or TGRS_NONE. The loader
 * proved the unit's placements strictly increasing by tensor, so a binary search is exact.
 */
static inline uint32_t tgrs_find_placement(const tgrs_plan *plan, uint32_t first, uint32_t count, uint32_t t)
{
    uint32_t lo = 0;
    uint32_t hi = count;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2u;
        uint32_t v = tgrs_rd_u32(tgrs_placement(plan, first + mid) + TGRS_PLACEMENT_OFF_TENSOR);
        if (v == t) {
            return first + mid;
        }
        if (v < t) {
            lo = mid + 1u;
        } else {
            hi = mid;
        }
    }
    return TGRS_NONE;
}

/* Bytes of one row (axis 1) of tensor record `tr`: nbytes / dims[1] (the loader proved dims[1] >= 1 and exact). */
static inline uint32_t tgrs_row_bytes(const uint8_t *tr)
{
    uint32_t h = (uint32_t)tgrs_rd_i32(tr + TGRS_TENSOR_OFF_DIMS + 4u);
    return tgrs_rd_u32(tr + TGRS_TENSOR_OFF_NBYTES) / h;
}

/*
 * Everything one kernel call sees, resolved from a loaded plan's records: the views of the output and inputs (dims,
 * dtype, quantization, and the band of the given tile), the params, the constants' lengths, the scratch size and the
 * phase of an accumulating GAP. The executor and the loader's per-kind check both build their contexts with
 * tgrs_op_frame_fill (check.c), so a check sees exactly what the kernel will see, less the addresses.
 */
typedef struct tgrs_op_frame {
    tgrs_tview views[TGRS_MAX_INPUTS];
    tgrs_tview out;
    int32_t params[TGRS_MAX_PARAMS];
    uint32_t place[TGRS_MAX_INPUTS + 1]; /* absolute PLACEMENT index of the output [0] and of input k at [k + 1] */
    int32_t carried;                     /* rows the output band carries from the tile before (ROLLING), else 0 */
    uint32_t out_rb;                     /* bytes of one output row (ROLLING units), else 0 */
    tgrs_op_ctx ctx;
} tgrs_op_frame;

/*
 * The positions of root tensors among one unit's placements, remembered from tile to tile by the executor (the
 * loader passes none): a direct-mapped table keyed by tensor index, so a tiled unit's views search the unit's
 * placements once per tensor instead of once per op and tile. TGRS_NONE marks an empty slot.
 */
#define TGRS_POS_SLOTS 16u
typedef struct tgrs_pos_cache {
    uint32_t tensor[TGRS_POS_SLOTS];
    uint32_t pos[TGRS_POS_SLOTS];
    uint32_t acc; /* an ACCUM unit's accumulator (root of its last op's output), else TGRS_NONE */
} tgrs_pos_cache;

/*
 * Fill `f` for OP record op_index of unit `unit` in tile `tile`. `fast` is the fast arena, or NULL for no addresses
 * (views get data NULL, the scratch NULL). `consts` is the base the op's constant offsets count from (the fast arena
 * after a unit's weights are loaded, the WEIGHTS section for XIP), or NULL when the constants' bytes are not
 * available. `cache` (or NULL) remembers placement positions across calls for the same unit (cleared to TGRS_NONE
 * before its first). f->ctx points into f: use f in place.
 */
void tgrs_op_frame_fill(tgrs_op_frame *f, const tgrs_plan *plan, const uint8_t *unit, uint32_t tile, uint32_t op_index,
                        uint8_t *fast, const uint8_t *consts, tgrs_pos_cache *cache);

/*
 * A COLS unit's per-pixel op (or 1x1 window, tgrs_col_pointwise) reading an operand of the output's width whose column band is wider than the output's
 * (a branch buffer's hull, docs/format.md "COLS units"): the op runs one output row at a time on sub-band views
 * (tgrs_op_frame_row). 1 when op `op_index`, filled into `f` for tile `tile`, runs so; 0 otherwise (and outside
 * COLS units).
 */
int tgrs_cols_rowwise(const tgrs_plan *plan, const uint8_t *unit, uint32_t tile, uint32_t op_index,
                      const tgrs_op_frame *f);

/* 1 when OP record `op` of kind `kind` is a WINDOW kind whose W window is one column wide, stride 1, unpadded (a
   1x1 conv): output column c reads input column c, so it may read a sub-band like a PIXEL kind. */
int tgrs_col_pointwise(const uint8_t *op, uint32_t kind);

/*
 * `d` = frame `f` of op `op_index` (tile `tile`) narrowed to its output row `r` (f->out.row0 <= r < f->out.row0 +
 * f->out.rows): every view holds that one row, an operand of the output's width only the output band's columns of
 * it (at their offset inside its dense band), so the views are dense again. An operand band lacking row r gets
 * rows 0 and the kind check refuses it (TGRS_ERR_TILE). d->ctx points into d.
 */
void tgrs_op_frame_row(tgrs_op_frame *d, const tgrs_op_frame *f, const tgrs_plan *plan, const uint8_t *unit,
                       uint32_t tile, uint32_t op_index, int32_t r);

/*
 * Halo reuse (docs/format.md "ROLLING units"): the rows placement `pos` (position in the unit's placements) of tiled
 * unit `unit` carries from tile `tile` - 1 into tile `tile`: 0 unless the unit is ROLLING, tile >= 1, the placement
 * is not an ACCUM unit's accumulator and its band overlaps its band in the tile before. *prev_row0 (when not NULL)
 * receives the first row of that earlier band. The loader proved a carrying band never moves backwards, so the
 * carried rows are the last rows of the earlier band and the first rows of the current one.
 */
int32_t tgrs_carried_rows(const tgrs_plan *plan, const uint8_t *unit, uint32_t tile, uint32_t pos, int32_t *prev_row0);

/* Whether placement pos (position in the unit's placements, first placement pf) of ACCUM unit `unit` holds the
   accumulating GAP's output (the root of the unit's last op's output), which never carries. */
int tgrs_is_accumulator(const tgrs_plan *plan, const uint8_t *unit, uint32_t pf, uint32_t pos);

/* The line buffer (fast offset, size) of placement `pos` of ROLLING unit `unit`: (TGRS_NONE, 0) when it carries
   nothing. The loader proved the list inside INDEX and every line buffer inside the fast arena. */
static inline void tgrs_line_buffer(const tgrs_plan *plan, const uint8_t *unit, uint32_t pos, uint32_t *off,
                                    uint32_t *size)
{
    uint32_t first = tgrs_rd_u32(unit + TGRS_UNIT_OFF_CARRY_FIRST) + 2u * pos;
    *off = tgrs_index_at(plan, first);
    *size = tgrs_index_at(plan, first + 1u);
}

/* Whether placement `pos` of ROLLING unit `unit` never carries although its bands may overlap: its line-buffer
   entry is (TGRS_NONE, TGRS_NONE), its producer computing the whole band in every tile (docs/format.md "ROLLING
   units"; the loader refused such an entry on a reloaded placement). */
static inline int tgrs_never_carries(const tgrs_plan *plan, const uint8_t *unit, uint32_t pos)
{
    uint32_t off;
    uint32_t size;
    tgrs_line_buffer(plan, unit, pos, &off, &size);
    return off == TGRS_NONE && size == TGRS_NONE;
}

/* Column band (col0, cols) of placement `pos` of COLS unit `unit` in tile `tile`: the TILE_ROWS record after the
   unit's row bands (docs/format.md "COLS units"; the loader proved it inside the section). */
static inline void tgrs_tile_cols(const tgrs_plan *plan, const uint8_t *unit, uint32_t tile, uint32_t pos,
                                  int32_t *col0, int32_t *cols)
{
    const uint8_t *r = tgrs_rec(plan, TGRS_SEC_TILE_ROWS,
                                tgrs_rd_u32(unit + TGRS_UNIT_OFF_ROWS_FIRST) +
                                    (tgrs_rd_u32(unit + TGRS_UNIT_OFF_TILES) + tile) *
                                        tgrs_rd_u32(unit + TGRS_UNIT_OFF_PLACE_COUNT) + pos,
                                TGRS_TILE_COL_SIZE);
    *col0 = tgrs_rd_i32(r + TGRS_TILE_COL_OFF_COL0);
    *cols = tgrs_rd_i32(r + TGRS_TILE_COL_OFF_COLS);
}

/* The W window (kw, sw, dw, pl, pr) of OP record `op` of a TGRS_COLS_WINDOW kind into w[5]: 1 when every value is
   within the kernels' window limit (then the band arithmetic cannot overflow), 0 otherwise (the kind check refuses
   such an op). One copy (check.c) for the loader and the executor. */
int tgrs_col_window(const uint8_t *op, uint32_t kind, int64_t *w);

/* Steps 1-16 of tgrs_load (loader.c). */
int tgrs_load_steps(tgrs_plan *plan, const void *bytes, size_t len);

/* The loader's last step (check.c): every op's check (checks[kind], n_checks entries) in every tile. On failure
   *failed_op is the OP record index. */
/* The arena arguments every run entry and the in-arena home queries accept: present where the plan uses them,
   aligned, large enough. TGRS_OK or the status code. */
int tgrs_arenas_ok(const tgrs_plan *plan, const void *fast, size_t fast_len, const void *slow, size_t slow_len);
int tgrs_check_kinds(const tgrs_plan *plan, const tgrs_check_fn *checks, uint32_t n_checks, int32_t *failed_op);

#endif /* TGRS_INTERNAL_H */
