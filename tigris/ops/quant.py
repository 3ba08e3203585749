"""QuantizeLinear and DequantizeLinear at the model boundary (elementwise, band-aware).

Quantize: ``q = clamp(rne(x / SCALE) + ZP, QMIN, QMAX)`` where the division is float32 and ``rne`` rounds half to
even, exactly like ONNX QuantizeLinear and :func:`tigris.ops.qmath.quantize_float`. The output is int8
(``QMIN, QMAX = -128, 127``) or, for a tensor the model declares uint8, uint8 (``0, 255``, ``U8 = 1``).

Dequantize: ``x = (float)(q - ZP) * SCALE`` in float32 (the input int8, or uint8 with ``U8 = 1``).

``SCALE`` is the float32 bit pattern; per-tensor quantization only (activations are per tensor by construction).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from tigris.ir import AnalyzedGraph, Op, TigrisError
from tigris.ops._common import per_tensor, same_rows
from tigris.ops.base import Lowered, OpKind, TensorView, bits_f32, f32_bits

RANGES = {"int8": (-128, 127), "uint8": (0, 255)}


class _QuantBoundary(OpKind):
    """Quantize and Dequantize: float32 on one side, per-tensor int8 on the other."""

    TILING = "pointwise"

    def unsupported(self, graph: AnalyzedGraph, op: Op) -> str | None:
        ins = [i for i in op.inputs if i]
        if len(ins) != 1:
            return "its scale or zero point is not a constant"
        f, q = (ins[0], op.outputs[0]) if self.name == "quantize" else (op.outputs[0], ins[0])
        qt, ft = graph.tensors[q], graph.tensors[f]
        if ft.dtype != "float32" or qt.dtype != "int8" or qt.quant is None or qt.quant.per_channel:
            return f"only float32 <-> per-tensor int8 is supported ({ft.dtype}, {qt.dtype})"
        return None


class Quantize(_QuantBoundary):
    name = "quantize"
    ir_ops = ("QuantizeLinear",)
    ONNX_OPS = {"QuantizeLinear": "float32 to int8 or uint8, per tensor (a QDQ pair elsewhere folds into the int8 ops)"}
    DTYPES = ("float32 -> int8",)
    INT8_EXACTNESS = "bit-exact"
    PARAMS = ("SCALE", "ZP", "QMIN", "QMAX", "U8")

    def lower(self, graph: AnalyzedGraph, op: Op) -> Lowered:
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        if x.dtype != "float32" or y.dtype not in RANGES:
            raise TigrisError(f"QuantizeLinear {x.dtype} -> {y.dtype} is not supported", op.name)
        scale, zp = per_tensor(y, "QuantizeLinear output")
        lo, hi = RANGES[y.dtype]
        params = {"SCALE": f32_bits(scale), "ZP": zp, "QMIN": lo, "QMAX": hi, "U8": int(y.dtype == "uint8")}
        return Lowered(self.name, op.name, [op.inputs[0]], [op.outputs[0]], params=params, macs=y.numel)

    def reference(self, low: Lowered, inputs: Sequence[TensorView], out: TensorView) -> None:
        p = low.params
        x = same_rows(inputs[0], out).astype(np.float32)
        # qmath.quantize_float's arithmetic (float32 division, round half to even), with the quotient limited first,
        # as the C kernel does, so huge inputs saturate instead of overflowing the integer conversion; NaN -> ZP.
        v = x / np.float32(bits_f32(p["SCALE"]))
        v = np.clip(np.nan_to_num(v, nan=0.0, posinf=65536.0, neginf=-65536.0), -65536.0, 65536.0)
        q = np.clip(np.rint(v).astype(np.int64) + p["ZP"], p["QMIN"], p["QMAX"])
        out.data[...] = q.astype(out.data.dtype)


class Dequantize(_QuantBoundary):
    name = "dequantize"
    ir_ops = ("DequantizeLinear",)
    ONNX_OPS = {"DequantizeLinear": "int8 or uint8 to float32, per tensor"}
    DTYPES = ("int8 -> float32",)
    INT8_EXACTNESS = "bit-exact"
    PARAMS = ("SCALE", "ZP", "U8")

    def lower(self, graph: AnalyzedGraph, op: Op) -> Lowered:
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        if x.dtype not in RANGES or y.dtype != "float32":
            raise TigrisError(f"DequantizeLinear {x.dtype} -> {y.dtype} is not supported", op.name)
        scale, zp = per_tensor(x, "DequantizeLinear input")
        params = {"SCALE": f32_bits(scale), "ZP": zp, "U8": int(x.dtype == "uint8")}
        return Lowered(self.name, op.name, [op.inputs[0]], [op.outputs[0]], params=params, macs=y.numel)

    def reference(self, low: Lowered, inputs: Sequence[TensorView], out: TensorView) -> None:
        p = low.params
        q = same_rows(inputs[0], out)
        d = (q.astype(np.int32) - np.int32(p["ZP"])).astype(np.float32)
        out.data[...] = d * np.float32(bits_f32(p["SCALE"]))
