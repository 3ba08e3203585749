/*
 * hello.c - proves the board support before any model is involved: semihosting console, argv, file round trip
 * (copies argv[1] to argv[2] when given), the cycle clock, stack painting, FPU use, and the fault path ("fault").
 */
#include <string.h>

#include "board.h"
#include "semihost.h"

static int copy_file(const char *src, const char *dst)
{
    unsigned char buf[256];
    int in = sh_open(src, SH_MODE_RB);
    int out;
    long n;
    if (in < 0) {
        return -1;
    }
    n = sh_flen(in);
    out = sh_open(dst, SH_MODE_WB);
    if (n < 0 || out < 0 || n > (long)sizeof buf || sh_read_all(in, buf, (size_t)n) != 0 ||
        sh_write_all(out, buf, (size_t)n) != 0) {
        return -1;
    }
    sh_close(in);
    sh_close(out);
    return 0;
}

/* Counted loop of a known length: 2 instructions per iteration (subs + bne), used to calibrate the cycle clock. */
static void spin(uint32_t n)
{
    __asm__ volatile(
        "1: subs %0, %0, #1\n"
        "bne 1b\n"
        : "+r"(n)
        :
        : "cc");
}

int main(int argc, char **argv)
{
    volatile float x = 1.5f;
    uint64_t t0;
    uint64_t t1;

    sh_puts("hello from the guest\n");
    if (argc >= 2 && strcmp(argv[1], "fault") == 0) {
        /* Read from an unmapped address: must end in the fault handler with BOARD_EXIT_FAULT. */
        return (int)*(volatile uint32_t *)0xF0000000u;
    }
    board_clock_start();
    t0 = board_cycles();
    spin(1000000u);
    t1 = board_cycles();
    board_report("spin_ticks", t1 - t0);
    board_report("cpu_hz", BOARD_CPU_HZ);
    board_report("fpu", (uint64_t)(x * 4.0f)); /* 6 when the FPU works */
    board_report("stack_peak", board_stack_peak());
    if (argc >= 3 && copy_file(argv[1], argv[2]) != 0) {
        sh_puts("error: copy failed\n");
        return BOARD_EXIT_IO;
    }
    return argc >= 4 ? BOARD_EXIT_USAGE : BOARD_EXIT_OK;
}
