"""Concat of up to TGRS_MAX_INPUTS (4) tensors along any axis of the rank-4 physical view, float32 and int8.

``AXIS`` is the axis of the view ``{N, H, W, C}``. The IR's ``axis`` is already physical after pass 14; the pass also
keeps ``logical_axis``, which lowering prefers (it maps it through the tensor's layout, so every layout agrees with
``tigris.layout``).

int8: input ``i`` is requantized into the output's quantization, ``zo + requant(q - zi, M_i, S_i)`` with
``(M_i, S_i)`` encoding ``s_i / s_out``, rounded halves to even (:func:`requantize_even`, docs/numerics.md), and
saturation to [-128, 127]. When scale and zero point agree this is the
identity exactly (``M = 2**30, S = 1``), and the C kernel copies bytes.

Band-aware: along W, C or N every input holds the output's rows; along H (the row axis) input ``i`` covers output
rows ``[off_i, off_i + H_i)`` and supplies the part of the output band that falls there.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from tigris.ir import AnalyzedGraph, Op, TigrisError
from tigris.layout import tensor_view_dims
from tigris.ops._common import (TileError, dtype_kind, logical_to_phys_axis, per_tensor, requantize_even, same_bytes,
                                view_elem_bytes)
from tigris.ops.base import MAX_INPUTS, Lowered, OpKind, TensorView, cols_reason
from tigris.plan.types import ALIGN
from tigris.ops.qmath import quantize_multiplier

# False: a join in place needs one row and a first input that is its own buffer (the earlier rule;
# bench/plan_quality.py --cols plans its row-tiles baseline so). True: a join along the rows may have many, and the
# first input may be an alias naming its root's bytes whole (docs/memory-planning.md "Joins in place").
ROW_JOINS = True

# How pass 14 numbers axes of a rank-3 (NWC) tensor when it gives no logical axis: N, L, C = 0, 1, 2.
_NWC_VIEW_AXIS = {0: 0, 1: 1, 2: 3}


def view_axis(graph: AnalyzedGraph, op: Op) -> int:
    y = graph.tensors[op.outputs[0]]
    a = op.attrs
    if "logical_axis" in a:
        ax = int(a["logical_axis"])
        return logical_to_phys_axis(y, ax + len(y.shape) if ax < 0 else ax)
    ax = int(a.get("axis", 0))
    if ax < 0:
        raise TigrisError("Concat axis must be non-negative after normalization", op.name)
    if y.layout == "nhwc":
        return ax
    if y.layout == "nwc":
        return _NWC_VIEW_AXIS[ax]
    return ax + 4 - len(y.shape)


class Concat(OpKind):
    name = "concat"
    ir_ops = ("Concat",)
    ONNX_OPS = {"Concat": "any axis (negative too), up to 4 inputs, each with its own int8 encoding"}
    INT8_EXACTNESS = "bit-exact when the encodings agree, else <= 1 LSB"
    TILING_DOC = "pointwise; structural along H (a dense-rows join along H is pointwise)"
    SINGLE_INPUT = False
    TILING = "pointwise"

    def check_operands(self, graph: AnalyzedGraph, op: Op) -> str | None:
        ins = [n for n in op.inputs if n]
        if any(graph.is_const(n) for n in ins):
            return "a constant operand (e.g. a class token) is not supported"
        if len(ins) > MAX_INPUTS:
            return f"{len(ins)} inputs (the runtime takes at most {MAX_INPUTS})"
        return None if op.attrs.get("axis_physical") else "axis was not normalized"

    def mixes_rows(self, graph: AnalyzedGraph, op: Op) -> str | None:
        # A join along H made by the dense-rows rewrite (``row_bands``, docs/memory-planning.md "Dense ends as
        # rows") runs on row bands, each input supplying the output rows it covers (input_rows_of); any other stays
        # untiled, so the plans of the models that have one are what they were.
        if int(op.attrs.get("axis", -1)) == 1 and not op.attrs.get("row_bands"):
            return "Concat along H"
        return None

    def input_rows_of(self, graph: AnalyzedGraph, op: Op, name: str, a: int, b: int) -> tuple[int, int] | None:
        if int(op.attrs.get("axis", -1)) != 1 or not op.attrs.get("row_bands"):
            return None
        off = 0
        for n in op.inputs:  # input i covers output rows [off_i, off_i + H_i)
            h = tensor_view_dims(graph.tensors[n])[1]
            if n == name:
                lo, hi = max(a, off) - off, min(b, off + h) - off
                return (lo, hi) if hi > lo else (0, 0)
            off += h
        return None

    # Along C (or N) output pixel (h, w) is its inputs' pixels (h, w) side by side: per pixel along W, with every
    # input of the output's width. Along W a band would need other columns of the inputs.
    COLS = "pixel"
    COL_AXIS = ("AXIS",)

    def col_local(self, graph: AnalyzedGraph, op: Op) -> str | None:
        if view_axis(graph, op) == 2:
            return "Concat along W"
        return cols_reason(graph, op, per_pixel=True)
    def byte_views(self, graph: AnalyzedGraph, op: Op) -> tuple[str, tuple[tuple[str, int], ...]] | None:
        # Along the outermost axis of the stored view with more than one element before it (every axis before it
        # of size 1), input i is one contiguous run of the output: the inputs side by side, in order. Each run
        # starts at a multiple of ALIGN (every planned offset is one) and holds the input's bytes unchanged.
        ins = [n for n in op.inputs if n]
        y = graph.tensors[op.outputs[0]]
        if len(ins) < 2 or len(set(ins)) != len(ins) or any(graph.is_const(n) for n in ins):
            return None
        axis = view_axis(graph, op)
        yd = tensor_view_dims(y)
        if any(d != 1 for d in yd[:axis]):
            return None
        inner = view_elem_bytes(y)
        for d in yd[axis + 1:]:
            inner *= d
        members, off = [], 0
        for n in ins:
            x = graph.tensors[n]
            if not same_bytes(x, y) or off % ALIGN:
                return None
            members.append((n, off))
            off += tensor_view_dims(x)[axis] * inner
        return (op.outputs[0], tuple(members)) if off == y.nbytes else None

    # concat.c leaves a segment alone whose source is its destination (an identity copy), so the output may sit over
    # its first input when that input's bytes are the output's first bytes: a join whose earlier part is already in
    # place grows by the later parts only (docs/memory-planning.md "Joins in place").
    prefix_in_place = True

    def prefix_over(self, graph: AnalyzedGraph, op: Op, x: str) -> bool:
        ins = [n for n in op.inputs if n]
        if not ins or ins[0] != x or ins.count(x) != 1 or graph.is_const(x) or len(op.outputs) != 1:
            return False
        tx, ty = graph.tensors[x], graph.tensors[op.outputs[0]]
        if tx.dtype != ty.dtype or tx.dtype not in ("float32", "int8"):
            return False
        axis = view_axis(graph, op)
        yd, xd = tensor_view_dims(ty), tensor_view_dims(tx)
        # nothing outside the axis before it: x is the output's prefix; and one row (so a band is the whole tensor)
        # unless the join is along the rows, which never runs on bands (it mixes rows)
        if (yd[1] != 1 and (axis != 1 or not ROW_JOINS)) or any(yd[i] != 1 for i in range(axis)) \
                or any(xd[i] != yd[i] for i in range(4) if i != axis):
            return False
        if tx.dtype == "int8":  # the kernel copies bytes only when the encodings agree
            try:
                sx, zx = per_tensor(tx, "Concat input")
                sy, zy = per_tensor(ty, "Concat output")
            except TigrisError:
                return False
            return zx == zy and quantize_multiplier(sx / sy, op.name) == (1 << 30, 1)
        return True

    PARAMS = ("AXIS",) + tuple(f"M{i}" for i in range(MAX_INPUTS)) + tuple(f"S{i}" for i in range(MAX_INPUTS))

    def lower(self, graph: AnalyzedGraph, op: Op) -> Lowered:
        ins = [n for n in op.inputs if n]
        if any(graph.is_const(n) for n in ins):
            raise TigrisError("Concat of a constant is not supported", op.name)
        if not 1 <= len(ins) <= MAX_INPUTS:
            raise TigrisError(f"Concat of {len(ins)} inputs (the runtime takes at most {MAX_INPUTS})", op.name)
        y = graph.tensors[op.outputs[0]]
        axis = view_axis(graph, op)
        yd = tensor_view_dims(y)
        total = 0
        for n in ins:
            d = tensor_view_dims(graph.tensors[n])
            if any(d[i] != yd[i] for i in range(4) if i != axis):
                raise TigrisError(f"Concat input {n} dims {d} do not match output {yd}", op.name)
            total += d[axis]
        if total != yd[axis]:
            raise TigrisError("Concat inputs do not add up to the output", op.name)
        params = {"AXIS": axis}
        if dtype_kind(graph, op) == "int8":
            so, _ = per_tensor(y, "Concat output")
            for i, n in enumerate(ins):
                si, _ = per_tensor(graph.tensors[n], "Concat input")
                params[f"M{i}"], params[f"S{i}"] = quantize_multiplier(si / so, op.name)
        return Lowered(self.name, op.name, ins, [op.outputs[0]], params=params, macs=y.numel)

    def reference(self, low: Lowered, inputs: Sequence[TensorView], out: TensorView) -> None:
        axis = low.params["AXIS"]
        r0, r1 = out.row0, out.row0 + out.rows
        int8 = out.dtype in ("int8", "uint8")
        parts = []
        off = 0
        for i, v in enumerate(inputs):
            if axis == 1:
                a, b = max(r0, off), min(r1, off + v.dims[1])  # output rows this input supplies
                off += v.dims[1]
                if b <= a:
                    continue
                a, b = a - (off - v.dims[1]), b - (off - v.dims[1])
            else:
                a, b = r0, r1
            if a < v.row0 or b > v.row0 + v.rows:
                raise TileError(f"Concat input {i} band misses rows [{a},{b})")
            x = v.data[:, a - v.row0:b - v.row0]
            if int8:
                q = requantize_even(x.astype(np.int64) - v.zero_point, low.params[f"M{i}"], low.params[f"S{i}"])
                x = np.clip(q + out.zero_point, -128, 127)
            parts.append(x)
        out.data[...] = np.concatenate(parts, axis=axis).astype(out.data.dtype)
