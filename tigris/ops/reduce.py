"""ReduceMean, ReduceSum, ReduceMax, ReduceL2 over any axes of a tensor of rank <= 4, with or without keepdims,
float32 and int8; whole-tensor (structural) for tiling.

The kernel walks the input's physical view (4 dims): ``R0..R3`` flag the view axes that are reduced, ``OS0..OS3``
give, per view axis, the output element stride (0 on a reduced axis), which places every kept index in the output's
own physical order whatever the two layouts are (an NHWC-exported model's mean over logical axes [1, 2] included).
``COUNT`` is the number of elements reduced into each output.

float: sum / mean (sum / COUNT) / max / sqrt(sum of squares), accumulated in float32 in the view's order.
int8: with ``d = q - zp_in`` accumulated exactly as integers (sum, max, or sum of squares), then in float32 steps
``r = (float)acc * s_in`` (L2: ``sqrtf((float)acc) * s_in``; mean: ``r / (float)COUNT``) and QuantizeLinear
(``r / s_out`` in float32, NaN -> 0, saturated, halves to even): every step is one IEEE operation, so C and NumPy agree
bit for bit, and ONNX Runtime's DQ -> reduce -> Q (which sums in float) within 1 LSB.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from tigris.ir import AnalyzedGraph, Op
from tigris.layout import from_physical, tensor_view_dims, to_physical
from tigris.ops._common import dtype_kind, per_tensor
from tigris.ops.base import Lowered, OpKind, TensorView

FUNCS = {"ReduceMean": 1, "ReduceSum": 2, "ReduceMax": 3, "ReduceL2": 4}


def _axes(graph: AnalyzedGraph, op: Op) -> list[int] | None:
    """The reduced logical axes (normalized, sorted), or None when they are not known at compile time."""
    rank = len(graph.tensors[op.inputs[0]].shape)
    axes = op.attrs.get("axes")
    if axes is None and len(op.inputs) > 1 and op.inputs[1]:
        if op.inputs[1] not in graph.weights:
            return None
        axes = [int(v) for v in np.asarray(graph.weights[op.inputs[1]]).reshape(-1)]
    if axes is None or len(axes) == 0:
        if int(op.attrs.get("noop_with_empty_axes", 0)):
            return []
        return list(range(rank))
    return sorted({int(a) % rank for a in axes})


def _strides(graph: AnalyzedGraph, op: Op, axes: list[int]) -> tuple[list[int], list[int]]:
    """(R, OS) of the module doc for input view axes 0..3."""
    x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    keep = bool(int(op.attrs.get("keepdims", 1)))
    vdims = tensor_view_dims(x)
    # the logical axis behind each view axis: step one along it and see which logical index moves
    idx = np.indices(x.shape) if x.shape else np.zeros((0,))
    logical_of = [-1] * 4
    for p in range(4):
        if vdims[p] == 1:
            continue
        for ax in range(len(x.shape)):
            ph = to_physical(idx[ax], x.shape, x.layout).reshape(vdims)
            step = [0, 0, 0, 0]
            step[p] = 1
            if ph[tuple(step)] != ph[0, 0, 0, 0]:
                logical_of[p] = ax
    # the output's physical offset of each logical output index
    ov = tensor_view_dims(y)
    offs = np.arange(int(np.prod(ov)), dtype=np.int64).reshape(ov)
    off_log = from_physical(offs, y.shape, y.layout).reshape(y.shape)
    out_stride = []
    for j in range(len(y.shape)):
        if y.shape[j] == 1:
            out_stride.append(0)
            continue
        e = [0] * len(y.shape)
        e[j] = 1
        out_stride.append(int(off_log[tuple(e)] - off_log[(0,) * len(y.shape)]))
    R, OS = [0] * 4, [0] * 4
    for p in range(4):
        ax = logical_of[p]
        if ax < 0:
            continue
        if ax in axes:
            R[p] = 1
            continue
        j = ax if keep else ax - sum(1 for a in axes if a < ax)
        OS[p] = out_stride[j]
    return R, OS


class Reduce(OpKind):
    name = "reduce"
    ir_ops = tuple(FUNCS)
    ONNX_OPS = {"ReduceMean": "any constant axes (attribute or operand), keepdims, noop_with_empty_axes",
                "ReduceSum": "any constant axes (attribute or operand), keepdims, noop_with_empty_axes",
                "ReduceMax": "any constant axes (attribute or operand), keepdims, noop_with_empty_axes",
                "ReduceL2": "any constant axes (attribute or operand), keepdims, noop_with_empty_axes"}
    PARAMS = ("FUNC", "R0", "R1", "R2", "R3", "OS0", "OS1", "OS2", "OS3", "COUNT")
    TILING = "structural"
    SINGLE_INPUT = False

    def check_operands(self, graph: AnalyzedGraph, op: Op) -> str | None:
        ins = [i for i in op.inputs if i]
        if len(ins) > 2 or (len(ins) == 2 and ins[1] not in graph.weights):
            return "axes are not a constant"
        x = graph.tensors[ins[0]]
        if any(d == 0 for d in x.shape):
            return "zero-size input"
        return None

    def lower(self, graph: AnalyzedGraph, op: Op) -> Lowered:
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        axes = _axes(graph, op)
        R, OS = _strides(graph, op, axes or [])
        vd = tensor_view_dims(x)
        count = int(np.prod([vd[p] for p in range(4) if R[p]])) if any(R) else 1
        params = {"FUNC": FUNCS[op.op_type], "COUNT": count}
        for p in range(4):
            params[f"R{p}"], params[f"OS{p}"] = R[p], OS[p]
        if dtype_kind(graph, op) == "int8":
            per_tensor(x, f"{op.op_type} input")
            per_tensor(y, f"{op.op_type} output")
        return Lowered(self.name, op.name, [op.inputs[0]], [op.outputs[0]], params=params, macs=x.numel)

    def reference(self, low: Lowered, inputs: Sequence[TensorView], out: TensorView) -> None:
        p = low.params
        xv = inputs[0]
        x = xv.data.reshape(xv.dims)
        red = tuple(i for i in range(4) if p[f"R{i}"])
        func = p["FUNC"]
        if out.dtype == "float32":
            xf = x.astype(np.float32)
            if func == 3:
                r = xf.max(axis=red, keepdims=True) if red else xf
            elif func == 4:
                r = np.sqrt((xf * xf).sum(axis=red, keepdims=True, dtype=np.float32))
            else:
                r = xf.sum(axis=red, keepdims=True, dtype=np.float32)
                if func == 1:
                    r = r / np.float32(p["COUNT"])
        else:
            d = x.astype(np.int64) - xv.zero_point
            s_in = np.float32(xv.scale)
            if func == 3:
                acc = d.max(axis=red, keepdims=True) if red else d
            elif func == 4:
                acc = (d * d).sum(axis=red, keepdims=True)
            else:
                acc = d.sum(axis=red, keepdims=True)
            if func == 4:
                r = np.sqrt(acc.astype(np.float32)) * s_in
            else:
                r = acc.astype(np.float32) * s_in
            if func == 1:
                r = r / np.float32(p["COUNT"])
            quot = np.clip(np.nan_to_num(r.astype(np.float32) / np.float32(out.scale), nan=0.0), np.float32(-1e9),
                           np.float32(1e9))
            r = np.clip(np.rint(quot).astype(np.int64) + out.zero_point, -128, 127)
        # place each kept index at its output offset
        kept = np.indices(r.shape).reshape(4, -1)
        off = sum(kept[i] * p[f"OS{i}"] for i in range(4))
        flat = out.data.reshape(-1)
        flat[off] = r.reshape(-1).astype(flat.dtype)
