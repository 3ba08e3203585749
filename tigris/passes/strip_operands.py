"""Pass 13, metadata operand strip: constant shape/bound operands that earlier passes lifted are dropped.

Rules (an operand is dropped only when it is a constant *and* the information now lives elsewhere):
1. Reshape: the target shape (the output tensor's shape is the truth); the ``allowzero`` attribute goes too.
2. Squeeze/Unsqueeze: the ``axes`` operand or attribute; Flatten: the ``axis`` attribute.
3. Clip: ``min``/``max`` once pass 9 set them as attributes.
4. Pad: ``pads``/``value``/``axes`` once the Pad fold pass lifted them.
5. Resize: ``roi``/``scales``/``sizes`` once pass 12 extracted ``scales``.
6. ReduceMean: the ``axes`` operand when an ``axes`` attribute holds the same axes.
7. An operand that is not a constant, or whose information was not lifted, stays and is declined so validation
   reports the op.

Why here: after every pass that lifts operands into attributes; the emitter would otherwise bind the index vector as
a weight of the op.

Postcondition: the ops above have only their data operand (and PRelu its slope).
"""
from __future__ import annotations

from tigris.ir import AnalyzedGraph, Op
from tigris.passes._util import Decline, PassResult, tidy

NAME = "strip_operands"


def _strip(g: AnalyzedGraph, op: Op) -> Op | str | None:
    t = op.op_type
    extra = [i for i in op.inputs[1:] if i]
    nonconst = [i for i in extra if i not in g.weights]
    if t == "Reshape" or t in ("Squeeze", "Unsqueeze") or t == "Flatten":
        if nonconst:
            return f"rule 7: operand {nonconst[0]} is not a constant"
        meta = {k for k in op.attrs if k in ("axes", "axis", "allowzero")}
        if not extra and not meta:
            return None
        return op.with_(inputs=op.inputs[:1], attrs={k: v for k, v in op.attrs.items() if k not in meta})
    if t == "Clip":
        if not extra:
            return None
        if "min" in op.attrs and "max" in op.attrs and not nonconst:
            return op.with_(inputs=op.inputs[:1])
        return "rule 7: Clip bounds were not lifted"
    if t == "Pad":
        if not extra:
            return None
        if op.attrs.get("lifted") and not nonconst:
            return op.with_(inputs=op.inputs[:1])
        return "rule 7: Pad operands were not lifted"
    if t == "Resize":
        if not extra:
            return None
        if op.attrs.get("_extracted") and not nonconst:
            return op.with_(inputs=op.inputs[:1])
        return "rule 7: Resize scales were not extracted"
    if t == "ReduceMean":
        if len(op.inputs) > 1 and op.inputs[1] in g.weights and "axes" in op.attrs:
            return op.with_(inputs=op.inputs[:1])
        return None
    return None


def run(graph: AnalyzedGraph) -> PassResult:
    ops = []
    n = 0
    declined: list[Decline] = []
    for op in graph.ops:
        r = _strip(graph, op)
        if isinstance(r, str):
            declined.append(Decline(op.name, r))
        elif r is not None:
            op = r
            n += 1
        ops.append(op)
    return PassResult(tidy(graph.replace(ops=ops)), n, tuple(declined))
