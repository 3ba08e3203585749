"""QuantizeLinear and DequantizeLinear at the model boundary (elementwise, band-aware).

Quantize: ``q = clamp(rne(x / SCALE) + ZP, QMIN, QMAX)`` where the division is float32 and ``rne`` rounds half to
even, exactly like ONNX QuantizeLinear and :func:`tigris.ops.qmath.quantize_float`. The output is int8
(``QMIN, QMAX = -128, 127``) or, for a tensor the model declares uint8, uint8 (``0, 255``, ``U8 = 1``).

Dequantize: ``x = (float)(q - ZP) * SCALE`` in float32 (the input int8, or uint8 with ``U8 = 1``).

``SCALE`` is the float32 bit pattern. A per-axis or blocked QuantizeLinear/DequantizeLinear at the model boundary
(pass qdq_per_element: its op has ``per_element`` set and reads a full-shape scale and zero point) has ``PER_ELEM = 1``
and the constants ``SCALE_E`` (float32) and ``ZP_E`` (int32, restated like the tensor), one per element in the
int8 tensor's physical order; the same formulas then take each element's own pair.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from tigris.ir import AnalyzedGraph, Op, TigrisError
from tigris.layout import tensor_view_dims
from tigris.ops._common import const_to_phys, per_tensor, same_rows
from tigris.ops.base import Lowered, OpKind, TensorView, bits_f32, cols_reason, f32_bits

RANGES = {"int8": (-128, 127), "uint8": (0, 255)}


def _per_element(graph: AnalyzedGraph, op: Op, qt, params: dict) -> dict[str, np.ndarray]:
    """The SCALE_E / ZP_E constants of a per-element op (pass qdq_per_element), in ``qt``'s physical order; {} for a
    per-tensor one."""
    if not op.attrs.get("per_element"):
        return {}
    s = np.asarray(graph.weights[op.inputs[1]], np.float32).reshape(qt.shape)
    z = np.asarray(graph.weights[op.inputs[2]], np.int64).reshape(qt.shape)
    lo, hi = RANGES[qt.dtype]
    if not np.all(s > 0) or not np.all(np.isfinite(s)) or z.min(initial=lo) < lo or z.max(initial=hi) > hi:
        raise TigrisError("per-element scales must be positive and finite, zero points in range", op.name)
    params["PER_ELEM"] = 1
    return {"SCALE_E": const_to_phys(s, qt).astype(np.float32), "ZP_E": const_to_phys(z, qt).astype(np.int32)}


def _scale_zp(low: Lowered, out: TensorView, scale, zp):
    """The per-tensor pair, or the output band's rows of the per-element constants (broadcastable to the band)."""
    if not low.params.get("PER_ELEM"):
        return scale, zp
    dims = out.dims
    rows = slice(out.row0, out.row0 + out.rows)
    s = np.asarray(low.consts["SCALE_E"]).reshape(dims)[:, rows]
    z = np.asarray(low.consts["ZP_E"]).reshape(dims)[:, rows].astype(np.int64)
    return s.reshape(out.data.shape), z.reshape(out.data.shape)


class _QuantBoundary(OpKind):
    """Quantize and Dequantize: float32 on one side, per-tensor int8 on the other."""

    COLS = "pixel"
    COL_ZERO = ("PER_ELEM",)  # per-element scales are indexed by the full tensor's position

    TILING = "pointwise"

    def col_local(self, graph: AnalyzedGraph, op: Op) -> str | None:
        # per pixel with one scale; per-element scales are indexed by the absolute position
        if op.attrs.get("per_element"):
            return "per-element scales"
        return cols_reason(graph, op, per_pixel=True)

    def channel_local(self, graph: AnalyzedGraph, op: Op) -> bool:
        # one scale and zero point for every element (a per-element op indexes its tables by position)
        return not op.attrs.get("per_element") and len([i for i in op.inputs if i]) == 1

    def unsupported(self, graph: AnalyzedGraph, op: Op) -> str | None:
        ins = [i for i in op.inputs if i]
        if op.attrs.get("per_element"):
            if len(ins) != 3 or not all(graph.is_const(i) for i in ins[1:]):
                return "its per-element scale or zero point is not a constant"
            ins = ins[:1]
        elif len(ins) != 1:
            return "its scale or zero point is not a constant"
        f, q = (ins[0], op.outputs[0]) if self.name == "quantize" else (op.outputs[0], ins[0])
        qt, ft = graph.tensors[q], graph.tensors[f]
        if ft.dtype != "float32" or qt.dtype != "int8" or qt.quant is None or qt.quant.per_channel:
            return f"only float32 <-> per-tensor int8 is supported ({ft.dtype}, {qt.dtype})"
        return None


class Quantize(_QuantBoundary):
    name = "quantize"
    ir_ops = ("QuantizeLinear",)
    ONNX_OPS = {"QuantizeLinear": "float32 to int8 or uint8, per tensor; per axis and blocked (block_size) at the model "
                                  "boundary (a QDQ pair elsewhere folds into the int8 ops)"}
    DTYPES = ("float32 -> int8",)
    INT8_EXACTNESS = "bit-exact"
    PARAMS = ("SCALE", "ZP", "QMIN", "QMAX", "U8", "PER_ELEM")
    CONSTS = ("SCALE_E", "ZP_E")

    def lower(self, graph: AnalyzedGraph, op: Op) -> Lowered:
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        if x.dtype != "float32" or y.dtype not in RANGES:
            raise TigrisError(f"QuantizeLinear {x.dtype} -> {y.dtype} is not supported", op.name)
        scale, zp = per_tensor(y, "QuantizeLinear output")
        lo, hi = RANGES[y.dtype]
        params = {"SCALE": f32_bits(scale), "ZP": zp, "QMIN": lo, "QMAX": hi, "U8": int(y.dtype == "uint8")}
        consts = _per_element(graph, op, y, params)
        return Lowered(self.name, op.name, [op.inputs[0]], [op.outputs[0]], params=params, consts=consts,
                       macs=y.numel)

    def reference(self, low: Lowered, inputs: Sequence[TensorView], out: TensorView) -> None:
        p = low.params
        x = same_rows(inputs[0], out).astype(np.float32)
        scale, zp = _scale_zp(low, out, np.float32(bits_f32(p["SCALE"])), p["ZP"])
        # qmath.quantize_float's arithmetic (float32 division, round half to even), with the quotient limited first,
        # as the C kernel does, so huge inputs saturate instead of overflowing the integer conversion; NaN -> ZP.
        with np.errstate(invalid="ignore"):
            v = x / scale
        nan = np.isnan(v)
        v = np.clip(np.nan_to_num(v, nan=0.0, posinf=65536.0, neginf=-65536.0), -65536.0, 65536.0)
        q = np.clip(np.rint(v).astype(np.int64) + zp, p["QMIN"], p["QMAX"])
        q = np.where(nan, zp, q)
        out.data[...] = q.astype(out.data.dtype)


# False: a Dequantize writes a buffer of its own (the earlier rule; bench/plan_quality.py --cols plans its row-tiles
# baseline so).
WIDEN_IN_PLACE = True


class Dequantize(_QuantBoundary):
    name = "dequantize"
    ir_ops = ("DequantizeLinear",)
    ONNX_OPS = {"DequantizeLinear": "int8 or uint8 to float32, per tensor; per axis and blocked (block_size) at the "
                                    "model boundary"}
    DTYPES = ("int8 -> float32",)
    INT8_EXACTNESS = "bit-exact"
    PARAMS = ("SCALE", "ZP", "U8", "PER_ELEM")
    CONSTS = ("SCALE_E", "ZP_E")

    # The float output may grow over its dying int8 input (the input's home is the output's first bytes, as a join
    # in place, docs/memory-planning.md "Joins in place"): quant.c then runs from the last element to the first, and
    # element i's 4 bytes start at 4i, never below an input byte still to be read (those lie below i). One image,
    # so a band's elements are one run.
    prefix_in_place = True

    def prefix_over(self, graph: AnalyzedGraph, op: Op, x: str) -> bool:
        if not WIDEN_IN_PLACE or not op.inputs or op.inputs[0] != x or graph.is_const(x) \
                or op.attrs.get("per_element") or len(op.outputs) != 1:
            return False
        tx, ty = graph.tensors[x], graph.tensors[op.outputs[0]]
        xd, yd = tensor_view_dims(tx), tensor_view_dims(ty)
        return tx.dtype in RANGES and ty.dtype == "float32" and xd == yd and yd[0] == 1

    def lower(self, graph: AnalyzedGraph, op: Op) -> Lowered:
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        if x.dtype not in RANGES or y.dtype != "float32":
            raise TigrisError(f"DequantizeLinear {x.dtype} -> {y.dtype} is not supported", op.name)
        scale, zp = per_tensor(x, "DequantizeLinear input")
        params = {"SCALE": f32_bits(scale), "ZP": zp, "U8": int(x.dtype == "uint8")}
        consts = _per_element(graph, op, x, params)
        return Lowered(self.name, op.name, [op.inputs[0]], [op.outputs[0]], params=params, consts=consts,
                       macs=y.numel)

    def reference(self, low: Lowered, inputs: Sequence[TensorView], out: TensorView) -> None:
        p = low.params
        q = same_rows(inputs[0], out)
        scale, zp = _scale_zp(low, out, np.float32(bits_f32(p["SCALE"])), p["ZP"])
        d = (q.astype(np.int32) - np.asarray(zp, np.int32)).astype(np.float32)
        out.data[...] = d * scale
