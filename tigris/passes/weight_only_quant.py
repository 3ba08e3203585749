"""Extra pass, weight-only quantization: in a float graph, int8 weights behind ``DequantizeLinear`` become floats.

Some exporters store a float model's weights as int8 + scale to save space (``kws_dscnn_f32``): the activations are
float throughout and the only quantization ops are ``DequantizeLinear`` on constants.

Rules:
1. Applies only when the graph has no ``QuantizeLinear`` at all (no activation is ever quantized): otherwise the
   graph is an int8 model and pass 2 keeps the weights int8.
2. Each ``DequantizeLinear`` whose data operand is a constant is replaced by the float constant
   ``(q - zero_point) * scale`` (per-channel along ``axis`` when the scale is a vector).
3. A DequantizeLinear with non-constant scale or zero point is declined.

Why before pass 2: pass 2 would otherwise attach QuantParams to these weights and make a float model look int8.

Postcondition: in a graph without QuantizeLinear, no DequantizeLinear reads a constant.
"""
from __future__ import annotations

from tigris.ir import AnalyzedGraph
from tigris.passes._quant import dequantize, qparam_of
from tigris.passes._util import Decline, PassResult, set_const, tidy

NAME = "weight_only_quant"


def run(graph: AnalyzedGraph) -> PassResult:
    if any(op.op_type == "QuantizeLinear" for op in graph.ops):
        return PassResult(graph)
    g = graph.replace()
    keep = []
    declined: list[Decline] = []
    n = 0
    for op in graph.ops:
        if op.op_type != "DequantizeLinear" or op.inputs[0] not in graph.weights or op.outputs[0] in graph.outputs:
            keep.append(op)
            continue
        data = graph.weights[op.inputs[0]]
        q = qparam_of(graph, op, data.ndim)
        if isinstance(q, str):
            declined.append(Decline(op.name, f"rule 3: {q}"))
            keep.append(op)
            continue
        set_const(g, op.outputs[0], dequantize(data, q))
        n += 1
    g.ops = keep
    return PassResult(tidy(g), n, tuple(declined))
