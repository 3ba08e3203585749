/*
 * tigris.h - the public API of the TiGrIS runtime.
 *
 * Use:
 *     tgrs_plan plan;
 *     int rc = tgrs_load(&plan, plan_bytes, plan_len);       validates every byte; nothing is trusted before this
 *     ... provide a fast arena of tgrs_fast_size(&plan) bytes and a slow arena of tgrs_slow_size(&plan) bytes ...
 *     rc = tgrs_run(&plan, fast, fast_len, slow, slow_len, inputs, outputs, &stats);
 *
 * The runtime allocates nothing and keeps no state between calls: a tgrs_plan is a fixed-size set of validated
 * offsets into the caller's plan bytes (which must stay alive and unchanged while the plan is used), and everything a
 * run needs lives in the caller's two arenas. Every function returns TGRS_OK (0) or a negative TGRS_ERR_* code from
 * tgrs_format.h; tgrs_status_name() names it.
 *
 * Inputs and outputs are exchanged in the *stored* form described by tgrs_io_info: physical layout (NHWC for images),
 * and the declared element type (a declared uint8 boundary is stored internally as int8; the runtime converts by
 * flipping the top bit, which maps uint8 v to int8 v - 128).
 */
#ifndef TIGRIS_H
#define TIGRIS_H

#include <stddef.h>
#include <stdint.h>

#include "tgrs_format.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A validated plan. Treat as opaque: the fields are offsets into `base` that tgrs_load has checked. */
typedef struct tgrs_plan {
    const uint8_t *base;                         /* the caller's plan bytes */
    uint32_t size;                               /* file_size */
    uint32_t flags;                              /* header flags (TGRS_FLAG_*) */
    uint32_t sec_off[TGRS_SECTION_COUNT + 1u];   /* by section id (index 0 unused) */
    uint32_t sec_size[TGRS_SECTION_COUNT + 1u];
    uint32_t sec_count[TGRS_SECTION_COUNT + 1u];
    uint32_t fast_arena;                         /* bytes the caller must provide */
    uint32_t slow_arena;
    uint32_t n_inputs;
    uint32_t n_outputs;
    uint32_t loaded;                             /* TGRS_PLAN_LOADED after a successful tgrs_load */
} tgrs_plan;

#define TGRS_PLAN_LOADED 0x5447524Cu

/* What one run did. Peaks are the highest end offset of any buffer the runtime touched in each arena. */
typedef struct tgrs_stats {
    uint32_t fast_peak;
    uint32_t slow_peak;
    uint32_t units;      /* units completed */
    uint32_t ops;        /* kernel calls completed */
    int32_t failed_op;   /* OP record index of the kernel that failed, -1 if none */
    int32_t failed_unit; /* unit index where the run stopped, -1 if none */
} tgrs_stats;

/* One graph input or output, as the caller exchanges it. */
typedef struct tgrs_io_info {
    const char *name;        /* NUL-terminated (inside the plan bytes) */
    uint32_t name_len;
    int32_t dtype;           /* TGRS_DT_* of the caller's buffer: U8 for a declared uint8 boundary stored as int8,
                                otherwise the stored dtype */
    int32_t internal_dtype;  /* TGRS_DT_* stored in the arena */
    int32_t decl_dtype;      /* TGRS_DT_* the model declares (a host converts any other difference itself) */
    int32_t layout;          /* TGRS_LAYOUT_* of the caller's bytes */
    int32_t rank;            /* declared logical rank */
    int32_t shape[8];        /* declared logical shape, entries past rank 0 */
    int32_t tensor_rank;     /* logical rank of the internal tensor */
    int32_t tensor_shape[8]; /* logical shape of the internal tensor (differs from `shape` only in order) */
    int32_t dims[4];         /* physical view dims {N, H, W, C} of the caller's bytes */
    uint32_t nbytes;         /* size of the caller's buffer */
    uint32_t flags;          /* TGRS_IO_F_* */
    float scale;             /* internal quantization (QUANT) */
    int32_t zero_point;
    float decl_scale;        /* declared quantization (DECL_QUANT) */
    int32_t decl_zero_point;
} tgrs_io_info;

/* Validate `len` bytes at `bytes` (aligned to TGRS_PLAN_ALIGN) and fill `plan`. On failure `plan` is unusable. */
int tgrs_load(tgrs_plan *plan, const void *bytes, size_t len);

/* tgrs_load, and on failure of the per-kind step (a kernel check refused an op: TGRS_ERR_PARAM, _DTYPE, _TILE,
 * _SCRATCH, _SHAPE, _UNSUPPORTED) *failed_op receives that op's OP record index, otherwise -1. failed_op may be NULL. */
int tgrs_load_diag(tgrs_plan *plan, const void *bytes, size_t len, int32_t *failed_op);

/* Arena sizes the plan needs (0 for a plan that is not loaded). */
uint32_t tgrs_fast_size(const tgrs_plan *plan);
uint32_t tgrs_slow_size(const tgrs_plan *plan);

/* The interface (-1 for a plan that is not loaded). */
int32_t tgrs_num_inputs(const tgrs_plan *plan);
int32_t tgrs_num_outputs(const tgrs_plan *plan);
int tgrs_input_info(const tgrs_plan *plan, int32_t index, tgrs_io_info *info);
int tgrs_output_info(const tgrs_plan *plan, int32_t index, tgrs_io_info *info);

/*
 * Run one inference. `fast`/`slow` are the arenas (aligned to TGRS_ARENA_ALIGN; `slow` may be NULL when the plan
 * needs no slow arena); inputs[i] holds tgrs_input_info(i).nbytes bytes, outputs[i] receives
 * tgrs_output_info(i).nbytes bytes. `stats` may be NULL. A plan with the header flag TGRS_FLAG_ONE_REGION takes one
 * region as both arenas: pass the same pointer as `fast` and `slow`, with at least max(tgrs_fast_size,
 * tgrs_slow_size) bytes as both lengths (other pointers: TGRS_ERR_REGION).
 */
int tgrs_run(const tgrs_plan *plan, void *fast, size_t fast_len, void *slow, size_t slow_len,
             const void *const *inputs, void *const *outputs, tgrs_stats *stats);

/*
 * I/O inside the arena (zero copy). Every graph input and output has a home in the fast or slow arena: where
 * tgrs_run copies the input to before the first unit and the output from after the last unit. Instead of handing
 * buffers to tgrs_run, the caller may write each input at tgrs_input_home before tgrs_run_in_place and read each
 * output at tgrs_output_home after it; the run computes on exactly the same bytes as tgrs_run, and needs no I/O
 * buffers besides the arenas.
 *
 * The home holds tgrs_io_info.nbytes bytes in the *stored* form: layout `layout` and dtype `internal_dtype`. A
 * declared uint8 boundary (dtype U8, internal_dtype S8) is not converted in this mode: the caller writes (and reads)
 * int8 values v - 128, i.e. the uint8 bytes with bit 7 flipped.
 *
 * The arguments are the arenas the run will use (checked as tgrs_run checks them). A home is stable for the whole
 * call: nothing writes an input's home before the run reads it at unit 0 and nothing writes an output's home after
 * the last unit. Homes of two different inputs (or two different outputs) never share a byte in a valid plan; the
 * functions check it and answer TGRS_ERR_PLACEMENT, with *home NULL, rather than hand out a pointer one input's
 * bytes would clobber. An input's home may share bytes with an output's: write the next run's inputs only after
 * reading the outputs. Other codes: TGRS_ERR_NULL, TGRS_ERR_STATE, TGRS_ERR_INPUT (index), TGRS_ERR_ALIGN,
 * TGRS_ERR_ARENA_SMALL.
 */
int tgrs_input_home(const tgrs_plan *plan, void *fast, size_t fast_len, void *slow, size_t slow_len, int32_t index,
                    void **home);
int tgrs_output_home(const tgrs_plan *plan, void *fast, size_t fast_len, void *slow, size_t slow_len, int32_t index,
                     void **home);
/* tgrs_run with every input already at its home and every output left at its home. */
int tgrs_run_in_place(const tgrs_plan *plan, void *fast, size_t fast_len, void *slow, size_t slow_len,
                      tgrs_stats *stats);

/* Name of OP record `index` (NUL-terminated, inside the plan bytes) for diagnostics such as stats.failed_op, or
 * NULL for a plan that is not loaded or an index out of range. */
const char *tgrs_op_name(const tgrs_plan *plan, int32_t index);

/* The TGRS_* name of a status code ("TGRS_ERR_CRC"), or "TGRS_ERR_UNKNOWN". Never NULL. */
const char *tgrs_status_name(int code);

#ifdef __cplusplus
}
#endif

#endif /* TIGRIS_H */
