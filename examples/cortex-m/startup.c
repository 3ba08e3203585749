/*
 * startup.c - a minimal Cortex-M startup for the QEMU MPS2/MPS3 boards (what CMSIS's startup_<device>.c and
 * system_<device>.c do on a real part, reduced to what this example needs):
 *
 *   1. the vector table: initial stack pointer, reset, the fault handlers and SysTick;
 *   2. reset: enable the FPU (and MVE on the M55) before any compiled code can use a floating-point register,
 *      copy .data from its load address, zero .bss, paint the stack so its peak use can be measured;
 *   3. hand the semihosting command line to main(argc, argv) and exit through semihosting with main's return value;
 *   4. faults print the registers the core stacked plus the fault status registers and exit with BOARD_EXIT_FAULT,
 *      so a broken build fails a test loudly instead of hanging until the timeout.
 */
#include <stdint.h>
#include <string.h>

#include "board.h"
#include "semihost.h"

/* Linker script symbols (boards/<board>.ld). */
extern uint32_t _sidata[], _sdata[], _edata[], _sbss[], _ebss[], _sstack[], _estack[];

int main(int argc, char **argv);

#define STACK_PAINT 0xC5C5C5C5u
#define MAX_ARGS 32
#define CMDLINE_BYTES 1024

/* System control registers (ARMv7-M / ARMv8-M architecture manuals, System Control Space). */
#define SCB_CPACR (*(volatile uint32_t *)0xE000ED88u)
#define SCB_CFSR (*(volatile uint32_t *)0xE000ED28u)
#define SCB_HFSR (*(volatile uint32_t *)0xE000ED2Cu)
#define SCB_MMFAR (*(volatile uint32_t *)0xE000ED34u)
#define SCB_BFAR (*(volatile uint32_t *)0xE000ED38u)
#define SYST_CSR (*(volatile uint32_t *)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t *)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018u)

#define SYST_RELOAD 0x00FFFFFFu

/*
 * SysTick wrap count. This is the one mutable global in the example: the SysTick interrupt has no other place to
 * leave its count. The runtime itself has none.
 */
static volatile uint32_t systick_wraps;

void Reset_Handler(void);
void Default_Handler(void);
void HardFault_Handler(void);
void SysTick_Handler(void);
void board_fault(const uint32_t *frame, uint32_t exc_return);

/* Not static: only the assembly in Reset_Handler calls it. */
void board_start(void) __attribute__((noinline, noreturn, used));

/* The vector table: SP, 15 system exceptions; no device interrupts are used. */
__attribute__((section(".isr_vector"), used)) static void (*const vectors[16])(void) = {
    (void (*)(void))(uintptr_t)_estack,
    Reset_Handler,
    HardFault_Handler, /* NMI */
    HardFault_Handler, /* HardFault */
    HardFault_Handler, /* MemManage */
    HardFault_Handler, /* BusFault */
    HardFault_Handler, /* UsageFault */
    HardFault_Handler, /* SecureFault (ARMv8-M) */
    0, 0, 0,
    Default_Handler,   /* SVCall */
    Default_Handler,   /* DebugMonitor */
    0,
    Default_Handler,   /* PendSV */
    SysTick_Handler,
};

__attribute__((naked, noreturn)) void Reset_Handler(void)
{
    /*
     * CPACR: full access to CP10 and CP11 (the FPU, and the M55's MVE which shares them). Done in assembly before
     * any C runs, because the hard-float ABI lets the compiler use s-registers anywhere, even in a copy loop.
     */
    __asm__ volatile(
        "ldr r0, =0xE000ED88\n"
        "ldr r1, [r0]\n"
        "orr r1, r1, #(0xF << 20)\n"
        "str r1, [r0]\n"
        "dsb\n"
        "isb\n"
        "b board_start\n");
}

void board_start(void)
{
    uint32_t *p;
    uint32_t *sp_now;
    char cmdline[CMDLINE_BYTES];
    char *argv[MAX_ARGS + 1];
    int argc = 0;
    char *c;

    memcpy(_sdata, _sidata, (size_t)((uintptr_t)_edata - (uintptr_t)_sdata));
    memset(_sbss, 0, (size_t)((uintptr_t)_ebss - (uintptr_t)_sbss));

    /* Paint the stack below the current frame (64 bytes of margin for this function's own pushes). */
    __asm__ volatile("mov %0, sp" : "=r"(sp_now));
    for (p = _sstack; p < sp_now - 16; p++) {
        *p = STACK_PAINT;
    }

    /* argv from the semihosting command line: space-separated words, argv[0] is the program name. */
    if (sh_cmdline(cmdline, sizeof cmdline) != 0) {
        cmdline[0] = '\0';
    }
    c = cmdline;
    while (*c != '\0' && argc < MAX_ARGS) {
        while (*c == ' ') {
            *c++ = '\0';
        }
        if (*c == '\0') {
            break;
        }
        argv[argc++] = c;
        while (*c != '\0' && *c != ' ') {
            c++;
        }
    }
    argv[argc] = 0;
    if (*c != '\0') {
        /* More words than MAX_ARGS: refuse rather than silently running with default file names. */
        sh_puts("error: too many arguments\n");
        sh_exit(BOARD_EXIT_USAGE);
    }

    sh_exit(main(argc, argv));
}

void Default_Handler(void)
{
    sh_puts("fault: unexpected exception\n");
    sh_exit(BOARD_EXIT_FAULT);
}

/* Pick the stack the core pushed the exception frame on (EXC_RETURN bit 2) and hand both to board_fault(). */
__attribute__((naked)) void HardFault_Handler(void)
{
    __asm__ volatile(
        "tst lr, #4\n"
        "ite eq\n"
        "mrseq r0, msp\n"
        "mrsne r0, psp\n"
        "mov r1, lr\n"
        "b board_fault\n");
}

void board_fault(const uint32_t *frame, uint32_t exc_return)
{
    static const char *const names[8] = {"r0", "r1", "r2", "r3", "r12", "lr", "pc", "xpsr"};
    uint32_t ipsr;
    int i;

    __asm__ volatile("mrs %0, ipsr" : "=r"(ipsr));
    sh_puts("fault: exception ");
    sh_put_u64(ipsr & 0x1FFu);
    sh_puts("\n");
    for (i = 0; i < 8; i++) {
        sh_puts("  ");
        sh_puts(names[i]);
        sh_puts(" = ");
        sh_put_hex(frame[i]);
        sh_puts("\n");
    }
    sh_puts("  exc_return = ");
    sh_put_hex(exc_return);
    sh_puts("\n  cfsr = ");
    sh_put_hex(SCB_CFSR);
    sh_puts("\n  hfsr = ");
    sh_put_hex(SCB_HFSR);
    sh_puts("\n  mmfar = ");
    sh_put_hex(SCB_MMFAR);
    sh_puts("\n  bfar = ");
    sh_put_hex(SCB_BFAR);
    sh_puts("\n");
    sh_exit(BOARD_EXIT_FAULT);
}

void SysTick_Handler(void)
{
    systick_wraps = systick_wraps + 1u;
}

void board_clock_start(void)
{
    SYST_CSR = 0;
    systick_wraps = 0;
    SYST_RVR = SYST_RELOAD;
    SYST_CVR = 0;
    SYST_CSR = 0x7u; /* ENABLE | TICKINT | CLKSOURCE = core clock */
    /* CVR reads 0 until the first tick loads RVR; wait for that so the count starts at a reload boundary. */
    while (SYST_CVR == 0u) {
    }
    systick_wraps = 0;
}

uint64_t board_cycles(void)
{
    uint32_t wraps;
    uint32_t cvr;
    /* Re-read when a wrap lands between the two reads, so count and counter belong together. */
    do {
        wraps = systick_wraps;
        cvr = SYST_CVR;
    } while (wraps != systick_wraps);
    return (uint64_t)wraps * (SYST_RELOAD + 1u) + (SYST_RELOAD - cvr);
}

uint32_t board_stack_peak(void)
{
    const uint32_t *p = _sstack;
    while (p < _estack && *p == STACK_PAINT) {
        p++;
    }
    return (uint32_t)((uintptr_t)_estack - (uintptr_t)p);
}

uint32_t board_stack_size(void)
{
    return (uint32_t)((uintptr_t)_estack - (uintptr_t)_sstack);
}

void board_report(const char *name, uint64_t value)
{
    sh_puts(name);
    sh_puts(" ");
    sh_put_u64(value);
    sh_puts("\n");
}
