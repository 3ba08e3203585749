/*
 * io.c - queries on a loaded plan: arena sizes, the interface, status names.
 *
 * Everything here reads fields tgrs_load already validated; on a plan that is not loaded the queries answer "none"
 * (0, -1 or TGRS_ERR_STATE) rather than reading anything.
 */
#include "tgrs_internal.h"

static int tgrs_is_loaded(const tgrs_plan *plan)
{
    return plan != NULL && plan->loaded == TGRS_PLAN_LOADED;
}

uint32_t tgrs_fast_size(const tgrs_plan *plan)
{
    return tgrs_is_loaded(plan) ? plan->fast_arena : 0u;
}

uint32_t tgrs_slow_size(const tgrs_plan *plan)
{
    return tgrs_is_loaded(plan) ? plan->slow_arena : 0u;
}

int32_t tgrs_num_inputs(const tgrs_plan *plan)
{
    return tgrs_is_loaded(plan) ? (int32_t)plan->n_inputs : -1;
}

int32_t tgrs_num_outputs(const tgrs_plan *plan)
{
    return tgrs_is_loaded(plan) ? (int32_t)plan->n_outputs : -1;
}

static void tgrs_fill_info(const tgrs_plan *plan, uint32_t rec, tgrs_io_info *info)
{
    const uint8_t *r = tgrs_io(plan, rec);
    const uint8_t *tr = tgrs_tensor(plan, tgrs_rd_u32(r + TGRS_IO_OFF_TENSOR));
    uint32_t k;
    memset(info, 0, sizeof *info);
    info->name = (const char *)(plan->base + plan->sec_off[TGRS_SEC_STRINGS] + tgrs_rd_u32(r + TGRS_IO_OFF_NAME_OFF));
    info->name_len = tgrs_rd_u32(r + TGRS_IO_OFF_NAME_LEN);
    info->internal_dtype = (int32_t)tgrs_rd_u32(r + TGRS_IO_OFF_DTYPE);
    info->decl_dtype = (int32_t)tgrs_rd_u32(r + TGRS_IO_OFF_DECL_DTYPE);
    /* The caller exchanges the declared dtype only where the runtime converts (uint8 <-> int8), else the stored. */
    info->dtype = (info->decl_dtype == TGRS_DT_U8 && info->internal_dtype == TGRS_DT_S8) ? TGRS_DT_U8
                                                                                       : info->internal_dtype;
    info->layout = (int32_t)tgrs_rd_u32(r + TGRS_IO_OFF_LAYOUT);
    info->rank = (int32_t)tgrs_rd_u32(r + TGRS_IO_OFF_RANK);
    info->tensor_rank = (int32_t)tgrs_rd_u32(tr + TGRS_TENSOR_OFF_RANK);
    for (k = 0; k < (uint32_t)TGRS_MAX_RANK; ++k) {
        info->shape[k] = tgrs_rd_i32(r + TGRS_IO_OFF_SHAPE + 4u * k);
        info->tensor_shape[k] = tgrs_rd_i32(tr + TGRS_TENSOR_OFF_SHAPE + 4u * k);
    }
    for (k = 0; k < 4u; ++k) {
        info->dims[k] = tgrs_rd_i32(tr + TGRS_TENSOR_OFF_DIMS + 4u * k);
    }
    info->nbytes = tgrs_rd_u32(r + TGRS_IO_OFF_NBYTES);
    info->flags = tgrs_rd_u32(r + TGRS_IO_OFF_FLAGS);
    info->scale = tgrs_rd_f32(r + TGRS_IO_OFF_SCALE);
    info->zero_point = tgrs_rd_i32(r + TGRS_IO_OFF_ZERO_POINT);
    info->decl_scale = tgrs_rd_f32(r + TGRS_IO_OFF_DECL_SCALE);
    info->decl_zero_point = tgrs_rd_i32(r + TGRS_IO_OFF_DECL_ZERO_POINT);
}

int tgrs_input_info(const tgrs_plan *plan, int32_t index, tgrs_io_info *info)
{
    if (plan == NULL || info == NULL) {
        return TGRS_ERR_NULL;
    }
    if (!tgrs_is_loaded(plan)) {
        return TGRS_ERR_STATE;
    }
    if (index < 0 || (uint32_t)index >= plan->n_inputs) {
        return TGRS_ERR_INPUT;
    }
    tgrs_fill_info(plan, (uint32_t)index, info);
    return TGRS_OK;
}

int tgrs_output_info(const tgrs_plan *plan, int32_t index, tgrs_io_info *info)
{
    if (plan == NULL || info == NULL) {
        return TGRS_ERR_NULL;
    }
    if (!tgrs_is_loaded(plan)) {
        return TGRS_ERR_STATE;
    }
    if (index < 0 || (uint32_t)index >= plan->n_outputs) {
        return TGRS_ERR_INPUT;
    }
    tgrs_fill_info(plan, plan->n_inputs + (uint32_t)index, info);
    return TGRS_OK;
}

const char *tgrs_op_name(const tgrs_plan *plan, int32_t index)
{
    const uint8_t *r;
    if (!tgrs_is_loaded(plan) || index < 0 || (uint32_t)index >= plan->sec_count[TGRS_SEC_OPS]) {
        return NULL;
    }
    r = tgrs_op(plan, (uint32_t)index);
    /* The loader checked the reference: in STRINGS, NUL-terminated. */
    return (const char *)(plan->base + plan->sec_off[TGRS_SEC_STRINGS] + tgrs_rd_u32(r + TGRS_OP_OFF_NAME_OFF));
}

#define TGRS_NAME(code) \
    case code:          \
        return #code;

const char *tgrs_status_name(int code)
{
    switch (code) {
        TGRS_NAME(TGRS_OK)
        TGRS_NAME(TGRS_ERR_NULL)
        TGRS_NAME(TGRS_ERR_ALIGN)
        TGRS_NAME(TGRS_ERR_TRUNCATED)
        TGRS_NAME(TGRS_ERR_MAGIC)
        TGRS_NAME(TGRS_ERR_VERSION)
        TGRS_NAME(TGRS_ERR_SIZE)
        TGRS_NAME(TGRS_ERR_CRC)
        TGRS_NAME(TGRS_ERR_HEADER)
        TGRS_NAME(TGRS_ERR_SECTION)
        TGRS_NAME(TGRS_ERR_SECTION_BOUNDS)
        TGRS_NAME(TGRS_ERR_STRING)
        TGRS_NAME(TGRS_ERR_TENSOR_INDEX)
        TGRS_NAME(TGRS_ERR_TENSOR)
        TGRS_NAME(TGRS_ERR_OP_KIND)
        TGRS_NAME(TGRS_ERR_OP)
        TGRS_NAME(TGRS_ERR_BAD_PARAM)
        TGRS_NAME(TGRS_ERR_CONST)
        TGRS_NAME(TGRS_ERR_ARENA_BOUNDS)
        TGRS_NAME(TGRS_ERR_ARENA_SMALL)
        TGRS_NAME(TGRS_ERR_UNIT)
        TGRS_NAME(TGRS_ERR_STAGE)
        TGRS_NAME(TGRS_ERR_TILE_ROWS)
        TGRS_NAME(TGRS_ERR_IO)
        TGRS_NAME(TGRS_ERR_LZ4)
        TGRS_NAME(TGRS_ERR_WEIGHTS)
        TGRS_NAME(TGRS_ERR_INDEX)
        TGRS_NAME(TGRS_ERR_PLACEMENT)
        TGRS_NAME(TGRS_ERR_PLAN)
        TGRS_NAME(TGRS_ERR_STATE)
        TGRS_NAME(TGRS_ERR_INPUT)
        TGRS_NAME(TGRS_ERR_PARAM)
        TGRS_NAME(TGRS_ERR_DTYPE)
        TGRS_NAME(TGRS_ERR_TILE)
        TGRS_NAME(TGRS_ERR_SCRATCH)
        TGRS_NAME(TGRS_ERR_SHAPE)
        TGRS_NAME(TGRS_ERR_UNSUPPORTED)
        TGRS_NAME(TGRS_ERR_TARGET)
        TGRS_NAME(TGRS_ERR_TILE_COLS)
        TGRS_NAME(TGRS_ERR_COLS_OP)
        TGRS_NAME(TGRS_ERR_SCRATCH_OVERLAP)
        TGRS_NAME(TGRS_ERR_OVERWRITE)
        TGRS_NAME(TGRS_ERR_REGION)
        TGRS_NAME(TGRS_ERR_VIEW)
    default:
        return "TGRS_ERR_UNKNOWN";
    }
}
