"""Transpose (a general permutation of rank <= 4) on rank-4 physical views; untiled (a structural op).

The IR ``perm`` is logical. Lowering turns it into ``P0..P3``, a permutation of the view axes: output view axis ``j``
holds output logical axis ``L_y(j)``, which is input logical axis ``perm[L_y(j)]``, stored on input view axis
``V_x(perm[L_y(j)])``. View axes that hold no logical axis (size-1 padding) take the input's remaining padding axes,
so the result is always a permutation. The kernel (and the reference) then compute
``out = transpose(in_view, (P0, P1, P2, P3))``, for any element type.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from tigris.ir import AnalyzedGraph, Op, Tensor, TigrisError
from tigris.layout import tensor_view_dims
from tigris.ops._common import TileError, phys_axes
from tigris.ops.base import Lowered, OpKind, TensorView


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
    INT8_EXACTNESS = "bit-exact"
    PARAMS = ("P0", "P1", "P2", "P3")

    def lower(self, graph: AnalyzedGraph, op: Op) -> Lowered:
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        perm = op.attrs.get("perm")
        perm = list(range(len(x.shape)))[::-1] if perm is None else [int(p) for p in perm]
        if sorted(perm) != list(range(len(x.shape))):
            raise TigrisError(f"Transpose perm {perm} is not a permutation of rank {len(x.shape)}", op.name)
        if x.dtype != y.dtype:
            raise TigrisError("Transpose changes the element type", op.name)
        p = view_perm(x, y, perm)
        return Lowered(self.name, op.name, [op.inputs[0]], [op.outputs[0]],
                       params={f"P{i}": v for i, v in enumerate(p)}, macs=y.numel)

    def reference(self, low: Lowered, inputs: Sequence[TensorView], out: TensorView) -> None:
        x = inputs[0]
        if x.rows != x.dims[1] or out.rows != out.dims[1]:
            raise TileError("Transpose is untiled")
        perm = [low.params[f"P{i}"] for i in range(4)]
        out.data[...] = np.transpose(x.data.reshape(x.dims), perm).reshape(out.data.shape)
