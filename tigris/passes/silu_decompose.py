"""Pass 6, SiLU decompose: ``Silu(x)`` (any domain; also ``Swish``) becomes ``Mul(x, Sigmoid(x))``.

Rules:
1. The Sigmoid writes a new tensor of x's shape and type; the Mul writes the Silu's output.
2. For an int8 x the new intermediate has no QuantParam of its own; validation reports the Mul if no later pass gives
   it one (a QDQ model states SiLU already decomposed, with its own Q/DQ, so this does not happen in practice).

Why here: the runtime has Sigmoid (an int8 lookup table) and Mul but no SiLU kernel; the relabel passes that follow do
not care about it, so any position after QDQ fold works; the spec puts it sixth.

Postcondition: no Silu/Swish op remains.
"""
from __future__ import annotations

from tigris.ir import AnalyzedGraph, Op, Tensor
from tigris.passes._util import PassResult, fresh_name

NAME = "silu_decompose"
# ONNX operators this pass turns into others (the rewrite table of docs/operators.md).
ONNX_REWRITES = {"Silu": "Mul(x, Sigmoid(x))", "Swish": "Mul(x, Sigmoid(x))"}


def run(graph: AnalyzedGraph) -> PassResult:
    g = graph.replace()
    ops: list[Op] = []
    n = 0
    for op in graph.ops:
        if op.op_type not in ("Silu", "Swish") or float(op.attrs.get("alpha", 1.0)) != 1.0:
            ops.append(op)
            continue
        x = op.inputs[0]
        t = g.tensors[x]
        mid = fresh_name(g, f"{op.name}_sigmoid_out")
        g.tensors[mid] = Tensor(mid, t.shape, t.dtype)
        sig = Op(fresh_name(g, f"{op.name}_sigmoid", [mid]), "Sigmoid", (x,), (mid,), {})
        ops += [sig, Op(op.name, "Mul", (x, mid), op.outputs, {})]
        n += 1
    g.ops = ops
    return PassResult(g, n)
