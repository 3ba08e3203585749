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

#endif /* TGRS_PERMUTE_H */
