"""Broadcast rank: an activation operand of an element-wise op with fewer dimensions than the op's output gets an
explicit reshape to the output's rank first (NumPy broadcasting prepends ones).

The element-wise kernels broadcast each operand by zero strides over the output's physical dimensions, so they
need every operand stated at the output's rank: ``[1, 3, 4, 5] + [4, 5]`` means ``[1, 3, 4, 5] + [1, 1, 4, 5]``.
A constant operand is laid out that way at lowering; an activation operand is a buffer with its own record, so the
rank change has to be an op of the graph. The reshape prepends ones only, so its output holds the same values in
the same order; the layout pass then decides whether it moves bytes (it does not whenever the broadcast channel
axis has size 1, e.g. ``[4, 5]`` as NHWC ``[1, 4, 5, 1]``) and aliases it or lays it out.

Rules:
1. Applies to Add, Sub, Mul, Div, Max, Min, Pow and PRelu, on every non-constant input whose rank is below the
   output's.
2. The new Reshape writes a new tensor of the padded shape (dtype and quantization of the operand); the op reads it.

Why here: after strip_operands (a Reshape is its output shape, nothing else) and before the layout pass, which lays
the padded tensor out like any other.

Postcondition: every activation operand of these ops has the output's rank.
"""
from __future__ import annotations

from tigris.ir import AnalyzedGraph, Op, Tensor
from tigris.passes._util import PassResult, fresh_name

NAME = "broadcast_rank"
_ELEMENTWISE = frozenset({"Add", "Sub", "Mul", "Div", "Max", "Min", "Pow", "PRelu"})


def run(graph: AnalyzedGraph) -> PassResult:
    if not any(_short_inputs(graph, op) for op in graph.ops):
        return PassResult(graph, 0)
    g = graph.replace()
    ops: list[Op] = []
    n = 0
    for op in graph.ops:
        short = _short_inputs(graph, op)
        if not short:
            ops.append(op)
            continue
        rank = len(g.tensors[op.outputs[0]].shape)
        inputs = list(op.inputs)
        for k in short:
            x = inputs[k]
            t = g.tensors[x]
            name = fresh_name(g, f"{x}_rank{rank}")
            g.tensors[name] = Tensor(name, (1,) * (rank - len(t.shape)) + tuple(t.shape), t.dtype, t.quant)
            ops.append(Op(fresh_name(g, f"{op.name}_broadcast{k}", [name]), "Reshape", (x,), (name,), {}))
            inputs[k] = name
            n += 1
        ops.append(op.with_(inputs=tuple(inputs)))
    g.ops = ops
    return PassResult(g, n)


def _short_inputs(g: AnalyzedGraph, op: Op) -> list[int]:
    if op.op_type not in _ELEMENTWISE or len(op.outputs) != 1:
        return []
    rank = len(g.tensors[op.outputs[0]].shape)
    return [k for k, x in enumerate(op.inputs) if x and x not in g.weights and len(g.tensors[x].shape) < rank]
