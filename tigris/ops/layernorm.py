"""The ``layernorm`` kind: LayerNormalization (opset 17) over the trailing logical axes ``[axis, rank)``, float32
and int8; the decomposed form is fused into it by the pass ``layernorm_fuse``.

``y = (x - mean) / sqrt(var + epsilon) * gamma + beta`` with mean and (biased) variance over the normalized axes,
``gamma``/``beta`` (consts ``GAMMA``, ``BETA``, float32, broadcast to the normalized shape in row-major order).

The kernel is strided: ``D0..D3`` are the logical dims padded on the left to rank 4, ``S0..S3`` their element
strides in the physical view (``tigris.ops.matmul.logical_strides``), ``AXIS`` the first normalized padded axis; so
a ``[1, tokens, dim]`` tensor normalized over ``dim`` works whatever its layout (``nwc`` stores it transposed).
Input and output share shape and layout. Structural for tiling.

float: ``mean = sum(x) / n`` and ``var = sum((x - mean)**2) / n`` in float32 over the normalized elements in order,
``r = 1 / sqrtf(var + EPS)``, ``y = (x - mean) * r * gamma + beta``.

int8 (QDQ: DequantizeLinear -> LayerNormalization -> QuantizeLinear): with ``d = q - zp_in``, the sums
``S1 = sum d`` and ``S2 = sum d**2`` are exact integers and ``V = n * S2 - S1**2`` (int64) is ``n**2`` times the
variance in input steps; then, every step one float32 IEEE operation in this order, so C and NumPy agree bit for
bit::

    m = (float)S1 / (float)n;   v = (float)V / ((float)n * (float)n)
    k = SIN / sqrtf(v * SIN2 + EPS)                  SIN = s_in, SIN2 = s_in * s_in (float32)
    y = ((float)d - m) * k * gamma + beta;   q = sat8(rint(y / s_out) + zp_out)   (NaN -> 0, halves to even)

and ONNX Runtime's float evaluation of the QDQ model within 1 LSB.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from tigris.ir import AnalyzedGraph, Op
from tigris.ops._common import dtype_kind, per_tensor
from tigris.ops.base import Lowered, OpKind, TensorView, bits_f32, f32_bits
from tigris.ops.matmul import logical_strides

N_MAX = 1 << 20  # normalized elements per row in int8 (keeps n * S2 and S1**2 far inside int64)


def _real(graph: AnalyzedGraph, name: str) -> np.ndarray:
    """A constant operand's real values in float32, as DequantizeLinear computes them (``(q - zp) * scale``; a QDQ
    model quantizes Scale to int8 and B to int32)."""
    w = np.asarray(graph.weights[name])
    q = graph.tensors[name].quant
    if q is None:
        return w.astype(np.float32)
    s = np.asarray(q.scale, np.float32).ravel()
    z = np.asarray(q.zero_point, np.int64).ravel()
    if s.size > 1:
        shape = [1] * w.ndim
        shape[(q.axis or 0) % max(w.ndim, 1)] = s.size
        s, z = s.reshape(shape), z.reshape(shape)
    return ((w.astype(np.int64) - z).astype(np.float32) * s).astype(np.float32)


def _axis(graph: AnalyzedGraph, op: Op) -> int:
    rank = len(graph.tensors[op.inputs[0]].shape)
    return int(op.attrs.get("axis", -1)) % max(rank, 1)


class LayerNorm(OpKind):
    name = "layernorm"
    ir_ops = ("LayerNormalization",)
    ONNX_OPS = {"LayerNormalization": "any axis (negative too), epsilon, stash_type, constant Scale and B (optional); "
                                      "the Mean / InvStdDev outputs through a decomposition of their own (float); "
                                      "the decomposed form (ReduceMean, Sub, Pow / Mul, ReduceMean, Add, Sqrt, "
                                      "Div / Reciprocal-Mul, Mul, Add) fused"}
    PARAMS = ("D0", "D1", "D2", "D3", "S0", "S1", "S2", "S3", "AXIS", "EPS", "SIN", "SIN2")
    CONSTS = ("GAMMA", "BETA")
    TILING = "structural"
    SINGLE_INPUT = False

    def check_operands(self, graph: AnalyzedGraph, op: Op) -> str | None:
        ins = list(op.inputs)
        if len(ins) < 2 or not ins[1] or not graph.is_const(ins[1]) or \
                (len(ins) > 2 and ins[2] and not graph.is_const(ins[2])):
            return "Scale or B is not a constant"
        if len([o for o in op.outputs if o]) > 1:
            return "the Mean / InvStdDev outputs were not split off (pass layernorm_fuse)"
        x, y = graph.tensors[ins[0]], graph.tensors[op.outputs[0]]
        if x.shape != y.shape or x.layout != y.layout:
            return "output shape or layout differs from the input's"
        if len(x.shape) == 0:
            return "LayerNormalization of a scalar"
        ax = _axis(graph, op)
        norm = tuple(x.shape[ax:])
        for n in ins[1:]:
            if n and not _broadcasts(graph.weights[n].shape, norm):
                return f"{n} of shape {list(graph.weights[n].shape)} does not broadcast to {list(norm)}"
        return None

    def check_dtype(self, graph: AnalyzedGraph, op: Op, int8: bool) -> str | None:
        if int8:
            x = graph.tensors[op.inputs[0]]
            n = int(np.prod(x.shape[_axis(graph, op):]))
            if n > N_MAX:
                return f"int8 LayerNormalization over {n} elements (at most {N_MAX})"
        return None

    def lower(self, graph: AnalyzedGraph, op: Op) -> Lowered:
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        rank = len(x.shape)
        ax = _axis(graph, op)
        dims = [1] * (4 - rank) + [int(d) for d in x.shape]
        strides = [0] * (4 - rank) + logical_strides(x.shape, x.layout)
        norm = tuple(x.shape[ax:])
        g = np.broadcast_to(_real(graph, op.inputs[1]), norm).reshape(-1)
        bname = op.inputs[2] if len(op.inputs) > 2 and op.inputs[2] else None
        b = (np.broadcast_to(_real(graph, bname), norm).reshape(-1) if bname
             else np.zeros(g.size, np.float32))
        params = {f"D{i}": dims[i] for i in range(4)}
        params.update({f"S{i}": strides[i] for i in range(4)})
        params["AXIS"] = ax + 4 - rank
        params["EPS"] = f32_bits(float(np.float32(op.attrs.get("epsilon", 1e-5))))
        if dtype_kind(graph, op) == "int8":
            s_in, _ = per_tensor(x, "LayerNormalization input")
            per_tensor(y, "LayerNormalization output")
            s = np.float32(s_in)
            params["SIN"], params["SIN2"] = f32_bits(float(s)), f32_bits(float(s * s))
        return Lowered(self.name, op.name, [x.name], [y.name], params=params,
                       consts={"GAMMA": np.ascontiguousarray(g), "BETA": np.ascontiguousarray(b)},
                       macs=x.numel * 4)

    def reference(self, low: Lowered, inputs: Sequence[TensorView], out: TensorView) -> None:
        p = low.params
        dims = [int(p[f"D{i}"]) for i in range(4)]
        ax = int(p["AXIS"])
        idx = np.indices(dims).reshape(4, -1)
        off = sum(idx[i] * int(p[f"S{i}"]) for i in range(4))  # logical row-major order -> physical offset
        n = int(np.prod(dims[ax:]))
        xv = inputs[0]
        x = np.asarray(xv.data).reshape(-1)[off].reshape(-1, n)
        gamma = np.asarray(low.consts["GAMMA"], np.float32)
        beta = np.asarray(low.consts["BETA"], np.float32)
        flat = out.data.reshape(-1)
        if out.dtype == "float32":
            xd = x.astype(np.float64)
            mean = xd.mean(axis=1, keepdims=True)
            var = ((xd - mean) ** 2).mean(axis=1, keepdims=True)
            r = (xd - mean) / np.sqrt(var + np.float64(bits_f32(p["EPS"])))
            flat[off] = (r * gamma + beta).astype(np.float32).reshape(-1)
            return
        f32 = np.float32
        d = x.astype(np.int64) - xv.zero_point
        s1 = d.sum(axis=1, keepdims=True)
        v = n * (d * d).sum(axis=1, keepdims=True) - s1 * s1
        m = s1.astype(f32) / f32(n)
        var = v.astype(f32) / (f32(n) * f32(n))
        with np.errstate(all="ignore"):
            k = f32(bits_f32(p["SIN"])) / np.sqrt(var * f32(bits_f32(p["SIN2"])) + f32(bits_f32(p["EPS"])))
            yv = (d.astype(f32) - m) * k * gamma + beta
            quot = yv.astype(f32) / f32(out.scale)
        quot = np.clip(np.nan_to_num(quot, nan=0.0), f32(-1e9), f32(1e9))
        q = np.clip(np.rint(quot).astype(np.int64) + out.zero_point, -128, 127)
        flat[off] = q.astype(np.int8).reshape(-1)


def _broadcasts(shape: tuple[int, ...], to: tuple[int, ...]) -> bool:
    if len(shape) > len(to):
        return False
    return all(a in (1, b) for a, b in zip(shape[::-1], to[::-1]))

