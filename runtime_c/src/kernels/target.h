/*
 * target.h - which instruction set the int8 multiply-accumulate kernels (conv, dwconv, fc) compile their inner loops
 * for: the one place that reads the compiler's target feature macros. Kernel files never test a feature macro; they
 * call the variant this header selects (TGRS_ISA), whose inner loops live in a per-target header next to the
 * kernel (conv_dsp.h, ...). The plain C99 loops are the reference and build everywhere.
 *
 *   TGRS_ISA_MVE    Cortex-M55/M85 Helium (M-profile vector extension, integer): __ARM_FEATURE_MVE bit 0
 *   TGRS_ISA_DSP    Cortex-M4/M7/M33 DSP extension (packed 16-bit multiply-accumulate): __ARM_FEATURE_DSP
 *   TGRS_ISA_AVX2   x86-64 with AVX2 and FMA (host builds on a CPU that has them: tigris/host/build.py): __AVX2__,
 *                   __FMA__ (with AVX-VNNI and AVX-512 sub-levels: TGRS_HAVE_AVXVNNI, TGRS_HAVE_AVX512)
 *   TGRS_ISA_PLAIN  everything else, and any build with -DTGRS_FORCE_PLAIN (tests run the reference that way)
 *
 * Every variant computes the same exact integer sums and requantizes each output through requant.h, so int8 outputs
 * are identical bytes whichever is selected (float kernels of the AVX2 variant use fused multiply-adds: last bits) (tests/cortex_m/test_kernel_variants.py runs each against the host).
 */
#ifndef TGRS_TARGET_H
#define TGRS_TARGET_H

#include "tgrs_format.h"

/* Keeps a helper out of its caller where inlining it would make the caller's hot loop spill its pointers (GCC and
   Clang; elsewhere the compiler decides). */
#if defined(__GNUC__)
#define TGRS_NOINLINE __attribute__((noinline))
#else
#define TGRS_NOINLINE
#endif

#define TGRS_ISA_PLAIN 0
#define TGRS_ISA_DSP 1
#define TGRS_ISA_MVE 2
#define TGRS_ISA_AVX2 3

/* An unoptimized Arm build (-O0) runs the plain loops too: it keeps the frame pointer in r7 and every operand in
 * memory, so the hand-scheduled assembly blocks of the DSP/Helium/FPU variants, which ask for more low registers than
 * are then free, do not compile. Every -O level from -O1 (-Og, -Os included) selects the target's variant. */
#if defined(__arm__) && !defined(__OPTIMIZE__)
#define TGRS_ARM_UNOPTIMIZED 1
#else
#define TGRS_ARM_UNOPTIMIZED 0
#endif

#if defined(TGRS_FORCE_PLAIN) || defined(__ARM_BIG_ENDIAN) || TGRS_ARM_UNOPTIMIZED /* the pair orders assume little-endian loads */
#define TGRS_ISA TGRS_ISA_PLAIN
#elif defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
#define TGRS_ISA TGRS_ISA_MVE
#elif defined(__ARM_FEATURE_DSP) && __ARM_FEATURE_DSP
#define TGRS_ISA TGRS_ISA_DSP
#elif defined(__AVX2__) && defined(__FMA__) && defined(__x86_64__)
#define TGRS_ISA TGRS_ISA_AVX2
#else
#define TGRS_ISA TGRS_ISA_PLAIN
#endif

/* Every Helium core also has the DSP extension: the MVE build may use the DSP inner loops where it has no vector
 * loop of its own. */
#define TGRS_HAVE_DSP (TGRS_ISA == TGRS_ISA_DSP || TGRS_ISA == TGRS_ISA_MVE)
#define TGRS_HAVE_MVE (TGRS_ISA == TGRS_ISA_MVE)
#define TGRS_HAVE_AVX2 (TGRS_ISA == TGRS_ISA_AVX2)
/* AVX-VNNI on top (a host build on a CPU with it: tigris/host/build.py level avxvnni): the AVX2 int8 kernels then
 * fuse each 16-bit multiply-add-pairs with its accumulation (VPDPWSSD, requant_avx2.h tgrs_dot16_avx2). */
#if TGRS_HAVE_AVX2 && defined(__AVXVNNI__)
#define TGRS_HAVE_AVXVNNI 1
#else
#define TGRS_HAVE_AVXVNNI 0
#endif

/* AVX-512 F and VL on top (the host's avx512 level, which also has AVX-VNNI): the float conv GEMM takes groups of
 * four and six weight panels on 16-lane registers (conv_avx512.h); each output's sum is the AVX2 one's. */
#if TGRS_HAVE_AVX2 && defined(__AVX512F__) && defined(__AVX512VL__)
#define TGRS_HAVE_AVX512 1
#define TGRS_CONV_PANELS_F32 conv_panels_avx512
#define TGRS_CONV_MKW_F32 conv_mkw_f32_avx512
#define TGRS_CONV_MK2R_F32 conv_mk2r_f32_avx512
#else
#define TGRS_HAVE_AVX512 0
#define TGRS_CONV_PANELS_F32 conv_panels_avx2
#define TGRS_CONV_MKW_F32 conv_mkw_f32_none
#define TGRS_CONV_MK2R_F32 conv_mk2r_f32_none
#endif

/* 1 unless the build optimizes for size (-Os): kernels guard their extra speed-only paths with it, so the -Os image
 * (the int8 subset's footprint bound) keeps the compact ones. */
#if defined(__OPTIMIZE_SIZE__)
#define TGRS_SPEED_PATHS 0
#else
#define TGRS_SPEED_PATHS 1
#endif

/* The variant each kernel family runs (the functions live in the family's file and its per-target headers). */
#if TGRS_ISA == TGRS_ISA_MVE
#define TGRS_CONV_S8 conv_s8_mve
#define TGRS_DW_TAPS_S8 dw_taps_s8_mve
#define TGRS_DW_OUT_S8 dw_out_s8_mve
#define TGRS_DW_FUSED_S8 dw_fused_s8_mve
#elif TGRS_ISA == TGRS_ISA_AVX2
#if TGRS_HAVE_AVXVNNI /* VPDPBUSD on biased activations, pixels in lanes (conv_vnni.h) */
#define TGRS_CONV_S8 conv_s8_vnni
#else /* the plain loops' driver (conv.c conv_s8_blocks) with the AVX2 widening and channel step (conv_avx2.h) */
#define TGRS_CONV_S8 conv_s8_blocks
#define TGRS_CONV_ROWS_S16 conv_rows_avx2
#define TGRS_CONV_MODE_S8 conv_mode_s8_avx2
#define TGRS_CONV_CH_S8 conv_ch_s8_avx2
#endif
#define TGRS_CONV_F32 conv_f32_avx2
#define TGRS_DW_F32 dw_f32_avx2
#define TGRS_FC_DOT_S8 fc_dot_s8_avx2
#define TGRS_DW_TAPS_S8 dw_taps_s8_avx2
#define TGRS_DW_OUT_S8 dw_out_s8_avx2
#define TGRS_DW_FUSED_S8 dw_fused_s8_avx2
#elif TGRS_ISA == TGRS_ISA_DSP
#define TGRS_CONV_S8 conv_s8_dsp
#define TGRS_DW_TAPS_S8 dw_taps_s8_dsp
#define TGRS_DW_OUT_S8 dw_out_s8_plain
#if defined(__OPTIMIZE_SIZE__) /* -Os keeps the compact tap loop: the fused path is 1.1 KiB more code */
#define TGRS_DW_FUSED_S8 dw_fused_s8_none
#else
#define TGRS_DW_FUSED_S8 dw_fused_s8_dsp
#endif
#else
#define TGRS_CONV_S8 conv_s8_blocks
#define TGRS_CONV_ROWS_S16 conv_rows_s16
#define TGRS_CONV_MODE_S8 conv_mode_s8_plain
#define TGRS_CONV_CH_S8 conv_ch_s8_plain
#define TGRS_DW_TAPS_S8 dw_taps_s8_plain
#define TGRS_DW_OUT_S8 dw_out_s8_plain
#define TGRS_DW_FUSED_S8 dw_fused_s8_none
#endif

/* The int8 average pool's per-tap channel sums (pool.c). */
#if TGRS_ISA == TGRS_ISA_MVE
#define TGRS_POOL_ADD_S8 pool_add_s8_mve
#else
#define TGRS_POOL_ADD_S8 pool_add_s8_plain
#endif

/*
 * The float32 multiply-accumulate kernels (conv, dwconv, fc) have their own selection, TGRS_FISA, since the float
 * unit is not the integer extension (a Cortex-M4 may lack the FPU; an M55 may have integer-only Helium):
 *
 *   TGRS_FISA_MVEF  Helium with float32 lanes (__ARM_FEATURE_MVE bit 1: Cortex-M55/M85): vector FMA blocks
 *                   (conv_mvef.h, dwconv_mvef.h, fc_mvef.h)
 *   TGRS_FISA_FPU   an Arm single-precision FPU without MVE-F (__ARM_FP bit 2: Cortex-M4F, M7, M33): register blocks
 *                   in s0-s31 with VMLA, the unfused multiply-accumulate, so every output is the plain loop's bits
 *                   (conv_fpu.h, dwconv_fpu.h, fc_fpu.h)
 *   TGRS_FISA_AVX2  the host's AVX2 build (TGRS_ISA_AVX2; conv_avx2.h, dwconv_avx2.h)
 *   TGRS_FISA_PLAIN everything else, and -DTGRS_FORCE_PLAIN
 */
#define TGRS_FISA_PLAIN 0
#define TGRS_FISA_FPU 1
#define TGRS_FISA_MVEF 2
#define TGRS_FISA_AVX2 3

#if defined(TGRS_FORCE_PLAIN) || TGRS_ARM_UNOPTIMIZED
#define TGRS_FISA TGRS_FISA_PLAIN
#elif TGRS_ISA == TGRS_ISA_AVX2
#define TGRS_FISA TGRS_FISA_AVX2
#elif defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 2)
#define TGRS_FISA TGRS_FISA_MVEF
#elif defined(__arm__) && defined(__ARM_FP) && (__ARM_FP & 4)
#define TGRS_FISA TGRS_FISA_FPU
#else
#define TGRS_FISA TGRS_FISA_PLAIN
#endif

#if TGRS_FISA == TGRS_FISA_MVEF
#define TGRS_CONV_F32 conv_f32_mvef
#define TGRS_DW_F32 dw_f32_tab /* dwconv.c's tap tables, blocks of dwconv_mvef.h */
#define TGRS_DW_BLK_F32 dw_blk_f32_mvef
#define TGRS_FC_LANES_F32 fc_lanes_f32_mvef
#elif TGRS_FISA == TGRS_FISA_FPU
#define TGRS_CONV_F32 conv_f32_fpu
#define TGRS_DW_F32 dw_f32_tab /* dwconv.c's tap tables, blocks of dwconv_fpu.h */
#define TGRS_DW_BLK_F32 dw_blk_f32_fpu
#define TGRS_FC_LANES_F32 fc_lanes_f32_fpu
#elif TGRS_FISA == TGRS_FISA_PLAIN
#define TGRS_CONV_F32 conv_f32
#define TGRS_DW_F32 dw_f32
#endif
#ifndef TGRS_FC_LANES_F32
#define TGRS_FC_LANES_F32 fc_lanes_f32 /* fc.c */
#endif
#ifndef TGRS_FC_DOT_S8
#define TGRS_FC_DOT_S8 fc_dot_s8
#endif

/*
 * Weight arrangements (docs/format.md "Weight arrangements"): the target whose arranged weights this build reads
 * besides the plain layout is the core its instruction set is (TGRS_ISA_DSP: cortex-m4, TGRS_ISA_MVE: cortex-m55,
 * anything else: generic only). A build with -DTGRS_ANY_TARGET=1 (the host build, tigris/host/build.py, and the
 * fuzzer) reads every target's arrangements through plain C readers, so `tigris verify --target` runs a packed plan
 * on the host; a firmware build reads only its own, and the loader refuses the others with TGRS_ERR_TARGET
 * (tgrs_reads_target, kcheck.c).
 */
#if TGRS_ISA == TGRS_ISA_DSP
#define TGRS_RUNTIME_TARGET TGRS_TARGET_CORTEX_M4
#elif TGRS_ISA == TGRS_ISA_MVE
#define TGRS_RUNTIME_TARGET TGRS_TARGET_CORTEX_M55
#else
#define TGRS_RUNTIME_TARGET TGRS_TARGET_GENERIC
#endif
#ifndef TGRS_ANY_TARGET
#define TGRS_ANY_TARGET 0
#endif
#define TGRS_READS_TARGET(t) (TGRS_ANY_TARGET || (t) == TGRS_TARGET_GENERIC || (t) == TGRS_RUNTIME_TARGET)
/* fc's FC_ROWS4 weights (four rows interleaved per four features): the DSP loop reads them on a Cortex-M4 build,
 * the plain reader on a host build; other builds compile no reader (the loader refused the op). */
#define TGRS_READS_FC_ROWS4 TGRS_READS_TARGET(TGRS_TARGET_CORTEX_M4)
#if TGRS_ISA == TGRS_ISA_DSP
#define TGRS_FC_DOT4R_S8 fc_dot4r_s8_dsp
#else
#define TGRS_FC_DOT4R_S8 fc_dot4r_s8_plain
#endif

/* fc's int8 dot products of one input row with two weight rows (fc.c, fc_dsp.h, fc_mve.h); elsewhere one row at a
 * time through TGRS_FC_DOT_S8 (the plain loop, or the host's AVX2 one). */
#if TGRS_ISA == TGRS_ISA_MVE
#define TGRS_FC_DOT2_S8 fc_dot2_s8_mve
#elif TGRS_ISA == TGRS_ISA_DSP
#define TGRS_FC_DOT2_S8 fc_dot2_s8_dsp
#else
#define TGRS_FC_DOT2_S8 fc_dot2_s8_plain
#endif

/* Element-wise loops with a host vector form (quant_avx2.h, binary_avx2.h): each returns how many leading elements
 * it did, and the family's scalar loop does the rest; the _none forms do nothing. */
#if TGRS_HAVE_AVX2
#define TGRS_QUANT_S8 quant_s8_avx2
#define TGRS_BIN_S8 bin_s8_avx2
#define TGRS_BIN_F32 bin_f32_avx2
#else
#define TGRS_QUANT_S8 quant_s8_none
#define TGRS_BIN_S8 bin_span_none
#define TGRS_BIN_F32 bin_span_none
#endif

#if TGRS_HAVE_DSP
#include <arm_acle.h>
#endif
#if TGRS_HAVE_MVE || TGRS_FISA == TGRS_FISA_MVEF
#include <arm_mve.h>
#endif
#if TGRS_HAVE_AVX2
#include <immintrin.h>
#endif

#endif /* TGRS_TARGET_H */
