"""Pass 9, Clip to Relu6: ``Clip(0, 6)`` becomes ``Relu6``; every other constant Clip gets its bounds as attributes.

Rules:
1. Bounds come from the ``min``/``max`` attributes (opset < 11) or the constant operands (opset >= 11); a missing
   bound is unbounded.
2. ``min == 0`` and ``max == 6``: ``Relu6(x)``.
3. ``min == 0`` and no upper bound: ``Relu(x)``.
4. Any other pair: stays ``Clip`` with float attributes ``min``/``max`` (infinite when unbounded); pass 13 drops the
   operands.
5. A non-constant bound is declined (validation reports the Clip).

The bounds are real values: in a QDQ model the Clip ran on dequantized floats, so the comparison is in real units
for int8 tensors too.

Why here: before activation fuse (pass 16), which only absorbs Relu and Relu6, and before the HardSwish pattern
pass, which matches ``Relu6(x + 3)``.

Postcondition: no Clip(0, 6) and no Clip without ``min``/``max`` attributes remain (except declined ones).
"""
from __future__ import annotations

import math

from tigris.ir import AnalyzedGraph, Op
from tigris.passes._util import Decline, PassResult, scalar

NAME = "clip_relu6"


def bounds(g: AnalyzedGraph, op: Op) -> tuple[float, float] | str:
    lo, hi = -math.inf, math.inf
    if "min" in op.attrs and op.attrs["min"] is not None:
        lo = float(op.attrs["min"])
    if "max" in op.attrs and op.attrs["max"] is not None:
        hi = float(op.attrs["max"])
    for k, name in ((1, "min"), (2, "max")):
        if len(op.inputs) > k and op.inputs[k]:
            v = scalar(g.weights.get(op.inputs[k]))
            if v is None:
                return f"rule 5: {name} is not a constant scalar"
            if k == 1:
                lo = v
            else:
                hi = v
    return lo, hi


def run(graph: AnalyzedGraph) -> PassResult:
    ops = []
    n = 0
    declined: list[Decline] = []
    for op in graph.ops:
        if op.op_type != "Clip":
            ops.append(op)
            continue
        b = bounds(graph, op)
        if isinstance(b, str):
            declined.append(Decline(op.name, b))
            ops.append(op)
            continue
        lo, hi = b
        if lo == 0.0 and hi == 6.0:
            ops.append(Op(op.name, "Relu6", op.inputs[:1], op.outputs, {}))
            n += 1
        elif lo == 0.0 and hi == math.inf:
            ops.append(Op(op.name, "Relu", op.inputs[:1], op.outputs, {}))
            n += 1
        else:
            new = op.with_(attrs={"min": lo, "max": hi})
            if new.attrs != op.attrs:
                n += 1
            ops.append(new)
    return PassResult(graph.replace(ops=ops), n, tuple(declined))
