/*
 * semihost.h - the few Arm semihosting calls the example firmware needs.
 *
 * Semihosting turns a `bkpt 0xAB` into a request to the debugger or emulator (QEMU with -semihosting). We call it
 * directly instead of going through newlib's stdio: newlib-nano's FILE layer allocates its buffers with malloc, and
 * the point of this firmware is to show that nothing in the image allocates (the link map must not contain malloc).
 */
#ifndef BOARD_SEMIHOST_H
#define BOARD_SEMIHOST_H

#include <stddef.h>
#include <stdint.h>

/* Open modes of SYS_OPEN (indices into the fopen mode table of the semihosting spec). */
#define SH_MODE_RB 1
#define SH_MODE_WB 5

/* Returns a handle >= 0, or -1. */
int sh_open(const char *path, int mode);
int sh_close(int handle);
/* Reads exactly n bytes; returns 0 on success, -1 on a short read or error. */
int sh_read_all(int handle, void *buf, size_t n);
/* Writes exactly n bytes; returns 0 on success, -1 on error. */
int sh_write_all(int handle, const void *buf, size_t n);
/* Length of an open file in bytes, or -1. */
long sh_flen(int handle);
/* Copies the program's command line (as given to QEMU with -append or semihosting-config arg=) into buf. */
int sh_cmdline(char *buf, size_t size);
/* Writes a NUL-terminated string to the host's stdout/stderr console. */
void sh_puts(const char *s);
/* Writes an unsigned / signed decimal number or a 0x-prefixed 32-bit hex number to the console. */
void sh_put_u64(uint64_t v);
void sh_put_i32(int32_t v);
void sh_put_hex(uint32_t v);
/* Ends the emulation with this exit code (SYS_EXIT_EXTENDED, so the host sees the exact code). */
void sh_exit(int code) __attribute__((noreturn));

#endif /* BOARD_SEMIHOST_H */
