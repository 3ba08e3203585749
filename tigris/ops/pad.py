"""Pad in every ONNX mode (constant, reflect, edge, wrap) on rank-4 views; float32 and int8; band-aware along the
rows.

The IR ``pads`` are logical ONNX order (all begins, then all ends); lowering maps them onto the view axes
(``B0..B3`` begins, ``E0..E3`` ends; padding view axes get 0). Output element ``o`` on each axis reads input element
``o - B``; outside the input it is ``VALUE`` (``MODE`` 0, constant), or the input element the mode maps it to:
``MODE`` 1 reflect (``i`` mirrored about the first and last element, period ``2 * (n - 1)``), 2 edge (``i`` clamped
to ``[0, n)``), 3 wrap (``i mod n``). Negative pads crop, by the same formula. A reflect/edge/wrap Pad of the row
axis reads rows other than the ones it writes: pass ``pad_fold`` states per output row the input row it copies
(``row_src``, the mode's map of logical axis 2), and a band of output rows reads the hull of those rows
(``rows_needed``); the map is not monotone at the edges (reflect: output row 0 reads input row 1), so such a Pad
never sits in a rolling unit. ``ROW_MAPS = False`` keeps such a Pad out of row bands (the earlier rule, the
baseline of ``bench/plan_quality.py --cols``).

``VALUE`` is the float32 bit pattern for float tensors and the int8 code ``quantize(value)`` for int8 ones (0.0 is
the zero point); an int8 Pad keeps the input's quantization, so the copied codes need no requantization.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from tigris.ir import AnalyzedGraph, Op, TigrisError
from tigris.layout import tensor_view_dims
from tigris.ops._common import TileError, dtype_kind, per_tensor, phys_axes
from tigris.ops.base import Lowered, OpKind, TensorView, bits_f32, f32_bits
from tigris.ops.qmath import quantize_float


MODES = {"constant": 0, "reflect": 1, "edge": 2, "wrap": 3}

# A reflect/edge/wrap Pad of the row axis runs on row bands, reading the rows its ``row_src`` map names.
ROW_MAPS = True


def _mode(op: Op) -> str:
    m = op.attrs.get("mode", "constant")
    return m.decode() if isinstance(m, bytes) else str(m)


def source_index(i: np.ndarray, n: int, mode: int) -> np.ndarray:
    """The input index an output element at input coordinate ``i`` (= o - B) copies, for MODE 1-3 (pad_src in
    pad.c)."""
    if mode == 2:
        return np.clip(i, 0, n - 1)
    if mode == 3:
        return np.mod(i, n)
    if n == 1:
        return np.zeros_like(i)
    per = 2 * (n - 1)
    k = np.mod(i, per)
    return np.where(k < n, k, per - k)


class Pad(OpKind):
    name = "pad"
    ir_ops = ("Pad",)
    ONNX_OPS = {"Pad": "constant, reflect, edge and wrap modes, constant pads and value (negative pads crop), axes; "
                       "a zero Pad before a Conv "
                       "or AveragePool is folded into its pads"}
    INT8_EXACTNESS = "bit-exact"
    TILING_DOC = "pointwise, rows shifted by the leading pad (reflect/edge/wrap: the rows the mode maps them to)"
    TILING = "pointwise"

    def check_operands(self, graph: AnalyzedGraph, op: Op) -> str | None:
        mode = _mode(op)
        if mode not in MODES:
            return f"Pad mode {mode!r} (constant, reflect, edge and wrap are supported)"
        why = super().check_operands(graph, op)
        if why is None and "pads" not in op.attrs:
            why = "pads are not constant"
        return why

    def mixes_rows(self, graph: AnalyzedGraph, op: Op) -> str | None:
        x = graph.tensors[op.inputs[0]]
        if _mode(op) == "constant":
            return None
        pads = [int(p) for p in op.attrs.get("pads", [])]
        m = phys_axes(x.shape, x.layout)
        r = len(x.shape)
        la = m[1]
        if la is not None and len(pads) == 2 * r and (pads[la] or pads[la + r]):
            src = op.attrs.get("row_src")
            y = graph.tensors[op.outputs[0]]
            if not ROW_MAPS or la != 2 or src is None or len(src) != int(y.shape[2]) \
                    or min(src) < 0 or max(src) >= int(x.shape[2]):
                return f"a {_mode(op)} Pad of the row axis reads rows it does not write"
        return None

    def rows_needed(self, op: Op, a: int, b: int) -> tuple[int, int]:
        src = op.attrs.get("row_src")
        if src is not None and _mode(op) != "constant":  # the mode's map: the hull of the rows the band copies
            band = src[max(0, a):max(0, b)]
            if band:
                return min(band), max(band) + 1
        top = int(op.attrs.get("pads", [0] * 8)[2])  # the leading H pad shifts the rows
        return a - top, b - top
    PARAMS = ("B0", "B1", "B2", "B3", "E0", "E1", "E2", "E3", "VALUE", "MODE")

    def lower(self, graph: AnalyzedGraph, op: Op) -> Lowered:
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        mode = _mode(op)
        if mode not in MODES:
            raise TigrisError(f"Pad mode {mode!r} is not supported", op.name)
        r = len(x.shape)
        pads = [int(p) for p in op.attrs.get("pads", [0] * (2 * r))]
        if len(pads) != 2 * r:
            raise TigrisError(f"Pad has {len(pads)} pads for rank {r}", op.name)
        params: dict[str, int] = {}
        for j, la in enumerate(phys_axes(x.shape, x.layout)):
            params[f"B{j}"] = 0 if la is None else pads[la]
            params[f"E{j}"] = 0 if la is None else pads[r + la]
        xd, yd = tensor_view_dims(x), tensor_view_dims(y)
        if any(xd[j] + params[f"B{j}"] + params[f"E{j}"] != yd[j] for j in range(4)):
            raise TigrisError(f"Pad {pads} does not take {list(x.shape)} to {list(y.shape)}", op.name)
        value = float(op.attrs.get("value", 0.0) or 0.0)
        if dtype_kind(graph, op) == "int8":
            s, zp = per_tensor(x, "Pad input")
            so, zo = per_tensor(y, "Pad output")
            if not (np.float32(s) == np.float32(so) and zp == zo):
                raise TigrisError("an int8 Pad must keep its input's quantization", op.name)
            params["VALUE"] = int(quantize_float(np.array([value]), s, zp)[0])
        else:
            params["VALUE"] = f32_bits(value)
        params["MODE"] = MODES[mode]
        return Lowered(self.name, op.name, [op.inputs[0]], [op.outputs[0]], params=params, macs=y.numel)

    def reference(self, low: Lowered, inputs: Sequence[TensorView], out: TensorView) -> None:
        x = inputs[0]
        p = low.params
        if p.get("MODE", 0):
            idx = []
            for j in range(4):
                o = np.arange(out.dims[j]) if j != 1 else np.arange(out.row0, out.row0 + out.rows)
                src = source_index(o - p[f"B{j}"], x.dims[j], p["MODE"])
                if j == 1 and len(src) and (src.min() < x.row0 or src.max() >= x.row0 + x.rows):
                    raise TileError("Pad input band misses rows")
                idx.append(src - x.row0 if j == 1 else src)
            out.data[...] = x.data[np.ix_(*idx)]
            return
        if out.dtype == "float32":
            out.data[...] = np.float32(bits_f32(p["VALUE"]))
        else:
            out.data[...] = p["VALUE"]
        src, dst = [], []
        for j in range(4):
            b = p[f"B{j}"]
            lo, hi = max(0, b), min(out.dims[j], b + x.dims[j])
            if j == 1:
                lo, hi = max(lo, out.row0), min(hi, out.row0 + out.rows)
            if hi <= lo:
                return
            if j == 1:
                if lo - b < x.row0 or hi - b > x.row0 + x.rows:
                    raise TileError("Pad input band misses rows")
                src.append(slice(lo - b - x.row0, hi - b - x.row0))
                dst.append(slice(lo - out.row0, hi - out.row0))
            else:
                src.append(slice(lo - b, hi - b))
                dst.append(slice(lo, hi))
        out.data[tuple(dst)] = x.data[tuple(src)]
