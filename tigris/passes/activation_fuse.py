"""Pass 16, activation fuse: ``Relu``/``Relu6`` after Conv, DepthwiseConv, Conv1D, Gemm or Add becomes the
producer's ``fused_activation``.

Rules:
1. The producer's output must be read only by the activation and not be a graph output, and the producer must not
   already have a fused activation.
2. The producer then writes the activation's output tensor, taking over its dtype and quantization.
3. Quantization-aware: when the intermediate tensor carries its own QuantParam (a QDQ model quantized the
   pre-activation value separately), the activation is a quantization step of its own and is left in place
   (declined): fusing would drop that rounding. An intermediate *without* a QuantParam (float between an int8
   product and the activation's Q) is exactly the case to fuse; int8 kernels then clamp at the output zero point
   (Quantize is monotonic).

Why late: after every relabel (the producer types are final) and rewiring pass (bias fold made the product write the
tensor the activation reads).

Postcondition: no Relu/Relu6 reads a private, unquantized output of a fusable producer.
"""
from __future__ import annotations

from tigris.ir import AnalyzedGraph, Op
from tigris.ops import kind_for
from tigris.passes._util import Decline, PassResult, tidy

NAME = "activation_fuse"


def _fused_name(op: Op) -> str | None:
    """``relu``/``relu6`` when ``op`` is an activation a producer can absorb (its kind says so)."""
    k = kind_for(op.op_type)
    return k.as_fused_activation(op) if k is not None else None


def _fuses(op: Op) -> bool:
    k = kind_for(op.op_type)
    return k is not None and k.fuses_activation(op)


def run(graph: AnalyzedGraph) -> PassResult:
    """One forward pass in op order. A fusion only rewrites ops before the activation (its producer) and deletes the
    activation, so an activation's verdict never depends on a fusion after it: evaluating each activation once, in
    order, against the producers as rewritten so far, gives the same fusions and declines as rescanning the graph
    after every fusion, in linear time."""
    g = graph
    ops: list = list(g.ops)
    producer: dict[str, int] = {}
    readers: dict[str, int] = {}
    for op in ops:
        for t in set(op.inputs):
            readers[t] = readers.get(t, 0) + 1
    n = 0
    declined: list[Decline] = []
    for ai, act in enumerate(g.ops):
        if _fused_name(act) is not None:
            t = act.inputs[0]
            pi = producer.get(t)
            if pi is not None and _fuses(ops[pi]):
                p = ops[pi]
                if p.attrs.get("fused_activation"):
                    declined.append(Decline(act.name, f"rule 1: {p.name} already has a fused activation"))
                elif readers.get(t, 0) != 1 or t in g.outputs:
                    declined.append(Decline(act.name, f"rule 1: {t} has other readers"))
                elif g.tensors[t].quant is not None:
                    declined.append(Decline(act.name, f"rule 3: {t} carries its own quantization"))
                else:
                    ops[pi] = p.with_(outputs=(act.outputs[0],),
                                      attrs={**p.attrs, "fused_activation": _fused_name(act)})
                    ops[ai] = None
                    producer[act.outputs[0]] = pi
                    n += 1
                    continue
        for o in act.outputs:
            producer.setdefault(o, ai)
    if n:
        g = tidy(g.replace(ops=[op for op in ops if op is not None]))
    return PassResult(g, n, tuple(declined))
