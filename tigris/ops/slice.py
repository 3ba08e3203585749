"""Slice and constant-index Gather (the normalized forms of pass slice_normalize) on rank-4 views, any element type;
int8 requantizes when the output's quantization differs from the input's.

Output element ``(o0, o1, o2, o3)`` of the view reads input element ``(i0, i1, i2, i3)`` with
``i_j = START_j + o_j * STEP_j`` on every view axis, except the axis ``GAXIS`` (-1: none) of a Gather, where
``i_j = IDX[o_j]`` (const ``IDX``, int32, one entry per output element along that axis). Lowering maps the logical
starts and steps (or the Gather axis) onto the view axes through the tensor's layout; padding axes get start 0,
step 1. So a Split of an NHWC tensor along its channels is a strided copy of a channel run per pixel, a channel
permutation or selection is a Gather along view axis 3, and a Slice of rows reads whole rows.

int8: ``zo + requant(q - zi, MULT, SHIFT)`` (``s_in / s_out``, halves to even, saturated), a byte copy when the
encodings agree (``MULT = 2**30, SHIFT = 1``, equal zero points), as Concat does.

Tiling: pointwise. Along the row axis (view axis 1) output rows ``[a, b)`` read input rows
``START_1 + [a, b) * STEP_1`` (or the hull of ``IDX[a:b]``), which ``rows_needed`` states from the op's logical
attributes (the row axis of an nhwc or nwc tensor is logical axis 2); a negative step or unsorted indices along the
rows run untiled (``mixes_rows``).

Column tiles (``COLS = "pixel"``, docs/format.md "COLS units"): a Slice or Gather that leaves W alone (start 0, step
1, the input's width; a Gather along another axis) is per pixel, output column ``c`` reads input column ``c``; so the
channel Slice of a depthwise conv's channel group runs on column bands. ``START2`` must be 0 there (``COL_ZERO``).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from tigris.ir import AnalyzedGraph, Op, TigrisError
from tigris.layout import ROW_LAYOUTS, tensor_view_dims
from tigris.ops._common import TileError, dtype_kind, per_tensor, phys_axes, requantize_even, same_bytes, view_elem_bytes
from tigris.ops.base import Lowered, OpKind, TensorView, cols_reason
from tigris.plan.types import ALIGN
from tigris.ops.qmath import quantize_multiplier

_ROW_AXIS = 2  # the logical axis an nhwc (N, C, H, W) or nwc (N, C, L) tensor stores along its view rows
_COL_AXIS = 3  # the logical axis an nhwc tensor stores along its view columns (W)


def _row_map(op: Op) -> tuple[int, int] | list[int] | None:
    """(start, step) of the logical row axis, the Gather's index list when it selects rows, or None (no rows)."""
    a = op.attrs
    if op.op_type == "Gather":
        return list(a["indices"]) if int(a["axis"]) == _ROW_AXIS else None
    if len(a.get("starts", ())) <= _ROW_AXIS:
        return None
    return int(a["starts"][_ROW_AXIS]), int(a["steps"][_ROW_AXIS])


class Slice(OpKind):
    name = "slice"
    ir_ops = ("Slice", "Gather")
    ONNX_OPS = {"Slice": "constant starts/ends/axes/steps (negative, clamped, omitted axes and steps, negative steps)",
                "Split": "any axis; sizes as operand or attribute, equal parts, num_outputs (opset 18): one Slice per "
                         "output",
                "Gather": "constant indices (scalar, 1-D, any rank; negative), any axis; evenly spaced indices run as "
                          "a Slice"}
    INT8_EXACTNESS = {"Slice": "bit-exact", "Split": "bit-exact", "Gather": "bit-exact (<= 1 LSB when the output "
                                                                            "has its own encoding)"}
    TILING_DOC = ("pointwise; along the rows output rows read the rows the start and step (or the indices) name; a "
                  "negative step or unsorted indices along the rows run untiled")
    TILING = "pointwise"
    PARAMS = ("START0", "START1", "START2", "START3", "STEP0", "STEP1", "STEP2", "STEP3", "GAXIS", "MULT", "SHIFT")
    CONSTS = ("IDX",)
    COLS = "pixel"
    COL_ZERO = ("START2",)  # a band's column 0 is the output band's own first column

    def col_local(self, graph: AnalyzedGraph, op: Op) -> str | None:
        # per pixel when W is copied as it is: output column c reads input column c (every other axis as untiled)
        a = op.attrs
        if op.op_type == "Gather":
            if int(a["axis"]) == _COL_AXIS:
                return "Gather along W"
        elif len(a.get("starts", ())) > _COL_AXIS and (int(a["starts"][_COL_AXIS]), int(a["steps"][_COL_AXIS])) != (0, 1):
            return "Slice along W"
        return cols_reason(graph, op, per_pixel=True)

    def check_operands(self, graph: AnalyzedGraph, op: Op) -> str | None:
        if not op.attrs.get("normalized"):
            if op.op_type == "Gather":
                return "Gather indices are not constant (or batch_dims is set)"
            return "starts, ends, axes or steps are not constant"
        return super().check_operands(graph, op)

    def rows_needed(self, op: Op, a: int, b: int) -> tuple[int, int]:
        m = _row_map(op)
        if m is None or b <= a:
            return a, b
        if isinstance(m, list):
            band = m[a:b]
            return min(band), max(band) + 1
        s, st = m
        first, last = s + a * st, s + (b - 1) * st
        return min(first, last), max(first, last) + 1

    def mixes_rows(self, graph: AnalyzedGraph, op: Op) -> str | None:
        if graph.tensors[op.outputs[0]].layout not in ROW_LAYOUTS:
            return None
        m = _row_map(op)
        if isinstance(m, list) and m != sorted(m):
            return "Gather of unsorted rows"
        if isinstance(m, tuple) and m[1] < 0:
            return "Slice with a negative step along the rows"
        return None

    def byte_views(self, graph: AnalyzedGraph, op: Op) -> tuple[str, tuple[tuple[str, int], ...]] | None:
        # A Slice with unit steps whose output is one contiguous run of its input: on the stored view, every axis
        # before the first one it cuts has one element and every axis after it is whole. The run starts at a
        # multiple of ALIGN (every planned offset is one) and holds the input's bytes unchanged.
        if op.op_type != "Slice" or not op.attrs.get("normalized"):
            return None
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        if not same_bytes(x, y) or graph.is_const(op.inputs[0]):
            return None
        try:
            p = self._view_params(graph, op)[0]
        except TigrisError:
            return None
        xd, yd = tensor_view_dims(x), tensor_view_dims(y)
        cut = next((j for j in range(4) if yd[j] != xd[j]), 4)
        if any(xd[j] != 1 for j in range(cut)) or any(yd[j] != xd[j] for j in range(cut + 1, 4)) \
                or any(p[f"START{j}"] != 0 for j in range(4) if j != cut):
            return None
        if any(p[f"STEP{j}"] != 1 for j in range(4) if yd[j] > 1) or cut == 4:
            return None
        inner = view_elem_bytes(x)
        for d in xd[cut + 1:]:
            inner *= d
        off = p[f"START{cut}"] * inner
        return (op.inputs[0], ((op.outputs[0], off),)) if off % ALIGN == 0 else None

    def lower(self, graph: AnalyzedGraph, op: Op) -> Lowered:
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        params, consts = self._view_params(graph, op)
        if dtype_kind(graph, op) == "int8":
            si, _ = per_tensor(x, f"{op.op_type} input")
            so, _ = per_tensor(y, f"{op.op_type} output")
            params["MULT"], params["SHIFT"] = quantize_multiplier(si / so, op.name)
        return Lowered(self.name, op.name, [op.inputs[0]], [op.outputs[0]], params=params, consts=consts,
                       macs=y.numel)

    def _view_params(self, graph: AnalyzedGraph, op: Op) -> tuple[dict[str, int], dict[str, np.ndarray]]:
        """START/STEP of every view axis and the Gather axis and indices (the encoding's parameters aside)."""
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        if x.dtype != y.dtype or len(x.shape) != len(y.shape):
            raise TigrisError(f"{op.op_type} changes the element type or the rank", op.name)
        px, py = phys_axes(x.shape, x.layout), phys_axes(y.shape, y.layout)
        if px != py:
            raise TigrisError(f"{op.op_type} between layouts {x.layout} and {y.layout}", op.name)
        xd, yd = tensor_view_dims(x), tensor_view_dims(y)
        params: dict[str, int] = {"GAXIS": -1}
        consts: dict[str, np.ndarray] = {}
        a = op.attrs
        for j, la in enumerate(px):
            start, step = 0, 1
            if la is not None and op.op_type == "Slice":
                start, step = int(a["starts"][la]), int(a["steps"][la])
            if la is not None and op.op_type == "Gather" and la == int(a["axis"]):
                idx = np.asarray(a["indices"], dtype=np.int32)
                if idx.size != yd[j] or idx.min() < 0 or idx.max() >= xd[j]:
                    raise TigrisError(f"Gather indices do not select {yd[j]} of {xd[j]}", op.name)
                params["GAXIS"] = j
                consts["IDX"] = idx
            else:
                last = start + (yd[j] - 1) * step
                if step == 0 or not (0 <= start < xd[j] and 0 <= last < xd[j]) \
                        or (la is None and yd[j] != xd[j]):
                    raise TigrisError(f"{op.op_type} reads outside its input ({list(x.shape)} -> {list(y.shape)})",
                                      op.name)
            params[f"START{j}"], params[f"STEP{j}"] = start, step
        return params, consts

    def reference(self, low: Lowered, inputs: Sequence[TensorView], out: TensorView) -> None:
        x = inputs[0]
        p = low.params
        idx = []
        for j in range(4):
            if j == p["GAXIS"]:
                ij = np.asarray(low.consts["IDX"], dtype=np.int64)
            else:
                ij = p[f"START{j}"] + p[f"STEP{j}"] * np.arange(out.dims[j], dtype=np.int64)
            if j == 1:
                ij = ij[out.row0:out.row0 + out.rows]
                if ij.size and (ij.min() < x.row0 or ij.max() >= x.row0 + x.rows):
                    raise TileError(f"{low.kind} input band misses rows [{ij.min()},{ij.max() + 1})")
                ij = ij - x.row0
            idx.append(ij)
        v = x.data[np.ix_(*idx)]
        if out.dtype in ("int8", "uint8"):
            q = requantize_even(v.astype(np.int64) - x.zero_point, p["MULT"], p["SHIFT"])
            v = np.clip(q + out.zero_point, -128, 127)
        out.data[...] = v.astype(out.data.dtype)
