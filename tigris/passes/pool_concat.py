"""Pool concat: a MaxPool of a channel Concat becomes a channel Concat of MaxPools, one per Concat input.

``MaxPool(Concat(x_1..x_k, axis=C))`` is ``Concat(MaxPool(x_1)..MaxPool(x_k), axis=C)``: a max pool reads each
channel on its own, so pooling the parts and concatenating the pooled parts gives the same elements. Memory is why:
a windowed op needs its window's pixels of every input channel, so one pool over a wide Concat (SqueezeNet's fire
modules: 256 channels of 3x3 pixels, 9,216 float bytes for one output pixel) bounds the fast budget below which no
tiling helps; pools over the parts need their own channels' pixels only, and the joining Concat of the pooled
(smaller) tensors is per pixel.

Rules:
1. A ``MaxPool`` on a rank-4 tensor with one output (no ``Indices``) whose input is a ``Concat`` along the channel
   axis (logical axis 1, negative axes normalized), that Concat's output read by this pool only and not a graph
   output.
2. int8: the pool's output has the Concat output's encoding. Each new pool keeps its input's encoding (its kernel
   then takes the max of the codes and requantizes by the identity) and the new Concat converts every pooled part
   into the output's encoding with the same requantization the old Concat applied per element; that
   requantization is monotone, so it commutes with the max, and the result is the old bytes exactly. Float: max
   is exact.
3. Anything else is left alone.

Why here: after QDQ fold (direct edges, encodings on the tensors) and before Concat axis normalize, which then
sees the new Concat with its logical axis like any other.

Postcondition: no MaxPool reads, as its only consumer, a channel Concat satisfying rule 2.
"""
from __future__ import annotations

import numpy as np

from tigris.ir import AnalyzedGraph, Op, Tensor
from tigris.passes._util import Decline, PassResult, consumers, fresh_name

NAME = "pool_concat"


def _same_encoding(a: Tensor, b: Tensor) -> bool:
    if a.quant is None or b.quant is None:
        return a.quant is None and b.quant is None
    return (np.array_equal(np.asarray(a.quant.scale).ravel(), np.asarray(b.quant.scale).ravel())
            and np.array_equal(np.asarray(a.quant.zero_point).ravel(), np.asarray(b.quant.zero_point).ravel()))


def _channel_concat(g: AnalyzedGraph, i: int | None) -> Op | None:
    if i is None:
        return None
    op = g.ops[i]
    if op.op_type != "Concat" or len(op.outputs) != 1:
        return None
    y = g.tensors[op.outputs[0]]
    if len(y.shape) != 4 or int(op.attrs.get("axis", 0)) % 4 != 1:
        return None
    if any(not n or g.is_const(n) for n in op.inputs):
        return None
    return op


def run(graph: AnalyzedGraph) -> PassResult:
    g = graph.replace()
    made = {o: i for i, op in enumerate(graph.ops) for o in op.outputs if o}
    replace: dict[int, list[Op]] = {}  # pool index -> its rewrite
    drop: set[int] = set()  # the Concats the rewrites replace
    declined: list[Decline] = []
    for i, op in enumerate(graph.ops):
        if op.op_type != "MaxPool" or len([o for o in op.outputs if o]) != 1 or not op.inputs:
            continue
        x = op.inputs[0]
        ci = made.get(x)
        cat = _channel_concat(graph, ci)
        if cat is None or len(graph.tensors[x].shape) != 4:
            continue
        if x in graph.outputs or consumers(graph, x) != [i]:
            declined.append(Decline(op.name, "rule 1: the Concat's output has other readers"))
            continue
        y = graph.tensors[op.outputs[0]]
        if not _same_encoding(y, graph.tensors[x]):
            declined.append(Decline(op.name, "rule 2: the pool changes the Concat's encoding"))
            continue
        parts: list[str] = []
        new: list[Op] = []
        taken: list[str] = []
        for k, src in enumerate(cat.inputs):
            s = graph.tensors[src]
            p = fresh_name(g, f"{op.outputs[0]}_part{k}", taken)
            taken.append(p)
            g.tensors[p] = Tensor(p, (y.shape[0], s.shape[1], y.shape[2], y.shape[3]), y.dtype, s.quant)
            name = fresh_name(g, f"{op.name}_part{k}", taken)
            taken.append(name)
            new.append(Op(name, "MaxPool", (src,), (p,), dict(op.attrs)))
            parts.append(p)
        new.append(Op(fresh_name(g, f"{cat.name}_pooled", taken), "Concat", tuple(parts), op.outputs,
                      dict(cat.attrs)))
        replace[i] = new
        drop.add(ci)  # type: ignore[arg-type]
    ops: list[Op] = []
    for i, op in enumerate(graph.ops):
        if i in drop:
            continue
        ops.extend(replace.get(i, [op]))
    for i in drop:
        g.tensors.pop(graph.ops[i].outputs[0], None)
    g.ops = ops
    return PassResult(g, len(replace), tuple(declined))
