"""Resize along the spatial view axes (rows and columns): nearest (float32, int8) and linear (float32), band-aware.

Every output coordinate's source is computed once here, in float64 from the ONNX formulas, and stored as tables:
``RIDX``/``CIDX`` hold ``(i0, i1)`` pairs per output row/column (int32); for linear mode ``RW``/``CW`` hold the weight
``w`` of ``i1`` (float32). So every ``coordinate_transformation_mode`` and ``nearest_mode`` is the same kernel:

* nearest: ``y[h, w] = x[RIDX[2h], CIDX[2w]]``; int8 requantizes ``zo + requant(q - zi, MULT, SHIFT)`` rounded halves
  to even (the identity copy when the encodings agree);
* linear (float32 only): ``top = x[r0,c0] + (x[r0,c1] - x[r0,c0]) * wc``, ``bot`` likewise on row ``r1``,
  ``y = top + (bot - top) * wr``.

Scales must be 1 on the batch and channel axes.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from tigris.ir import AnalyzedGraph, Op, TigrisError
from tigris.layout import tensor_view_dims
from tigris.ops._common import TileError, dtype_kind, per_tensor, phys_axes, requantize_even
from tigris.ops.base import Lowered, OpKind, TensorView
from tigris.ops.qmath import quantize_multiplier


def _s(v) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


CTMS = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
        "tf_half_pixel_for_nn")


def source_coord(o: int, scale: float, n_in: int, n_out: int, ctm: str, length: float | None = None) -> float:
    """ONNX Resize's x_original for output coordinate ``o``; ``length`` is ONNX's length_resized, ``n_in * scale``
    (not floored) for a stated scale, ``n_out`` (the default) for stated sizes. Where the two differ (a stated scale
    whose product with the input length is fractional) this follows the ONNX specification and its reference; ONNX
    Runtime uses ``n_out`` there."""
    length = n_out if length is None else length
    if ctm == "half_pixel_symmetric":
        adj = n_out / (scale * n_in)
        return n_in / 2 * (1 - adj) + (o + 0.5) / scale - 0.5
    if ctm == "half_pixel":
        return (o + 0.5) / scale - 0.5
    if ctm == "pytorch_half_pixel":
        return (o + 0.5) / scale - 0.5 if length != 1 else 0.0  # ONNX's -0.5 clamps to the same source
    if ctm == "align_corners":
        return 0.0 if length == 1 else o * (n_in - 1) / (length - 1)
    if ctm == "asymmetric":
        return o / scale
    if ctm == "tf_half_pixel_for_nn":
        return (o + 0.5) / scale
    raise TigrisError(f"Resize coordinate_transformation_mode {ctm!r} is not supported")


def nearest_index(x: float, mode: str) -> int:
    frac = x - math.floor(x)
    if mode == "floor":
        return math.floor(x)
    if mode == "ceil":
        return math.ceil(x)
    if mode in ("round_prefer_floor", "round_prefer_ceil"):
        if frac == 0.5:
            return math.floor(x) if mode == "round_prefer_floor" else math.ceil(x)
        return int(math.floor(x + 0.5))
    raise TigrisError(f"Resize nearest_mode {mode!r} is not supported")


def axis_tables(n_in: int, n_out: int, scale: float, mode: str, ctm: str, nearest_mode: str, by_sizes: bool = True):
    """(pairs int32 [2*n_out], weights float32 [n_out]) of one axis; ``by_sizes`` says the output length was stated
    (ONNX's length_resized is then ``n_out``, else ``n_in * scale``)."""
    length = n_out if by_sizes else n_in * scale
    idx = np.zeros(2 * n_out, dtype=np.int32)
    wts = np.zeros(n_out, dtype=np.float32)
    if n_in == n_out and scale == 1.0:
        # An unscaled axis is the identity (ONNX Runtime's behaviour; tf_half_pixel_for_nn would otherwise shift it).
        idx[0::2] = idx[1::2] = np.arange(n_out, dtype=np.int32)
        return idx, wts
    for o in range(n_out):
        x = source_coord(o, scale, n_in, n_out, ctm, length)
        if mode == "nearest":
            i = min(max(nearest_index(x, nearest_mode), 0), n_in - 1)
            idx[2 * o] = idx[2 * o + 1] = i
        else:
            x = min(max(x, 0.0), n_in - 1)
            i0 = int(math.floor(x))
            i1 = min(i0 + 1, n_in - 1)
            idx[2 * o], idx[2 * o + 1] = i0, i1
            wts[o] = x - i0
    return idx, wts


class Resize(OpKind):
    name = "resize"
    ir_ops = ("Resize",)
    ONNX_OPS = {"Resize": "nearest (every nearest_mode) and linear (float32 only); half_pixel, half_pixel_symmetric, "
                          "pytorch_half_pixel, align_corners, asymmetric, tf_half_pixel_for_nn; scales or sizes, "
                          "axes, keep_aspect_ratio_policy",
                "Upsample": "nearest and linear, constant scales"}
    INT8_EXACTNESS = "bit-exact when the encodings agree, else <= 1 LSB (nearest only)"
    TILING_DOC = "pointwise with its row map (the input rows each output row reads)"
    TILING = "pointwise"

    def check_operands(self, graph: AnalyzedGraph, op: Op) -> str | None:
        # a declined resize names what pass 12 declined, not the operands it therefore left in place
        mode = _s(op.attrs.get("mode", "nearest"))
        ctm = _s(op.attrs.get("coordinate_transformation_mode", "half_pixel"))
        if mode not in ("nearest", "linear", "bilinear"):
            return f"Resize mode {mode!r} (nearest and linear are supported)"
        if ctm == "tf_crop_and_resize":
            return "Resize coordinate_transformation_mode 'tf_crop_and_resize'"
        if mode != "nearest" and int(op.attrs.get("antialias", 0)) and "_extracted" not in op.attrs:
            return "antialiased Resize"
        why = super().check_operands(graph, op)
        if why is None and "scales" not in op.attrs:
            why = "scales were not extracted (non-integer resize)"
        return why

    def check_dtype(self, graph: AnalyzedGraph, op: Op, int8: bool) -> str | None:
        mode = _s(op.attrs.get("mode", "nearest"))
        if mode not in ("nearest", "linear"):
            return f"Resize mode {mode!r} (nearest and linear are supported)"
        if int8 and mode != "nearest":
            return f"int8 Resize in {mode} mode (the int8 kernel is nearest only; float linear is supported)"
        ctm = _s(op.attrs.get("coordinate_transformation_mode", "half_pixel"))
        if ctm not in CTMS:
            return f"Resize coordinate_transformation_mode {ctm!r}"
        return None

    def rows_needed(self, op: Op, a: int, b: int) -> tuple[int, int]:
        src = op.attrs.get("row_src")
        if src is not None:  # a general resize states the rows each output row reads (pass 12 rule 3)
            band = src[2 * a:2 * b]
            return (min(band), max(band) + 1) if band else (a, b)
        # one extra row each side covers every coordinate-transformation mode (spatial rule 5)
        f = max(1, int(op.attrs.get("scales", [1, 1, 1, 1])[2]))
        return a // f - 1, -(-b // f) + 1
    PARAMS = ("MODE", "MULT", "SHIFT")
    CONSTS = ("RIDX", "CIDX", "RW", "CW")

    def lower(self, graph: AnalyzedGraph, op: Op) -> Lowered:
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        a = op.attrs
        mode = _s(a.get("mode", "nearest"))
        ctm = _s(a.get("coordinate_transformation_mode", "half_pixel"))
        nmode = _s(a.get("nearest_mode", "round_prefer_floor"))
        if mode not in ("nearest", "linear"):
            raise TigrisError(f"Resize mode {mode!r} is not supported", op.name)
        r = len(x.shape)
        scales = [float(s) for s in a.get("scales", [])] or [y.shape[i] / x.shape[i] for i in range(r)]
        m = phys_axes(x.shape, x.layout)
        xd, yd = tensor_view_dims(x), tensor_view_dims(y)
        for j in (0, 3):
            la = m[j]
            if xd[j] != yd[j] or (la is not None and scales[la] != 1.0):
                raise TigrisError("Resize may only scale the spatial axes", op.name)
        int8 = dtype_kind(graph, op) == "int8"
        if int8 and mode != "nearest":
            raise TigrisError("int8 Resize supports nearest mode only", op.name)
        consts = {}
        for j, key in ((1, "R"), (2, "C")):
            la = m[j]
            s = 1.0 if la is None else scales[la]
            idx, wts = axis_tables(xd[j], yd[j], s, mode, ctm, nmode, bool(a.get("by_sizes", True)))
            consts[f"{key}IDX"] = idx
            if mode == "linear":
                consts[f"{key}W"] = wts
        params = {"MODE": int(mode == "linear")}
        if int8:
            si, _ = per_tensor(x, "Resize input")
            so, _ = per_tensor(y, "Resize output")
            params["MULT"], params["SHIFT"] = quantize_multiplier(si / so, op.name)
        return Lowered(self.name, op.name, [op.inputs[0]], [op.outputs[0]], params=params, consts=consts,
                       macs=y.numel * (4 if mode == "linear" else 1))

    def reference(self, low: Lowered, inputs: Sequence[TensorView], out: TensorView) -> None:
        x = inputs[0]
        ridx = low.consts["RIDX"].reshape(-1, 2)[out.row0:out.row0 + out.rows]
        cidx = low.consts["CIDX"].reshape(-1, 2)
        if ridx.size and (ridx.min() < x.row0 or ridx.max() >= x.row0 + x.rows):
            raise TileError("Resize input band misses rows")
        rl = ridx - x.row0
        if low.params["MODE"] == 0:
            v = x.data[:, rl[:, 0]][:, :, cidx[:, 0]]
            if out.dtype == "float32":
                out.data[...] = v
            else:
                q = requantize_even(v.astype(np.int64) - x.zero_point, low.params["MULT"], low.params["SHIFT"])
                out.data[...] = np.clip(q + out.zero_point, -128, 127).astype(out.data.dtype)
            return
        wr = low.consts["RW"][out.row0:out.row0 + out.rows].astype(np.float32)[None, :, None, None]
        wc = low.consts["CW"].astype(np.float32)[None, None, :, None]
        d = x.data.astype(np.float32)

        def at(rows, cols):
            return d[:, rows][:, :, cols]

        top = at(rl[:, 0], cidx[:, 0])
        top = top + (at(rl[:, 0], cidx[:, 1]) - top) * wc
        bot = at(rl[:, 1], cidx[:, 0])
        bot = bot + (at(rl[:, 1], cidx[:, 1]) - bot) * wc
        out.data[...] = (top + (bot - top) * wr).astype(np.float32)
