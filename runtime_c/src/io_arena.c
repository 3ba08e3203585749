/*
 * io_arena.c - I/O inside the arena: where the caller writes each input and reads each output (tigris.h).
 *
 * A file of its own so firmware that exchanges I/O through buffers (tgrs_run) never links it. Everything read here
 * is an interface record tgrs_load validated: its arena, and its offset, which is the tensor's slow home or its
 * placement in the first (input) or last (output) unit, inside the arena the plan declares.
 */
#include "tgrs_internal.h"

/* Arena, offset, size and root tensor of interface record `rec`. */
static void tgrs_home_of(const tgrs_plan *plan, uint32_t rec, uint32_t *arena, uint32_t *off, uint32_t *n,
                         uint32_t *root)
{
    const uint8_t *r = tgrs_io(plan, rec);
    *arena = tgrs_rd_u32(r + TGRS_IO_OFF_ARENA);
    *off = tgrs_rd_u32(r + TGRS_IO_OFF_OFFSET);
    *n = tgrs_rd_u32(r + TGRS_IO_OFF_NBYTES);
    *root = tgrs_root(plan, tgrs_rd_u32(r + TGRS_IO_OFF_TENSOR));
}

/* Records [first, first + count) of one direction: does record `rec` share an arena byte with another of them that
   names a different tensor? Such a plan would have one input (or output) overwrite another's bytes. */
static int tgrs_home_clash(const tgrs_plan *plan, uint32_t first, uint32_t count, uint32_t rec)
{
    uint32_t a;
    uint32_t o;
    uint32_t n;
    uint32_t t;
    uint32_t j;
    tgrs_home_of(plan, rec, &a, &o, &n, &t);
    for (j = first; j < first + count; ++j) {
        uint32_t a2;
        uint32_t o2;
        uint32_t n2;
        uint32_t t2;
        if (j == rec) {
            continue;
        }
        tgrs_home_of(plan, j, &a2, &o2, &n2, &t2);
        /* Offsets and sizes lie inside an arena of at most UINT32_MAX bytes (loader): the sums do not wrap. */
        if (a2 == a && t2 != t && n != 0u && n2 != 0u && o < o2 + n2 && o2 < o + n) {
            return 1;
        }
    }
    return 0;
}

static int tgrs_home(const tgrs_plan *plan, void *fast, size_t fast_len, void *slow, size_t slow_len, int output,
                     int32_t index, void **home)
{
    uint32_t first;
    uint32_t count;
    uint32_t rec;
    uint32_t arena;
    uint32_t off;
    uint32_t n;
    uint32_t root;
    int rc;
    if (home == NULL) {
        return TGRS_ERR_NULL;
    }
    *home = NULL;
    if (plan == NULL) {
        return TGRS_ERR_NULL;
    }
    if (plan->loaded != TGRS_PLAN_LOADED) {
        return TGRS_ERR_STATE;
    }
    first = output ? plan->n_inputs : 0u;
    count = output ? plan->n_outputs : plan->n_inputs;
    if (index < 0 || (uint32_t)index >= count) {
        return TGRS_ERR_INPUT;
    }
    /* The same arena checks as tgrs_run, so a home is never an address past an arena the run would refuse. */
    rc = tgrs_arenas_ok(plan, fast, fast_len, slow, slow_len);
    if (rc != TGRS_OK) {
        return rc;
    }
    rec = first + (uint32_t)index;
    if (tgrs_home_clash(plan, first, count, rec)) {
        return TGRS_ERR_PLACEMENT;
    }
    tgrs_home_of(plan, rec, &arena, &off, &n, &root);
    (void)root;
    if (n == 0u) {
        return TGRS_OK; /* an empty tensor has no bytes to exchange: *home stays NULL */
    }
    *home = (arena == TGRS_ARENA_SLOW ? (uint8_t *)slow : (uint8_t *)fast) + off;
    return TGRS_OK;
}

int tgrs_input_home(const tgrs_plan *plan, void *fast, size_t fast_len, void *slow, size_t slow_len, int32_t index,
                    void **home)
{
    return tgrs_home(plan, fast, fast_len, slow, slow_len, 0, index, home);
}

int tgrs_output_home(const tgrs_plan *plan, void *fast, size_t fast_len, void *slow, size_t slow_len, int32_t index,
                     void **home)
{
    return tgrs_home(plan, fast, fast_len, slow, slow_len, 1, index, home);
}
