"""Pass 14, Concat axis normalize: Concat's ``axis`` becomes the axis in the runtime's physical (channels-last) order.

Rules:
1. The layout each rank gets is the layout pass's rule (``tigris.layout.layout_for_rank``): rank 4 -> NHWC, so logical
   axes N, C, H, W map to physical 0, 3, 1, 2; rank 3 -> NWC, so N, C, L map to 0, 2, 1; other ranks keep the axis.
2. The op is marked ``axis_physical = True`` so the rewrite happens once (idempotence) and readers know which
   convention ``axis`` is in.
3. A Concat of more inputs than an op takes (``MAX_INPUTS``; EfficientDet concatenates its five grids) becomes a
   chain: the first ``MAX_INPUTS`` inputs into a new tensor with the output's dtype and encoding, that tensor and
   the next ones, and so on. Each input is still converted to the output's encoding exactly once, so an int8 result
   is the same bytes as one Concat would give.

Why here: after every pass that creates or rewires Concats; the layout pass later assigns exactly the layouts
assumed here.

Postcondition: every Concat has ``axis_physical`` set and a non-negative physical ``axis``.
"""
from __future__ import annotations

from tigris.ir import AnalyzedGraph, Op, Tensor
from tigris.layout import physical_axis
from tigris.ops.base import MAX_INPUTS
from tigris.passes._util import PassResult, fresh_name

NAME = "concat_axis"


def _chain(g: AnalyzedGraph, op: Op) -> list[Op]:
    """Rule 3 on one Concat (logical ``axis``)."""
    ins = [i for i in op.inputs if i]
    y = g.tensors[op.outputs[0]]
    ax = int(op.attrs.get("axis", 0)) % len(y.shape)
    out: list[Op] = []
    acc = ins[:MAX_INPUTS]
    rest = ins[MAX_INPUTS:]
    k = 0
    while rest:
        shape = list(y.shape)
        shape[ax] = sum(g.tensors[i].shape[ax] for i in acc)
        t = fresh_name(g, f"{op.outputs[0]}_part{k}")
        g.tensors[t] = Tensor(t, tuple(shape), y.dtype, y.quant)
        out.append(Op(f"{op.name}_part{k}", "Concat", tuple(acc), (t,), dict(op.attrs)))
        k += 1
        acc, rest = [t] + rest[:MAX_INPUTS - 1], rest[MAX_INPUTS - 1:]
    out.append(op.with_(inputs=tuple(acc)))
    return out


def run(graph: AnalyzedGraph) -> PassResult:
    ops = []
    n = 0
    if any(op.op_type == "Concat" and len([i for i in op.inputs if i]) > MAX_INPUTS for op in graph.ops):
        graph = graph.replace()
        wide = []
        for op in graph.ops:
            wide += _chain(graph, op) if op.op_type == "Concat" and len([i for i in op.inputs if i]) > MAX_INPUTS \
                else [op]
        graph.ops = wide
    for op in graph.ops:
        if op.op_type == "Concat" and not op.attrs.get("axis_physical"):
            rank = len(graph.tensors[op.outputs[0]].shape)
            ax = int(op.attrs.get("axis", 0))
            ax = ax + rank if ax < 0 else ax
            op = op.with_(attrs={**op.attrs, "axis": physical_axis(ax, rank), "logical_axis": ax,
                                 "axis_physical": True})
            n += 1
        ops.append(op)
    return PassResult(graph.replace(ops=ops), n)
