"""Sliding-window geometry shared by the windowed kinds (conv, dwconv, and the pools may use it too).

A window op reads, for output row ``oh``, the input rows ``oh * sh - pt + kh * dh`` for ``kh in [0, KH)``; rows
outside ``[0, H)`` are padding. Under tiling the output view holds a band of rows and so does each input view, so
two questions come up in every kernel and its NumPy reference: which input rows does an output band need (the band
check that yields ``TGRS_ERR_TILE`` in C), and what does the padded window look like (the reference gathers it). The
C twin of these helpers is ``runtime_c/src/kernels/window.h``.

Padding is decided from the full ``dims`` of the views, never from the band: an input band that starts at row 8 is
not padded above, it just holds rows from 8.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Mapping

import numpy as np

from tigris.ops.base import TensorView


class TileError(ValueError):
    """The input band does not hold a row the output band needs (the reference's ``TGRS_ERR_TILE``)."""


@dataclass(frozen=True)
class Window:
    """A 2-D window: kernel, stride, dilation and (top, left, bottom, right) padding, all in physical H/W."""

    kh: int
    kw: int
    sh: int = 1
    sw: int = 1
    dh: int = 1
    dw: int = 1
    pt: int = 0
    pl: int = 0
    pb: int = 0
    pr: int = 0

    @property
    def span_h(self) -> int:
        """Rows one window covers, dilation included."""
        return (self.kh - 1) * self.dh + 1

    @property
    def span_w(self) -> int:
        return (self.kw - 1) * self.dw + 1

    def out_hw(self, h: int, w: int) -> tuple[int, int]:
        return out_size(h, self.kh, self.sh, self.dh, self.pt, self.pb), out_size(w, self.kw, self.sw, self.dw,
                                                                                  self.pl, self.pr)

    def params(self) -> dict[str, int]:
        """The window as kernel parameters (names shared by the conv and dwconv kinds)."""
        return dict(kh=self.kh, kw=self.kw, sh=self.sh, sw=self.sw, dh=self.dh, dw=self.dw,
                    pt=self.pt, pl=self.pl, pb=self.pb, pr=self.pr)

    @staticmethod
    def from_params(p: Mapping[str, int]) -> "Window":
        return Window(*(int(p.get(k, d)) for k, d in
                        (("kh", 1), ("kw", 1), ("sh", 1), ("sw", 1), ("dh", 1), ("dw", 1),
                         ("pt", 0), ("pl", 0), ("pb", 0), ("pr", 0))))


def window_from_attrs(attrs: Mapping[str, Any], one_d: bool = False) -> Window:
    """The window of a normalized IR op. ``one_d``: a Conv1D-style op whose L axis becomes the row axis (W = 1).

    IR attributes (docs/design.md): ``kernel_shape``, ``strides``, ``dilations``, ``pads`` as (top, left, bottom,
    right) for 2-D and (begin, end) for 1-D.
    """
    ks = [int(v) for v in attrs["kernel_shape"]]
    st = [int(v) for v in (attrs.get("strides") or [1] * len(ks))]
    dl = [int(v) for v in (attrs.get("dilations") or [1] * len(ks))]
    pd = [int(v) for v in (attrs.get("pads") or [0] * (2 * len(ks)))]
    if one_d:
        return Window(kh=ks[0], kw=1, sh=st[0], sw=1, dh=dl[0], dw=1, pt=pd[0], pl=0, pb=pd[1], pr=0)
    return Window(kh=ks[0], kw=ks[1], sh=st[0], sw=st[1], dh=dl[0], dw=dl[1], pt=pd[0], pl=pd[1], pb=pd[2], pr=pd[3])


def row_window(attrs: Mapping[str, Any]) -> tuple[int, int, int, int]:
    """(kernel, stride, dilation, leading pad) along the row axis, from the same attributes the kernel's window is
    lowered from (a missing kernel_shape is a 1-wide window)."""
    # The planner asks this for every op of every candidate tile; the answer depends only on four attribute lists.
    return _row_window(tuple(attrs.get("kernel_shape") or (1,)), tuple(attrs.get("strides") or ()),
                       tuple(attrs.get("dilations") or ()), tuple(attrs.get("pads") or ()))


@lru_cache(maxsize=4096)
def _row_window(ks: tuple, strides: tuple, dilations: tuple, pads: tuple) -> tuple[int, int, int, int]:
    attrs = {"kernel_shape": list(ks), "strides": list(strides), "dilations": list(dilations), "pads": list(pads)}
    w = window_from_attrs(attrs, one_d=len(ks) == 1)
    return w.kh, w.sh, w.dh, w.pt


def col_window(attrs: Mapping[str, Any]) -> tuple[int, int, int, int] | None:
    """(kernel, stride, dilation, leading pad) along W of a 2-D window op; None for a 1-D one (its W is 1)."""
    ks = tuple(attrs.get("kernel_shape") or (1,))
    if len(ks) != 2:
        return None
    return _col_window(ks, tuple(attrs.get("strides") or ()), tuple(attrs.get("dilations") or ()),
                       tuple(attrs.get("pads") or ()))


@lru_cache(maxsize=4096)
def _col_window(ks: tuple, strides: tuple, dilations: tuple, pads: tuple) -> tuple[int, int, int, int]:
    attrs = {"kernel_shape": list(ks), "strides": list(strides), "dilations": list(dilations), "pads": list(pads)}
    w = window_from_attrs(attrs)
    return w.kw, w.sw, w.dw, w.pl


def out_size(n: int, k: int, s: int, d: int, p0: int, p1: int) -> int:
    """Output length of a window along one axis (floor mode)."""
    return (n + p0 + p1 - ((k - 1) * d + 1)) // s + 1


def rows_needed(win: Window, oh0: int, oh1: int, h: int) -> tuple[int, int]:
    """Half-open range of input rows (clipped to ``[0, h)``) that output rows ``[oh0, oh1)`` read; empty if none."""
    lo = oh0 * win.sh - win.pt
    hi = (oh1 - 1) * win.sh - win.pt + win.span_h
    return max(lo, 0), min(hi, h)


def check_band(view: TensorView, lo: int, hi: int) -> None:
    """Raise TileError unless ``view`` holds every row of ``[lo, hi)``."""
    if lo < hi and (lo < view.row0 or hi > view.row0 + view.rows):
        raise TileError(f"input band rows [{view.row0}, {view.row0 + view.rows}) miss needed rows [{lo}, {hi})")


def padded_band(x: TensorView, win: Window, oh0: int, oh1: int, pad_value: float | int) -> np.ndarray:
    """The input rows output rows ``[oh0, oh1)`` read, padded: ``[N, rows, pl + W + pr, C]``.

    Row ``r`` of the result is input row ``oh0 * sh - pt + r``; rows and columns outside the tensor hold
    ``pad_value`` (0 for float convs, the input zero point for int8, -inf / -128 for max pooling).
    """
    n, h, w, c = x.dims
    first = oh0 * win.sh - win.pt
    count = (oh1 - 1 - oh0) * win.sh + win.span_h
    lo, hi = rows_needed(win, oh0, oh1, h)
    check_band(x, lo, hi)
    data = np.asarray(x.data).reshape(n, x.rows, w, c)
    out = np.full((n, count, win.pl + w + win.pr, c), pad_value, dtype=data.dtype)
    if lo < hi:
        out[:, lo - first:hi - first, win.pl:win.pl + w, :] = data[:, lo - x.row0:hi - x.row0]
    return out


def window_patches(xp: np.ndarray, win: Window, out_rows: int, out_w: int) -> np.ndarray:
    """Gather windows from a padded band: ``[N, out_rows, out_w, KH, KW, C]`` (a copy, in (kh, kw, c) order)."""
    n, _, _, c = xp.shape
    res = np.empty((n, out_rows, out_w, win.kh, win.kw, c), dtype=xp.dtype)
    for i in range(win.kh):
        r0 = i * win.dh
        rows = xp[:, r0:r0 + (out_rows - 1) * win.sh + 1:win.sh]
        for j in range(win.kw):
            c0 = j * win.dw
            res[:, :, :, i, j, :] = rows[:, :, c0:c0 + (out_w - 1) * win.sw + 1:win.sw, :]
    return res


def piecewise_in_place(in_band: tuple[int, int], out_band: tuple[int, int], in_row_bytes: int, out_row_bytes: int,
                       first_row, temp_rows: int) -> bool:
    """Whether a window op can write its output band over its own input band in pieces (docs/memory-planning.md
    "Window ops in place"): both bands start at the same address; output row ``j`` is stored at band byte
    ``(j - out_band[0]) * out_row_bytes``. The op computes its rows top to bottom into a temporary of ``temp_rows``
    rows and stores each finished row once every input row under its bytes is dead, i.e. no longer read by a row
    still to compute (``first_row(j)``: the first, unclipped, input row output row ``j`` reads; non-decreasing).
    The walk is the C kernel's (dwconv.c ``dw_pieces``) step for step; it fails when the temporary is full of rows
    none of which may be stored yet."""
    i0 = in_band[0]
    o0, o1 = out_band
    if temp_rows < 1 or out_row_bytes < 1:
        return False
    pend, nxt, done = 0, o0, o0
    while done < o1:
        n = min(temp_rows - pend, o1 - nxt)
        nxt += n
        pend += n
        if nxt >= o1:
            w = o1
        else:
            live = max(first_row(nxt), i0)
            w = min(nxt, o0 + (live - i0) * in_row_bytes // out_row_bytes)
        if w > done:
            done, pend = w, nxt - w
        elif n == 0:
            return False
    return True


def piece_rows(in_band: tuple[int, int], out_band: tuple[int, int], in_row_bytes: int, out_row_bytes: int,
               first_row) -> int:
    """The fewest temporary rows with which :func:`piecewise_in_place` succeeds (the whole band always does)."""
    rows = out_band[1] - out_band[0]
    for p in range(1, max(rows, 1) + 1):
        if piecewise_in_place(in_band, out_band, in_row_bytes, out_row_bytes, first_row, p):
            return p
    return max(rows, 1)


@lru_cache(maxsize=4096)
def window_piece_rows(stride: int, offset: int, rows: int, in_row_bytes: int, out_row_bytes: int) -> int:
    """:func:`piece_rows` of a window op whose output row ``j`` of the band (counted from the band's first) first
    reads input band row ``j * stride + offset``."""
    return piece_rows((0, 0), (0, rows), in_row_bytes, out_row_bytes, lambda j: j * stride + offset)
