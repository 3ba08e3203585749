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
 * Why no fast paths: the arenas are exact (the memory plan reserves no slack after the weight prefix), so the
 * wild-copy tricks of the reference decoder, which overshoot by up to a word, are not allowed here. Matches are
 * copied byte by byte because they may overlap their own output (offset < length repeats a pattern).
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

int tgrs_lz4_decode(const void *src, size_t src_len, void *dst, size_t dst_len)
{
    const uint8_t *ip;
    const uint8_t *iend;
    uint8_t *const ostart = (uint8_t *)dst;
    uint8_t *op;
    uint8_t *oend;

    if ((src == NULL && src_len != 0u) || (dst == NULL && dst_len != 0u)) {
        return TGRS_LZ4_ERR_ARG;
    }
    if (src_len == 0u) {
        /* Even an empty block holds one token; zero bytes is a truncated block. */
        return TGRS_LZ4_ERR_INPUT;
    }
    ip = (const uint8_t *)src;
    iend = ip + src_len;
    op = ostart;
    oend = ostart + dst_len;

    for (;;) {
        unsigned token;
        size_t lit;
        size_t mlen;
        size_t offset;
        size_t k;
        const uint8_t *match;
        int rc;

        /* ip < iend holds here: checked at the loop entry and after every match. */
        token = *ip++;

        lit = token >> 4;
        if (lit == 15u) {
            rc = tgrs_lz4_ext(&ip, iend, &lit, (size_t)(oend - op));
            if (rc != TGRS_LZ4_OK) {
                return rc;
            }
        }
        if (lit > (size_t)(iend - ip)) {
            return TGRS_LZ4_ERR_INPUT;
        }
        if (lit > (size_t)(oend - op)) {
            return TGRS_LZ4_ERR_OUTPUT;
        }
        if (lit != 0u) {
            memcpy(op, ip, lit);
        }
        ip += lit;
        op += lit;

        if (ip == iend) {
            /* Last sequence: literals only. The output must be exactly full. */
            return op == oend ? TGRS_LZ4_OK : TGRS_LZ4_ERR_SHORT;
        }

        if ((size_t)(iend - ip) < 2u) {
            return TGRS_LZ4_ERR_INPUT;
        }
        offset = (size_t)ip[0] | ((size_t)ip[1] << 8);
        ip += 2;
        if (offset == 0u || offset > (size_t)(op - ostart)) {
            return TGRS_LZ4_ERR_OFFSET;
        }

        mlen = token & 15u;
        if (mlen == 15u) {
            rc = tgrs_lz4_ext(&ip, iend, &mlen, (size_t)(oend - op));
            if (rc != TGRS_LZ4_OK) {
                return rc;
            }
        }
        mlen += TGRS_LZ4_MIN_MATCH;
        if (mlen > (size_t)(oend - op)) {
            return TGRS_LZ4_ERR_OUTPUT;
        }
        /* Byte by byte: the source may overlap the bytes being written (a repeated pattern). */
        match = op - offset;
        for (k = 0; k < mlen; ++k) {
            op[k] = match[k];
        }
        op += mlen;

        if (ip == iend) {
            /* A block never ends on a match: its last sequence holds literals only (possibly zero of them, but the
             * token must be there). */
            return TGRS_LZ4_ERR_INPUT;
        }
    }
}
