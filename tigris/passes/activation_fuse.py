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

from tigris.ir import AnalyzedGraph
from tigris.passes._util import Decline, PassResult, consumers, tidy

NAME = "activation_fuse"
_PRODUCERS = ("Conv", "DepthwiseConv", "Conv1D", "Gemm", "Add")
_ACTS = {"Relu": "relu", "Relu6": "relu6"}


def run(graph: AnalyzedGraph) -> PassResult:
    g = graph
    n = 0
    declined: list[Decline] = []
    seen: set[str] = set()
    while True:
        hit = None
        for ai, act in enumerate(g.ops):
            if act.op_type not in _ACTS or act.name in seen:
                continue
            t = act.inputs[0]
            pi = next((i for i, o in enumerate(g.ops) if t in o.outputs), None)
            if pi is None or g.ops[pi].op_type not in _PRODUCERS:
                continue
            seen.add(act.name)
            p = g.ops[pi]
            if p.attrs.get("fused_activation"):
                declined.append(Decline(act.name, f"rule 1: {p.name} already has a fused activation"))
            elif len(consumers(g, t)) != 1 or t in g.outputs:
                declined.append(Decline(act.name, f"rule 1: {t} has other readers"))
            elif g.tensors[t].quant is not None:
                declined.append(Decline(act.name, f"rule 3: {t} carries its own quantization"))
            else:
                hit = (pi, ai)
                break
        if hit is None:
            break
        pi, ai = hit
        p, act = g.ops[pi], g.ops[ai]
        ops = list(g.ops)
        ops[pi] = p.with_(outputs=(act.outputs[0],), attrs={**p.attrs, "fused_activation": _ACTS[act.op_type]})
        del ops[ai]
        g = tidy(g.replace(ops=ops))
        n += 1
    return PassResult(g, n, tuple(declined))
