/*
 * driver.c - plan-mutation fuzz driver (host only; built with -fsanitize=address,undefined by tests/fuzz).
 *
 * Reads a stream of plans from a file: each record is a little-endian uint32 length followed by that many bytes.
 * Every plan is copied into a heap buffer of exactly its size (so AddressSanitizer sees any read past its end),
 * loaded, and when the loader accepts it, run on heap arenas of exactly the sizes the plan asks for, with inputs
 * and outputs in exact-size heap buffers too. Prints one line per plan: "<index> <load rc> <run rc>", where run rc
 * is the tgrs_run status, or 1 (not run: refused by the loader), 2 (interface query failed), 3 (a reported peak
 * beyond the arena: a runtime bug), 4 (arenas above MAX_ARENA, not run).
 *
 * The driver itself may allocate: the rule "no malloc" is for the runtime library, which is what is under test.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tigris.h"
#include "tgrs_lz4.h"

#define MAX_IO 16
/* A mutated plan may legitimately ask for gigabytes of arena; running it would only measure the machine. */
#define MAX_ARENA (16u * 1024u * 1024u)

static int read_u32(FILE *f, uint32_t *v)
{
    unsigned char b[4];
    if (fread(b, 1, 4, f) != 4) {
        return 0;
    }
    *v = (uint32_t)b[0] | ((uint32_t)b[1] << 8) | ((uint32_t)b[2] << 16) | ((uint32_t)b[3] << 24);
    return 1;
}

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

static int run_one(const unsigned char *bytes, size_t len, int *run_rc)
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

/*
 * LZ4 mode: records are (u32 output length, u32 block length, block). Each block is decoded into an exact-size heap
 * buffer, and validated without output; the two must agree. Prints "<index> <decode rc> <validate rc>".
 */
static int lz4_mode(FILE *f)
{
    uint32_t dst_len;
    uint32_t len;
    unsigned long index = 0;
    while (read_u32(f, &dst_len) && read_u32(f, &len)) {
        unsigned char *src = (unsigned char *)malloc(len ? len : 1u);
        unsigned char *dst = (unsigned char *)malloc(dst_len ? dst_len : 1u);
        int rc;
        int vrc;
        if (src == NULL || dst == NULL || fread(src, 1, len, f) != len) {
            fprintf(stderr, "truncated record %lu\n", index);
            free(src);
            free(dst);
            return 2;
        }
        rc = tgrs_lz4_decode(src, len, dst, dst_len);
        vrc = tgrs_lz4_validate(src, len, dst_len);
        printf("%lu %d %d\n", index, rc, vrc);
        free(src);
        free(dst);
        ++index;
    }
    return 0;
}

int main(int argc, char **argv)
{
    FILE *f;
    uint32_t len;
    unsigned long index = 0;
    int lz4 = argc == 3 && strcmp(argv[1], "lz4") == 0;
    if (argc != 2 && !lz4) {
        fprintf(stderr, "usage: %s PLANS.bin | %s lz4 BLOCKS.bin\n", argv[0], argv[0]);
        return 2;
    }
    f = fopen(argv[argc - 1], "rb");
    if (f == NULL) {
        perror(argv[argc - 1]);
        return 2;
    }
    if (lz4) {
        int rc = lz4_mode(f);
        fclose(f);
        return rc;
    }
    while (read_u32(f, &len)) {
        unsigned char *buf = (unsigned char *)malloc(len ? len : 1u);
        int load_rc;
        int run_rc;
        if (buf == NULL || fread(buf, 1, len, f) != len) {
            fprintf(stderr, "truncated record %lu\n", index);
            free(buf);
            fclose(f);
            return 2;
        }
        load_rc = run_one(buf, len, &run_rc);
        printf("%lu %d %d\n", index, load_rc, run_rc);
        free(buf);
        ++index;
    }
    fclose(f);
    return 0;
}
