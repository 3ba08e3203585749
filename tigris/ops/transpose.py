"""Transpose (a general permutation of rank <= 4) on rank-4 physical views.

The IR ``perm`` is logical. Lowering turns it into ``P0..P3``, a permutation of the view axes: output view axis ``j``
holds output logical axis ``L_y(j)``, which is input logical axis ``perm[L_y(j)]``, stored on input view axis
``V_x(perm[L_y(j)])``. View axes that hold no logical axis (size-1 padding) take the input's remaining padding axes,
so the result is always a permutation. The kernel (and the reference) then compute
``out = transpose(in_view, (P0, P1, P2, P3))``, for any element type.

In place: a structural Transpose may write its output over its dying input (the plan gives both one offset, the
kernel permutes the buffer cycle by cycle); the reference computes the same bytes either way.

Tiling: a Transpose whose view permutation keeps the image axis and the row axis (``P0 = 0``, ``P1 = 1``: it permutes
W and C within each row, or only requantizes) is pointwise along the rows: output row ``h`` is input row ``h`` with
its pixels' axes swapped, so it runs on row bands (the transpose sinking pass leaves such identity permutations that
requantize, docs/passes.md). When the permutation is the identity it is per pixel along W too (column-local). Every
other Transpose is structural (untiled): its output rows are input columns or channels.

int8 with different input and output encodings (ONNX Runtime's quantizer gives a Transpose the grid of a Relu or
Clip it removed after it): every moved code is requantized, ``zo + requantize_even(q - zi, MULT, SHIFT)`` saturated
to int8 (halves to even, like Concat's); ``MULT = 0`` (equal encodings, and every float plan) is a pure byte move.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from tigris.ir import AnalyzedGraph, Op, Tensor, TigrisError
from tigris.layout import tensor_view_dims
from tigris.ops._common import TileError, dtype_kind, per_tensor, phys_axes, requantize_even, same_rows
from tigris.ops.base import Lowered, OpKind, TensorView, cols_reason
from tigris.ops.qmath import quantize_multiplier


# False: every Transpose is structural (the earlier rule; bench/plan_quality.py --cols plans its row-tiles baseline so).
ROW_BANDS = True
# False: a structural Transpose writes a buffer of its own (the earlier rule, the --cols bench's row-tiles baseline).
IN_PLACE = True


def view_perm(x: Tensor, y: Tensor, perm: Sequence[int]) -> list[int]:
    """The view-axis permutation realizing logical ``perm`` from x's layout to y's (see the module doc)."""
    px, py = phys_axes(x.shape, x.layout), phys_axes(y.shape, y.layout)
    out: list[int | None] = [None] * 4
    for j, ly in enumerate(py):
        if ly is not None:
            out[j] = px.index(perm[ly])
    spare = [i for i in range(4) if i not in out]
    for j in range(4):
        if out[j] is None:
            out[j] = spare.pop(0)
    res = [int(v) for v in out]  # type: ignore[arg-type]
    xd, yd = tensor_view_dims(x), tensor_view_dims(y)
    if tuple(xd[p] for p in res) != tuple(yd):
        raise TigrisError(f"Transpose {list(perm)}: view dims {xd} -> {yd} disagree with the permutation")
    return res


class Transpose(OpKind):
    name = "transpose"
    ir_ops = ("Transpose",)
    ONNX_OPS = {"Transpose": "any perm of rank <= 4; an NHWC input's leading and an output's trailing layout "
                             "Transpose are dropped"}
    INT8_EXACTNESS = "bit-exact when the encodings agree, else <= 1 LSB"
    PARAMS = ("P0", "P1", "P2", "P3", "MULT", "SHIFT")
    TILING_DOC = "pointwise when the view permutation keeps N and the rows (P0 = 0, P1 = 1), else structural"
    COLS = "pixel"  # only an identity view permutation (a requantizing move) answers column-local
    # A structural (whole-tensor) Transpose may permute its dying input's buffer in place: transpose.c follows the
    # permutation cycle by cycle (each from its smallest index, found by walking it), so no element is overwritten
    # before it has moved, and a whole detection grid's layout change needs one buffer instead of two. Its input may
    # be a layout Reshape's alias of the buffer (effdet's Transpose, Reshape and back to nwc).
    in_place = True
    in_place_alias = True

    def in_place_over(self, graph: AnalyzedGraph, op: Op, x: str) -> bool:
        if not IN_PLACE or x != op.inputs[0] or self.tiling(graph, op) != "structural":
            return False
        tx, ty = graph.tensors[x], graph.tensors[op.outputs[0]]
        return tx.dtype == ty.dtype and tx.nbytes == ty.nbytes and self._view_perm(graph, op) is not None

    def _view_perm(self, graph: AnalyzedGraph, op: Op) -> list[int] | None:
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        perm = op.attrs.get("perm")
        perm = list(range(len(x.shape)))[::-1] if perm is None else [int(p) for p in perm]
        if sorted(perm) != list(range(len(x.shape))):
            return None
        try:
            return view_perm(x, y, perm)
        except (TigrisError, ValueError):
            return None

    def tiling(self, graph: AnalyzedGraph, op: Op) -> str:
        p = self._view_perm(graph, op)
        return "pointwise" if ROW_BANDS and p is not None and p[0] == 0 and p[1] == 1 else "structural"

    def col_local(self, graph: AnalyzedGraph, op: Op) -> str | None:
        if not ROW_BANDS or self._view_perm(graph, op) != [0, 1, 2, 3]:
            return "Transpose moves W"
        return cols_reason(graph, op, per_pixel=True)

    def lower(self, graph: AnalyzedGraph, op: Op) -> Lowered:
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        perm = op.attrs.get("perm")
        perm = list(range(len(x.shape)))[::-1] if perm is None else [int(p) for p in perm]
        if sorted(perm) != list(range(len(x.shape))):
            raise TigrisError(f"Transpose perm {perm} is not a permutation of rank {len(x.shape)}", op.name)
        if x.dtype != y.dtype:
            raise TigrisError("Transpose changes the element type", op.name)
        p = view_perm(x, y, perm)
        params = {f"P{i}": v for i, v in enumerate(p)}
        if dtype_kind(graph, op) == "int8":
            si, zi = per_tensor(x, "Transpose input")
            so, zo = per_tensor(y, "Transpose output")
            if (si, zi) != (so, zo):
                params["MULT"], params["SHIFT"] = quantize_multiplier(si / so, op.name)
        return Lowered(self.name, op.name, [op.inputs[0]], [op.outputs[0]], params=params, macs=y.numel)

    def reference(self, low: Lowered, inputs: Sequence[TensorView], out: TensorView) -> None:
        x = inputs[0]
        perm = [low.params[f"P{i}"] for i in range(4)]
        whole = x.rows == x.dims[1] and out.rows == out.dims[1]
        if not whole and perm[:2] != [0, 1]:
            raise TileError("Transpose moves the rows: untiled")
        if whole:
            moved = np.transpose(x.data.reshape(x.dims), perm).reshape(out.data.shape)
        else:  # a row band: each row's W and C axes permuted (or kept)
            n, _, w, c = x.dims
            band = same_rows(x, out).reshape(n, out.rows, w, c)
            moved = np.transpose(band, perm).reshape(out.data.shape)
        if low.params.get("MULT", 0):
            q = requantize_even(moved.astype(np.int64) - x.zero_point, low.params["MULT"], low.params["SHIFT"])
            moved = np.clip(q + out.zero_point, -128, 127)
        out.data[...] = moved
