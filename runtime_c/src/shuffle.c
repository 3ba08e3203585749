/*
 * shuffle.c - the inverse byte-plane shuffle of LZ4-compressed unit weights (see tgrs_shuffle.h).
 */
#include <string.h>

#include "tgrs_format.h"
#include "tgrs_shuffle.h"

#define TGRS_PLANE (TGRS_SHUFFLE_CHUNK / 4u)

int tgrs_unshuffle(uint8_t *buf, size_t len)
{
    uint8_t tmp[TGRS_SHUFFLE_CHUNK];
    size_t off;
    if (buf == NULL) {
        return len == 0u ? 0 : -1;
    }
    /* `len - off >= CHUNK` instead of `off + CHUNK <= len`: cannot overflow whatever len is. */
    for (off = 0; len - off >= (size_t)TGRS_SHUFFLE_CHUNK; off += TGRS_SHUFFLE_CHUNK) {
        uint8_t *c = buf + off;
        size_t i;
        memcpy(tmp, c, sizeof tmp);
        for (i = 0; i < TGRS_PLANE; ++i) {
            c[4u * i] = tmp[i];
            c[4u * i + 1u] = tmp[TGRS_PLANE + i];
            c[4u * i + 2u] = tmp[2u * TGRS_PLANE + i];
            c[4u * i + 3u] = tmp[3u * TGRS_PLANE + i];
        }
    }
    return 0;
}
