/*
 * tgrs_shuffle.h - private: undo the byte-plane shuffle of a unit's weight image (docs/format.md, UNIT flag SHUFFLE).
 *
 * The writer stores a float unit's LZ4 block over the shuffled image because LZ4 only finds the redundancy of float32
 * weights (shared exponent bytes) once equal bytes sit next to each other. The runtime decodes the block into the
 * fast prefix as usual and then restores the real layout in place, chunk by chunk, through one TGRS_SHUFFLE_CHUNK
 * (256-byte) buffer on the stack: no arena memory beyond the prefix the plan already reserves.
 */
#ifndef TGRS_SHUFFLE_H
#define TGRS_SHUFFLE_H

#include <stddef.h>
#include <stdint.h>

/*
 * In place over buf[0, len): every whole TGRS_SHUFFLE_CHUNK-byte chunk goes from planes (byte p * CHUNK/4 + i) back
 * to interleaved (byte 4 * i + p); a tail shorter than a chunk is left as it is. Touches no byte outside
 * buf[0, len). Returns 0, or -1 for a NULL buf with len > 0. Stack: TGRS_SHUFFLE_CHUNK bytes plus a few words.
 */
int tgrs_unshuffle(uint8_t *buf, size_t len);

#endif /* TGRS_SHUFFLE_H */
