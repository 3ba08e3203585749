/*
 * count_run.c - one inference of a .tgrs plan on the host, for instruction counting (bench/plan_quality.py --halo).
 *
 *   count_run PLAN.tgrs
 *
 * Loads the plan, fills every input with the same deterministic bytes (floats in [-1, 1)), runs tgrs_run once and
 * prints the run's fast and slow high-water marks. Under valgrind --tool=callgrind --toggle-collect=tgrs_run only the
 * run itself is counted (not the file read nor the load), so a tiled plan and the untiled plan of the same model are
 * compared on the same work. A benchmark helper, not part of the runtime: it allocates with malloc.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tigris.h"

static void *zalloc16(size_t n)
{
    void *p = NULL;
    size_t m = (n + 15u) / 16u * 16u;
    p = aligned_alloc(16, m == 0u ? 16u : m);
    if (p != NULL) {
        memset(p, 0, m == 0u ? 16u : m);
    }
    return p;
}

int main(int argc, char **argv)
{
    FILE *f;
    long len;
    uint8_t *bytes;
    tgrs_plan plan;
    tgrs_stats st;
    void *ins[16];
    void *outs[16];
    int32_t i;
    uint32_t seed = 12345u;
    int rc;
    void *fast;
    void *slow;

    if (argc != 2 || (f = fopen(argv[1], "rb")) == NULL) {
        fprintf(stderr, "usage: count_run PLAN.tgrs\n");
        return 2;
    }
    fseek(f, 0, SEEK_END);
    len = ftell(f);
    fseek(f, 0, SEEK_SET);
    bytes = zalloc16((size_t)len);
    if (bytes == NULL || fread(bytes, 1, (size_t)len, f) != (size_t)len) {
        fprintf(stderr, "%s: cannot read\n", argv[1]);
        return 2;
    }
    fclose(f);
    rc = tgrs_load(&plan, bytes, (size_t)len);
    if (rc != TGRS_OK || tgrs_num_inputs(&plan) > 16 || tgrs_num_outputs(&plan) > 16) {
        fprintf(stderr, "%s: %s\n", argv[1], tgrs_status_name(rc));
        return 1;
    }
    for (i = 0; i < tgrs_num_inputs(&plan); ++i) {
        tgrs_io_info io;
        uint32_t k;
        tgrs_input_info(&plan, i, &io);
        ins[i] = zalloc16(io.nbytes);
        for (k = 0; k < io.nbytes; ++k) {
            seed = seed * 1103515245u + 12345u;
            ((uint8_t *)ins[i])[k] = (uint8_t)(seed >> 16);
        }
        if (io.dtype == TGRS_DT_F32) {
            for (k = 0; k + 4u <= io.nbytes; k += 4u) {
                float v;
                seed = seed * 1103515245u + 12345u;
                v = (float)((int32_t)(seed >> 8) % 65536) / 65536.0f;
                memcpy((uint8_t *)ins[i] + k, &v, 4u);
            }
        }
    }
    for (i = 0; i < tgrs_num_outputs(&plan); ++i) {
        tgrs_io_info io;
        tgrs_output_info(&plan, i, &io);
        outs[i] = zalloc16(io.nbytes);
    }
    fast = zalloc16(tgrs_fast_size(&plan));
    slow = zalloc16(tgrs_slow_size(&plan));
    rc = tgrs_run(&plan, fast, tgrs_fast_size(&plan), slow, tgrs_slow_size(&plan), (const void *const *)ins, outs, &st);
    if (rc != TGRS_OK) {
        fprintf(stderr, "%s: run: %s at op %d\n", argv[1], tgrs_status_name(rc), (int)st.failed_op);
        return 1;
    }
    printf("fast_peak %u slow_peak %u ops %u\n", (unsigned)st.fast_peak, (unsigned)st.slow_peak, (unsigned)st.ops);
    return 0;
}
