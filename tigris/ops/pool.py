"""MaxPool, AveragePool and GlobalAveragePool on NHWC views (float32 and int8).

Window geometry follows ONNX: output row ``oh`` reads input rows ``oh*SH - PT + kh*DH`` for ``kh < KH``; taps
outside ``[0, H)`` are padding. The output size is the output tensor's (so ``ceil_mode`` is already in the shape).

* MaxPool ignores padding taps. int8: the max of the raw codes, then ``zp_out + requant(max - zp_in)`` with the
  ``s_in/s_out`` multiplier (monotonic, so it commutes with max; identity when the scales agree).
* AveragePool divides by the number of taps inside ``[-PT, H+PB) x [-PL, W+PR)`` when ``count_include_pad`` (ONNX
  Runtime's divisor, which also leaves out the ``ceil_mode`` overhang), else by the taps inside the image. int8:
  ``acc = sum(q - zp_in)`` over image taps (padding is real 0, code zp_in), then
  ``zp_out + round(acc * mult / (count * 2**(31 - shift)))`` with ONE rounding, halves to even, where
  ``(mult, shift)`` encode ``s_in/s_out``. The divisor is an exact 64-bit integer, so lowering checks it fits.
* GlobalAveragePool (one band, or accumulated over the tiles of a unit: ``gap_begin``/``gap_accumulate``/
  ``gap_finish`` below fix the summation order so both give the same bits): int8 ``zp_out + round(sum(q - zp_in) * mult / (H*W * 2**(31 - shift)))``, the same
  exact division, ``(mult, shift)`` encoding ``s_in / s_out``; float ``sum / (H*W)``. ``TFLM_AVG`` 1 (a TFLM
  AveragePool over the whole image, tigris/passes/reducemean_gap.py rule 6): the tflm AveragePool's arithmetic,
  ``sum(q)`` of the raw codes divided by ``H*W`` rounding halves away from zero, clamped (equal encodings).

Averages round halves to even, unlike the Q0.31 requantization of products (halves away from zero): with equal
input and output scales an average lands exactly on a half whenever the sum is an odd multiple of count/2 (one
window in count), and the ONNX model states that rounding as QuantizeLinear's, half to even. Rounding those ties the
other way is a 1-LSB difference that the following layers amplify (11 LSB at resnet8's softmax, measured).

Pools are band-aware like convolutions: the input view may hold only the rows the output band needs.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from tigris.ir import AnalyzedGraph, Op, TigrisError
from tigris.layout import tensor_view_dims
from tigris.ops._common import TileError, act_bounds, dtype_kind, per_tensor, requantize_even
from tigris.ops._geometry import col_window, row_window
from tigris.ops.base import Lowered, OpKind, TensorView, cols_reason
from tigris.ops.qmath import numerics_code, quantize_multiplier, requantize_tflm

WINDOW_PARAMS = ("KH", "KW", "SH", "SW", "DH", "DW", "PT", "PL", "PB", "PR", "COUNT_PAD", "MULT", "SHIFT", "LO", "HI",
                 "NUMERICS")


def _geometry(graph: AnalyzedGraph, op: Op) -> dict[str, int]:
    """Kernel, stride, dilation and pads in physical (row, column) terms; 1-D pools (nwc) pool along the rows."""
    x = graph.tensors[op.inputs[0]]
    a = op.attrs
    k = list(a["kernel_shape"])
    nd = len(k)
    s = list(a.get("strides") or [1] * nd)
    d = list(a.get("dilations") or [1] * nd)
    p = list(a.get("pads") or [0] * (2 * nd))
    if nd == 2 and x.layout == "nhwc":
        return dict(KH=k[0], KW=k[1], SH=s[0], SW=s[1], DH=d[0], DW=d[1], PT=p[0], PL=p[1], PB=p[2], PR=p[3])
    if nd == 1 and x.layout == "nwc":
        return dict(KH=k[0], KW=1, SH=s[0], SW=1, DH=d[0], DW=1, PT=p[0], PL=0, PB=p[1], PR=0)
    raise TigrisError(f"{op.op_type}: {nd}-D pooling on a {x.layout} tensor is not supported", op.name)


def _lower_window(graph: AnalyzedGraph, op: Op, kind: str) -> Lowered:
    g = _geometry(graph, op)
    if min(g["KH"], g["KW"], g["SH"], g["SW"], g["DH"], g["DW"]) < 1 or min(g["PT"], g["PL"], g["PB"], g["PR"]) < 0:
        raise TigrisError(f"{op.op_type}: invalid window {g}", op.name)
    params = dict(g)
    params["COUNT_PAD"] = int(bool(op.attrs.get("count_include_pad", 0)))
    params["LO"], params["HI"] = -128, 127
    x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    if dtype_kind(graph, op) == "int8":
        s_in, zp_in = per_tensor(x, "pool input")
        s_out, zp_out = per_tensor(y, "pool output")
        mult, shift = quantize_multiplier(s_in / s_out, op.name)
        params["NUMERICS"] = numerics_code(graph.numerics)
        if kind == "avgpool" and graph.numerics == "tflm":
            # TFLM averages the raw codes, which presumes one encoding; it never counts padding.
            if (s_in, zp_in) != (s_out, zp_out):
                raise TigrisError("AveragePool with numerics tflm needs equal input and output quantization "
                                  f"(TFLM's rule), got scale {s_in:g}/{s_out:g}, zero point {zp_in}/{zp_out}", op.name)
            if params["COUNT_PAD"] and any(g[k] for k in ("PT", "PL", "PB", "PR")):
                raise TigrisError("AveragePool with numerics tflm cannot count padding (count_include_pad)", op.name)
        if kind == "avgpool":
            # The divisor count << (31 - shift) must be an exact int64 (see the module doc).
            if (31 - shift) + int(g["KH"] * g["KW"]).bit_length() > 62:
                raise TigrisError(f"AveragePool: scale ratio {s_in / s_out:g} is too small", op.name)
        params["MULT"], params["SHIFT"] = mult, shift
        params["LO"], params["HI"] = act_bounds(op.attrs.get("fused_activation"), s_out, zp_out, graph.numerics)
    return Lowered(kind, op.name, [op.inputs[0]], [op.outputs[0]], params=params,
                   macs=int(np.prod(tensor_view_dims(y))) * g["KH"] * g["KW"])


def div_round_half_away(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """TFLM's average: ``(num + den/2) / den`` for num > 0, else ``(num - den/2) / den``, truncating division."""
    num = np.asarray(num, dtype=np.int64)
    den = np.asarray(den, dtype=np.int64)
    q = (np.abs(num) + den // 2) // den
    return np.where(num > 0, q, -((np.abs(num) + den // 2) // den))


def div_round_half_even(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den (den > 0) rounded to the nearest integer, halves to even, exactly in int64."""
    num = np.asarray(num, dtype=np.int64)
    den = np.asarray(den, dtype=np.int64)
    a = np.abs(num)
    q, r = a // den, a % den
    up = (2 * r > den) | ((2 * r == den) & (q % 2 == 1))
    q = q + up.astype(np.int64)
    return np.where(num < 0, -q, q)


def _window_reference(low: Lowered, x: TensorView, out: TensorView, mode: str) -> None:
    p = low.params
    kh_, kw_, sh, sw, dh, dw = (p[k] for k in ("KH", "KW", "SH", "SW", "DH", "DW"))
    pt, pl, pb, pr = (p[k] for k in ("PT", "PL", "PB", "PR"))
    H, W = x.dims[1], x.dims[2]
    OW = out.dims[2]
    int8 = out.dtype in ("int8", "uint8")
    tflm = int8 and mode == "avg" and p.get("NUMERICS", 0) == 1  # raw codes, rounded halves away (TFLM)
    ow = np.arange(OW)
    for r, oh in enumerate(range(out.row0, out.row0 + out.rows)):
        ih = [oh * sh - pt + k * dh for k in range(kh_)]
        need = [i for i in ih if 0 <= i < H]
        if need and (need[0] < x.row0 or need[-1] >= x.row0 + x.rows):
            raise TileError(f"output row {oh} needs input rows {need[0]}..{need[-1]}")
        if mode == "max":
            acc = np.full((x.dims[0], OW, x.dims[3]), -np.inf if not int8 else -128,
                          dtype=np.float32 if not int8 else np.int64)
        else:
            acc = np.zeros((x.dims[0], OW, x.dims[3]), dtype=np.float32 if not int8 else np.int64)
        count = np.zeros(OW, dtype=np.int64)
        for i in ih:
            for k in range(kw_):
                iw = ow * sw - pl + k * dw
                inside = (iw >= 0) & (iw < W)
                if mode == "avg":
                    if p["COUNT_PAD"]:
                        count += ((iw >= -pl) & (iw < W + pr)).astype(np.int64) * int(-pt <= i < H + pb)
                    else:
                        count += inside.astype(np.int64) * int(0 <= i < H)
                if not 0 <= i < H:
                    continue
                row = x.data[:, i - x.row0]
                vals = row[:, np.clip(iw, 0, W - 1)]
                if int8:
                    vals = vals.astype(np.int64) - (x.zero_point if mode == "avg" and not tflm else 0)
                m = inside[None, :, None]
                if mode == "max":
                    acc = np.where(m, np.maximum(acc, vals), acc)
                else:
                    acc = np.where(m, acc + vals, acc)
        if not int8:
            res = acc if mode == "max" else acc / np.maximum(count, 1).astype(np.float32)[None, :, None]
            out.data[:, r] = res.astype(np.float32)
            continue
        if mode == "max":
            q = requantize_even(acc - x.zero_point, p["MULT"], p["SHIFT"])
        elif tflm:
            out.data[:, r] = np.clip(div_round_half_away(acc, np.maximum(count, 1)[None, :, None]), p["LO"],
                                     p["HI"]).astype(out.data.dtype)
            continue
        else:
            den = np.maximum(count, 1) << (31 - p["SHIFT"])
            q = div_round_half_even(acc * p["MULT"], den[None, :, None])
        out.data[:, r] = np.clip(q + out.zero_point, p["LO"], p["HI"]).astype(out.data.dtype)


class _WindowPool(OpKind):
    """MaxPool and AveragePool: a window over the input rows, 2-D on [N, C, H, W] or 1-D on [N, C, L]."""

    COLS = "window"
    COL_WINDOW = ("KW", "SW", "DW", "PL", "PR")

    TILING = "spatial"

    def check_operands(self, graph: AnalyzedGraph, op: Op) -> str | None:
        why = super().check_operands(graph, op)
        if why:
            return why
        if any(k not in op.attrs for k in ("kernel_shape", "strides", "pads")):
            return "attributes are not explicit"
        if (len(graph.tensors[op.inputs[0]].shape), len(op.attrs["kernel_shape"])) not in ((4, 2), (3, 1)):
            # 1-D pools on [N, C, L] (a KWS model's pooling over time) run like Conv1D: L is the row axis.
            if len(op.attrs["kernel_shape"]) == 3:
                return ("3-D pooling needs rank-5 tensors (runtime tensors have at most 4 dimensions); 2-D pooling "
                        "on [N, C, H, W] and 1-D pooling on [N, C, L] are supported")
            return "only 2-D pooling on [N, C, H, W] and 1-D pooling on [N, C, L] are supported"
        return None

    def window(self, op: Op) -> tuple[int, int, int, int]:
        return row_window(op.attrs)

    def col_local(self, graph: AnalyzedGraph, op: Op) -> str | None:
        # an output pixel reduces its own window; the AveragePool divisor counts taps inside the image plus the real
        # pads, which the band-relative pads of a column tile reproduce (they are the real ones at the image edges)
        if col_window(op.attrs) is None:
            return f"1-D {op.op_type}"
        return cols_reason(graph, op, per_pixel=False)

    def col_window(self, op: Op) -> tuple[int, int, int, int] | None:
        return col_window(op.attrs)

    def channel_local(self, graph: AnalyzedGraph, op: Op) -> bool:
        # a window over one channel's plane; the divisor and the requantization are per tensor
        return True


class MaxPool(_WindowPool):
    name = "maxpool"
    ir_ops = ("MaxPool",)
    ONNX_OPS = {"MaxPool": "2-D and 1-D, kernel_shape, strides, dilations, pads, auto_pad, ceil_mode",
                "GlobalMaxPool": "rank 4: a MaxPool over the whole image"}
    INT8_EXACTNESS = "bit-exact when input and output encodings agree, else <= 1 LSB"
    PARAMS = WINDOW_PARAMS

    def lower(self, graph: AnalyzedGraph, op: Op) -> Lowered:
        return _lower_window(graph, op, self.name)

    def reference(self, low: Lowered, inputs: Sequence[TensorView], out: TensorView) -> None:
        _window_reference(low, inputs[0], out, "max")


class AveragePool(_WindowPool):
    name = "avgpool"
    ir_ops = ("AveragePool",)
    ONNX_OPS = {"AveragePool": "2-D and 1-D, kernel_shape, strides, dilations, pads, auto_pad, ceil_mode, "
                               "count_include_pad; a window over the whole image runs as GlobalAveragePool"}
    PARAMS = WINDOW_PARAMS

    def lower(self, graph: AnalyzedGraph, op: Op) -> Lowered:
        return _lower_window(graph, op, self.name)

    def reference(self, low: Lowered, inputs: Sequence[TensorView], out: TensorView) -> None:
        _window_reference(low, inputs[0], out, "avg")


def tflm_mean_multiplier(ratio: float, n: int, where: str) -> tuple[int, int]:
    """TFLM's MEAN: ``(mult, shift)`` of ``s_in / s_out`` with ``1 / n`` folded in by a truncating division of the
    multiplier pre-shifted by ``s = min(bitlen(n) - 1, 32, 31 + shift)`` bits (the shift then drops by ``s``)."""
    mult, shift = quantize_multiplier(ratio, where, "tflm")
    s = min(int(n).bit_length() - 1, 32, 31 + shift)
    return (mult << s) // int(n), shift - s


class GlobalAveragePool(OpKind):
    name = "gap"
    ir_ops = ("GlobalAveragePool",)
    ONNX_OPS = {"GlobalAveragePool": "rank 4",
                "ReduceMean": "axes exactly [2, 3] of a rank-4 tensor, keepdims 0 or 1"}
    TILING_DOC = "structural; may end a tiled unit, accumulating over its tiles"
    accumulates = True  # spatial rule 7: it may end a tiled unit, summing each tile's band

    def accumulator_bytes(self, graph: AnalyzedGraph, op: Op) -> int:
        """int8 sums are int32, 4 bytes per output element, kept from the first tile to the last; float32 sums
        accumulate in the output buffer itself, which is live across the tiles anyway. (An untiled GAP needs no
        scratch, so this is not :meth:`scratch_bytes`.)"""
        out = graph.tensors[op.outputs[0]]
        return 0 if out.dtype == "float32" else 4 * out.numel

    def channel_local(self, graph: AnalyzedGraph, op: Op) -> bool:
        # the mean of one channel's plane; the multiplier depends on H*W and the per-tensor scales only
        return True

    PARAMS = ("MULT", "SHIFT", "LO", "HI", "NUMERICS", "TFLM_AVG")

    def lower(self, graph: AnalyzedGraph, op: Op) -> Lowered:
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        n, h, w, c = tensor_view_dims(x)
        params = {"LO": -128, "HI": 127}
        if dtype_kind(graph, op) == "int8":
            s_in, zp_in = per_tensor(x, "GlobalAveragePool input")
            s_out, zp_out = per_tensor(y, "GlobalAveragePool output")
            if op.attrs.get("tflm_avgpool"):
                # TFLM's AVERAGE_POOL_2D over the whole image (reducemean_gap rule 6): raw codes, one encoding
                if graph.numerics != "tflm" or (s_in, zp_in) != (s_out, zp_out):
                    raise TigrisError("a TFLM average pool needs the tflm numerics and equal input and output "
                                      "quantization", op.name)
                params["TFLM_AVG"] = 1
            if graph.numerics == "tflm":
                mult, shift = tflm_mean_multiplier(s_in / s_out, h * w, op.name)
            else:
                mult, shift = quantize_multiplier(s_in / s_out, op.name)
                if (31 - shift) + int(h * w).bit_length() > 62:
                    raise TigrisError(f"GlobalAveragePool: scale ratio {s_in / s_out:g} is too small", op.name)
            params["MULT"], params["SHIFT"] = mult, shift
            params["LO"], params["HI"] = act_bounds(op.attrs.get("fused_activation"), s_out, zp_out, graph.numerics)
        return Lowered(self.name, op.name, [op.inputs[0]], [op.outputs[0]], params=params, macs=n * h * w * c)

    def reference(self, low: Lowered, inputs: Sequence[TensorView], out: TensorView) -> None:
        x = inputs[0]
        if x.rows != x.dims[1] or out.rows != out.dims[1]:
            raise TileError("GlobalAveragePool is untiled")
        # The untiled GAP is the accumulating one run on a single band: one definition for both.
        acc = gap_begin(x.dims, out.dtype)
        gap_accumulate(acc, x)
        gap_finish(low, acc, x, out)


# --- Accumulating GlobalAveragePool (UnitFlag.ACCUM): begin before the first tile, accumulate every tile's input band,
# finish after the last tile. The order is fixed so that any cut of the rows into consecutive bands gives the same bits:
# float32 sums are formed per channel by adding the pixels one at a time in row-major order (row by row, left to right
# within a row), starting from 0.0f, in float32 (no pairwise or wider sums); int8 sums are exact int32 sums of the raw
# codes (|sum| <= 128 * H*W <= 2**30 for the H*W <= 2**23 the kernel accepts), the zero point removed at the end.


def gap_begin(in_dims: Sequence[int], dtype: str) -> np.ndarray:
    """The cleared accumulator: float32 [N, C] sums (the C runtime keeps them in the output buffer) or int32 [N, C]
    sums of codes (kept in the op's scratch, 4*N*C bytes)."""
    n, c = int(in_dims[0]), int(in_dims[3])
    return np.zeros((n, c), dtype=np.float32 if dtype == "float32" else np.int32)


def gap_accumulate(acc: np.ndarray, x: TensorView) -> None:
    """Add the pixels of the band ``x`` (rows ``[x.row0, x.row0 + x.rows)``) into ``acc`` in row-major order."""
    n, _, w, c = x.dims
    flat = np.asarray(x.data).reshape(n, x.rows * w, c)
    if acc.dtype == np.float32:
        for i in range(x.rows * w):  # one float32 add per pixel, in order (vectorized over channels only)
            acc += flat[:, i].astype(np.float32)
        return
    total = flat.astype(np.int64).sum(axis=1) + acc
    if np.abs(total).max(initial=0) >= 2**31:
        raise TigrisError("GlobalAveragePool: int32 accumulator overflow")
    acc[...] = total.astype(np.int32)


def gap_finish(low: Lowered, acc: np.ndarray, x: TensorView, out: TensorView) -> None:
    """Write the averages from the accumulated sums: float ``sum / (float)(H*W)``; int8 ``zp_out + round((sum - H*W *
    zp_in) * mult / (H*W << (31 - shift)))``, halves to even, clamped to [LO, HI]."""
    n, h, w, c = x.dims
    if out.dtype == "float32":
        out.data[...] = (acc / np.float32(h * w)).astype(np.float32).reshape(out.data.shape)
        return
    if low.params.get("TFLM_AVG", 0):  # TFLM's AVERAGE_POOL_2D: the raw codes' sum, halves away from zero
        q = div_round_half_away(acc.astype(np.int64), np.int64(h * w))
        out.data[...] = np.clip(q, low.params["LO"], low.params["HI"]).astype(out.data.dtype).reshape(out.data.shape)
        return
    total = acc.astype(np.int64) - h * w * x.zero_point
    if low.params.get("NUMERICS", 0):  # TFLM's MEAN: 1/(H*W) is in (MULT, SHIFT) already
        q = requantize_tflm(total, low.params["MULT"], low.params["SHIFT"]) + out.zero_point
        out.data[...] = np.clip(q, low.params["LO"], low.params["HI"]).astype(out.data.dtype).reshape(out.data.shape)
        return
    den = np.int64(h * w) << np.int64(31 - low.params["SHIFT"])
    q = div_round_half_even(total * low.params["MULT"], den) + out.zero_point
    out.data[...] = np.clip(q, low.params["LO"], low.params["HI"]).astype(out.data.dtype).reshape(out.data.shape)
