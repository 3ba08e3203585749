/*
 * vec.h - whether the int8 dot products use their fixed-size int16 chunks (TGRS_VECTOR_CHUNKS 1) or only their plain
 * loops (0). The result is the same either way: the sums are exact integers.
 *
 * Why: GCC turns a fixed-length int16 dot product into vector multiply-add-pairs on x86 (SSE2 pmaddwd) and Arm NEON,
 * and the chunks make conv and fc several times faster there. Elsewhere the chunks only copy widened operands through
 * the stack: measured under QEMU with GCC 12 -O2, the plain loops take 15-63% fewer instructions on the Cortex-M4 and
 * fewer still on the Cortex-M55, whose Helium unit GCC 12 does not use for them (docs/benchmarks.md, mcu_cost). The
 * choice is made here, from what the compiler targets, and nowhere else; the kernels test it in a loop condition, so
 * the unused form compiles away.
 */
#ifndef TGRS_VEC_H
#define TGRS_VEC_H

#if defined(__SSE2__) || defined(__ARM_NEON)
#define TGRS_VECTOR_CHUNKS 1
#else
#define TGRS_VECTOR_CHUNKS 0
#endif

#endif /* TGRS_VEC_H */
