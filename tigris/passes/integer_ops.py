"""Integer ops: ONNX ``MatMulInteger`` and ``ConvInteger`` (8-bit operands, exact int32 results).

``MatMulInteger(A, B, a_zero_point, b_zero_point)`` is ``sum_k (A - za) * (B - zb)`` in int32. That is the int8
product of the ``matmul`` kind with every scale 1: each operand is annotated with ``QuantParam(scale 1, its zero
point)`` and the output with ``QuantParam(1, 0)``, typed int32, which the kind writes unrequantized.

``ConvInteger(x, w, x_zero_point, w_zero_point)`` becomes ``Cast(Conv(DequantizeLinear(x), w - zw))``: x annotated
with ``QuantParam(1, zx)`` and dequantized to the exact float32 values ``x - zx``, the constant weights as the exact
floats ``w - zw`` (per output channel zero points allowed), a float32 Conv and a Cast to int32. Every partial sum is
an integer below 2**24 in magnitude (checked per output channel: ``255 * sum |w - zw| < 2**24``, else declined), so
the float32 convolution is exact in any summation order and the Cast returns ONNX's int32 result.

Rules:
1. The zero points must be constants with one value (a per-row / per-column vector of equal values counts as one);
   absent ones are 0.
2. A uint8 operand is restated as int8 (value - 128, zero point - 128), like the QDQ fold does; a graph input keeps
   its declared uint8 interface (``graph.boundary``), so the caller still passes uint8.
3. An activation operand must be a graph input without a quantization of its own (the int8 operand's producer would
   otherwise have to write the restated values); other cases are declined and the op stays unsupported.

Why here: before QDQ fold, whose rule 7 and the kinds after it expect int8 tensors with QuantParams; the rewrite needs
nothing the later passes provide.

Postcondition: no MatMulInteger or ConvInteger op remains unless declined.
"""
from __future__ import annotations

import numpy as np

from tigris.ir import AnalyzedGraph, Boundary, Op, QuantParam, Tensor
from tigris.passes._util import Decline, PassResult, fresh_name, set_const, tidy

NAME = "integer_ops"
ONNX_REWRITES = {"MatMulInteger": "MatMul with unit scales and an int32 accumulator output (the matmul kind)",
                 "ConvInteger": "Cast(Conv(DequantizeLinear(x), w - zw)) to int32, exact while 255 * sum|w - zw| "
                                "< 2**24 per output channel"}
FLOAT_EXACT = 2**24


def _zp(g: AnalyzedGraph, name: str) -> int | None | str:
    if not name:
        return 0
    if name not in g.weights:
        return "its zero point is not a constant"
    v = np.asarray(g.weights[name]).astype(np.int64).ravel()
    if v.size == 0 or np.any(v != v[0]):
        return "its zero point has several values"
    return int(v[0])


def run(graph: AnalyzedGraph) -> PassResult:
    if not any(op.op_type in ("MatMulInteger", "ConvInteger") for op in graph.ops):
        return PassResult(graph)
    g = graph.replace()
    declined: list[Decline] = []
    n = 0
    ops = []
    for op in graph.ops:
        if op.op_type == "ConvInteger":
            got = _conv_integer(g, op)
            if isinstance(got, str):
                declined.append(Decline(op.name, got))
                ops.append(op)
            else:
                ops += got
                n += 1
            continue
        if op.op_type != "MatMulInteger":
            ops.append(op)
            continue
        ins = list(op.inputs) + [""] * (4 - len(op.inputs))
        zps = [_zp(g, ins[2]), _zp(g, ins[3])]
        why = next((z for z in zps if isinstance(z, str)), None)
        for x in ins[:2]:
            t = g.tensors[x]
            if why:
                break
            if t.dtype not in ("uint8", "int8"):
                why = f"operand {x} has dtype {t.dtype}"
            elif x not in g.weights and (x not in g.inputs or t.quant is not None):
                why = f"operand {x} is not a graph input or a constant"
        if why:
            declined.append(Decline(op.name, why))
            ops.append(op)
            continue
        for x, z in zip(ins[:2], zps):
            _annotate(g, x, z)
        y = g.tensors[op.outputs[0]]
        g.tensors[y.name] = Tensor(y.name, y.shape, "int32",
                                   QuantParam(np.array([1.0], np.float32), np.array([0], np.int64)), y.layout)
        ops.append(op.with_(op_type="MatMul", inputs=tuple(ins[:2]), attrs={}))
        n += 1
    g.ops = ops
    return PassResult(tidy(g), n, tuple(declined))


def _annotate(g: AnalyzedGraph, x: str, z: int) -> None:
    """Rule 2: ``x`` as int8 with ``QuantParam(1, z)`` (uint8 restated; a graph input keeps its declared form)."""
    t = g.tensors[x]
    shift = 128 if t.dtype == "uint8" else 0
    q = QuantParam(np.array([1.0], np.float32), np.array([z - shift], np.int64))
    if x in g.weights:
        g.weights[x] = (np.asarray(g.weights[x]).astype(np.int16) - shift).astype(np.int8)
    else:
        b = g.boundary.get(x) or Boundary(x, t.shape, t.dtype)
        g.boundary[x] = Boundary(b.name, b.shape, b.dtype, QuantParam(q.scale, np.array([z], np.int64)))
    g.tensors[x] = Tensor(x, t.shape, "int8", q, t.layout)


def _conv_integer(g: AnalyzedGraph, op) -> list | str:
    from tigris.passes.explicit_attrs import _fill

    ins = list(op.inputs) + [""] * (4 - len(op.inputs))
    x, w = ins[0], ins[1]
    xt = g.tensors[x]
    zx = _zp(g, ins[2])
    if isinstance(zx, str):
        return zx
    if xt.dtype not in ("uint8", "int8") or x not in g.inputs or xt.quant is not None:
        return f"operand {x} is not an 8-bit graph input"
    if w not in g.weights:
        return "the weight is not a constant"
    wv = np.asarray(g.weights[w]).astype(np.int64)
    oc = wv.shape[0]
    zw = np.zeros(oc, np.int64)
    if ins[3]:
        if ins[3] not in g.weights:
            return "the weight zero point is not a constant"
        zv = np.asarray(g.weights[ins[3]]).astype(np.int64).ravel()
        if zv.size not in (1, oc):
            return "the weight zero point is neither per tensor nor per output channel"
        zw = np.broadcast_to(zv, (oc,))
    wf = wv - zw.reshape((oc,) + (1,) * (wv.ndim - 1))
    if np.any(255 * np.abs(wf).reshape(oc, -1).sum(axis=1) >= FLOAT_EXACT):
        return "the float32 convolution would not be exact (255 * sum |w - zw| >= 2**24 for an output channel)"
    xf = fresh_name(g, f"{x}_exact")
    g.tensors[xf] = Tensor(xf, xt.shape, "float32")
    wn = fresh_name(g, f"{w}_exact")
    set_const(g, wn, wf.astype(np.float32))
    y = g.tensors[op.outputs[0]]
    yf = fresh_name(g, f"{y.name}_exact", [xf, wn])
    g.tensors[yf] = Tensor(yf, y.shape, "float32")
    taken = [xf, wn, yf]
    dq = Op(fresh_name(g, f"{op.name}_dequantize", taken), "DequantizeLinear", (x,), (xf,), {})
    conv = Op(fresh_name(g, f"{op.name}_conv", taken + [dq.name]), "Conv", (xf, wn), (yf,), dict(op.attrs))
    filled = _fill(g, conv)
    if isinstance(filled, str):
        return filled
    _annotate(g, x, zx)
    cast = Op(op.name, "Cast", (yf,), (y.name,), {"to": 6})
    g.tensors[y.name] = Tensor(y.name, y.shape, "int32", None, y.layout)
    return [dq, filled, cast]
