/*
 * driver.c - plan-mutation fuzz driver (host only; built with -fsanitize=address,undefined by tests/fuzz).
 *
 * Reads a stream of plans from a file: each record is a little-endian uint32 length followed by that many bytes.
 * Every plan is copied into a heap buffer of exactly its size (so AddressSanitizer sees any read past its end),
 * loaded, and when the loader accepts it, run on heap arenas of exactly the sizes the plan asks for, with inputs
 * and outputs in exact-size heap buffers too. Prints one line per plan: "<index> <load rc> <run rc>", where run rc
 * is the tgrs_run status, or 1 (not run: refused by the loader), 2 (interface query failed), 3 (a reported peak
 * beyond the arena: a runtime bug), 4 (arenas above MAX_ARENA, not run); harness.c runs each plan.
 *
 * The driver itself may allocate: the rule "no malloc" is for the runtime library, which is what is under test.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "tigris.h"
#include "tgrs_lz4.h"

static int read_u32(FILE *f, uint32_t *v)
{
    unsigned char b[4];
    if (fread(b, 1, 4, f) != 4) {
        return 0;
    }
    *v = (uint32_t)b[0] | ((uint32_t)b[1] << 8) | ((uint32_t)b[2] << 16) | ((uint32_t)b[3] << 24);
    return 1;
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
        load_rc = tgrs_fuzz_run_one(buf, len, &run_rc);
        printf("%lu %d %d\n", index, load_rc, run_rc);
        free(buf);
        ++index;
    }
    fclose(f);
    return 0;
}
