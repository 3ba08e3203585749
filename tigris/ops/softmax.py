"""Softmax along one physical axis, float32 and int8.

Float: per line, ``e = exp(x - max)`` in float32, ``y = e / sum(e)`` (the sum runs along the line in order).

int8 (TFLite-compatible: the output is normally scale 1/256, zero point -128; any output quantization works).
Deterministic integer algorithm, identical in NumPy and C:

1. per line, ``m = max(q)`` and ``d = m - q`` in ``[0, 255]``;
2. ``E[d] = round(exp(-d * s_in) * 2**K)`` from a 256-entry int32 table ``EXP`` built here in float64
   (``E[0] = 2**K``; ``K`` is chosen below so nothing overflows);
3. ``S = sum(E[d])`` over the line, exactly (int64);
4. ``y = clamp(zo + round(E[d] * MULT / (S << (31 - SHIFT))), -128, 127)`` with ONE rounding, halves to even,
   where ``(MULT, SHIFT)`` encode ``1 / s_out`` as a Q0.31 multiplier. For ``s_out = 1/256`` this is exactly
   ``round(256 * E[d] / S) - 128``, saturating the certain class at 127 like TFLite.

``K = min(20, 62 - (31 - SHIFT) - bitlen(L))`` for a line of ``L`` elements keeps ``S << (31 - SHIFT)`` below
2**62 and the numerator below 2**51; lowering refuses a K below 8 (an absurd output scale or line length).
Softmax is structural (untiled) along its axis: the kernel needs whole lines.

Numerics ``tflm`` (param ``NUMERICS`` = 1; TFLM's int8 reference softmax, output scale 1/256 and zero point -128
required): ``d = m - q`` is scaled by ``beta * s_in`` into a fixed-point value with 5 integer bits (``(MULT,
SHIFT)`` encode ``beta * s_in * 2**26``, shift >= 0), and ``EXP[d]`` is ``qmath.exp_on_negative`` of that (0
integer bits), or 0 when ``-d`` is below TFLM's ``diff_min``. Per line::

    S = sum(rdbpot(EXP[d], 12))                          wrapping int32 sum, 12 integer bits
    r, e = qmath.reciprocal_q31(S, 12)
    y = clamp(rdbpot(srdhm(r, EXP[d]), e + 23) - 128, -128, 127)

so a line may hold at most 4095 elements (``S < 2**31``). A divisor exponent ``e + 23`` above 31 (a sum of 512 or
more max-like terms, where every probability is below 1/256) gives 0, i.e. -128: the mathematical result, where
TFLM's own code shifts an int32 by 32 or more (undefined in C).
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from tigris.ir import AnalyzedGraph, Op, TigrisError
from tigris.layout import ROW_LAYOUTS, tensor_view_dims
from tigris.ops._common import TileError, dtype_kind, logical_to_phys_axis, per_tensor
from tigris.ops.base import Lowered, OpKind, TensorView
from tigris.ops.pool import div_round_half_even
from tigris.ops import qmath
from tigris.ops.qmath import quantize_multiplier

K_MAX = 20
TFLM_DIFF_BITS = 5  # integer bits of the scaled difference
TFLM_ACC_BITS = 12  # integer bits of the sum of exponentials
TFLM_MAX_LINE = 4095


def tflm_exp_table(s_in: float, beta: float, where: str) -> tuple[np.ndarray, int, int]:
    """TFLM's int8 softmax constants: the 256 exponentials EXP[d] (0 integer bits) and the (mult, shift) of the input
    scaling, from ``beta * s_in`` in float64 as TFLite computes them."""
    real = min(float(beta) * float(np.float32(s_in)) * float(1 << (31 - TFLM_DIFF_BITS)), float((1 << 31) - 1))
    mult, shift = quantize_multiplier(real, where, "tflm")
    if shift < 0:
        raise TigrisError(f"Softmax: input scale {s_in:g} is too small for TFLM's softmax", where)
    # TFLM's diff_min: differences below it give 0 (radius of the representable input range).
    radius = math.floor(((1 << TFLM_DIFF_BITS) - 1) * (1 << (31 - TFLM_DIFF_BITS)) / (1 << shift))
    d = np.arange(256, dtype=np.int64)
    scaled = qmath.srdhm(qmath.wrap32(-d << shift), mult)
    e = qmath.exp_on_negative(scaled, TFLM_DIFF_BITS)
    return np.where(-d >= -radius, e, 0).astype(np.int32), mult, shift


def tflm_softmax_lines(e: np.ndarray, axis: int) -> np.ndarray:
    """int8 outputs of TFLM's softmax from the exponentials ``e`` of every element (the table entries), per line."""
    e = e.astype(np.int64)
    s = qmath.wrap32(qmath.rdbpot(e, TFLM_ACC_BITS).sum(axis=axis, keepdims=True))
    r, ex = qmath.reciprocal_q31(s, TFLM_ACC_BITS)
    ex = np.broadcast_to(ex, e.shape) + 31 - 8
    y = np.where(ex > 31, 0, qmath.rdbpot(qmath.srdhm(np.broadcast_to(r, e.shape), e), np.minimum(ex, 31))) - 128
    return np.clip(y, -128, 127)


def exp_table(s_in: float, k: int) -> np.ndarray:
    d = np.arange(256, dtype=np.float64)
    return np.rint(np.exp(-d * float(np.float32(s_in))) * float(1 << k)).astype(np.int32)


class Softmax(OpKind):
    name = "softmax"
    ir_ops = ("Softmax",)
    ONNX_OPS = {"Softmax": "any axis from opset 13 (the last axis before), beta 1"}
    TILING_DOC = "pointwise unless the axis is the row axis (then structural)"
    PARAMS = ("AXIS", "MULT", "SHIFT", "NUMERICS")
    CONSTS = ("EXP",)

    def check_operands(self, graph: AnalyzedGraph, op: Op) -> str | None:
        why = super().check_operands(graph, op)
        if why is None and op.attrs.get("coerce_2d"):
            why = "pre-opset-13 Softmax over a non-final axis"
        if why is None and float(op.attrs.get("beta", 1.0)) != 1.0:
            why = f"Softmax with beta {op.attrs['beta']} (a TFLite option; the kernels compute beta = 1)"
        return why

    def tiling(self, graph: AnalyzedGraph, op: Op):
        """Spatial rule 8: a Softmax whose lines do not run along the row axis (e.g. over the channels of an NHWC
        tensor) is pointwise, each line lying inside one row; over the row axis it needs every row."""
        x = graph.tensors[op.inputs[0]]
        if x.layout not in ROW_LAYOUTS:
            return "structural"
        axis = int(op.attrs.get("axis", len(x.shape) - 1))
        axis += len(x.shape) if axis < 0 else 0
        # nhwc keeps logical H (2) on the row axis; nwc keeps L (2) there
        return "pointwise" if axis != 2 else "structural"

    def lower(self, graph: AnalyzedGraph, op: Op) -> Lowered:
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        axis = int(op.attrs.get("axis", len(x.shape) - 1))
        if axis < 0:
            axis += len(x.shape)
        pa = logical_to_phys_axis(x, axis)
        params = {"AXIS": pa}
        consts = {}
        if dtype_kind(graph, op) == "int8" and graph.numerics == "tflm":
            s_in, _ = per_tensor(x, "Softmax input")
            s_out, zp_out = per_tensor(y, "Softmax output")
            line = tensor_view_dims(x)[pa]
            if (float(np.float32(s_out)), zp_out) != (1.0 / 256, -128):
                raise TigrisError(f"Softmax with numerics tflm needs output scale 1/256 and zero point -128 (TFLM's "
                                  f"rule), got {s_out:g} and {zp_out}", op.name)
            if line > TFLM_MAX_LINE:
                raise TigrisError(f"Softmax with numerics tflm: {line} classes exceed {TFLM_MAX_LINE}", op.name)
            table, mult, shift = tflm_exp_table(s_in, float(op.attrs.get("beta", 1.0)), op.name)
            params.update(MULT=mult, SHIFT=shift, NUMERICS=1)
            consts["EXP"] = table
        elif dtype_kind(graph, op) == "int8":
            s_in, _ = per_tensor(x, "Softmax input")
            s_out, _ = per_tensor(y, "Softmax output")
            mult, shift = quantize_multiplier(1.0 / s_out, op.name)
            line = tensor_view_dims(x)[pa]
            k = min(K_MAX, 62 - (31 - shift) - int(line).bit_length())
            if k < 8:
                raise TigrisError(f"Softmax: output scale {s_out:g} with {line} classes leaves no precision", op.name)
            params["MULT"], params["SHIFT"] = mult, shift
            consts["EXP"] = exp_table(s_in, k)
        return Lowered(self.name, op.name, [op.inputs[0]], [op.outputs[0]], params=params, consts=consts,
                       macs=y.numel * 4)

    def reference(self, low: Lowered, inputs: Sequence[TensorView], out: TensorView) -> None:
        xv = inputs[0]
        a = low.params["AXIS"]
        if a == 1 and (out.rows != out.dims[1] or xv.rows != xv.dims[1]):
            raise TileError("Softmax along the row axis needs whole views")
        lo = out.row0 - xv.row0
        if lo < 0 or out.row0 + out.rows > xv.row0 + xv.rows:
            raise TileError("Softmax input band misses output rows")
        x = xv.data[:, lo:lo + out.rows]
        if out.dtype == "float32":
            x = x.astype(np.float32)
            e = np.exp(x - x.max(axis=a, keepdims=True)).astype(np.float32)
            out.data[...] = e / e.sum(axis=a, keepdims=True, dtype=np.float32)
            return
        table = low.consts["EXP"].astype(np.int64)
        q = x.astype(np.int64)
        d = q.max(axis=a, keepdims=True) - q
        e = table[d]
        if low.params.get("NUMERICS", 0):
            out.data[...] = tflm_softmax_lines(e, a).astype(out.data.dtype)
            return
        s = e.sum(axis=a, keepdims=True)
        r = div_round_half_even(e * low.params["MULT"], s << (31 - low.params["SHIFT"]))
        out.data[...] = np.clip(r + out.zero_point, -128, 127).astype(out.data.dtype)
