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
static inline int tgrs_window_load(tgrs_window *w, const int32_t *p)
{
    int i;
    for (i = 0; i < 10; ++i) {
        int32_t lo = (i < 6) ? 1 : 0;
        if (p[i] < lo || p[i] > TGRS_WINDOW_MAX) {
            return 0;
        }
    }
    w->kh = p[0]; w->kw = p[1]; w->sh = p[2]; w->sw = p[3]; w->dh = p[4];
    w->dw = p[5]; w->pt = p[6]; w->pl = p[7]; w->pb = p[8]; w->pr = p[9];
    return 1;
}

/* Output length along one axis (floor mode), or -1 when the window does not fit even once. */
static inline int64_t tgrs_window_out_len(int64_t n, int64_t k, int64_t s, int64_t d, int64_t p0, int64_t p1)
{
    int64_t span = (k - 1) * d + 1;
    int64_t avail = n + p0 + p1 - span;
    return (avail < 0) ? -1 : avail / s + 1;
}

/* A view's band is sane: 0 <= row0, rows >= 0, row0 + rows <= H, dims positive. */
static inline int tgrs_view_ok(const tgrs_tview *v)
{
    return v->dims[0] > 0 && v->dims[1] > 0 && v->dims[2] > 0 && v->dims[3] > 0 && v->row0 >= 0 && v->rows >= 0 &&
           (int64_t)v->row0 + v->rows <= v->dims[1];
}

/*
 * Check the geometry of a windowed op: batch equal, output H/W as the window gives from the input H/W, and the input
 * band holding every row output rows [out->row0, out->row0 + out->rows) read. Returns TGRS_OK, TGRS_ERR_SHAPE or
 * TGRS_ERR_TILE.
 */
static inline int tgrs_window_check(const tgrs_window *w, const tgrs_tview *in, const tgrs_tview *out)
{
    int64_t lo, hi;
    if (!tgrs_view_ok(in) || !tgrs_view_ok(out) || in->dims[0] != out->dims[0]) {
        return TGRS_ERR_SHAPE;
    }
    if (tgrs_window_out_len(in->dims[1], w->kh, w->sh, w->dh, w->pt, w->pb) != out->dims[1] ||
        tgrs_window_out_len(in->dims[2], w->kw, w->sw, w->dw, w->pl, w->pr) != out->dims[2]) {
        return TGRS_ERR_SHAPE;
    }
    if (out->rows == 0) {
        return TGRS_OK;
    }
    lo = (int64_t)out->row0 * w->sh - w->pt;
    hi = (int64_t)(out->row0 + out->rows - 1) * w->sh - w->pt + (int64_t)(w->kh - 1) * w->dh + 1;
    if (lo < 0) {
        lo = 0;
    }
    if (hi > in->dims[1]) {
        hi = in->dims[1];
    }
    if (lo < hi && (lo < in->row0 || hi > (int64_t)in->row0 + in->rows)) {
        return TGRS_ERR_TILE;
    }
    return TGRS_OK;
}

#endif /* TGRS_WINDOW_H */
