/*
 * semihost.c - Arm semihosting calls (see semihost.h for why we do not use newlib's stdio).
 *
 * Every call passes an operation number in r0 and a pointer to an argument block in r1, executes `bkpt 0xAB` (the
 * Thumb encoding used by M-profile cores) and gets the result back in r0.
 */
#include "semihost.h"

#include <string.h>

enum {
    SYS_OPEN = 0x01,
    SYS_CLOSE = 0x02,
    SYS_WRITE0 = 0x04,
    SYS_WRITE = 0x05,
    SYS_READ = 0x06,
    SYS_FLEN = 0x0C,
    SYS_GET_CMDLINE = 0x15,
    SYS_EXIT = 0x18,
    SYS_EXIT_EXTENDED = 0x20
};

/* ADP_Stopped_ApplicationExit: the reason code for a normal program exit. */
#define ADP_STOPPED_APPLICATION_EXIT 0x20026u

static int sh_call(int op, void *arg)
{
    register int r0 __asm__("r0") = op;
    register void *r1 __asm__("r1") = arg;
    /* The "memory" clobber matters: the host reads and writes the argument block and the buffers it points to. */
    __asm__ volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}

int sh_open(const char *path, int mode)
{
    uint32_t block[3];
    block[0] = (uint32_t)(uintptr_t)path;
    block[1] = (uint32_t)mode;
    block[2] = (uint32_t)strlen(path);
    return sh_call(SYS_OPEN, block);
}

int sh_close(int handle)
{
    uint32_t block[1];
    block[0] = (uint32_t)handle;
    return sh_call(SYS_CLOSE, block);
}

int sh_read_all(int handle, void *buf, size_t n)
{
    uint32_t block[3];
    block[0] = (uint32_t)handle;
    block[1] = (uint32_t)(uintptr_t)buf;
    block[2] = (uint32_t)n;
    /* SYS_READ returns the number of bytes NOT read: 0 means the buffer was filled completely. */
    return sh_call(SYS_READ, block) == 0 ? 0 : -1;
}

int sh_write_all(int handle, const void *buf, size_t n)
{
    uint32_t block[3];
    block[0] = (uint32_t)handle;
    block[1] = (uint32_t)(uintptr_t)buf;
    block[2] = (uint32_t)n;
    /* SYS_WRITE returns the number of bytes NOT written. */
    return sh_call(SYS_WRITE, block) == 0 ? 0 : -1;
}

long sh_flen(int handle)
{
    uint32_t block[1];
    block[0] = (uint32_t)handle;
    return (long)sh_call(SYS_FLEN, block);
}

int sh_cmdline(char *buf, size_t size)
{
    uint32_t block[2];
    block[0] = (uint32_t)(uintptr_t)buf;
    block[1] = (uint32_t)size;
    if (size == 0) {
        return -1;
    }
    buf[0] = '\0';
    return sh_call(SYS_GET_CMDLINE, block) == 0 ? 0 : -1;
}

void sh_puts(const char *s)
{
    sh_call(SYS_WRITE0, (void *)(uintptr_t)s);
}

void sh_put_u64(uint64_t v)
{
    char buf[21];
    int i = 20;
    buf[i] = '\0';
    do {
        buf[--i] = (char)('0' + (int)(v % 10u));
        v /= 10u;
    } while (v != 0u && i > 0);
    sh_puts(&buf[i]);
}

void sh_put_i32(int32_t v)
{
    if (v < 0) {
        sh_puts("-");
        /* Negate in 64 bits so INT32_MIN does not overflow. */
        sh_put_u64((uint64_t)(-(int64_t)v));
    } else {
        sh_put_u64((uint64_t)v);
    }
}

void sh_put_hex(uint32_t v)
{
    static const char digits[] = "0123456789abcdef";
    char buf[11];
    int i;
    buf[0] = '0';
    buf[1] = 'x';
    for (i = 0; i < 8; i++) {
        buf[2 + i] = digits[(v >> (28 - 4 * i)) & 0xFu];
    }
    buf[10] = '\0';
    sh_puts(buf);
}

void sh_exit(int code)
{
    uint32_t block[2];
    block[0] = ADP_STOPPED_APPLICATION_EXIT;
    block[1] = (uint32_t)code;
    sh_call(SYS_EXIT_EXTENDED, block);
    /* A host without SYS_EXIT_EXTENDED: fall back to the plain exit (loses the exact code but still stops). */
    sh_call(SYS_EXIT, (void *)(uintptr_t)(code == 0 ? ADP_STOPPED_APPLICATION_EXIT : 0x20024u));
    for (;;) {
    }
}
