/*
 * permute.h - the 4-D permuting copy behind transpose.c and copy.c (static inline: no globals, each file alone).
 *
 * The source is a contiguous row-major array of dims sd[0..3]; the destination is contiguous with dims
 * od[j] = sd[perm[j]], and dst[i0, i1, i2, i3] = src[index with axis perm[j] at i_j].
 */
#ifndef TGRS_PERMUTE_H
#define TGRS_PERMUTE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* 1 when perm is a permutation of 0..3. */
static inline int tgrs_perm4_ok(const int32_t perm[4])
{
    int seen = 0;
    int j;
    for (j = 0; j < 4; ++j) {
        if (perm[j] < 0 || perm[j] > 3 || (seen & (1 << perm[j])) != 0) {
            return 0;
        }
        seen |= 1 << perm[j];
    }
    return 1;
}

/* Element size es is 1, 2 or 4 bytes (callers validate). */
static inline void tgrs_permute4(void *dst, const void *src, const int32_t sd[4], const int32_t perm[4], size_t es)
{
    size_t ss[4], st[4];
    int32_t od[4];
    int32_t i0, i1, i2, i3;
    int j;
    ss[3] = 1u;
    ss[2] = (size_t)sd[3];
    ss[1] = ss[2] * (size_t)sd[2];
    ss[0] = ss[1] * (size_t)sd[1];
    for (j = 0; j < 4; ++j) {
        od[j] = sd[perm[j]];
        st[j] = ss[perm[j]];
    }
    if (perm[0] == 0 && perm[1] == 1 && perm[2] == 2 && perm[3] == 3) {
        memcpy(dst, src, (size_t)od[0] * (size_t)od[1] * (size_t)od[2] * (size_t)od[3] * es);
        return;
    }
    for (i0 = 0; i0 < od[0]; ++i0) {
        for (i1 = 0; i1 < od[1]; ++i1) {
            for (i2 = 0; i2 < od[2]; ++i2) {
                size_t s = (size_t)i0 * st[0] + (size_t)i1 * st[1] + (size_t)i2 * st[2];
                size_t d = (((size_t)i0 * (size_t)od[1] + (size_t)i1) * (size_t)od[2] + (size_t)i2) * (size_t)od[3];
                if (es == 1u) {
                    const uint8_t *x = (const uint8_t *)src + s;
                    uint8_t *y = (uint8_t *)dst + d;
                    for (i3 = 0; i3 < od[3]; ++i3) {
                        y[i3] = x[(size_t)i3 * st[3]];
                    }
                } else if (es == 2u) {
                    const uint16_t *x = (const uint16_t *)src + s;
                    uint16_t *y = (uint16_t *)dst + d;
                    for (i3 = 0; i3 < od[3]; ++i3) {
                        y[i3] = x[(size_t)i3 * st[3]];
                    }
                } else {
                    const uint32_t *x = (const uint32_t *)src + s;
                    uint32_t *y = (uint32_t *)dst + d;
                    for (i3 = 0; i3 < od[3]; ++i3) {
                        y[i3] = x[(size_t)i3 * st[3]];
                    }
                }
            }
        }
    }
}

/* The source flat index of destination flat index j: j's multi-index in od, each axis stepping st[] of the source. */
static inline size_t tgrs_permute4_src(size_t j, const int32_t od[4], const size_t st[4])
{
    size_t s = 0u;
    int a;
    for (a = 3; a >= 0; --a) {
        s += (j % (size_t)od[a]) * st[a];
        j /= (size_t)od[a];
    }
    return s;
}

static inline void tgrs_elem_move(uint8_t *data, size_t to, size_t from, size_t es)
{
    memcpy(data + to * es, data + from * es, es);
}

/* tgrs_permute4 with dst == src (a Transpose in place, docs/memory-planning.md "In-place ops"): the permutation is
 * followed cycle by cycle, each cycle once from its smallest index (found by walking it: no scratch), so every
 * element moves once. */
static inline void tgrs_permute4_in_place(void *data, const int32_t sd[4], const int32_t perm[4], size_t es)
{
    size_t ss[4], st[4], n, start;
    int32_t od[4];
    uint8_t tmp[4];
    uint8_t *a = (uint8_t *)data;
    int j;
    ss[3] = 1u;
    ss[2] = (size_t)sd[3];
    ss[1] = ss[2] * (size_t)sd[2];
    ss[0] = ss[1] * (size_t)sd[1];
    for (j = 0; j < 4; ++j) {
        od[j] = sd[perm[j]];
        st[j] = ss[perm[j]];
    }
    n = (size_t)od[0] * (size_t)od[1] * (size_t)od[2] * (size_t)od[3];
    for (start = 0u; start < n; ++start) {
        size_t k = tgrs_permute4_src(start, od, st);
        size_t at;
        if (k == start) {
            continue;
        }
        while (k > start) {
            k = tgrs_permute4_src(k, od, st);
        }
        if (k != start) {
            continue; /* its cycle holds a smaller index: moved already */
        }
        memcpy(tmp, a + start * es, es);
        at = start;
        for (;;) {
            k = tgrs_permute4_src(at, od, st);
            if (k == start) {
                memcpy(a + at * es, tmp, es);
                break;
            }
            tgrs_elem_move(a, at, k, es);
            at = k;
        }
    }
}

#endif /* TGRS_PERMUTE_H */
