"""Extra pass, PRelu/LeakyRelu normalization.

Rules:
1. ``PRelu(x, slope)`` with a constant slope holding one value everywhere becomes ``LeakyRelu(alpha=slope)``: the
   runtime's unary kernel (an int8 lookup table) covers it without a per-channel slope constant.
2. ``LeakyRelu`` gets an explicit ``alpha`` (ONNX default 0.01); ``LeakyRelu(alpha=0)`` is ``Relu``.
3. A per-channel ``PRelu`` slope stays a constant operand, reshaped to broadcast along axis 1 ([C, 1, ...]) when it
   is stored as [1, C, 1, ...]; a non-constant slope is declined (validation reports the PRelu).

Why here: next to the other activation rewrites, before activation fuse (a Relu made by rule 2 can then be fused).

Postcondition: no PRelu with a uniform slope and no LeakyRelu without ``alpha`` remain.
"""
from __future__ import annotations

import numpy as np

from tigris.ir import AnalyzedGraph, Op
from tigris.passes._util import Decline, PassResult, fresh_name, set_const

NAME = "prelu_leaky"


def run(graph: AnalyzedGraph) -> PassResult:
    g = graph.replace()
    n = 0
    declined: list[Decline] = []
    for i, op in enumerate(graph.ops):
        if op.op_type == "LeakyRelu":
            alpha = float(op.attrs.get("alpha", 0.01))
            if alpha == 0.0:
                g.ops[i] = Op(op.name, "Relu", op.inputs[:1], op.outputs, {})
                n += 1
            elif "alpha" not in op.attrs:
                g.ops[i] = op.with_(attrs={"alpha": alpha})
                n += 1
        elif op.op_type == "PRelu":
            s = op.inputs[1]
            if s not in g.weights:
                declined.append(Decline(op.name, "rule 3: the slope is not a constant"))
                continue
            sv = g.weights[s]
            flat = sv.reshape(-1)
            if flat.size and np.all(flat == flat[0]) and g.tensors[s].quant is None:
                g.ops[i] = Op(op.name, "LeakyRelu", op.inputs[:1], op.outputs, {"alpha": float(flat[0])})
                n += 1
            elif sv.ndim == len(g.tensors[op.inputs[0]].shape) and sv.shape[0] == 1 and sv.ndim > 1:
                nn = fresh_name(g, f"{s}_c")
                set_const(g, nn, sv.reshape(sv.shape[1:]), g.tensors[s].quant)
                g.ops[i] = op.with_(inputs=(op.inputs[0], nn))
                n += 1
    return PassResult(g, n, tuple(declined))
