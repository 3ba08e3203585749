/*
 * window.h - sliding-window geometry for the windowed kernels (conv, dwconv; pools may use it): the C twin of
 * tigris/ops/_geometry.py.
 *
 * Output row oh reads input rows oh*sh - pt + kh*dh (kh in [0, KH)); rows outside [0, H) are padding. Padding is
 * decided from the full dims, never from the band a view holds. All arithmetic that could overflow on hostile
 * parameters is done in 64 bits after the parameters were range-checked by tgrs_window_load.
 */
#ifndef TGRS_WINDOW_H
#define TGRS_WINDOW_H

#include <stdint.h>

#include "tgrs_op.h"

/* Largest kernel extent, stride, dilation or pad a plan may state (keeps every product below 2^31). */
#define TGRS_WINDOW_MAX 4096

typedef struct tgrs_window {
    int32_t kh, kw, sh, sw, dh, dw, pt, pl, pb, pr;
} tgrs_window;

/* Read and range-check a window from 10 consecutive params (kh kw sh sw dh dw pt pl pb pr). Returns 1 if valid. */
int tgrs_window_load(tgrs_window *w, const int32_t *p);

/* The window of a context the loader proved (ctx->proven: tgrs_window_load accepted these very params): the 10
   params as they are (out of line in kcheck.c, one copy for the windowed kernels). */
void tgrs_window_get(tgrs_window *w, const int32_t *p);

/*
 * Check the geometry of a windowed op: batch equal, output H/W as the window gives from the input H/W, and the input
 * band holding every row output rows [out->row0, out->row0 + out->rows) read. Returns TGRS_OK, TGRS_ERR_SHAPE or
 * TGRS_ERR_TILE. Both run once per op, so they live out of line in kcheck.c (one copy for every windowed kernel).
 */
int tgrs_window_check(const tgrs_window *w, const tgrs_tview *in, const tgrs_tview *out);

#endif /* TGRS_WINDOW_H */
