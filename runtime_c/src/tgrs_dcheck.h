/*
 * tgrs_dcheck.h - TGRS_DCHECK(cond): an assertion of an internal invariant, compiled only in debug builds.
 *
 * The loader's checks decide whether a plan is valid; a DCHECK states what the code relies on because of them (an
 * arena pointer that is set, an index the loader bounded) and never replaces a check. Build with -DTGRS_DEBUG (host
 * only: it uses the hosted assert) to have every DCHECK evaluated; without it a DCHECK costs nothing and evaluates
 * nothing, so its condition must have no side effects.
 */
#ifndef TGRS_DCHECK_H
#define TGRS_DCHECK_H

#ifdef TGRS_DEBUG
#include <assert.h>
#define TGRS_DCHECK(cond) assert(cond)
#else
#define TGRS_DCHECK(cond) ((void)0)
#endif

#endif /* TGRS_DCHECK_H */
