/*
 * tgrs_lz4.h - private: the runtime's LZ4 block decoder.
 *
 * The plan compresses each unit's weights as one LZ4 *block* (no frame, no stored size: the plan records both the
 * compressed and the decompressed length). The decoder is the only code that interprets those bytes, so it trusts
 * nothing: every length is checked against what is left of the input and of the output before it is used.
 */
#ifndef TGRS_LZ4_H
#define TGRS_LZ4_H

#include <stddef.h>
#include <stdint.h>

/* Result codes of tgrs_lz4_decode (the loader maps any failure to its own plan error code). */
#define TGRS_LZ4_OK 0
#define TGRS_LZ4_ERR_INPUT (-1)   /* a token, length byte, literal run or offset runs past the end of the input */
#define TGRS_LZ4_ERR_OUTPUT (-2)  /* a literal run or match would write past the end of the output */
#define TGRS_LZ4_ERR_OFFSET (-3)  /* match offset 0, or reaching before the start of the output */
#define TGRS_LZ4_ERR_SHORT (-4)   /* the input ended before the output was filled */
#define TGRS_LZ4_ERR_ARG (-5)     /* NULL source, or NULL output with a nonzero length */

/*
 * Decode the LZ4 block src[0, src_len) into dst[0, dst_len). Succeeds only if the block decodes to exactly dst_len
 * bytes and consumes exactly src_len bytes. Never reads or writes outside the two buffers, whatever the input.
 * On failure dst may hold partially decoded bytes.
 */
int tgrs_lz4_decode(const void *src, size_t src_len, void *dst, size_t dst_len);

/* Check that src decodes to exactly dst_len bytes, consuming all of src, without writing anything. */
int tgrs_lz4_validate(const void *src, size_t src_len, size_t dst_len);

#endif /* TGRS_LZ4_H */
