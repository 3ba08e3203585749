"""Channel shuffle: ``Reshape -> Transpose -> Reshape`` that only permutes the channels of a rank-4 image (ShuffleNet's
``[N, C, H, W] -> [N, g, C/g, H, W] -> perm (0, 2, 1, 3, 4) -> [N, C, H, W]``) becomes one ``Gather`` along the
channels with the permutation as its index list.

Each output pixel then reads only its own input pixel: the slice kernel runs it per pixel, so row tiles and column
tiles cut through it (docs/memory-planning.md "Column tiles"), where the reshapes around a transpose need the whole
tensor (a rank-4 transpose between layouts is structural). The bytes moved are exactly the transpose's.

Rules:
1. Applies to a Transpose whose input is produced by a Reshape of a rank-4 tensor ``x`` and read by nothing else,
   and whose output is read only by one Reshape back to ``x``'s shape; neither intermediate is a graph input or
   output.
2. The composite must be a channel permutation: output element ``(n, c, h, w)`` reads input ``(n, P[c], h, w)`` for
   one permutation ``P`` of the channels (computed on the flat indices, so any factorization and perm qualify).
3. int8: every tensor of the chain has the same quantization (the transpose would not requantize; the Gather does
   not either).
4. The three ops become ``Gather(x, axis=1, indices=P)`` in the normalized form of pass slice_normalize, writing the
   last Reshape's output; the two intermediate tensors are dropped.

Why here: after unit_dim_squeeze (the rank-5 form is rank 4 by then, either form is recognized) and before the
layout pass, which would otherwise put layout transposes around the reshapes.

Postcondition: no such Reshape -> Transpose -> Reshape chain remains.
"""
from __future__ import annotations

import numpy as np

from tigris.ir import AnalyzedGraph, Op
from tigris.passes._util import PassResult, consumers, producer

NAME = "channel_shuffle"


def _permutation(g: AnalyzedGraph, i: int) -> tuple[int, int, list[int]] | None:
    """(first Reshape's index, last Reshape's index, P) when the Transpose ``g.ops[i]`` is the middle of a channel
    shuffle (rules 1-3), else None."""
    op = g.ops[i]
    if op.op_type != "Transpose" or len(op.inputs) != 1 or len(op.outputs) != 1:
        return None
    a, b = op.inputs[0], op.outputs[0]
    pi = producer(g, a)
    readers = consumers(g, b)
    if pi is None or g.ops[pi].op_type != "Reshape" or len(readers) != 1 or g.ops[readers[0]].op_type != "Reshape":
        return None
    if {a, b} & (set(g.inputs) | set(g.outputs)) or len(consumers(g, a)) != 1:
        return None
    first, last = g.ops[pi], g.ops[readers[0]]
    x, z = first.inputs[0], last.outputs[0]
    tx, tz = g.tensors.get(x), g.tensors.get(z)
    if tx is None or tz is None or x in g.weights or len(tx.shape) != 4 or tuple(tz.shape) != tuple(tx.shape):
        return None
    quants = [g.tensors[t].quant for t in (x, a, b, z)]
    if any((q is None) != (quants[0] is None) for q in quants) or any(q != quants[0] for q in quants[1:]):
        return None  # rule 3
    n, c, h, w = (int(d) for d in tx.shape)
    ta = g.tensors[a]
    perm = [int(p) for p in op.attrs.get("perm") or range(len(ta.shape))[::-1]]
    if int(np.prod(ta.shape)) != n * c * h * w or sorted(perm) != list(range(len(ta.shape))):
        return None
    src = np.arange(n * c * h * w, dtype=np.int64).reshape(ta.shape).transpose(perm).reshape(n, c, h, w)
    pixel = (np.arange(n)[:, None, None, None] * (c * h * w) + np.arange(h)[None, None, :, None] * w
             + np.arange(w)[None, None, None, :])
    rem = src - pixel  # P[c] * H * W wherever the chain only permutes channels (rule 2)
    p = rem[0, :, 0, 0]
    if not (rem == p[None, :, None, None]).all() or (p % (h * w)).any():
        return None
    p = p // (h * w)
    if sorted(p.tolist()) != list(range(c)):
        return None
    return pi, readers[0], [int(v) for v in p]


def run(graph: AnalyzedGraph) -> PassResult:
    g = graph.replace()
    n = 0
    i = 0
    while i < len(g.ops):
        found = _permutation(g, i)
        if found is None:
            i += 1
            continue
        pi, li, p = found
        first, mid, last = g.ops[pi], g.ops[i], g.ops[li]
        gather = Op(mid.name, "Gather", (first.inputs[0],), last.outputs,
                    {"axis": 1, "indices": p, "normalized": True})
        for t in (mid.inputs[0], mid.outputs[0]):
            del g.tensors[t]
        g.ops = [gather if k == i else op for k, op in enumerate(g.ops) if k not in (pi, li)]
        n += 1
        i = 0
    return PassResult(g, n)
