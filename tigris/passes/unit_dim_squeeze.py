"""Unit dim squeeze: a rank-5 ``Reshape -> Transpose -> Reshape`` with a leading 1 (ShuffleNet's channel shuffle,
``[N, C, H, W] -> [1, g, C/g, H, W] -> perm (0, 2, 1, 3, 4) -> [1, C, H, W]``) runs at rank 4.

The runtime's tensors have at most four dimensions. A leading dimension of size 1 that the transpose keeps in front
carries no data: dropping it from the two intermediate tensors and from the permutation moves exactly the same bytes.

Rules:
1. Applies to a Transpose with ``perm[0] == 0`` whose input has rank > 4 and a leading 1, is produced by a Reshape
   and read by nothing else, and is not a graph input or output; its output must not be a graph output and must be
   read only by Reshapes (so the squeezed shape never reaches anything that needs the rank).
2. Both tensors lose the leading 1 (dtype and quantization kept); the perm becomes ``[p - 1 for p in perm[1:]]``.
   Repeated while it applies, so rank 6 comes down one step at a time.

Why here: after strip_operands (a Reshape's target is its output tensor's shape, nothing else to edit) and before
the layout pass, which lays the rank-4 tensors out and aliases or transposes around the Reshapes.

Postcondition: no such rank > 4 Transpose remains.
"""
from __future__ import annotations

from tigris.ir import AnalyzedGraph, Tensor
from tigris.passes._util import PassResult, consumers, producer

NAME = "unit_dim_squeeze"


def _target(g: AnalyzedGraph) -> int | None:
    for i, op in enumerate(g.ops):
        if op.op_type != "Transpose" or len(op.inputs) != 1 or len(op.outputs) != 1:
            continue
        x, y = op.inputs[0], op.outputs[0]
        shape = g.tensors[x].shape
        perm = [int(p) for p in op.attrs.get("perm") or []]
        if len(shape) <= 4 or shape[0] != 1 or len(perm) != len(shape) or perm[0] != 0:
            continue
        if x in g.inputs or x in g.outputs or y in g.outputs or len(consumers(g, x)) != 1:
            continue
        pi = producer(g, x)
        if pi is None or g.ops[pi].op_type != "Reshape":
            continue
        readers = consumers(g, y)
        if not readers or any(g.ops[j].op_type != "Reshape" for j in readers):
            continue
        return i
    return None


def run(graph: AnalyzedGraph) -> PassResult:
    g = graph.replace()
    n = 0
    while (i := _target(g)) is not None:
        op = g.ops[i]
        for name in (op.inputs[0], op.outputs[0]):
            t = g.tensors[name]
            g.tensors[name] = Tensor(name, t.shape[1:], t.dtype, t.quant, t.layout)
        perm = [int(p) - 1 for p in op.attrs["perm"][1:]]
        g.ops[i] = op.with_(attrs={**op.attrs, "perm": perm})
        n += 1
    return PassResult(g, n)
