/*
 * board.h - what the example firmware needs from the board: a cycle clock, stack measurement and an exit path.
 *
 * Kept apart from the TiGrIS runtime on purpose: the runtime needs none of it (it takes its arenas from the caller
 * and returns status codes), so a real product replaces this file and startup.c with its vendor's CMSIS startup.
 */
#ifndef BOARD_H
#define BOARD_H

#include <stdint.h>

#ifndef BOARD_CPU_HZ
#define BOARD_CPU_HZ 25000000u /* MPS2 AN386 SYSCLK; the Makefile passes the value of each board */
#endif

/* Exit codes of the example programs (also documented in docs/deploying.md). */
#define BOARD_EXIT_OK 0
#define BOARD_EXIT_USAGE 2
#define BOARD_EXIT_FAULT 3
#define BOARD_EXIT_IO 4
#define BOARD_EXIT_RUNTIME 5

/* Starts SysTick on the core clock with the wrap interrupt on; board_cycles() then counts core clock ticks. */
void board_clock_start(void);
uint64_t board_cycles(void);

/* Bytes of the main stack ever used since reset (the startup code paints the stack with a known pattern). */
uint32_t board_stack_peak(void);
uint32_t board_stack_size(void);

/* Rows on the semihosting console: "name value\n". */
void board_report(const char *name, uint64_t value);

#endif /* BOARD_H */
