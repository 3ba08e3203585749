"""Pass 7, DepthwiseConv relabel: a 2-D Conv with ``group == C_in`` (and C_in > 1) becomes ``DepthwiseConv``.

Rules:
1. Input rank 4, ``group == C_in > 1``: relabeled; the weight is [C_in * m, 1, KH, KW] (channel multiplier m).
2. ``C_in == 1``: left a regular Conv (the general kernel covers it; a 1-channel stem is not a depthwise layer).
3. Rank-3 (1-D) convs are left for pass 8, which keeps their ``group``.

Why here: the runtime has a separate depthwise kernel ([KH,KW,C] weights, no im2col); selecting it is a relabel only,
so it runs after every pass that matches ``Conv`` (BatchNorm fold, bias fold, Pad fold).

Postcondition: no rank-4 Conv has ``group == C_in > 1``.
"""
from __future__ import annotations

from tigris.ir import AnalyzedGraph
from tigris.passes._util import PassResult

NAME = "depthwise_relabel"


def run(graph: AnalyzedGraph) -> PassResult:
    ops = []
    n = 0
    for op in graph.ops:
        if op.op_type == "Conv":
            x = graph.tensors[op.inputs[0]].shape
            if len(x) == 4 and x[1] > 1 and int(op.attrs.get("group", 1)) == x[1]:
                op = op.with_(op_type="DepthwiseConv")
                n += 1
        ops.append(op)
    return PassResult(graph.replace(ops=ops), n)
