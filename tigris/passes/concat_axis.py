"""Pass 14, Concat axis normalize: Concat's ``axis`` becomes the axis in the runtime's physical (channels-last) order.

Rules:
1. The layout each rank gets is the layout pass's rule (``tigris.layout.layout_for_rank``): rank 4 -> NHWC, so logical
   axes N, C, H, W map to physical 0, 3, 1, 2; rank 3 -> NWC, so N, C, L map to 0, 2, 1; other ranks keep the axis.
2. The op is marked ``axis_physical = True`` so the rewrite happens once (idempotence) and readers know which
   convention ``axis`` is in.

Why here: after every pass that creates or rewires Concats; the layout pass later assigns exactly the layouts
assumed here.

Postcondition: every Concat has ``axis_physical`` set and a non-negative physical ``axis``.
"""
from __future__ import annotations

from tigris.ir import AnalyzedGraph
from tigris.layout import physical_axis
from tigris.passes._util import PassResult

NAME = "concat_axis"


def run(graph: AnalyzedGraph) -> PassResult:
    ops = []
    n = 0
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
