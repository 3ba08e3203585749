/*
 * lz4.c - bounds-checked LZ4 block decoder.
 *
 * Block format (as written by the lz4 reference compressor in block mode): a sequence of
 *   token (1 byte: high nibble = literal count, low nibble = match length - 4)
 *   [literal count extension: bytes of 255 ... then one byte < 255, each added, when the nibble is 15]
 *   literals
 *   offset (2 bytes, little endian; distance back from the current output position)
 *   [match length extension, same scheme, when the nibble is 15]
 * The last sequence stops after its literals: the block ends exactly where the input ends.
 *
 * Why no wild copies: the arenas are exact (the memory plan reserves no slack after the weight prefix), so the
 * wild-copy tricks of the reference decoder, which overshoot by up to a word, are not allowed here. A match that
 * overlaps its own output (offset < length repeats a pattern) is copied byte by byte; a disjoint one with memcpy.
 */
#include "tgrs_lz4.h"

#include <string.h>

#define TGRS_LZ4_MIN_MATCH 4u

/*
 * Read a length extension starting at *ip: add bytes while they are 255, then the final byte. `limit` bounds the
 * result (the bytes left in the output); exceeding it is reported as soon as it happens, which also keeps the sum
 * from overflowing size_t however many 255 bytes a hostile block holds.
 */
static int tgrs_lz4_ext(const uint8_t **ip, const uint8_t *iend, size_t *len, size_t limit)
{
    const uint8_t *p = *ip;
    size_t n = *len;
    for (;;) {
        uint8_t b;
        if (p >= iend) {
            return TGRS_LZ4_ERR_INPUT;
        }
        b = *p++;
        n += b;
        if (n > limit) {
            return TGRS_LZ4_ERR_OUTPUT;
        }
        if (b != 255u) {
            break;
        }
    }
    *ip = p;
    *len = n;
    return TGRS_LZ4_OK;
}

/*
 * The decoder proper, on positions rather than pointers so the same code can run without an output buffer
 * (dst == NULL: validation only, nothing is written; the loader uses it to prove a block good before any run).
 */
static int tgrs_lz4_run(const uint8_t *in, size_t in_len, uint8_t *out, size_t out_len)
{
    const uint8_t *ip = in;
    const uint8_t *const iend = in + in_len;
    size_t o = 0; /* bytes produced so far */

    if (in_len == 0u) {
        /* Even an empty block holds one token; zero bytes is a truncated block. */
        return TGRS_LZ4_ERR_INPUT;
    }
    for (;;) {
        unsigned token;
        size_t lit;
        size_t mlen;
        size_t offset;
        int rc;

        /* ip < iend holds here: checked before the loop and after every match. */
        token = *ip++;

        lit = token >> 4;
        if (lit == 15u) {
            rc = tgrs_lz4_ext(&ip, iend, &lit, out_len - o);
            if (rc != TGRS_LZ4_OK) {
                return rc;
            }
        }
        if (lit > (size_t)(iend - ip)) {
            return TGRS_LZ4_ERR_INPUT;
        }
        if (lit > out_len - o) {
            return TGRS_LZ4_ERR_OUTPUT;
        }
        if (out != NULL && lit != 0u) {
            memcpy(out + o, ip, lit);
        }
        ip += lit;
        o += lit;

        if (ip == iend) {
            /* Last sequence: literals only. The output must be exactly full. */
            return o == out_len ? TGRS_LZ4_OK : TGRS_LZ4_ERR_SHORT;
        }

        if ((size_t)(iend - ip) < 2u) {
            return TGRS_LZ4_ERR_INPUT;
        }
        offset = (size_t)ip[0] | ((size_t)ip[1] << 8);
        ip += 2;
        if (offset == 0u || offset > o) {
            return TGRS_LZ4_ERR_OFFSET;
        }

        mlen = token & 15u;
        if (mlen == 15u) {
            rc = tgrs_lz4_ext(&ip, iend, &mlen, out_len - o);
            if (rc != TGRS_LZ4_OK) {
                return rc;
            }
        }
        mlen += TGRS_LZ4_MIN_MATCH;
        if (mlen > out_len - o) {
            return TGRS_LZ4_ERR_OUTPUT;
        }
        if (out != NULL) {
            const uint8_t *match = out + (o - offset);
            uint8_t *op = out + o;
            if (offset >= mlen) {
                memcpy(op, match, mlen); /* disjoint: [o - offset, o - offset + mlen) ends at or before o */
            } else {
                /* Overlapping (a repeated pattern): byte by byte, each byte may be one this match just wrote. */
                size_t k;
                for (k = 0; k < mlen; ++k) {
                    op[k] = match[k];
                }
            }
        }
        o += mlen;

        if (ip == iend) {
            /* A block never ends on a match: its last sequence holds literals only (possibly none, but the token
             * must be there). */
            return TGRS_LZ4_ERR_INPUT;
        }
    }
}

int tgrs_lz4_decode(const void *src, size_t src_len, void *dst, size_t dst_len)
{
    if (src == NULL || (dst == NULL && dst_len != 0u)) {
        return TGRS_LZ4_ERR_ARG;
    }
    if (dst == NULL) {
        /* dst_len == 0: nothing can be written, validation covers it exactly. */
        return tgrs_lz4_run((const uint8_t *)src, src_len, NULL, 0u);
    }
    return tgrs_lz4_run((const uint8_t *)src, src_len, (uint8_t *)dst, dst_len);
}

int tgrs_lz4_validate(const void *src, size_t src_len, size_t dst_len)
{
    if (src == NULL) {
        return TGRS_LZ4_ERR_ARG;
    }
    return tgrs_lz4_run((const uint8_t *)src, src_len, NULL, dst_len);
}
