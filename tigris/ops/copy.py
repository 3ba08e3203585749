"""Reshape / Flatten / Squeeze / Unsqueeze: an alias when no byte moves, otherwise a permuting copy (untiled).

A reshape keeps the *logical* row-major order of elements. Each layout stores them in some physical order; when the
input's and the output's physical orders are the same sequence, the op is an alias (``Lowered.alias``: no kernel, the
output shares the input's buffer). Otherwise one side must be in logical order (``plain``, or a channels-last tensor
whose spatial or channel extent is 1), and the op is the 4-D permuting copy ``out = transpose(src, P)``:

* input in logical order: ``src`` is the input bytes read as the output's logical shape (padded to rank 4), ``P``
  maps each output view axis to its logical axis (the NHWC/NWC relayout of the output);
* output in logical order: ``src`` is the input view, ``P`` lists the input view axis of each logical axis.

Params ``S0..S3`` are the source dims, ``P0..P3`` the permutation. A reshape between two non-logical orders needs the
Transpose that the layout pass inserts before it (docs/design.md "Layouts"); lowering refuses it.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from tigris.ir import AnalyzedGraph, Op, Tensor, TigrisError
from tigris.layout import in_logical_order, same_byte_order
from tigris.ops._common import TileError, phys_axes
from tigris.ops.base import Lowered, OpKind, TensorView


def _padded(shape: tuple[int, ...]) -> tuple[int, ...]:
    if len(shape) > 4:
        raise TigrisError(f"rank {len(shape)} reshape needs more than a 4-D permutation")
    return (1,) * (4 - len(shape)) + tuple(shape)


def _complete(partial: list[int | None]) -> list[int]:
    spare = [i for i in range(4) if i not in partial]
    return [spare.pop(0) if v is None else int(v) for v in partial]


def copy_plan(x: Tensor, y: Tensor) -> tuple[bool, list[int], list[int]]:
    """(alias, source dims, permutation) of a reshape from x to y (see the module doc)."""
    if same_byte_order(x, y):
        return True, [], []
    if in_logical_order(x.shape, x.layout):
        pad = 4 - len(y.shape)
        src = list(_padded(y.shape))
        perm = _complete([None if a is None else a + pad for a in phys_axes(y.shape, y.layout)])
        return False, src, perm
    if in_logical_order(y.shape, y.layout):
        from tigris.layout import tensor_view_dims

        pad = 4 - len(x.shape)
        px = phys_axes(x.shape, x.layout)
        perm = _complete([None if i < pad else px.index(i - pad) for i in range(4)])
        return False, list(tensor_view_dims(x)), perm
    raise TigrisError(f"reshape {x.layout} {list(x.shape)} -> {y.layout} {list(y.shape)} reorders bytes both ways; "
                      "it needs a Transpose to logical order first")


class Copy(OpKind):
    name = "copy"
    ir_ops = ("Reshape", "Flatten", "Squeeze", "Unsqueeze")
    ONNX_OPS = {"Reshape": "constant shape (0 and -1 resolved)", "Flatten": "any axis", "Squeeze": "",
                "Unsqueeze": ""}
    INT8_EXACTNESS = "bit-exact"
    may_alias = True
    PARAMS = ("S0", "S1", "S2", "S3", "P0", "P1", "P2", "P3")

    def unsupported(self, graph: AnalyzedGraph, op: Op) -> str | None:
        """A reshape the layout pass made an alias may have a plain tensor of rank above 4 on one side (an Unsqueeze
        to rank 5 before a graph output): its bytes are the other side's, in the same order, so the rank only
        matters to the ops that read it, which make their own check."""
        deep = [n for n in (*op.inputs[:1], *op.outputs) if len(graph.tensors[n].shape) > 4]
        if deep and op.attrs.get("alias") and not op.attrs.get("nhwc_order") \
                and all(graph.tensors[n].layout == "plain" for n in deep):
            # judged as the flat vector it is stored as: the dtype and quantization checks still apply
            flat = {n: Tensor(n, (graph.tensors[n].numel,), graph.tensors[n].dtype, graph.tensors[n].quant, "plain")
                    for n in deep}
            return super().unsupported(graph.replace(tensors={**graph.tensors, **flat}), op)
        return super().unsupported(graph, op)

    def lower(self, graph: AnalyzedGraph, op: Op) -> Lowered:
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        if x.numel != y.numel or x.dtype != y.dtype:
            raise TigrisError(f"{op.op_type} changes the element count or type", op.name)
        # The layout pass records on every reshape whether it moves bytes (it inserted Transposes, or permuted the
        # weight columns of the Gemms a Flatten feeds): read the record. An op it never saw (a hand-built graph)
        # is judged by the same byte-order rule of tigris.layout.
        alias, src, perm = (True, [], []) if op.attrs.get("alias") else copy_plan(x, y)
        if alias:
            return Lowered(self.name, op.name, [op.inputs[0]], [op.outputs[0]], alias=True)
        params = {f"S{i}": v for i, v in enumerate(src)}
        params.update({f"P{i}": v for i, v in enumerate(perm)})
        return Lowered(self.name, op.name, [op.inputs[0]], [op.outputs[0]], params=params, macs=y.numel)

    def reference(self, low: Lowered, inputs: Sequence[TensorView], out: TensorView) -> None:
        x = inputs[0]
        if x.rows != x.dims[1] or out.rows != out.dims[1]:
            raise TileError("Copy is untiled")
        if low.alias:
            out.data[...] = x.data.reshape(out.data.shape)
            return
        src = [low.params[f"S{i}"] for i in range(4)]
        perm = [low.params[f"P{i}"] for i in range(4)]
        out.data[...] = np.transpose(x.data.reshape(src), perm).reshape(out.data.shape)
