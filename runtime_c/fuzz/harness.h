/*
 * harness.h - the fuzz case both fuzz front ends share (harness.c).
 */
#ifndef TGRS_FUZZ_HARNESS_H
#define TGRS_FUZZ_HARNESS_H

#include <stddef.h>

/*
 * Load `len` bytes at `bytes` (which must be TGRS_PLAN_ALIGN-aligned) and return the tgrs_load status. *run_rc is
 * the tgrs_run status when the plan was run, or 1 (not run: refused by the loader), 2 (interface query failed),
 * 3 (a reported peak beyond the arena: a runtime bug), 4 (arenas above the harness limit, not run).
 */
int tgrs_fuzz_run_one(const unsigned char *bytes, size_t len, int *run_rc);

#endif /* TGRS_FUZZ_HARNESS_H */
