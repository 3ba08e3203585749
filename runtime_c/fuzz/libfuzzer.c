/*
 * libfuzzer.c - the libFuzzer target for the loader and the executor (clang -fsanitize=fuzzer,address,undefined).
 *
 * Each input is one plan. It is copied into a heap buffer of exactly its size (malloc's alignment satisfies
 * TGRS_PLAN_ALIGN, and AddressSanitizer then sees any read past the end), and harness.c loads it and, when the loader
 * accepts it, runs it on exact-size heap arenas. A plan is either refused or runs to completion: any sanitizer report,
 * crash, leak or a high-water mark beyond the arena (harness status 3) is a finding.
 *
 * Most random mutations of a plan would only meet the CRC check, so the custom mutator re-seals three mutants in four:
 * it sets file_size to the new length and recomputes the CRC-32, and the mutation reaches the structural checks,
 * the per-kind checks and the kernels. The fourth keeps its stale fields and exercises the header checks.
 *
 * Built and run by tests/fuzz/test_libfuzzer.py (60 s in CI, seed corpus of real plans) and by
 * `make -C runtime_c fuzz-long` (hours; docs/runtime.md).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "tgrs_format.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed);

/* CRC-32 (IEEE, reflected, as zlib), bit by bit: the fuzzer's own copy, independent of the loader's table. */
static uint32_t fuzz_crc32(const uint8_t *p, size_t n)
{
    uint32_t c = 0xFFFFFFFFu;
    size_t i;
    int k;
    for (i = 0; i < n; ++i) {
        c ^= p[i];
        for (k = 0; k < 8; ++k) {
            c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
        }
    }
    return c ^ 0xFFFFFFFFu;
}

static void fuzz_put_u32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
    size_t n = LLVMFuzzerMutate(data, size, max_size);
    if ((seed & 3u) != 0u && n >= TGRS_HEADER_SIZE && n <= 0xFFFFFFFFu) {
        fuzz_put_u32(data + TGRS_HEADER_OFF_FILE_SIZE, (uint32_t)n);
        fuzz_put_u32(data + TGRS_HEADER_OFF_CRC32, fuzz_crc32(data + TGRS_CRC_START, n - TGRS_CRC_START));
    }
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned char *buf = (unsigned char *)malloc(size != 0u ? size : 1u);
    int run_rc = 1;
    if (buf == NULL) {
        return 0;
    }
    if (size != 0u) {
        memcpy(buf, data, size);
    }
    (void)tgrs_fuzz_run_one(buf, size, &run_rc);
    free(buf);
    if (run_rc == 3) {
        abort(); /* a reported peak beyond the arena: the budget guarantee is broken */
    }
    return 0;
}
