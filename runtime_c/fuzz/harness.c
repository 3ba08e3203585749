/*
 * harness.c - one fuzz case: load a plan and, when the loader accepts it, run it on exact-size heap buffers.
 *
 * Shared by the plan-stream driver (driver.c, gcc + ASan/UBSan, tests/fuzz/test_fuzz_plans.py) and the libFuzzer
 * target (libfuzzer.c, clang -fsanitize=fuzzer,address,undefined). Host test code: it may allocate; the runtime
 * library under test may not.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "tigris.h"

#define MAX_IO 16
/* A mutated plan may legitimately ask for gigabytes of arena; running it would only measure the machine. */
#define MAX_ARENA (16u * 1024u * 1024u)

/* Fill with a deterministic pattern so runs exercise real arithmetic rather than all zeros. */
static void fill(unsigned char *p, size_t n, uint32_t seed)
{
    size_t i;
    uint32_t x = seed * 2654435761u + 1u;
    for (i = 0; i < n; ++i) {
        x = x * 1103515245u + 12345u;
        /* Keep float inputs finite and small: bytes 0x00-0x3f in the top byte of each float. */
        p[i] = (unsigned char)((i % 4u == 3u) ? ((x >> 16) & 0x3fu) : (x >> 16));
    }
}

int tgrs_fuzz_run_one(const unsigned char *bytes, size_t len, int *run_rc)
{
    tgrs_plan plan;
    tgrs_stats stats;
    void *fast = NULL;
    void *slow = NULL;
    void *in[MAX_IO];
    void *out[MAX_IO];
    const void *cin[MAX_IO];
    int32_t n_in;
    int32_t n_out;
    int32_t i;
    int rc;

    *run_rc = 1; /* "not run" */
    rc = tgrs_load(&plan, bytes, len);
    if (rc != TGRS_OK) {
        return rc;
    }
    n_in = tgrs_num_inputs(&plan);
    n_out = tgrs_num_outputs(&plan);
    if (n_in < 0 || n_in > MAX_IO || n_out < 0 || n_out > MAX_IO) {
        return rc;
    }
    if (tgrs_fast_size(&plan) > MAX_ARENA || tgrs_slow_size(&plan) > MAX_ARENA) {
        *run_rc = 4; /* "too big to run here" */
        return rc;
    }
    memset(in, 0, sizeof in);
    memset(out, 0, sizeof out);
    for (i = 0; i < n_in; ++i) {
        tgrs_io_info info;
        if (tgrs_input_info(&plan, i, &info) != TGRS_OK) {
            *run_rc = 2;
            goto done;
        }
        in[i] = malloc(info.nbytes ? info.nbytes : 1u);
        fill((unsigned char *)in[i], info.nbytes, (uint32_t)i);
        cin[i] = in[i];
    }
    for (i = 0; i < n_out; ++i) {
        tgrs_io_info info;
        if (tgrs_output_info(&plan, i, &info) != TGRS_OK) {
            *run_rc = 2;
            goto done;
        }
        out[i] = malloc(info.nbytes ? info.nbytes : 1u);
    }
    fast = malloc(tgrs_fast_size(&plan) ? tgrs_fast_size(&plan) : 1u);
    slow = malloc(tgrs_slow_size(&plan) ? tgrs_slow_size(&plan) : 1u);
    /* Arenas start as garbage on a device; deterministic garbage here. */
    fill((unsigned char *)fast, tgrs_fast_size(&plan), 7u);
    fill((unsigned char *)slow, tgrs_slow_size(&plan), 9u);
    *run_rc = tgrs_run(&plan, fast, tgrs_fast_size(&plan), slow, tgrs_slow_size(&plan), cin, out, &stats);
    if (*run_rc == TGRS_OK && (stats.fast_peak > tgrs_fast_size(&plan) || stats.slow_peak > tgrs_slow_size(&plan))) {
        *run_rc = 3; /* a high-water mark beyond the arena would be a runtime bug */
    }
done:
    for (i = 0; i < MAX_IO; ++i) {
        free(in[i]);
        free(out[i]);
    }
    free(fast);
    free(slow);
    return rc;
}
