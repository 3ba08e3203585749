/*
 * loader.c - tgrs_load: validate a .tgrs plan completely before anything uses it.
 *
 * The checks follow docs/format.md "What a reader must check", in its order, so the first failure found is the one
 * the document (and the Python reader) names. Everything is computed in 64 bits or compared as "size > limit -
 * offset" so no sum can wrap. After tgrs_load succeeds the executor indexes records without further checks, except
 * the ones only a run can make (arena sizes and LZ4 output, which the loader also pre-validates).
 *
 * Beyond the document (safety the executor relies on):
 *   - every LZ4 block is decoded once without output (tgrs_lz4_validate), so a malformed block is refused at load;
 *   - in a tiled unit every tensor an op, reload or spill touches has the same rows as its root, because bands are
 *     stated per root buffer (TGRS_ERR_TILE_ROWS);
 *   - a FAST interface home's placement must hold the whole tensor (TGRS_ERR_IO);
 *   - op names are string references like any other (TGRS_ERR_STRING);
 *   - a tiled unit has at least one placement (TGRS_ERR_UNIT), so its tile count is bounded by the file size.
 *   - step 17, the per-kind check of every op in every tile (check.c), proves what the kernels rely on, so a plan
 *     the loader accepts never fails a kernel check at run time (except an LZ4 unit's constant values, which
 *     exist only once the run decodes them).
 * What the loader cannot prove is liveness (that no two live buffers overlap): plan/check.py proves it at compile
 * time, and a plan that breaks it still only reads and writes inside the caller's arenas.
 */
#include "tgrs_internal.h"
#include "tgrs_lz4.h"

#define TGRS_DATA_START (TGRS_DIR_OFFSET + TGRS_SECTION_COUNT * TGRS_SECTION_SIZE)

/* ---- CRC-32 (IEEE 802.3, reflected, as zlib): a 16-entry nibble table, small enough for any MCU ---- */
static uint32_t tgrs_crc32(const uint8_t *p, size_t n)
{
    static const uint32_t tbl[16] = {
        0x00000000u, 0x1DB71064u, 0x3B6E20C8u, 0x26D930ACu, 0x76DC4190u, 0x6B6B51F4u, 0x4DB26158u, 0x5005713Cu,
        0xEDB88320u, 0xF00F9344u, 0xD6D6A3E8u, 0xCB61B38Cu, 0x9B64C2B0u, 0x86D3D2D4u, 0xA00AE278u, 0xBDBDF21Cu,
    };
    uint32_t c = 0xFFFFFFFFu;
    size_t i;
    for (i = 0; i < n; ++i) {
        c ^= p[i];
        c = (c >> 4) ^ tbl[c & 15u];
        c = (c >> 4) ^ tbl[c & 15u];
    }
    return c ^ 0xFFFFFFFFu;
}

static int tgrs_dtype_ok(uint32_t dt)
{
    return dt == (uint32_t)TGRS_DT_F32 || dt == (uint32_t)TGRS_DT_S8 || dt == (uint32_t)TGRS_DT_U8 ||
           dt == (uint32_t)TGRS_DT_S32 || dt == (uint32_t)TGRS_DT_S16;
}

static uint32_t tgrs_dtype_bytes(uint32_t dt)
{
    switch (dt) {
    case (uint32_t)TGRS_DT_F32: return 4u;
    case (uint32_t)TGRS_DT_S8: return 1u;
    case (uint32_t)TGRS_DT_U8: return 1u;
    case (uint32_t)TGRS_DT_S32: return 4u;
    case (uint32_t)TGRS_DT_S16: return 2u;
    default: return 0u;
    }
}

/* A finite, strictly positive float (NaN fails every comparison). */
static int tgrs_scale_ok(float s)
{
    return s > 0.0f && s <= 3.4028234e38f;
}

/* [off, off + len) lies inside [0, limit), without overflow. */
static int tgrs_fits(uint32_t off, uint32_t len, uint32_t limit)
{
    return off <= limit && len <= limit - off;
}

static int tgrs_check_string(const tgrs_plan *plan, uint32_t off, uint32_t len)
{
    uint32_t n = plan->sec_size[TGRS_SEC_STRINGS];
    if (off >= n || len >= n - off) { /* off + len must be < n: the NUL sits there */
        return TGRS_ERR_STRING;
    }
    if (plan->base[plan->sec_off[TGRS_SEC_STRINGS] + off + len] != 0u) {
        return TGRS_ERR_STRING;
    }
    return TGRS_OK;
}

/* INDEX list (first, count) inside the INDEX section. */
static int tgrs_check_list(const tgrs_plan *plan, uint32_t first, uint32_t count)
{
    return tgrs_fits(first, count, plan->sec_count[TGRS_SEC_INDEX]) ? TGRS_OK : TGRS_ERR_INDEX;
}

static uint32_t tgrs_rec_size(uint32_t id)
{
    switch (id) {
    case TGRS_SEC_PLAN: return TGRS_PLAN_SIZE;
    case TGRS_SEC_TENSORS: return TGRS_TENSOR_SIZE;
    case TGRS_SEC_IO: return TGRS_IO_SIZE;
    case TGRS_SEC_OPS: return TGRS_OP_SIZE;
    case TGRS_SEC_UNITS: return TGRS_UNIT_SIZE;
    case TGRS_SEC_PLACEMENTS: return TGRS_PLACEMENT_SIZE;
    case TGRS_SEC_TILE_ROWS: return TGRS_TILE_ROW_SIZE;
    case TGRS_SEC_INDEX: return 4u;
    case TGRS_SEC_STAGES: return TGRS_STAGE_SIZE;
    default: return 0u; /* byte sections: STRINGS, WEIGHTS */
    }
}

/* Steps 2-9: header, CRC, directory. */
static int tgrs_check_header(tgrs_plan *plan, const uint8_t *b, size_t len)
{
    uint32_t file_size;
    uint32_t flags;
    uint32_t prev_end = TGRS_DATA_START;
    uint32_t i;

    if (len < TGRS_HEADER_SIZE) {
        return TGRS_ERR_TRUNCATED;
    }
    if (tgrs_rd_u32(b + TGRS_HEADER_OFF_MAGIC) !=
        (TGRS_MAGIC0 | (TGRS_MAGIC1 << 8) | (TGRS_MAGIC2 << 16) | (TGRS_MAGIC3 << 24))) { /* one word compare */
        return TGRS_ERR_MAGIC;
    }
    if (tgrs_rd_u16(b + TGRS_HEADER_OFF_VERSION) != TGRS_FORMAT_VERSION) {
        return TGRS_ERR_VERSION;
    }
    file_size = tgrs_rd_u32(b + TGRS_HEADER_OFF_FILE_SIZE);
    if ((size_t)file_size > len) {
        return TGRS_ERR_TRUNCATED;
    }
    if ((size_t)file_size < len || file_size < TGRS_DATA_START) {
        return TGRS_ERR_SIZE;
    }
    if (tgrs_crc32(b + TGRS_CRC_START, file_size - TGRS_CRC_START) != tgrs_rd_u32(b + TGRS_HEADER_OFF_CRC32)) {
        return TGRS_ERR_CRC;
    }
    flags = tgrs_rd_u32(b + TGRS_HEADER_OFF_FLAGS);
    if (tgrs_rd_u16(b + TGRS_HEADER_OFF_HEADER_SIZE) != TGRS_HEADER_SIZE ||
        tgrs_rd_u32(b + TGRS_HEADER_OFF_SECTION_COUNT) != TGRS_SECTION_COUNT ||
        tgrs_rd_u32(b + TGRS_HEADER_OFF_DIR_OFFSET) != TGRS_DIR_OFFSET ||
        tgrs_rd_u32(b + TGRS_HEADER_OFF_TARGET) >= TGRS_TARGET_COUNT || (flags & ~TGRS_FLAGS_KNOWN) != 0u ||
        ((flags & TGRS_FLAG_XIP) != 0u && (flags & TGRS_FLAG_LZ4) != 0u)) {
        return TGRS_ERR_HEADER;
    }
    plan->base = b;
    plan->size = file_size;
    plan->flags = flags;

    /* Step 8 for every entry, then step 9: a malformed directory is reported before any bound. */
    for (i = 0; i < TGRS_SECTION_COUNT; ++i) {
        const uint8_t *e = b + TGRS_DIR_OFFSET + i * TGRS_SECTION_SIZE;
        uint32_t id = tgrs_rd_u32(e + TGRS_SECTION_OFF_ID);
        uint32_t size = tgrs_rd_u32(e + TGRS_SECTION_OFF_SIZE);
        uint32_t count = tgrs_rd_u32(e + TGRS_SECTION_OFF_COUNT);
        uint32_t rs;
        if (id != i + 1u) {
            return TGRS_ERR_SECTION;
        }
        rs = tgrs_rec_size(id);
        if (rs == 0u ? count != size : (uint64_t)count * rs != (uint64_t)size) {
            return TGRS_ERR_SECTION;
        }
        if ((id == TGRS_SEC_PLAN && count != 1u) || (id == TGRS_SEC_UNITS && count == 0u)) {
            return TGRS_ERR_SECTION;
        }
    }
    for (i = 0; i < TGRS_SECTION_COUNT; ++i) {
        const uint8_t *e = b + TGRS_DIR_OFFSET + i * TGRS_SECTION_SIZE;
        uint32_t off = tgrs_rd_u32(e + TGRS_SECTION_OFF_OFFSET);
        uint32_t size = tgrs_rd_u32(e + TGRS_SECTION_OFF_SIZE);
        if (off % TGRS_ALIGN != 0u || off < prev_end || !tgrs_fits(off, size, file_size)) {
            return TGRS_ERR_SECTION_BOUNDS;
        }
        prev_end = off + size;
        plan->sec_off[i + 1u] = off;
        plan->sec_size[i + 1u] = size;
        plan->sec_count[i + 1u] = tgrs_rd_u32(e + TGRS_SECTION_OFF_COUNT);
    }
    return TGRS_OK;
}

/* Step 10 (max_prefix is checked with the units, where the largest weight_bytes is known). */
static int tgrs_check_plan_rec(tgrs_plan *plan)
{
    const uint8_t *p = tgrs_rec(plan, TGRS_SEC_PLAN, 0u, TGRS_PLAN_SIZE);
    uint32_t n_in = tgrs_rd_u32(p + TGRS_PLAN_OFF_N_INPUTS);
    uint32_t n_out = tgrs_rd_u32(p + TGRS_PLAN_OFF_N_OUTPUTS);
    plan->fast_arena = tgrs_rd_u32(p + TGRS_PLAN_OFF_FAST_ARENA);
    plan->slow_arena = tgrs_rd_u32(p + TGRS_PLAN_OFF_SLOW_ARENA);
    if (n_in == 0u || n_out == 0u || (uint64_t)n_in + n_out != (uint64_t)plan->sec_count[TGRS_SEC_IO] ||
        tgrs_rd_u32(p + TGRS_PLAN_OFF_MAX_PREFIX) > plan->fast_arena ||
        tgrs_rd_u32(p + TGRS_PLAN_OFF_WEIGHT_STORED) != plan->sec_size[TGRS_SEC_WEIGHTS]) {
        return TGRS_ERR_PLAN;
    }
    plan->n_inputs = n_in;
    plan->n_outputs = n_out;
    return tgrs_check_string(plan, tgrs_rd_u32(p + TGRS_PLAN_OFF_NAME_OFF), tgrs_rd_u32(p + TGRS_PLAN_OFF_NAME_LEN));
}

/* The physical view dims of (shape, layout), as docs/design.md defines them; 0 when the shape has no view. */
static int tgrs_view_dims(uint32_t layout, uint32_t rank, const int32_t *shape, int64_t *v)
{
    uint32_t i;
    v[0] = v[1] = v[2] = v[3] = 1;
    if (layout == TGRS_LAYOUT_NHWC) {
        if (rank != 4u) {
            return 0;
        }
        v[0] = shape[0];
        v[1] = shape[2];
        v[2] = shape[3];
        v[3] = shape[1];
        return 1;
    }
    if (layout == TGRS_LAYOUT_NWC) {
        if (rank != 3u) {
            return 0;
        }
        v[0] = shape[0];
        v[1] = shape[2];
        v[3] = shape[1];
        return 1;
    }
    /* plain: leading ones; ranks above 4 fold their leading axes into N */
    if (rank > 4u) {
        int64_t lead = 1;
        for (i = 0; i + 3u < rank; ++i) {
            lead *= shape[i];
            if (lead > INT32_MAX || lead < 1) {
                return 0;
            }
        }
        v[0] = lead;
        v[1] = shape[rank - 3u];
        v[2] = shape[rank - 2u];
        v[3] = shape[rank - 1u];
        return 1;
    }
    for (i = 0; i < rank; ++i) {
        v[4u - rank + i] = shape[i];
    }
    return 1;
}

/* Step 12: every tensor record, then the alias/root rules that need other records. */
static int tgrs_check_tensors(const tgrs_plan *plan)
{
    uint32_t n = plan->sec_count[TGRS_SEC_TENSORS];
    uint32_t t;
    const uint32_t known = TGRS_TENSOR_F_INPUT | TGRS_TENSOR_F_OUTPUT | TGRS_TENSOR_F_SLOW | TGRS_TENSOR_F_ALIAS |
                           TGRS_TENSOR_F_QUANT | TGRS_TENSOR_F_VIEW;
    for (t = 0; t < n; ++t) {
        const uint8_t *r = tgrs_tensor(plan, t);
        uint32_t dtype = tgrs_rd_u32(r + TGRS_TENSOR_OFF_DTYPE);
        uint32_t layout = tgrs_rd_u32(r + TGRS_TENSOR_OFF_LAYOUT);
        uint32_t rank = tgrs_rd_u32(r + TGRS_TENSOR_OFF_RANK);
        uint32_t flags = tgrs_rd_u32(r + TGRS_TENSOR_OFF_FLAGS);
        int32_t shape[TGRS_MAX_RANK];
        int64_t view[4];
        uint64_t prod = 1;
        uint32_t i;
        int rc = tgrs_check_string(plan, tgrs_rd_u32(r + TGRS_TENSOR_OFF_NAME_OFF),
                                   tgrs_rd_u32(r + TGRS_TENSOR_OFF_NAME_LEN));
        if (rc != TGRS_OK) {
            return rc;
        }
        if (!tgrs_dtype_ok(dtype) || layout > TGRS_LAYOUT_NWC || rank > (uint32_t)TGRS_MAX_RANK ||
            (flags & ~known) != 0u) {
            return TGRS_ERR_TENSOR;
        }
        for (i = 0; i < (uint32_t)TGRS_MAX_RANK; ++i) {
            shape[i] = tgrs_rd_i32(r + TGRS_TENSOR_OFF_SHAPE + 4u * i);
            if (i >= rank && shape[i] != 0) {
                return TGRS_ERR_TENSOR;
            }
            if (i < rank && shape[i] < 1) {
                return TGRS_ERR_TENSOR;
            }
        }
        if (!tgrs_view_dims(layout, rank, shape, view)) {
            return TGRS_ERR_TENSOR;
        }
        for (i = 0; i < 4u; ++i) {
            int32_t d = tgrs_rd_i32(r + TGRS_TENSOR_OFF_DIMS + 4u * i);
            if (d < 1 || (int64_t)d != view[i]) {
                return TGRS_ERR_TENSOR;
            }
            prod *= (uint64_t)d; /* each factor < 2^31 and checked below before the next multiply overflows */
            if (prod > 0xFFFFFFFFu) {
                return TGRS_ERR_TENSOR;
            }
        }
        prod *= tgrs_dtype_bytes(dtype);
        if (prod != (uint64_t)tgrs_rd_u32(r + TGRS_TENSOR_OFF_NBYTES)) {
            return TGRS_ERR_TENSOR;
        }
        if ((flags & TGRS_TENSOR_F_QUANT) != 0u && !tgrs_scale_ok(tgrs_rd_f32(r + TGRS_TENSOR_OFF_SCALE))) {
            return TGRS_ERR_TENSOR;
        }
        {
            /* Kernels do zero-point arithmetic in int32 and int64 on the strength of this range check. */
            int32_t zp = tgrs_rd_i32(r + TGRS_TENSOR_OFF_ZERO_POINT);
            int32_t zlo = (dtype == TGRS_DT_S8) ? -128 : 0;
            int32_t zhi = (dtype == TGRS_DT_S8) ? 127 : ((dtype == TGRS_DT_U8) ? 255 : 0);
            if (zp < zlo || zp > zhi) {
                return TGRS_ERR_TENSOR;
            }
        }
        if (tgrs_rd_u32(r + TGRS_TENSOR_OFF_ROOT) >= n) {
            return TGRS_ERR_TENSOR_INDEX;
        }
    }
    for (t = 0; t < n; ++t) {
        const uint8_t *r = tgrs_tensor(plan, t);
        uint32_t root = tgrs_rd_u32(r + TGRS_TENSOR_OFF_ROOT);
        uint32_t flags = tgrs_rd_u32(r + TGRS_TENSOR_OFF_FLAGS);
        uint32_t slow_off = tgrs_rd_u32(r + TGRS_TENSOR_OFF_SLOW_OFFSET);
        uint32_t slow_size = tgrs_rd_u32(r + TGRS_TENSOR_OFF_SLOW_SIZE);
        uint32_t nbytes = tgrs_rd_u32(r + TGRS_TENSOR_OFF_NBYTES);
        uint32_t root_bytes = tgrs_rd_u32(tgrs_tensor(plan, root) + TGRS_TENSOR_OFF_NBYTES);
        if ((flags & TGRS_TENSOR_F_VIEW) != 0u) {
            /* A run of the root's buffer: aligned like every arena offset, inside the root's bytes. */
            uint32_t voff = tgrs_rd_u32(r + TGRS_TENSOR_OFF_VIEW_OFF);
            if (!TGRS_VIEWS) {
                return TGRS_ERR_UNSUPPORTED; /* built with -DTGRS_NO_VIEWS */
            }
            if ((flags & TGRS_TENSOR_F_ALIAS) == 0u || voff % TGRS_ALIGN != 0u || !tgrs_fits(voff, nbytes, root_bytes)) {
                return TGRS_ERR_VIEW;
            }
            root_bytes = nbytes; /* the run is the alias's bytes */
        } else if (TGRS_VIEWS && tgrs_rd_u32(r + TGRS_TENSOR_OFF_VIEW_OFF) != 0u) {
            return TGRS_ERR_VIEW;
        }
        if ((flags & TGRS_TENSOR_F_ALIAS) != 0u) {
            const uint8_t *rr = tgrs_tensor(plan, root);
            if (root == t || tgrs_rd_u32(rr + TGRS_TENSOR_OFF_ROOT) != root || root_bytes != nbytes ||
                (flags & TGRS_TENSOR_F_SLOW) != 0u) {
                return TGRS_ERR_TENSOR;
            }
        } else if (root != t) {
            return TGRS_ERR_TENSOR;
        }
        if ((flags & TGRS_TENSOR_F_SLOW) != 0u) {
            if (slow_off % TGRS_ALIGN != 0u || slow_size < nbytes) {
                return TGRS_ERR_TENSOR;
            }
            if (!tgrs_fits(slow_off, slow_size, plan->slow_arena)) {
                return TGRS_ERR_ARENA_BOUNDS;
            }
        } else if (slow_off != TGRS_NONE || slow_size != 0u) {
            return TGRS_ERR_TENSOR;
        }
    }
    return TGRS_OK;
}

/* Step 13: the interface. Placements are only proven in step 15, so the FAST-home check reads them carefully. */
static int tgrs_check_io(const tgrs_plan *plan)
{
    uint32_t n = plan->sec_count[TGRS_SEC_IO];
    uint32_t n_units = plan->sec_count[TGRS_SEC_UNITS];
    uint32_t i;
    for (i = 0; i < n; ++i) {
        const uint8_t *r = tgrs_io(plan, i);
        uint32_t dir = tgrs_rd_u32(r + TGRS_IO_OFF_DIRECTION);
        uint32_t t = tgrs_rd_u32(r + TGRS_IO_OFF_TENSOR);
        uint32_t decl = tgrs_rd_u32(r + TGRS_IO_OFF_DECL_DTYPE);
        uint32_t dtype = tgrs_rd_u32(r + TGRS_IO_OFF_DTYPE);
        uint32_t rank = tgrs_rd_u32(r + TGRS_IO_OFF_RANK);
        uint32_t flags = tgrs_rd_u32(r + TGRS_IO_OFF_FLAGS);
        uint32_t arena = tgrs_rd_u32(r + TGRS_IO_OFF_ARENA);
        uint32_t off = tgrs_rd_u32(r + TGRS_IO_OFF_OFFSET);
        uint32_t nbytes = tgrs_rd_u32(r + TGRS_IO_OFF_NBYTES);
        const uint8_t *tr;
        const uint8_t *rr;
        uint32_t root;
        uint64_t count = 1;
        uint64_t tcount;
        uint32_t k;
        int rc = tgrs_check_string(plan, tgrs_rd_u32(r + TGRS_IO_OFF_NAME_OFF), tgrs_rd_u32(r + TGRS_IO_OFF_NAME_LEN));
        if (rc != TGRS_OK) {
            return rc;
        }
        /* an int64 declaration is an index output stored as int32; a row-counted output is an int32 output */
        if (dir != (i < plan->n_inputs ? TGRS_DIR_INPUT : TGRS_DIR_OUTPUT) ||
            !(tgrs_dtype_ok(decl) || (decl == (uint32_t)TGRS_DT_S64 && dtype == (uint32_t)TGRS_DT_S32 &&
                                      dir == TGRS_DIR_OUTPUT)) ||
            !tgrs_dtype_ok(dtype) || (flags & ~(TGRS_IO_F_DECL_QUANT | TGRS_IO_F_QUANT | TGRS_IO_F_ROWS)) != 0u ||
            ((flags & TGRS_IO_F_ROWS) != 0u && (dir != TGRS_DIR_OUTPUT || dtype != (uint32_t)TGRS_DT_S32)) ||
            rank > (uint32_t)TGRS_MAX_RANK) {
            return TGRS_ERR_IO;
        }
        if (t >= plan->sec_count[TGRS_SEC_TENSORS]) {
            return TGRS_ERR_TENSOR_INDEX;
        }
        tr = tgrs_tensor(plan, t);
        if (TGRS_VIEWS && (tgrs_rd_u32(tr + TGRS_TENSOR_OFF_FLAGS) & TGRS_TENSOR_F_VIEW) != 0u) {
            return TGRS_ERR_VIEW; /* the interface names whole buffers */
        }
        if (dtype != tgrs_rd_u32(tr + TGRS_TENSOR_OFF_DTYPE) || tgrs_rd_u32(r + TGRS_IO_OFF_LAYOUT) !=
            tgrs_rd_u32(tr + TGRS_TENSOR_OFF_LAYOUT) || nbytes != tgrs_rd_u32(tr + TGRS_TENSOR_OFF_NBYTES)) {
            return TGRS_ERR_IO;
        }
        for (k = 0; k < (uint32_t)TGRS_MAX_RANK; ++k) {
            int32_t d = tgrs_rd_i32(r + TGRS_IO_OFF_SHAPE + 4u * k);
            if (k < rank) {
                if (d < 1) {
                    return TGRS_ERR_IO;
                }
                count *= (uint64_t)d;
                if (count > 0xFFFFFFFFu) {
                    return TGRS_ERR_IO;
                }
            } else if (d != 0) {
                return TGRS_ERR_IO;
            }
        }
        tcount = (uint64_t)nbytes / tgrs_dtype_bytes(dtype);
        if (count != tcount) {
            return TGRS_ERR_IO;
        }
        if ((flags & TGRS_IO_F_DECL_QUANT) != 0u && !tgrs_scale_ok(tgrs_rd_f32(r + TGRS_IO_OFF_DECL_SCALE))) {
            return TGRS_ERR_IO;
        }
        if (arena > TGRS_ARENA_SLOW || off % TGRS_ALIGN != 0u) {
            return TGRS_ERR_IO;
        }
        if ((tgrs_rd_u32(tr + TGRS_TENSOR_OFF_FLAGS) & (dir == TGRS_DIR_INPUT ? TGRS_TENSOR_F_INPUT
                                                                                 : TGRS_TENSOR_F_OUTPUT)) == 0u) {
            return TGRS_ERR_IO;
        }
        root = tgrs_rd_u32(tr + TGRS_TENSOR_OFF_ROOT);
        rr = tgrs_tensor(plan, root);
        if (arena == TGRS_ARENA_SLOW) {
            if ((tgrs_rd_u32(rr + TGRS_TENSOR_OFF_FLAGS) & TGRS_TENSOR_F_SLOW) == 0u ||
                off != tgrs_rd_u32(rr + TGRS_TENSOR_OFF_SLOW_OFFSET)) {
                return TGRS_ERR_IO;
            }
        } else {
            const uint8_t *u = tgrs_unit(plan, dir == TGRS_DIR_INPUT ? 0u : n_units - 1u);
            uint32_t pf = tgrs_rd_u32(u + TGRS_UNIT_OFF_PLACE_FIRST);
            uint32_t pc = tgrs_rd_u32(u + TGRS_UNIT_OFF_PLACE_COUNT);
            uint32_t found = TGRS_NONE;
            uint32_t p;
            if (!tgrs_fits(pf, pc, plan->sec_count[TGRS_SEC_PLACEMENTS])) {
                return TGRS_ERR_UNIT;
            }
            /* Linear: the order of placements is only proven later. */
            for (p = pf; p < pf + pc; ++p) {
                if (tgrs_rd_u32(tgrs_placement(plan, p) + TGRS_PLACEMENT_OFF_TENSOR) == root) {
                    found = p;
                    break;
                }
            }
            /* A COLS unit's buffers hold dense column bands, never the caller's full-layout bytes. */
            if (found == TGRS_NONE || tgrs_rd_u32(tgrs_placement(plan, found) + TGRS_PLACEMENT_OFF_OFFSET) != off ||
                tgrs_rd_u32(tgrs_placement(plan, found) + TGRS_PLACEMENT_OFF_SIZE) < nbytes ||
                (tgrs_rd_u32(u + TGRS_UNIT_OFF_FLAGS) & TGRS_UNIT_F_COLS) != 0u) {
                return TGRS_ERR_IO;
            }
        }
        if (!tgrs_fits(off, nbytes, arena == TGRS_ARENA_SLOW ? plan->slow_arena : plan->fast_arena)) {
            return TGRS_ERR_ARENA_BOUNDS;
        }
    }
    return TGRS_OK;
}

/* Band of placement position `pos` of unit `u` in tile `t` (tiled units; the loader checked the record exists). */
static void tgrs_tile_band(const tgrs_plan *plan, const uint8_t *u, uint32_t t, uint32_t pos, int32_t *row0,
                           int32_t *rows)
{
    const uint8_t *r = tgrs_rec(plan, TGRS_SEC_TILE_ROWS,
                                tgrs_rd_u32(u + TGRS_UNIT_OFF_ROWS_FIRST) +
                                    t * tgrs_rd_u32(u + TGRS_UNIT_OFF_PLACE_COUNT) + pos,
                                TGRS_TILE_ROW_SIZE);
    *row0 = tgrs_rd_i32(r + TGRS_TILE_ROW_OFF_ROW0);
    *rows = tgrs_rd_i32(r + TGRS_TILE_ROW_OFF_ROWS);
}

/* Steps 15-17 for one unit: placements, tile rows, reload and spill lists. */
static int tgrs_check_unit_buffers(const tgrs_plan *plan, const uint8_t *u)
{
    uint32_t tiled = tgrs_rd_u32(u + TGRS_UNIT_OFF_FLAGS) & TGRS_UNIT_F_TILED;
    uint32_t cols = TGRS_COLS ? tgrs_rd_u32(u + TGRS_UNIT_OFF_FLAGS) & TGRS_UNIT_F_COLS : 0u;
    uint32_t wb = tgrs_rd_u32(u + TGRS_UNIT_OFF_WEIGHT_BYTES);
    uint32_t pf = tgrs_rd_u32(u + TGRS_UNIT_OFF_PLACE_FIRST);
    uint32_t pc = tgrs_rd_u32(u + TGRS_UNIT_OFF_PLACE_COUNT);
    uint32_t tiles = tgrs_rd_u32(u + TGRS_UNIT_OFF_TILES);
    uint32_t rf = tgrs_rd_u32(u + TGRS_UNIT_OFF_ROWS_FIRST);
    uint32_t p;
    uint32_t k;
    uint32_t prev = 0;

    for (p = 0; p < pc; ++p) {
        const uint8_t *pr = tgrs_placement(plan, pf + p);
        uint32_t t = tgrs_rd_u32(pr + TGRS_PLACEMENT_OFF_TENSOR);
        uint32_t off = tgrs_rd_u32(pr + TGRS_PLACEMENT_OFF_OFFSET);
        uint32_t size = tgrs_rd_u32(pr + TGRS_PLACEMENT_OFF_SIZE);
        uint32_t band = tgrs_rd_u32(pr + TGRS_PLACEMENT_OFF_BAND_ROWS);
        const uint8_t *tr;
        uint32_t h;
        if (t >= plan->sec_count[TGRS_SEC_TENSORS]) {
            return TGRS_ERR_TENSOR_INDEX;
        }
        if (tgrs_root(plan, t) != t || (p > 0u && t <= prev)) {
            return TGRS_ERR_PLACEMENT;
        }
        prev = t;
        if (off % TGRS_ALIGN != 0u || off < wb || !tgrs_fits(off, size, plan->fast_arena)) {
            return TGRS_ERR_ARENA_BOUNDS;
        }
        tr = tgrs_tensor(plan, t);
        h = (uint32_t)tgrs_rd_i32(tr + TGRS_TENSOR_OFF_DIMS + 4u);
        /* A COLS unit's buffers hold dense column bands: their capacity is checked per tile below. */
        if (band < 1u || band > h || (!tiled && band != h) ||
            (!cols && (uint64_t)band * tgrs_row_bytes(tr) > (uint64_t)size)) {
            return TGRS_ERR_TILE_ROWS;
        }
    }
    if (tiled) {
        uint32_t i;
        for (i = 0; i < tiles; ++i) {
            for (p = 0; p < pc; ++p) {
                const uint8_t *rr = tgrs_rec(plan, TGRS_SEC_TILE_ROWS, rf + i * pc + p, TGRS_TILE_ROW_SIZE);
                const uint8_t *pr = tgrs_placement(plan, pf + p);
                int32_t row0 = tgrs_rd_i32(rr + TGRS_TILE_ROW_OFF_ROW0);
                int32_t rows = tgrs_rd_i32(rr + TGRS_TILE_ROW_OFF_ROWS);
                int32_t h = tgrs_rd_i32(tgrs_tensor(plan, tgrs_rd_u32(pr + TGRS_PLACEMENT_OFF_TENSOR)) +
                                        TGRS_TENSOR_OFF_DIMS + 4u);
                if (row0 < 0 || rows < 0 || (uint32_t)rows > tgrs_rd_u32(pr + TGRS_PLACEMENT_OFF_BAND_ROWS) ||
                    (int64_t)row0 + rows > (int64_t)h) {
                    return TGRS_ERR_TILE_ROWS;
                }
            }
        }
    }
    if (cols) {
        /* Column bands: inside [0, W) of a one-image tensor, and the dense [rows, cols, C] block inside the buffer. */
        uint32_t i;
        for (i = 0; i < tiles; ++i) {
            for (p = 0; p < pc; ++p) {
                const uint8_t *pr = tgrs_placement(plan, pf + p);
                const uint8_t *tr = tgrs_tensor(plan, tgrs_rd_u32(pr + TGRS_PLACEMENT_OFF_TENSOR));
                int32_t h = tgrs_rd_i32(tr + TGRS_TENSOR_OFF_DIMS + 4u);
                int32_t w = tgrs_rd_i32(tr + TGRS_TENSOR_OFF_DIMS + 8u);
                uint32_t pixel = tgrs_rd_u32(tr + TGRS_TENSOR_OFF_NBYTES) / ((uint32_t)h * (uint32_t)w);
                int32_t row0;
                int32_t rows;
                int32_t col0;
                int32_t ncol;
                tgrs_tile_band(plan, u, i, p, &row0, &rows);
                tgrs_tile_cols(plan, u, i, p, &col0, &ncol);
                if (tgrs_rd_i32(tr + TGRS_TENSOR_OFF_DIMS) != 1 || col0 < 0 || ncol < 1 ||
                    (int64_t)col0 + ncol > (int64_t)w ||
                    (uint64_t)rows * (uint64_t)ncol * pixel > (uint64_t)tgrs_rd_u32(pr + TGRS_PLACEMENT_OFF_SIZE)) {
                    return TGRS_ERR_TILE_COLS;
                }
            }
        }
    }
    for (k = 0; k < 2u; ++k) {
        uint32_t first = tgrs_rd_u32(u + (k == 0u ? TGRS_UNIT_OFF_RELOAD_FIRST : TGRS_UNIT_OFF_SPILL_FIRST));
        uint32_t count = tgrs_rd_u32(u + (k == 0u ? TGRS_UNIT_OFF_RELOAD_COUNT : TGRS_UNIT_OFF_SPILL_COUNT));
        uint32_t j;
        for (j = 0; j < count; ++j) {
            uint32_t t = tgrs_index_at(plan, first + j);
            uint32_t root;
            if (t >= plan->sec_count[TGRS_SEC_TENSORS]) {
                return TGRS_ERR_TENSOR_INDEX;
            }
            root = tgrs_root(plan, t);
            if (TGRS_VIEWS && tiled && (tgrs_rd_u32(tgrs_tensor(plan, t) + TGRS_TENSOR_OFF_FLAGS) & TGRS_TENSOR_F_VIEW) != 0u) {
                return TGRS_ERR_VIEW; /* a tiled unit holds its buffers in bands, a run is part of a whole one */
            }
            if ((tgrs_rd_u32(tgrs_tensor(plan, root) + TGRS_TENSOR_OFF_FLAGS) & TGRS_TENSOR_F_SLOW) == 0u) {
                return TGRS_ERR_TENSOR;
            }
            if (tgrs_find_placement(plan, pf, pc, root) == TGRS_NONE) {
                return TGRS_ERR_PLACEMENT;
            }
        }
    }
    return TGRS_OK;
}

/* Whether the reload (spill != 0: spill) list of unit `u` names a tensor whose root is `root` (lists proven). */
static int tgrs_unit_moves(const tgrs_plan *plan, const uint8_t *u, int spill, uint32_t root)
{
    uint32_t first = tgrs_rd_u32(u + (spill ? TGRS_UNIT_OFF_SPILL_FIRST : TGRS_UNIT_OFF_RELOAD_FIRST));
    uint32_t count = tgrs_rd_u32(u + (spill ? TGRS_UNIT_OFF_SPILL_COUNT : TGRS_UNIT_OFF_RELOAD_COUNT));
    uint32_t j;
    for (j = 0; j < count; ++j) {
        if (tgrs_root(plan, tgrs_index_at(plan, first + j)) == root) {
            return 1;
        }
    }
    return 0;
}

/* Whether some tensor whose root is `root` carries tensor flag `f` (a graph input or output may be an alias). */
static int tgrs_root_flagged(const tgrs_plan *plan, uint32_t root, uint32_t f)
{
    uint32_t t;
    for (t = 0; t < plan->sec_count[TGRS_SEC_TENSORS]; ++t) {
        if (tgrs_root(plan, t) == root && (tgrs_rd_u32(tgrs_tensor(plan, t) + TGRS_TENSOR_OFF_FLAGS) & f) != 0u) {
            return 1;
        }
    }
    return 0;
}

/*
 * Step 17, end (docs/format.md "OVERWRITE units"): in unit `ui` with the OVERWRITE flag, a spilled tensor y whose
 * slow home shares bytes with a reloaded tensor x's is born there (no earlier unit spills it, no graph input), x dies
 * there (no later unit reloads it, no graph output), and no tile writes a byte of y's band that a later tile still
 * reads of x: walking the tiles backwards, y's band in tile t misses the hull of x's bands read after t (a ROLLING
 * unit that is not ACCUM reads only the rows after the ones it carries). An untiled unit reloads everything before it
 * spills. Every index and band used here was proven by step 17 above; op records are not read.
 */
static int tgrs_check_overwrite(const tgrs_plan *plan, uint32_t ui)
{
    const uint8_t *u = tgrs_unit(plan, ui);
    uint32_t flags = tgrs_rd_u32(u + TGRS_UNIT_OFF_FLAGS);
    uint32_t sf = tgrs_rd_u32(u + TGRS_UNIT_OFF_SPILL_FIRST);
    uint32_t sc = tgrs_rd_u32(u + TGRS_UNIT_OFF_SPILL_COUNT);
    uint32_t rf = tgrs_rd_u32(u + TGRS_UNIT_OFF_RELOAD_FIRST);
    uint32_t rc = tgrs_rd_u32(u + TGRS_UNIT_OFF_RELOAD_COUNT);
    uint32_t pf = tgrs_rd_u32(u + TGRS_UNIT_OFF_PLACE_FIRST);
    uint32_t pc = tgrs_rd_u32(u + TGRS_UNIT_OFF_PLACE_COUNT);
    uint32_t n = plan->sec_count[TGRS_SEC_UNITS];
    /* A ROLLING unit reloads only the rows after those its band shares with the tile before. In an ACCUM unit every
       band is counted whole (more reads, so the proof stays sound whatever the accumulator's band does). */
    int carries = (flags & TGRS_UNIT_F_ROLLING) != 0u && (flags & TGRS_UNIT_F_ACCUM) == 0u;
    uint32_t j;
    uint32_t k;
    if (!TGRS_OVERWRITE || (flags & TGRS_UNIT_F_OVERWRITE) == 0u) {
        return TGRS_OK; /* without TGRS_OVERWRITE step 17 refused the flag */
    }
    for (j = 0; j < sc; ++j) {
        uint32_t y = tgrs_root(plan, tgrs_index_at(plan, sf + j));
        const uint8_t *yr = tgrs_tensor(plan, y);
        uint64_t yoff = tgrs_rd_u32(yr + TGRS_TENSOR_OFF_SLOW_OFFSET);
        uint64_t yend = yoff + tgrs_rd_u32(yr + TGRS_TENSOR_OFF_SLOW_SIZE);
        for (k = 0; k < rc; ++k) {
            uint32_t x = tgrs_root(plan, tgrs_index_at(plan, rf + k));
            const uint8_t *xr = tgrs_tensor(plan, x);
            uint64_t xoff = tgrs_rd_u32(xr + TGRS_TENSOR_OFF_SLOW_OFFSET);
            uint64_t xend = xoff + tgrs_rd_u32(xr + TGRS_TENSOR_OFF_SLOW_SIZE);
            uint32_t v;
            uint32_t t;
            uint32_t px;
            uint32_t py;
            uint64_t lo = 0u;
            uint64_t hi = 0u;
            int have = 0;
            if (x == y || xoff >= yend || yoff >= xend) {
                continue;
            }
            for (v = 0; v < n; ++v) {
                if ((v > ui && tgrs_unit_moves(plan, tgrs_unit(plan, v), 0, x)) ||
                    (v < ui && tgrs_unit_moves(plan, tgrs_unit(plan, v), 1, y))) {
                    return TGRS_ERR_OVERWRITE;
                }
            }
            if (tgrs_root_flagged(plan, x, TGRS_TENSOR_F_OUTPUT) || tgrs_root_flagged(plan, y, TGRS_TENSOR_F_INPUT)) {
                return TGRS_ERR_OVERWRITE;
            }
            if ((flags & TGRS_UNIT_F_TILED) == 0u) {
                continue;
            }
            /* both are placed in the unit (step 17 above) */
            px = tgrs_find_placement(plan, pf, pc, x) - pf;
            py = tgrs_find_placement(plan, pf, pc, y) - pf;
            for (t = tgrs_rd_u32(u + TGRS_UNIT_OFF_TILES); t-- > 0u;) {
                int32_t r0;
                int32_t rows;
                int32_t c;
                tgrs_tile_band(plan, u, t, py, &r0, &rows);
                if (have && rows > 0) {
                    uint64_t a = yoff + (uint64_t)r0 * tgrs_row_bytes(yr);
                    uint64_t b = yoff + ((uint64_t)r0 + (uint64_t)rows) * tgrs_row_bytes(yr);
                    if (a < hi && lo < b) {
                        return TGRS_ERR_OVERWRITE;
                    }
                }
                tgrs_tile_band(plan, u, t, px, &r0, &rows);
                c = 0;
                if (carries && t > 0u) {
                    int32_t p0;
                    int32_t pn;
                    tgrs_tile_band(plan, u, t - 1u, px, &p0, &pn);
                    c = (pn > 0 && r0 < p0 + pn) ? p0 + pn - r0 : 0;
                }
                if (rows - c > 0) {
                    uint64_t a = xoff + ((uint64_t)r0 + (uint64_t)c) * tgrs_row_bytes(xr);
                    uint64_t b = xoff + ((uint64_t)r0 + (uint64_t)rows) * tgrs_row_bytes(xr);
                    lo = have && lo < a ? lo : a;
                    hi = have && hi > b ? hi : b;
                    have = 1;
                }
            }
        }
    }
    return TGRS_OK;
}

/* A tensor an op reads or writes: in range, placed in the unit, and (tiled) banded like its root. */
static int tgrs_check_op_tensor(const tgrs_plan *plan, const uint8_t *u, uint32_t t)
{
    uint32_t root;
    if (t >= plan->sec_count[TGRS_SEC_TENSORS]) {
        return TGRS_ERR_TENSOR_INDEX;
    }
    root = tgrs_root(plan, t);
    if (tgrs_find_placement(plan, tgrs_rd_u32(u + TGRS_UNIT_OFF_PLACE_FIRST),
                            tgrs_rd_u32(u + TGRS_UNIT_OFF_PLACE_COUNT), root) == TGRS_NONE) {
        return TGRS_ERR_PLACEMENT;
    }
    if (TGRS_VIEWS && (tgrs_rd_u32(u + TGRS_UNIT_OFF_FLAGS) & TGRS_UNIT_F_TILED) != 0u &&
        (tgrs_rd_u32(tgrs_tensor(plan, t) + TGRS_TENSOR_OFF_FLAGS) & TGRS_TENSOR_F_VIEW) != 0u) {
        return TGRS_ERR_VIEW; /* a tiled unit holds its buffers in bands, a run is part of a whole one */
    }
    if ((tgrs_rd_u32(u + TGRS_UNIT_OFF_FLAGS) & TGRS_UNIT_F_TILED) != 0u && root != t &&
        tgrs_rd_i32(tgrs_tensor(plan, t) + TGRS_TENSOR_OFF_DIMS + 4u) !=
            tgrs_rd_i32(tgrs_tensor(plan, root) + TGRS_TENSOR_OFF_DIMS + 4u)) {
        /* Bands are per root buffer: an alias with other rows has no band in a tile. */
        return TGRS_ERR_TILE_ROWS;
    }
    return TGRS_OK;
}

/*
 * End of step 15 for an ACCUM unit (docs/format.md): the last op is a GlobalAveragePool between two buffers; in
 * every tile the output's band is the whole tensor; the input's bands cut its rows into consecutive pieces in tile
 * order, each row once. In a COLS unit each piece of rows is further cut into consecutive column bands, tile after
 * tile, before the next piece starts, so every pixel is added once. The executor relies on this: begin at tile 0,
 * add each band, finish at the last tile.
 */
static int tgrs_check_accumulate(const tgrs_plan *plan, const uint8_t *u)
{
    const uint8_t *r = tgrs_op(plan, tgrs_rd_u32(u + TGRS_UNIT_OFF_OP_FIRST) +
                                         tgrs_rd_u32(u + TGRS_UNIT_OFF_OP_COUNT) - 1u);
    uint32_t pf = tgrs_rd_u32(u + TGRS_UNIT_OFF_PLACE_FIRST);
    uint32_t pc = tgrs_rd_u32(u + TGRS_UNIT_OFF_PLACE_COUNT);
    uint32_t tiles = tgrs_rd_u32(u + TGRS_UNIT_OFF_TILES);
    int cols = TGRS_COLS && (tgrs_rd_u32(u + TGRS_UNIT_OFF_FLAGS) & TGRS_UNIT_F_COLS) != 0u;
    uint32_t r_in = tgrs_root(plan, tgrs_rd_u32(r + TGRS_OP_OFF_INPUTS));
    uint32_t r_out = tgrs_root(plan, tgrs_rd_u32(r + TGRS_OP_OFF_OUTPUT));
    uint32_t p_in;
    uint32_t p_out;
    int32_t h_in;
    int32_t h_out;
    int32_t w_in;
    int32_t w_out;
    int64_t next = 0;  /* where the next piece of rows starts */
    int64_t col = 0;   /* where the next column band of the current piece starts; w_in: the piece is complete */
    int32_t cur0 = 0;  /* the current piece of rows */
    int32_t curn = 0;
    uint32_t t;
    if (tgrs_rd_u32(r + TGRS_OP_OFF_KIND) != TGRS_OP_GAP || r_in == r_out) {
        return TGRS_ERR_UNIT;
    }
    p_in = tgrs_find_placement(plan, pf, pc, r_in) - pf; /* both placed: step 15 proved it */
    p_out = tgrs_find_placement(plan, pf, pc, r_out) - pf;
    h_in = tgrs_rd_i32(tgrs_tensor(plan, r_in) + TGRS_TENSOR_OFF_DIMS + 4u);
    h_out = tgrs_rd_i32(tgrs_tensor(plan, r_out) + TGRS_TENSOR_OFF_DIMS + 4u);
    w_in = tgrs_rd_i32(tgrs_tensor(plan, r_in) + TGRS_TENSOR_OFF_DIMS + 8u);
    w_out = tgrs_rd_i32(tgrs_tensor(plan, r_out) + TGRS_TENSOR_OFF_DIMS + 8u);
    col = w_in;
    for (t = 0; t < tiles; ++t) {
        int32_t row0;
        int32_t rows;
        int32_t col0 = 0;
        int32_t ncol = w_in;
        int32_t oc0 = 0;
        int32_t ocn = w_out;
        tgrs_tile_band(plan, u, t, p_out, &row0, &rows);
        if (row0 != 0 || rows != h_out) {
            return TGRS_ERR_TILE_ROWS;
        }
        if (cols) {
            tgrs_tile_cols(plan, u, t, p_out, &oc0, &ocn);
            tgrs_tile_cols(plan, u, t, p_in, &col0, &ncol);
        }
        if (oc0 != 0 || ocn != w_out) {
            return TGRS_ERR_TILE_COLS;
        }
        tgrs_tile_band(plan, u, t, p_in, &row0, &rows);
        if (col == (int64_t)w_in) { /* a new piece of rows, from column 0 */
            if ((int64_t)row0 != next) {
                return TGRS_ERR_TILE_ROWS;
            }
            if (col0 != 0) {
                return TGRS_ERR_TILE_COLS;
            }
            cur0 = row0;
            curn = rows;
            next = (int64_t)row0 + rows;
            col = ncol;
        } else {
            if (row0 != cur0 || rows != curn) {
                return TGRS_ERR_TILE_ROWS;
            }
            if ((int64_t)col0 != col) {
                return TGRS_ERR_TILE_COLS;
            }
            col += ncol;
        }
    }
    if (col != (int64_t)w_in) {
        return TGRS_ERR_TILE_COLS;
    }
    return next == (int64_t)h_in ? TGRS_OK : TGRS_ERR_TILE_ROWS;
}

/*
 * End of step 15 for a ROLLING unit (docs/format.md "ROLLING units"): every line buffer lies in the fast arena after
 * the weight prefix; a placement whose band overlaps its band in the tile before carries those rows, so its band
 * may not move backwards (start or end earlier) and its line buffer, if it has one, must hold them (without one
 * they move inside the band buffer). The executor relies on this: the carried rows are the first of the current
 * band and the last of the earlier one, and every copy stays inside the band and line buffers.
 */
static int tgrs_check_rolling(const tgrs_plan *plan, const uint8_t *u)
{
    uint32_t pf = tgrs_rd_u32(u + TGRS_UNIT_OFF_PLACE_FIRST);
    uint32_t pc = tgrs_rd_u32(u + TGRS_UNIT_OFF_PLACE_COUNT);
    uint32_t tiles = tgrs_rd_u32(u + TGRS_UNIT_OFF_TILES);
    uint32_t wb = tgrs_rd_u32(u + TGRS_UNIT_OFF_WEIGHT_BYTES);
    uint32_t t;
    uint32_t p;
    uint32_t rf = tgrs_rd_u32(u + TGRS_UNIT_OFF_RELOAD_FIRST);
    uint32_t rc = tgrs_rd_u32(u + TGRS_UNIT_OFF_RELOAD_COUNT);
    for (p = 0; p < pc; ++p) {
        uint32_t off;
        uint32_t size;
        tgrs_line_buffer(plan, u, p, &off, &size);
        if (off == TGRS_NONE && size == TGRS_NONE) {
            /* never carries (its producer computes every band whole): only for a buffer the unit makes, since a
               reload of a ROLLING unit loads the rows after the ones the band shares with the tile before */
            uint32_t k;
            uint32_t t = tgrs_rd_u32(tgrs_placement(plan, pf + p) + TGRS_PLACEMENT_OFF_TENSOR);
            for (k = 0; k < rc; ++k) {
                if (tgrs_root(plan, tgrs_index_at(plan, rf + k)) == t) {
                    return TGRS_ERR_ARENA_BOUNDS;
                }
            }
            continue;
        }
        if ((off != TGRS_NONE || size != 0u) &&
            (off == TGRS_NONE || size == 0u || off % TGRS_ALIGN != 0u || off < wb || !tgrs_fits(off, size, plan->fast_arena))) {
            return TGRS_ERR_ARENA_BOUNDS;
        }
    }
    for (t = 1; t < tiles; ++t) {
        for (p = 0; p < pc; ++p) {
            int32_t r0 = 0;
            int32_t n0;
            int32_t r1;
            int32_t n1;
            uint32_t off;
            uint32_t size;
            int32_t c = tgrs_carried_rows(plan, u, t, p, &r0);
            if (c == 0) {
                continue;
            }
            tgrs_tile_band(plan, u, t - 1u, p, &r0, &n0);
            tgrs_tile_band(plan, u, t, p, &r1, &n1);
            if (r1 < r0 || (int64_t)r1 + n1 < (int64_t)r0 + n0) {
                return TGRS_ERR_TILE_ROWS;
            }
            tgrs_line_buffer(plan, u, p, &off, &size);
            if (off != TGRS_NONE &&
                (uint64_t)c * tgrs_row_bytes(tgrs_tensor(plan, tgrs_rd_u32(tgrs_placement(plan, pf + p) +
                                                                           TGRS_PLACEMENT_OFF_TENSOR))) > size) {
                return TGRS_ERR_TILE_ROWS;
            }
        }
    }
    return TGRS_OK;
}

/*
 * End of step 15 for a COLS unit (docs/format.md "COLS units"): in every tile a windowed op's input band is exactly
 * the columns its output band reads, clipped to the input, so the band-relative pads the executor derives
 * (tgrs_op_frame_fill) are >= 0 and > 0 only at the tensor's real edges, and its further inputs (convacc's
 * accumulator added into) hold exactly the output's band; a per-pixel op's operands of the output's
 * width hold the output's band (a wider one, a branch buffer's hull, is read row by row: tgrs_op_frame_row). A
 * window outside the kernels' limit is left to the kind check (step 17).
 */
static int tgrs_check_cols(const tgrs_plan *plan, const uint8_t *u)
{
    uint32_t pf = tgrs_rd_u32(u + TGRS_UNIT_OFF_PLACE_FIRST);
    uint32_t pc = tgrs_rd_u32(u + TGRS_UNIT_OFF_PLACE_COUNT);
    uint32_t tiles = tgrs_rd_u32(u + TGRS_UNIT_OFF_TILES);
    uint32_t of = tgrs_rd_u32(u + TGRS_UNIT_OFF_OP_FIRST);
    uint32_t oc = tgrs_rd_u32(u + TGRS_UNIT_OFF_OP_COUNT);
    uint32_t t;
    uint32_t i;
    for (t = 0; t < tiles; ++t) {
        /* an ACCUM unit's last op is its accumulating GAP, whose bands tgrs_check_accumulate proved */
        uint32_t end = of + oc - ((tgrs_rd_u32(u + TGRS_UNIT_OFF_FLAGS) & TGRS_UNIT_F_ACCUM) != 0u ? 1u : 0u);
        for (i = of; i < end; ++i) {
            const uint8_t *r = tgrs_op(plan, i);
            uint32_t kind = tgrs_rd_u32(r + TGRS_OP_OFF_KIND);
            uint32_t out = tgrs_rd_u32(r + TGRS_OP_OFF_OUTPUT);
            int32_t ow = tgrs_rd_i32(tgrs_tensor(plan, out) + TGRS_TENSOR_OFF_DIMS + 8u);
            uint32_t n_in = tgrs_rd_u32(r + TGRS_OP_OFF_N_IN);
            int32_t o0;
            int32_t on;
            int32_t c0;
            int32_t cn;
            uint32_t k;
            tgrs_tile_cols(plan, u, t, tgrs_find_placement(plan, pf, pc, out) - pf, &o0, &on);
            if (tgrs_op_cols_class(kind) == TGRS_COLS_WINDOW) {
                int64_t w[5];
                uint32_t x = tgrs_rd_u32(r + TGRS_OP_OFF_INPUTS);
                int64_t iw = tgrs_rd_i32(tgrs_tensor(plan, x) + TGRS_TENSOR_OFF_DIMS + 8u);
                int64_t lo;
                int64_t hi;
                if (!tgrs_col_window(r, kind, w)) {
                    continue;
                }
                for (k = 1; k < n_in; ++k) { /* an accumulator added into (convacc): read at the output's pixels */
                    uint32_t a = tgrs_rd_u32(r + TGRS_OP_OFF_INPUTS + 4u * k);
                    tgrs_tile_cols(plan, u, t, tgrs_find_placement(plan, pf, pc, a) - pf, &c0, &cn);
                    if (c0 != o0 || cn != on) {
                        return TGRS_ERR_TILE_COLS;
                    }
                }
                tgrs_tile_cols(plan, u, t, tgrs_find_placement(plan, pf, pc, x) - pf, &c0, &cn);
                if (tgrs_col_pointwise(r, kind) && iw == ow) {
                    /* a 1x1 window reads its output's columns; a wider band is read row by row */
                    if (c0 > o0 || (int64_t)o0 + on > (int64_t)c0 + cn) {
                        return TGRS_ERR_TILE_COLS;
                    }
                    continue;
                }
                lo = (int64_t)o0 * w[1] - w[3];
                hi = (int64_t)(o0 + on - 1) * w[1] - w[3] + (w[0] - 1) * w[2] + 1;
                if (lo < 0) {
                    lo = 0;
                }
                if (hi > iw) {
                    hi = iw;
                }
                if ((int64_t)c0 != lo || (int64_t)c0 + cn != hi) {
                    return TGRS_ERR_TILE_COLS;
                }
            } else {
                for (k = 0; k < n_in; ++k) {
                    uint32_t x = tgrs_rd_u32(r + TGRS_OP_OFF_INPUTS + 4u * k);
                    if (tgrs_rd_i32(tgrs_tensor(plan, x) + TGRS_TENSOR_OFF_DIMS + 8u) != ow) {
                        continue;
                    }
                    tgrs_tile_cols(plan, u, t, tgrs_find_placement(plan, pf, pc, x) - pf, &c0, &cn);
                    if (c0 > o0 || (int64_t)o0 + on > (int64_t)c0 + cn) {
                        return TGRS_ERR_TILE_COLS; /* a wider band (a branch's hull) is read row by row */
                    }
                }
            }
        }
    }
    return TGRS_OK;
}

/* Step 18 for the ops of one unit. */
static int tgrs_check_unit_ops(const tgrs_plan *plan, const uint8_t *u)
{
    uint32_t of = tgrs_rd_u32(u + TGRS_UNIT_OFF_OP_FIRST);
    uint32_t oc = tgrs_rd_u32(u + TGRS_UNIT_OFF_OP_COUNT);
    uint32_t wb = tgrs_rd_u32(u + TGRS_UNIT_OFF_WEIGHT_BYTES);
    uint32_t wraw = tgrs_rd_u32(u + TGRS_UNIT_OFF_WRAW_SIZE);
    int xip = (plan->flags & TGRS_FLAG_XIP) != 0u;
    uint32_t i;
    for (i = of; i < of + oc; ++i) {
        const uint8_t *r = tgrs_op(plan, i);
        uint32_t kind = tgrs_rd_u32(r + TGRS_OP_OFF_KIND);
        uint32_t n_in = tgrs_rd_u32(r + TGRS_OP_OFF_N_IN);
        uint32_t s_off = tgrs_rd_u32(r + TGRS_OP_OFF_SCRATCH_OFF);
        uint32_t s_size = tgrs_rd_u32(r + TGRS_OP_OFF_SCRATCH_SIZE);
        int np;
        int nc;
        uint32_t k;
        int rc;
        rc = tgrs_check_string(plan, tgrs_rd_u32(r + TGRS_OP_OFF_NAME_OFF), tgrs_rd_u32(r + TGRS_OP_OFF_NAME_LEN));
        if (rc != TGRS_OK) {
            return rc;
        }
        if (kind < 1u || kind > TGRS_OP_COUNT) {
            return TGRS_ERR_OP_KIND;
        }
        if (n_in < 1u || n_in > (uint32_t)TGRS_MAX_INPUTS) {
            return TGRS_ERR_OP;
        }
        for (k = n_in; k < (uint32_t)TGRS_MAX_INPUTS; ++k) {
            if (tgrs_rd_u32(r + TGRS_OP_OFF_INPUTS + 4u * k) != TGRS_NONE) {
                return TGRS_ERR_OP;
            }
        }
        for (k = 0; k < n_in; ++k) {
            rc = tgrs_check_op_tensor(plan, u, tgrs_rd_u32(r + TGRS_OP_OFF_INPUTS + 4u * k));
            if (rc != TGRS_OK) {
                return rc;
            }
        }
        rc = tgrs_check_op_tensor(plan, u, tgrs_rd_u32(r + TGRS_OP_OFF_OUTPUT));
        if (rc != TGRS_OK) {
            return rc;
        }
        if (TGRS_COLS && (tgrs_rd_u32(u + TGRS_UNIT_OFF_FLAGS) & TGRS_UNIT_F_COLS) != 0u) {
            /* A kind that runs on column bands, on tensors that own their buffers (a view's W is its root's band). */
            uint32_t zero;
            int acc_gap = (tgrs_rd_u32(u + TGRS_UNIT_OFF_FLAGS) & TGRS_UNIT_F_ACCUM) != 0u && i + 1u == of + oc &&
                          kind == TGRS_OP_GAP; /* the accumulating GAP adds column bands like row bands */
            if ((tgrs_op_cols_class(kind) == TGRS_COLS_NONE && !acc_gap) ||
                tgrs_root(plan, tgrs_rd_u32(r + TGRS_OP_OFF_OUTPUT)) != tgrs_rd_u32(r + TGRS_OP_OFF_OUTPUT)) {
                return TGRS_ERR_COLS_OP;
            }
            for (zero = tgrs_op_col_zero(kind); zero != 0u; zero >>= 5) {
                if (tgrs_rd_i32(r + TGRS_OP_OFF_PARAMS + 4u * ((zero & 31u) - 1u)) != 0) {
                    return TGRS_ERR_COLS_OP; /* a table indexed by the full tensor's column */
                }
            }
            for (zero = tgrs_op_col_axis(kind); zero != 0u; zero >>= 5) {
                if (tgrs_rd_i32(r + TGRS_OP_OFF_PARAMS + 4u * ((zero & 31u) - 1u)) == 2) {
                    return TGRS_ERR_COLS_OP; /* along W: a band holds only some of the columns */
                }
            }
            for (k = 0; k < n_in; ++k) {
                uint32_t t = tgrs_rd_u32(r + TGRS_OP_OFF_INPUTS + 4u * k);
                if (tgrs_root(plan, t) != t) {
                    return TGRS_ERR_COLS_OP;
                }
            }
        }
        np = tgrs_op_nparams(kind);
        for (k = (uint32_t)(np < 0 ? 0 : np); k < (uint32_t)TGRS_MAX_PARAMS; ++k) {
            if (tgrs_rd_i32(r + TGRS_OP_OFF_PARAMS + 4u * k) != 0) {
                return TGRS_ERR_BAD_PARAM;
            }
        }
        {
            /* Every op with a NUMERICS parameter carries the plan's contract (header flag TFLM). */
            int ns = tgrs_op_numerics_slot(kind);
            int32_t want = (plan->flags & TGRS_FLAG_TFLM) != 0u ? TGRS_NUMERICS_TFLM : TGRS_NUMERICS_ONNX;
            if (ns >= 0 && tgrs_rd_i32(r + TGRS_OP_OFF_PARAMS + 4u * (uint32_t)ns) != want) {
                return TGRS_ERR_BAD_PARAM;
            }
        }
        {
            /* An arranged op carries an arrangement of its kind for the header's target, one this build reads. */
            int as = tgrs_op_arrange_slot(kind);
            int32_t a = as >= 0 ? tgrs_rd_i32(r + TGRS_OP_OFF_PARAMS + 4u * (uint32_t)as) : 0;
            uint32_t target = tgrs_rd_u32(plan->base + TGRS_HEADER_OFF_TARGET);
            if (a != 0) {
                if (tgrs_arrange_kind(a) != kind || tgrs_arrange_target(a) != (int)target) {
                    return TGRS_ERR_BAD_PARAM;
                }
                if (!tgrs_reads_target(target)) {
                    return TGRS_ERR_TARGET;
                }
            }
        }
        nc = tgrs_op_nconsts(kind);
        for (k = 0; k < (uint32_t)TGRS_MAX_CONSTS; ++k) {
            uint32_t off = tgrs_rd_u32(r + TGRS_OP_OFF_CONST_OFF + 4u * k);
            uint32_t len = tgrs_rd_u32(r + TGRS_OP_OFF_CONST_LEN + 4u * k);
            if (len == 0u) {
                if (off != 0u) {
                    return TGRS_ERR_CONST;
                }
                continue;
            }
            if ((int)k >= nc || off % TGRS_ALIGN != 0u ||
                !tgrs_fits(off, len, xip ? plan->sec_size[TGRS_SEC_WEIGHTS] : wraw)) {
                return TGRS_ERR_CONST;
            }
        }
        if ((s_size == 0u && s_off != 0u) || s_off % TGRS_ALIGN != 0u || (s_size != 0u && s_off < wb) ||
            !tgrs_fits(s_off, s_size, plan->fast_arena)) {
            return TGRS_ERR_ARENA_BOUNDS;
        }
        if (s_size != 0u) {
            /* A kernel copies into its scratch from its operands (im2col, widened weights): the two never share
               bytes, so no copy ever overlaps. Sums stay below 2^33 in 64 bits. */
            uint32_t pf = tgrs_rd_u32(u + TGRS_UNIT_OFF_PLACE_FIRST);
            uint32_t pc = tgrs_rd_u32(u + TGRS_UNIT_OFF_PLACE_COUNT);
            for (k = 0; k <= n_in; ++k) {
                uint32_t t = tgrs_rd_u32(r + (k < n_in ? TGRS_OP_OFF_INPUTS + 4u * k : TGRS_OP_OFF_OUTPUT));
                const uint8_t *pr = tgrs_placement(plan, tgrs_find_placement(plan, pf, pc, tgrs_root(plan, t)));
                uint64_t p_off = tgrs_rd_u32(pr + TGRS_PLACEMENT_OFF_OFFSET);
                uint64_t p_end = p_off + tgrs_rd_u32(pr + TGRS_PLACEMENT_OFF_SIZE);
                if (p_off < (uint64_t)s_off + s_size && s_off < p_end) {
                    return TGRS_ERR_SCRATCH_OVERLAP;
                }
            }
        }
    }
    if (TGRS_ACCUM && (tgrs_rd_u32(u + TGRS_UNIT_OFF_FLAGS) & TGRS_UNIT_F_ACCUM) != 0u) {
        int rc = tgrs_check_accumulate(plan, u);
        if (rc != TGRS_OK) {
            return rc;
        }
    }
    if (TGRS_ROLLING && (tgrs_rd_u32(u + TGRS_UNIT_OFF_FLAGS) & TGRS_UNIT_F_ROLLING) != 0u) {
        return tgrs_check_rolling(plan, u);
    }
    if (TGRS_COLS && (tgrs_rd_u32(u + TGRS_UNIT_OFF_FLAGS) & TGRS_UNIT_F_COLS) != 0u) {
        return tgrs_check_cols(plan, u);
    }
    return TGRS_OK;
}

/* Step 14 for every unit, then 15-18 per unit. */
static int tgrs_check_units(const tgrs_plan *plan)
{
    uint32_t n = plan->sec_count[TGRS_SEC_UNITS];
    uint32_t next_op = 0;
    uint32_t max_wb = 0;
    int xip = (plan->flags & TGRS_FLAG_XIP) != 0u;
    int lz4 = (plan->flags & TGRS_FLAG_LZ4) != 0u;
    uint32_t i;
    int rc;

    for (i = 0; i < n; ++i) {
        const uint8_t *u = tgrs_unit(plan, i);
        uint32_t flags = tgrs_rd_u32(u + TGRS_UNIT_OFF_FLAGS);
        uint32_t tiles = tgrs_rd_u32(u + TGRS_UNIT_OFF_TILES);
        uint32_t of = tgrs_rd_u32(u + TGRS_UNIT_OFF_OP_FIRST);
        uint32_t oc = tgrs_rd_u32(u + TGRS_UNIT_OFF_OP_COUNT);
        uint32_t pf = tgrs_rd_u32(u + TGRS_UNIT_OFF_PLACE_FIRST);
        uint32_t pc = tgrs_rd_u32(u + TGRS_UNIT_OFF_PLACE_COUNT);
        uint32_t rf = tgrs_rd_u32(u + TGRS_UNIT_OFF_ROWS_FIRST);
        uint32_t rcnt = tgrs_rd_u32(u + TGRS_UNIT_OFF_ROWS_COUNT);
        uint32_t wb = tgrs_rd_u32(u + TGRS_UNIT_OFF_WEIGHT_BYTES);
        uint32_t boff = tgrs_rd_u32(u + TGRS_UNIT_OFF_WBLOB_OFF);
        uint32_t bsize = tgrs_rd_u32(u + TGRS_UNIT_OFF_WBLOB_SIZE);
        uint32_t raw = tgrs_rd_u32(u + TGRS_UNIT_OFF_WRAW_SIZE);
        uint32_t sf = tgrs_rd_u32(u + TGRS_UNIT_OFF_STAGE_FIRST);
        uint32_t sc = tgrs_rd_u32(u + TGRS_UNIT_OFF_STAGE_COUNT);
        uint32_t k;
        if ((flags & ~TGRS_UNIT_FLAGS_KNOWN) != 0u ||
            ((flags & TGRS_UNIT_F_ROLLING) == 0u && tgrs_rd_u32(u + TGRS_UNIT_OFF_CARRY_FIRST) != 0u) || tiles == 0u ||
            ((flags & TGRS_UNIT_F_ACCUM) != 0u && ((flags & TGRS_UNIT_F_TILED) == 0u || oc == 0u)) ||
            ((flags & TGRS_UNIT_F_ROLLING) != 0u && (flags & TGRS_UNIT_F_TILED) == 0u) ||
            ((flags & TGRS_UNIT_F_COLS) != 0u &&
             ((flags & TGRS_UNIT_F_TILED) == 0u || (flags & TGRS_UNIT_F_ROLLING) != 0u ||
              (flags & TGRS_UNIT_F_OVERWRITE) != 0u))) {
            return TGRS_ERR_UNIT;
        }
        if (!TGRS_ROLLING && (flags & TGRS_UNIT_F_ROLLING) != 0u) {
            return TGRS_ERR_UNSUPPORTED; /* built with -DTGRS_NO_ROLLING */
        }
        if (!TGRS_COLS && (flags & TGRS_UNIT_F_COLS) != 0u) {
            return TGRS_ERR_UNSUPPORTED; /* built with -DTGRS_NO_COLS */
        }
        if (!TGRS_OVERWRITE && (flags & TGRS_UNIT_F_OVERWRITE) != 0u) {
            return TGRS_ERR_UNSUPPORTED; /* built with -DTGRS_NO_OVERWRITE */
        }
        if (!TGRS_ACCUM && (flags & TGRS_UNIT_F_ACCUM) != 0u) {
            return TGRS_ERR_UNSUPPORTED; /* built with -DTGRS_NO_ACCUM */
        }
        if ((flags & TGRS_UNIT_F_TILED) == 0u) {
            if (tiles != 1u || rf != 0u || rcnt != 0u) {
                return TGRS_ERR_UNIT;
            }
        } else if (pc == 0u ||
                   (uint64_t)tiles * pc * ((flags & TGRS_UNIT_F_COLS) != 0u ? 2u : 1u) != (uint64_t)rcnt) {
            /* pc >= 1 ties the tile count to TILE_ROWS records, so no loop over tiles outgrows the file. */
            return TGRS_ERR_UNIT;
        }
        if (of != next_op || !tgrs_fits(of, oc, plan->sec_count[TGRS_SEC_OPS]) ||
            !tgrs_fits(pf, pc, plan->sec_count[TGRS_SEC_PLACEMENTS]) ||
            !tgrs_fits(rf, rcnt, plan->sec_count[TGRS_SEC_TILE_ROWS]) ||
            tgrs_rd_u32(u + TGRS_UNIT_OFF_PEAK_BYTES) > plan->fast_arena) {
            return TGRS_ERR_UNIT;
        }
        next_op = of + oc;
        if (i + 1u == n && next_op != plan->sec_count[TGRS_SEC_OPS]) {
            return TGRS_ERR_UNIT;
        }
        rc = tgrs_check_list(plan, tgrs_rd_u32(u + TGRS_UNIT_OFF_RELOAD_FIRST),
                             tgrs_rd_u32(u + TGRS_UNIT_OFF_RELOAD_COUNT));
        if (rc == TGRS_OK) {
            rc = tgrs_check_list(plan, tgrs_rd_u32(u + TGRS_UNIT_OFF_SPILL_FIRST),
                                 tgrs_rd_u32(u + TGRS_UNIT_OFF_SPILL_COUNT));
        }
        if (rc == TGRS_OK) {
            rc = tgrs_check_list(plan, sf, sc);
        }
        if (rc == TGRS_OK) {
            rc = tgrs_check_list(plan, tgrs_rd_u32(u + TGRS_UNIT_OFF_IROP_FIRST),
                                 tgrs_rd_u32(u + TGRS_UNIT_OFF_IROP_COUNT));
        }
        if (TGRS_ROLLING && rc == TGRS_OK && (flags & TGRS_UNIT_F_ROLLING) != 0u) {
            /* pc < 2^28 (it fits the PLACEMENTS section), so 2 * pc does not wrap. */
            rc = tgrs_check_list(plan, tgrs_rd_u32(u + TGRS_UNIT_OFF_CARRY_FIRST), 2u * pc);
        }
        if (rc != TGRS_OK) {
            return rc;
        }
        for (k = 0; k < sc; ++k) {
            if (tgrs_index_at(plan, sf + k) >= plan->sec_count[TGRS_SEC_STAGES]) {
                return TGRS_ERR_STAGE;
            }
        }
        if (xip) {
            if (wb != 0u || boff != 0u || bsize != 0u || raw != 0u || (flags & TGRS_UNIT_F_SHUFFLE) != 0u) {
                return TGRS_ERR_WEIGHTS;
            }
        } else {
            if (!tgrs_fits(boff, bsize, plan->sec_size[TGRS_SEC_WEIGHTS]) || boff % TGRS_ALIGN != 0u || raw > wb ||
                wb > plan->fast_arena) {
                return TGRS_ERR_WEIGHTS;
            }
            if (lz4 ? ((bsize == 0u) != (raw == 0u)) : (bsize != raw)) {
                return TGRS_ERR_WEIGHTS;
            }
            if ((flags & TGRS_UNIT_F_SHUFFLE) != 0u && (!lz4 || raw == 0u)) {
                return TGRS_ERR_WEIGHTS;
            }
            if (lz4 && bsize != 0u &&
                tgrs_lz4_validate(plan->base + plan->sec_off[TGRS_SEC_WEIGHTS] + boff, bsize, raw) != TGRS_LZ4_OK) {
                return TGRS_ERR_LZ4;
            }
        }
        if (wb > max_wb) {
            max_wb = wb;
        }
    }
    if (tgrs_rd_u32(tgrs_rec(plan, TGRS_SEC_PLAN, 0u, TGRS_PLAN_SIZE) + TGRS_PLAN_OFF_MAX_PREFIX) != max_wb) {
        return TGRS_ERR_PLAN;
    }
    for (i = 0; i < n; ++i) {
        rc = tgrs_check_unit_buffers(plan, tgrs_unit(plan, i));
        if (rc != TGRS_OK) {
            return rc;
        }
    }
    for (i = 0; TGRS_OVERWRITE && i < n; ++i) {
        rc = tgrs_check_overwrite(plan, i);
        if (rc != TGRS_OK) {
            return rc;
        }
    }
    for (i = 0; i < n; ++i) {
        rc = tgrs_check_unit_ops(plan, tgrs_unit(plan, i));
        if (rc != TGRS_OK) {
            return rc;
        }
    }
    return TGRS_OK;
}

/*
 * End of step 15 with ONE_REGION (docs/format.md "One region"): the slow arena is the fast arena's memory, so every
 * buffer of a unit (weight prefix, placements, line buffers, op scratch) ends at or below its peak_bytes, and every
 * SLOW root live across a unit has its home at or above that unit's peak_bytes. A root is live from unit 0 when a
 * tensor of it is a graph input (the run writes it first), else from its first spill; to the last unit when one is
 * a graph output (the run reads it last), else to its last reload. Everything read here was proven by the steps
 * before.
 */
static int tgrs_check_one_region(const tgrs_plan *plan)
{
    uint32_t n = plan->sec_count[TGRS_SEC_UNITS];
    uint32_t nt = plan->sec_count[TGRS_SEC_TENSORS];
    uint32_t i;
    uint32_t t;
    for (i = 0; i < n; ++i) {
        const uint8_t *u = tgrs_unit(plan, i);
        uint64_t peak = tgrs_rd_u32(u + TGRS_UNIT_OFF_PEAK_BYTES);
        uint32_t pf = tgrs_rd_u32(u + TGRS_UNIT_OFF_PLACE_FIRST);
        uint32_t pc = tgrs_rd_u32(u + TGRS_UNIT_OFF_PLACE_COUNT);
        uint32_t of = tgrs_rd_u32(u + TGRS_UNIT_OFF_OP_FIRST);
        uint32_t oc = tgrs_rd_u32(u + TGRS_UNIT_OFF_OP_COUNT);
        int rolling = (tgrs_rd_u32(u + TGRS_UNIT_OFF_FLAGS) & TGRS_UNIT_F_ROLLING) != 0u;
        uint32_t p;
        if (tgrs_rd_u32(u + TGRS_UNIT_OFF_WEIGHT_BYTES) > peak) {
            return TGRS_ERR_REGION;
        }
        for (p = pf; p < pf + pc; ++p) {
            const uint8_t *pr = tgrs_placement(plan, p);
            if ((uint64_t)tgrs_rd_u32(pr + TGRS_PLACEMENT_OFF_OFFSET) + tgrs_rd_u32(pr + TGRS_PLACEMENT_OFF_SIZE) >
                peak) {
                return TGRS_ERR_REGION;
            }
            if (rolling) {
                uint32_t off;
                uint32_t size;
                tgrs_line_buffer(plan, u, p - pf, &off, &size);
                if (off != TGRS_NONE && (uint64_t)off + size > peak) {
                    return TGRS_ERR_REGION;
                }
            }
        }
        for (p = of; p < of + oc; ++p) {
            const uint8_t *r = tgrs_op(plan, p);
            uint32_t size = tgrs_rd_u32(r + TGRS_OP_OFF_SCRATCH_SIZE);
            if (size != 0u && (uint64_t)tgrs_rd_u32(r + TGRS_OP_OFF_SCRATCH_OFF) + size > peak) {
                return TGRS_ERR_REGION;
            }
        }
    }
    for (t = 0; t < nt; ++t) {
        const uint8_t *tr = tgrs_tensor(plan, t);
        uint32_t off = tgrs_rd_u32(tr + TGRS_TENSOR_OFF_SLOW_OFFSET);
        uint32_t birth = TGRS_NONE;
        uint32_t death = TGRS_NONE;
        uint32_t first = TGRS_NONE;
        uint32_t last = 0u;
        uint32_t spilled = TGRS_NONE;
        uint32_t reloaded = TGRS_NONE;
        uint32_t k;
        if (tgrs_root(plan, t) != t || (tgrs_rd_u32(tr + TGRS_TENSOR_OFF_FLAGS) & TGRS_TENSOR_F_SLOW) == 0u ||
            tgrs_rd_u32(tr + TGRS_TENSOR_OFF_SLOW_SIZE) == 0u) {
            continue;
        }
        for (i = 0; i < n; ++i) {
            const uint8_t *u = tgrs_unit(plan, i);
            int s = tgrs_unit_moves(plan, u, 1, t);
            int r = tgrs_unit_moves(plan, u, 0, t);
            if (s && spilled == TGRS_NONE) {
                spilled = i;
            }
            if (r) {
                reloaded = i;
            }
            if (s || r) {
                first = first == TGRS_NONE ? i : first;
                last = i;
            }
        }
        if (tgrs_root_flagged(plan, t, TGRS_TENSOR_F_INPUT)) {
            birth = 0u;
        } else if (first != TGRS_NONE) {
            birth = spilled != TGRS_NONE ? spilled : first;
        }
        if (tgrs_root_flagged(plan, t, TGRS_TENSOR_F_OUTPUT)) {
            death = n - 1u;
        } else if (first != TGRS_NONE) {
            death = reloaded != TGRS_NONE ? reloaded : last;
        } else if (birth == 0u) {
            death = 0u;
        }
        if (birth == TGRS_NONE || death == TGRS_NONE) {
            continue; /* never moved and no interface: no run touches its home */
        }
        for (k = birth; k <= death && k < n; ++k) {
            if (off < tgrs_rd_u32(tgrs_unit(plan, k) + TGRS_UNIT_OFF_PEAK_BYTES)) {
                return TGRS_ERR_REGION;
            }
        }
    }
    return TGRS_OK;
}

/* Step 19: stages are for reports, but a reader still refuses a malformed one. */
static int tgrs_check_stages(const tgrs_plan *plan)
{
    uint32_t n = plan->sec_count[TGRS_SEC_STAGES];
    uint32_t i;
    for (i = 0; i < n; ++i) {
        const uint8_t *s = tgrs_rec(plan, TGRS_SEC_STAGES, i, TGRS_STAGE_SIZE);
        uint32_t k;
        int rc;
        if (tgrs_rd_u32(s + TGRS_STAGE_OFF_INDEX) != i ||
            tgrs_rd_u32(s + TGRS_STAGE_OFF_UNIT) >= plan->sec_count[TGRS_SEC_UNITS] ||
            (tgrs_rd_u32(s + TGRS_STAGE_OFF_FLAGS) & ~TGRS_STAGE_F_TILED) != 0u ||
            tgrs_rd_u32(s + TGRS_STAGE_OFF_TILES) == 0u || tgrs_rd_i32(s + TGRS_STAGE_OFF_CHAIN) < -1 ||
            tgrs_rd_u32(s + TGRS_STAGE_OFF_RESERVED) != 0u) {
            return TGRS_ERR_STAGE;
        }
        rc = tgrs_check_list(plan, tgrs_rd_u32(s + TGRS_STAGE_OFF_OPS_FIRST), tgrs_rd_u32(s + TGRS_STAGE_OFF_OPS_COUNT));
        if (rc == TGRS_OK) {
            rc = tgrs_check_list(plan, tgrs_rd_u32(s + TGRS_STAGE_OFF_IN_FIRST), tgrs_rd_u32(s + TGRS_STAGE_OFF_IN_COUNT));
        }
        if (rc == TGRS_OK) {
            rc = tgrs_check_list(plan, tgrs_rd_u32(s + TGRS_STAGE_OFF_OUT_FIRST),
                                 tgrs_rd_u32(s + TGRS_STAGE_OFF_OUT_COUNT));
        }
        if (rc != TGRS_OK) {
            return rc;
        }
        for (k = 0; k < 2u; ++k) {
            uint32_t first = tgrs_rd_u32(s + (k == 0u ? TGRS_STAGE_OFF_IN_FIRST : TGRS_STAGE_OFF_OUT_FIRST));
            uint32_t count = tgrs_rd_u32(s + (k == 0u ? TGRS_STAGE_OFF_IN_COUNT : TGRS_STAGE_OFF_OUT_COUNT));
            uint32_t j;
            for (j = 0; j < count; ++j) {
                if (tgrs_index_at(plan, first + j) >= plan->sec_count[TGRS_SEC_TENSORS]) {
                    return TGRS_ERR_TENSOR_INDEX;
                }
            }
        }
    }
    return TGRS_OK;
}

/* Every kind's check, from the same list as the executor's kernel table (TGRS_KINDS). tgrs_load and
   tgrs_load_diag use it; with -ffunction-sections a firmware that calls only tgrs_load_checks links none of it. */
#define TGRS_CHECK_ENTRY(KIND, kind) [TGRS_OP_##KIND] = tgrs_check_##kind,
static const tgrs_check_fn tgrs_check_table[TGRS_OP_COUNT + 1u] = {TGRS_KINDS(TGRS_CHECK_ENTRY)};
#undef TGRS_CHECK_ENTRY

int tgrs_load(tgrs_plan *plan, const void *bytes, size_t len)
{
    return tgrs_load_checks(plan, bytes, len, tgrs_check_table, TGRS_OP_COUNT + 1u, NULL);
}

int tgrs_load_diag(tgrs_plan *plan, const void *bytes, size_t len, int32_t *failed_op)
{
    return tgrs_load_checks(plan, bytes, len, tgrs_check_table, TGRS_OP_COUNT + 1u, failed_op);
}

/* Steps 1-16 (the structure); on success the plan's fields are filled but it is not marked loaded yet. External
   (tgrs_internal.h) so that compilers keep it one function: inlined into tgrs_load_checks at -Os, the call to
   step 17 made GCC spill enough to cost about 0.6 KiB. */
int tgrs_load_steps(tgrs_plan *plan, const void *bytes, size_t len)
{
    int rc;
    if (((uintptr_t)bytes % TGRS_PLAN_ALIGN) != 0u) {
        return TGRS_ERR_ALIGN;
    }
    rc = tgrs_check_header(plan, (const uint8_t *)bytes, len);
    if (rc == TGRS_OK) {
        rc = tgrs_check_plan_rec(plan);
    }
    if (rc == TGRS_OK) {
        /* Step 11: the strings the later steps reference are checked where they are read. */
        rc = tgrs_check_tensors(plan);
    }
    if (rc == TGRS_OK) {
        rc = tgrs_check_io(plan);
    }
    if (rc == TGRS_OK) {
        rc = tgrs_check_units(plan);
    }
    if (rc == TGRS_OK && (plan->flags & TGRS_FLAG_ONE_REGION) != 0u) {
        rc = TGRS_REGION ? tgrs_check_one_region(plan) : TGRS_ERR_UNSUPPORTED; /* built with -DTGRS_NO_REGION */
    }
    if (rc == TGRS_OK) {
        rc = tgrs_check_stages(plan);
    }
    return rc;
}

int tgrs_load_checks(tgrs_plan *plan, const void *bytes, size_t len, const tgrs_check_fn *checks, uint32_t n_checks,
                     int32_t *failed_op)
{
    int32_t bad_op = -1;
    int rc;
    if (plan == NULL) {
        rc = TGRS_ERR_NULL;
    } else {
        memset(plan, 0, sizeof *plan);
        rc = (bytes == NULL || checks == NULL) ? TGRS_ERR_NULL : tgrs_load_steps(plan, bytes, len);
        if (rc == TGRS_OK) {
            /* Step 17: every op's kind-specific check in every tile (check.c), on what steps 1-16 proved. */
            rc = tgrs_check_kinds(plan, checks, n_checks, &bad_op);
        }
        if (rc != TGRS_OK) {
            memset(plan, 0, sizeof *plan);
        } else {
            plan->loaded = TGRS_PLAN_LOADED;
        }
    }
    if (failed_op != NULL) {
        *failed_op = bad_op;
    }
    return rc;
}
