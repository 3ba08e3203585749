"""Extra pass, HardSigmoid/HardSwish recognition (MobileNetV3, LCNet exports).

Exporters that predate ONNX's HardSwish write it out of primitives.

Rules (float tensors only; every intermediate must be read only inside the pattern and not be a graph output):

1. ``Mul(Relu6(Add(x, 3)), 1/6)`` -> ``HardSigmoid(x, alpha=1/6, beta=0.5)`` (after pass 9 turned Clip(0,6) into
   Relu6 and the Sub/Div pass turned ``/6`` into ``*1/6``).
2. ``Mul(x, HardSigmoid(x, alpha=1/6, beta=0.5))`` -> ``HardSwish(x)`` (either Mul operand order).
3. ``Mul(Mul(x, Relu6(Add(x, 3))), 1/6)`` -> ``HardSwish(x)``.
4. ``HardSigmoid`` gets explicit ``alpha``/``beta`` (ONNX defaults 0.2 / 0.5).
5. Constants are compared with a relative tolerance of 1e-6 (1/6 is not exact in float32).

Why here: after Clip->Relu6 and Sub/Div by constant, before activation fuse, which would otherwise absorb the Relu6
into the Add and hide the pattern.

Postcondition: none of the three patterns remains.
"""
from __future__ import annotations

from tigris.ir import AnalyzedGraph, Op
from tigris.passes._util import PassResult, consumers, scalar, tidy

NAME = "hard_activations"
_SIXTH = 1.0 / 6.0


def _close(v: float | None, want: float) -> bool:
    return v is not None and abs(v - want) <= 1e-6 * max(1.0, abs(want))


def _prod(g: AnalyzedGraph, t: str) -> Op | None:
    return next((o for o in g.ops if t in o.outputs), None)


def _private(g: AnalyzedGraph, t: str, n: int = 1) -> bool:
    return t not in g.outputs and len(consumers(g, t)) == n


def _const_operand(g: AnalyzedGraph, op: Op) -> tuple[str, float | None] | None:
    """(other operand, scalar value) of a binary op with one constant scalar operand."""
    a, b = op.inputs
    if b in g.weights and a not in g.weights:
        return a, scalar(g.weights[b])
    if a in g.weights and b not in g.weights:
        return b, scalar(g.weights[a])
    return None


def _relu6_x_plus_3(g: AnalyzedGraph, t: str) -> tuple[str, list[Op]] | None:
    """If t = Relu6(Add(x, 3)) with a private intermediate: (x, [relu6, add])."""
    r = _prod(g, t)
    if r is None or r.op_type != "Relu6" or g.tensors[t].dtype != "float32":
        return None
    a = _prod(g, r.inputs[0])
    if a is None or a.op_type != "Add" or a.attrs.get("fused_activation") or not _private(g, r.inputs[0]):
        return None
    co = _const_operand(g, a)
    if co is None or not _close(co[1], 3.0):
        return None
    return co[0], [r, a]


def _rewrite(g: AnalyzedGraph, remove: list[Op], new: Op) -> AnalyzedGraph:
    names = {o.name for o in remove}
    ops = []
    for o in g.ops:
        if o.name == new.name:
            ops.append(new)
        elif o.name not in names:
            ops.append(o)
    return tidy(g.replace(ops=ops))


def run(graph: AnalyzedGraph) -> PassResult:
    g = graph
    n = 0
    ops = []
    for op in g.ops:  # rule 4
        if op.op_type == "HardSigmoid" and ("alpha" not in op.attrs or "beta" not in op.attrs):
            op = op.with_(attrs={"alpha": float(op.attrs.get("alpha", 0.2)), "beta": float(op.attrs.get("beta", 0.5))})
            n += 1
        ops.append(op)
    g = g.replace(ops=ops)
    changed = True
    while changed:
        changed = False
        for op in g.ops:
            if op.op_type != "Mul" or len(op.inputs) != 2 or g.tensors[op.outputs[0]].dtype != "float32":
                continue
            co = _const_operand(g, op)
            if co is not None and _close(co[1], _SIXTH):
                inner = co[0]
                m = _relu6_x_plus_3(g, inner)
                if m is not None and _private(g, inner):  # rule 1
                    x, chain = m
                    g = _rewrite(g, chain, Op(op.name, "HardSigmoid", (x,), op.outputs,
                                              {"alpha": _SIXTH, "beta": 0.5}))
                    n += 1
                    changed = True
                    break
                pm = _prod(g, inner)  # rule 3
                if pm is not None and pm.op_type == "Mul" and _private(g, inner) and len(pm.inputs) == 2:
                    for xs, ts in (pm.inputs, pm.inputs[::-1]):
                        m = _relu6_x_plus_3(g, ts)
                        if m is not None and m[0] == xs and _private(g, ts):
                            g = _rewrite(g, [pm, *m[1]], Op(op.name, "HardSwish", (xs,), op.outputs, {}))
                            n += 1
                            changed = True
                            break
                    if changed:
                        break
            if co is None:  # rule 2
                for xs, ts in (op.inputs, op.inputs[::-1]):
                    h = _prod(g, ts)
                    if h is not None and h.op_type == "HardSigmoid" and h.inputs[0] == xs and _private(g, ts) \
                            and _close(h.attrs.get("alpha"), _SIXTH) and _close(h.attrs.get("beta"), 0.5):
                        g = _rewrite(g, [h], Op(op.name, "HardSwish", (xs,), op.outputs, {}))
                        n += 1
                        changed = True
                        break
                if changed:
                    break
    return PassResult(g, n)
