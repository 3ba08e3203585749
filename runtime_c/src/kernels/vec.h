/*
 * vec.h - whether the int8 dot products use their fixed-size int16 chunks (TGRS_VECTOR_CHUNKS 1) or only their plain
 * loops (0). The result is the same either way: the sums are exact integers.
 *
 * Why: GCC turns a fixed-length int16 dot product into vector multiply-add-pairs (x86 SSE2 pmaddwd, Arm NEON, Arm
 * Helium) and the chunks make conv and fc several times faster there. A scalar core (Cortex-M4, M33, RISC-V without
 * V) has nothing to map them to: the chunks only copy widened operands through the stack (about 2x the instructions
 * of the plain loop on the M4) and add code. The choice is made here, from what the compiler targets, and nowhere
 * else; the kernels test it in a loop condition, so the unused form compiles away.
 */
#ifndef TGRS_VEC_H
#define TGRS_VEC_H

#if defined(__SSE2__) || defined(__ARM_NEON) || defined(__ARM_FEATURE_MVE) || defined(__riscv_vector)
#define TGRS_VECTOR_CHUNKS 1
#else
#define TGRS_VECTOR_CHUNKS 0
#endif

#endif /* TGRS_VEC_H */
