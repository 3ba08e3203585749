"""Resize along the spatial view axes (rows and columns): every ONNX mode and coordinate transformation, band-aware.

Every output coordinate's source taps are computed once here, in float64 from the ONNX formulas, and stored as
tables: ``RIDX``/``CIDX`` hold ``KR``/``KC`` input indices per output row/column (int32), ``RW``/``CW`` the weight of
each tap (float32, interpolating modes only). So every ``mode``, ``coordinate_transformation_mode``,
``nearest_mode``, ``cubic_coeff_a``, ``exclude_outside`` and ``antialias`` is the same kernel:

* nearest (``MODE`` 0, one tap): ``y[h, w] = x[RIDX[h], CIDX[w]]``; int8 requantizes
  ``zo + requant(q - zi, MULT, SHIFT)`` rounded halves to even (the identity copy when the encodings agree);
* interpolating (``MODE`` 1, float32): ``y = sum_i RW[h,i] * (sum_j CW[w,j] * x[RIDX[h,i], CIDX[w,j]])``, each
  sum accumulated in float32 from 0 in tap order. Linear has two taps, cubic four, an antialiased downscale by
  ``s`` about ``2/s`` (linear) or ``4/s`` (cubic). Taps that fall outside the input read the edge (ONNX's edge
  padding); with ``exclude_outside`` their weight is 0 and the rest renormalized.

``tf_crop_and_resize``: an output row or column whose source lies outside the input is ``EXTRAP`` (float bits);
its first tap index is -1. Scales must be 1 on the batch and channel axes.

An int8 interpolating resize (``MODE`` 1 on int8 tensors, the onnx numerics) computes exactly what the QDQ model
states, ``DequantizeLinear -> Resize -> QuantizeLinear``, in one kernel: each tap is dequantized as the dequantize
kernel does (``(float)(q - zi) * SI``), the float sums are the float kernel's, and the result is quantized as the
quantize kernel does (``clamp(rne(y / SO) + zo)``, the quotient limited to +-65536 first, NaN to ``zo``), so the
bytes are those of the three kernels in a row while a band holds int8 rows instead of float ones.
``INT8_INTERP = False`` leaves such a resize to pass float_tail's float island (the earlier rule, a baseline of
bench/plan_quality.py). A cropping resize (tf_crop_and_resize) and the tflm numerics keep the island.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from tigris.ir import AnalyzedGraph, Op, TigrisError
from tigris.layout import tensor_view_dims
from tigris.ops._common import TileError, dtype_kind, per_tensor, phys_axes, requantize_even
from tigris.ops.base import Lowered, OpKind, TensorView, bits_f32, f32_bits
from tigris.ops.qmath import quantize_multiplier


def _s(v) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


# An int8 interpolating resize runs on its own int8 kernel path (module docstring); False: as a float island.
INT8_INTERP = True


def int8_interpolates(graph: AnalyzedGraph, op: Op) -> bool:
    """Whether an int8 ``op`` in linear or cubic mode runs on the int8 kernel path (else pass float_tail wraps it in
    a float island): not tf_crop_and_resize (its EXTRAP is a float), not under the tflm numerics."""
    ctm = _s(op.attrs.get("coordinate_transformation_mode", "half_pixel"))
    return INT8_INTERP and graph.numerics != "tflm" and ctm != "tf_crop_and_resize"


CTMS = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
        "tf_half_pixel_for_nn", "tf_crop_and_resize")
MODES = ("nearest", "linear", "cubic")


def source_coord(o: int, scale: float, n_in: int, n_out: int, ctm: str, length: float | None = None,
                 roi: tuple[float, float] = (0.0, 1.0)) -> float:
    """ONNX Resize's x_original for output coordinate ``o``; ``length`` is ONNX's length_resized, ``n_in * scale``
    (not floored) for a stated scale, ``n_out`` (the default) for stated sizes. Where the two differ (a stated scale
    whose product with the input length is fractional) this follows the ONNX specification and its reference; ONNX
    Runtime uses ``n_out`` there. ``roi`` is the axis' (start, end) of tf_crop_and_resize."""
    length = n_out if length is None else length
    if ctm == "half_pixel_symmetric":
        adj = n_out / (scale * n_in)
        return n_in / 2 * (1 - adj) + (o + 0.5) / scale - 0.5
    if ctm == "half_pixel":
        return (o + 0.5) / scale - 0.5
    if ctm == "pytorch_half_pixel":
        # onto one pixel the specification's source is -0.5 (ONNX Runtime takes 0; only cubic tells them apart)
        return (o + 0.5) / scale - 0.5 if length != 1 else -0.5
    if ctm == "align_corners":
        return 0.0 if length == 1 else o * (n_in - 1) / (length - 1)
    if ctm == "asymmetric":
        return o / scale
    if ctm == "tf_half_pixel_for_nn":
        return (o + 0.5) / scale
    if ctm == "tf_crop_and_resize":
        # the roi is a float32 operand: its difference and its start times the input extent are float32 values
        # (as the ONNX reference computes them), the rest float64; a source at the very edge depends on it
        r0, r1 = np.float32(roi[0]), np.float32(roi[1])
        d, off = np.float32(r1 - r0), float(np.float32(r0 * np.float32(n_in - 1)))
        if length == 1:
            return float(np.float32(d * np.float32(n_in - 1)) / np.float32(2)) + off
        return o * float(d) * (n_in - 1) / (length - 1) + off
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


def _cubic_w(d: float, a: float) -> float:
    """The cubic convolution kernel at distance ``d`` (Keys, parameter ``a``)."""
    d = abs(d)
    if d <= 1:
        return ((a + 2) * d - (a + 3)) * d * d + 1
    if d < 2:
        return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
    return 0.0


def _taps(ratio: float, scale: float, mode: str, a: float, antialias: bool) -> tuple[list[int], list[float]]:
    """(offsets from floor(x), weights) of one output coordinate whose fraction is ``ratio`` in (0, 1] (ONNX takes
    1, not 0, at an integer source so the left neighbour is preferred)."""
    s = min(scale, 1.0) if antialias else 1.0
    if mode == "linear":
        start = int(math.floor(-1 / s) + 1)
        offs = list(range(start, 2 - start))
        w = [max(0.0, 1 - abs((i - ratio) * s)) for i in offs]
    else:
        start = int(math.floor(-2 / s) + 1)
        offs = list(range(start, 2 - start))
        w = [_cubic_w((i - ratio) * s, a) for i in offs]
    if antialias:
        tot = sum(w)
        w = [v / tot for v in w]
    return offs, w


def axis_tables(n_in: int, n_out: int, scale: float, mode: str, ctm: str, nearest_mode: str, by_sizes: bool = True,
                cubic_a: float = -0.75, exclude_outside: bool = False, antialias: bool = False,
                roi: tuple[float, float] = (0.0, 1.0)) -> tuple[np.ndarray, np.ndarray]:
    """(indices int32 [n_out, K], weights float32 [n_out, K]) of one axis; ``by_sizes`` says the output length was
    stated (ONNX's length_resized is then ``n_out``, else ``n_in * scale``). Nearest has K = 1 and weights 1. A
    tf_crop_and_resize coordinate outside the input has index -1 in its first tap (weights 0)."""
    length = n_out if by_sizes else n_in * scale
    if n_in == n_out and scale == 1.0 and ctm != "tf_crop_and_resize":
        # An unscaled axis is the identity (ONNX Runtime's behaviour; tf_half_pixel_for_nn would otherwise shift it).
        return np.arange(n_out, dtype=np.int32).reshape(n_out, 1), np.ones((n_out, 1), dtype=np.float32)
    rows_i: list[list[int]] = []
    rows_w: list[list[float]] = []
    for o in range(n_out):
        x = source_coord(o, scale, n_in, n_out, ctm, length, roi)
        if ctm == "tf_crop_and_resize" and (x < 0 or x > n_in - 1):
            rows_i.append([-1])
            rows_w.append([0.0])
            continue
        if mode == "nearest":
            rows_i.append([min(max(nearest_index(x, nearest_mode), 0), n_in - 1)])
            rows_w.append([1.0])
            continue
        f = math.floor(x)
        ratio = 1.0 if x == f else x - f
        base = int(x - ratio)
        offs, w = _taps(ratio, scale, mode, cubic_a, antialias)
        pos = [base + i for i in offs]
        if exclude_outside:
            w = [0.0 if (p < 0 or p >= n_in) else v for p, v in zip(pos, w)]
            tot = sum(w)
            w = [v / tot for v in w] if tot != 0 else w
        rows_i.append([min(max(p, 0), n_in - 1) for p in pos])
        rows_w.append(w)
    k = max(len(r) for r in rows_i)
    idx = np.zeros((n_out, k), dtype=np.int32)
    wts = np.zeros((n_out, k), dtype=np.float32)
    for o, (ri, rw) in enumerate(zip(rows_i, rows_w)):
        idx[o, :len(ri)] = ri
        idx[o, len(ri):] = ri[-1] if ri[0] >= 0 else 0
        if ri[0] < 0:
            idx[o, :] = 0
            idx[o, 0] = -1
        wts[o, :len(rw)] = rw
    return idx, wts


def row_span(idx: np.ndarray) -> list[int]:
    """The row map: per output row the (lowest, highest) input row its taps read, flattened. An extrapolated row
    reads none; it borrows its nearest reading neighbour's span so a band's span stays tight."""
    spans: list[tuple[int, int] | None] = [None if r[0] < 0 else (int(r.min()), int(r.max())) for r in idx]
    valid = [i for i, s in enumerate(spans) if s is not None]
    out: list[int] = []
    for i, s in enumerate(spans):
        if s is None:
            s = spans[min(valid, key=lambda j: abs(j - i))] if valid else (0, 0)
        out += [s[0], s[1]]
    return out


def resize_params(op: Op) -> dict:
    """The table-building attributes of a normalized Resize (pass 12 made them explicit)."""
    a = op.attrs
    roi = a.get("roi_hw")
    return dict(mode=_s(a.get("mode", "nearest")), ctm=_s(a.get("coordinate_transformation_mode", "half_pixel")),
                nearest_mode=_s(a.get("nearest_mode", "round_prefer_floor")),
                cubic_a=float(a.get("cubic_coeff_a", -0.75)), exclude_outside=bool(int(a.get("exclude_outside", 0))),
                antialias=bool(int(a.get("antialias", 0))), by_sizes=bool(a.get("by_sizes", True)),
                roi=None if roi is None else [float(v) for v in roi])


class Resize(OpKind):
    name = "resize"
    ir_ops = ("Resize",)
    ONNX_OPS = {"Resize": "nearest (every nearest_mode), linear and cubic (cubic_coeff_a, exclude_outside), "
                          "antialias; half_pixel, half_pixel_symmetric, pytorch_half_pixel, align_corners, "
                          "asymmetric, tf_half_pixel_for_nn, tf_crop_and_resize (constant roi, extrapolation_value); "
                          "scales (fractional too) or sizes, axes, keep_aspect_ratio_policy; int8 linear/cubic compute "
                          "DequantizeLinear -> Resize -> QuantizeLinear in one kernel (onnx numerics); int8 crop "
                          "(and tflm linear/cubic) run in float between DequantizeLinear and QuantizeLinear",
                "Upsample": "nearest and linear, constant scales"}
    INT8_EXACTNESS = "bit-exact when the encodings agree (nearest), else <= 1 LSB"
    TILING_DOC = "pointwise with its row map (the input rows each output row reads)"
    TILING = "pointwise"

    def check_operands(self, graph: AnalyzedGraph, op: Op) -> str | None:
        # a declined resize names what pass 12 declined, not the operands it therefore left in place
        mode = _s(op.attrs.get("mode", "nearest"))
        if mode not in MODES and mode != "bilinear":
            return f"Resize mode {mode!r} (nearest, linear and cubic are supported)"
        if "_extracted" not in op.attrs and \
                _s(op.attrs.get("coordinate_transformation_mode", "")) == "tf_crop_and_resize":
            return "Resize tf_crop_and_resize whose roi is not constant or crops the batch or channel axis"
        why = super().check_operands(graph, op)
        if why is None and "scales" not in op.attrs:
            why = "scales were not extracted"
        return why

    def check_dtype(self, graph: AnalyzedGraph, op: Op, int8: bool) -> str | None:
        mode = _s(op.attrs.get("mode", "nearest"))
        if mode not in MODES:
            return f"Resize mode {mode!r} (nearest, linear and cubic are supported)"
        ctm = _s(op.attrs.get("coordinate_transformation_mode", "half_pixel"))
        if int8 and (mode != "nearest" or ctm == "tf_crop_and_resize") and not int8_interpolates(graph, op):
            return f"int8 Resize in {mode} mode / {ctm} (runs in float between DequantizeLinear and QuantizeLinear)"
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
    PARAMS = ("MODE", "MULT", "SHIFT", "KR", "KC", "EXTRAP", "SI", "SO")
    CONSTS = ("RIDX", "CIDX", "RW", "CW")

    def lower(self, graph: AnalyzedGraph, op: Op) -> Lowered:
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        a = op.attrs
        rp = resize_params(op)
        mode = rp["mode"]
        if mode not in MODES:
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
        if int8 and (mode != "nearest" or rp["ctm"] == "tf_crop_and_resize") and not int8_interpolates(graph, op):
            raise TigrisError("int8 Resize runs nearest mode only (interpolation runs in float)", op.name)
        consts = {}
        ks = {}
        for j, key in ((1, "R"), (2, "C")):
            la = m[j]
            s = 1.0 if la is None else scales[la]
            roi = (0.0, 1.0)
            if rp["roi"] is not None and la is not None:
                roi = (rp["roi"][la], rp["roi"][r + la])
            idx, wts = axis_tables(xd[j], yd[j], s, mode, rp["ctm"], rp["nearest_mode"], rp["by_sizes"],
                                   rp["cubic_a"], rp["exclude_outside"], rp["antialias"], roi)
            ks[key] = idx.shape[1]
            consts[f"{key}IDX"] = idx.reshape(-1)
            if mode != "nearest":
                consts[f"{key}W"] = wts.reshape(-1)
        params = {"MODE": int(mode != "nearest"), "KR": ks["R"], "KC": ks["C"],
                  "EXTRAP": f32_bits(float(a.get("extrapolation_value", 0.0)))}
        if int8:
            si, _ = per_tensor(x, "Resize input")
            so, _ = per_tensor(y, "Resize output")
            if mode == "nearest":
                params["MULT"], params["SHIFT"] = quantize_multiplier(si / so, op.name)
            else:  # the dequantize and quantize kernels' float32 scales (module docstring)
                params["SI"], params["SO"] = f32_bits(si), f32_bits(so)
        return Lowered(self.name, op.name, [op.inputs[0]], [op.outputs[0]], params=params, consts=consts,
                       macs=y.numel * ks["R"] * ks["C"] * (1 if mode == "nearest" else 2))

    def reference(self, low: Lowered, inputs: Sequence[TensorView], out: TensorView) -> None:
        x = inputs[0]
        p = low.params
        kr, kc = p["KR"], p["KC"]
        ridx = low.consts["RIDX"].reshape(-1, kr)[out.row0:out.row0 + out.rows]
        cidx = low.consts["CIDX"].reshape(-1, kc)
        rout = ridx[:, 0] < 0
        cout = cidx[:, 0] < 0
        rv = ridx[~rout]
        if rv.size and (rv.min() < x.row0 or rv.max() >= x.row0 + x.rows):
            raise TileError("Resize input band misses rows")
        rl = np.where(rout[:, None], x.row0, ridx) - x.row0
        cl = np.where(cout[:, None], 0, cidx)
        if p["MODE"] == 0:
            v = x.data[:, rl[:, 0]][:, :, cl[:, 0]]
            if out.dtype == "float32":
                v = v.astype(np.float32).copy()
                ex = np.float32(bits_f32(p["EXTRAP"]))
                v[:, rout] = ex
                v[:, :, cout] = ex
                out.data[...] = v
            else:
                q = requantize_even(v.astype(np.int64) - x.zero_point, p["MULT"], p["SHIFT"])
                out.data[...] = np.clip(q + out.zero_point, -128, 127).astype(out.data.dtype)
            return
        wr = low.consts["RW"].reshape(-1, kr)[out.row0:out.row0 + out.rows].astype(np.float32)
        wc = low.consts["CW"].reshape(-1, kc).astype(np.float32)
        int8 = out.dtype != "float32"
        if int8:  # the dequantize kernel's arithmetic, per tap
            d = (x.data.astype(np.int32) - np.int32(x.zero_point)).astype(np.float32) * np.float32(bits_f32(p["SI"]))
        else:
            d = x.data.astype(np.float32)
        acc = np.zeros(out.data.shape, dtype=np.float32)
        for i in range(kr):
            rows = d[:, rl[:, i]]
            racc = np.zeros(out.data.shape, dtype=np.float32)
            for j in range(kc):
                racc = racc + wc[None, None, :, j, None] * rows[:, :, cl[:, j]]
            acc = acc + wr[None, :, i, None, None] * racc
        if int8:  # the quantize kernel's arithmetic (tigris.ops.quant.Quantize.reference)
            with np.errstate(invalid="ignore"):
                v = acc / np.float32(bits_f32(p["SO"]))
            nan = np.isnan(v)
            v = np.clip(np.nan_to_num(v, nan=0.0, posinf=65536.0, neginf=-65536.0), -65536.0, 65536.0)
            q = np.clip(np.rint(v).astype(np.int64) + out.zero_point, -128, 127)
            out.data[...] = np.where(nan, out.zero_point, q).astype(out.data.dtype)
            return
        ex = np.float32(bits_f32(p["EXTRAP"]))
        acc[:, rout] = ex
        acc[:, :, cout] = ex
        out.data[...] = acc
