"""Pass 11, shape op fold: shape computations that survived loading are evaluated, and Reshape targets become static.

Rules:
1. ``Shape``/``Size`` of a tensor (shapes are static in the IR) become constants.
2. A shape-arithmetic op (Gather, Unsqueeze, Squeeze, Concat, Slice, Cast, arithmetic...) whose operands are all
   constants is evaluated into a constant (the loader's evaluator, on a one-node ONNX model).
3. A ``Reshape`` whose target operand is not a constant reads a new constant equal to its output shape (the IR's
   output shape is the truth).
4. Shape-computation ops left without readers are removed.

Why here: the loader folds most of this before the IR exists; what remains is arithmetic that only became constant
after earlier passes (e.g. a Constant op turned into a weight by pass 1). Before pass 13, which drops the Reshape's
target operand.

Postcondition: no Shape/Size op and no Reshape with a non-constant target remain.
"""
from __future__ import annotations

import numpy as np
from onnx import helper

from tigris.ir import AnalyzedGraph
from tigris.load.fold import FOLDABLE, _evaluate
from tigris.passes._util import Decline, PassResult, fresh_name, remove_dead_ops, set_const

NAME = "shape_op_fold"
# ONNX operators this pass turns into others (the rewrite table of docs/operators.md).
ONNX_REWRITES = {"Shape": "a constant (shapes are static)", "Size": "a constant (shapes are static)"}


def _eval(g: AnalyzedGraph, op) -> list[np.ndarray] | None:
    attrs = {k: v for k, v in op.attrs.items() if v is not None and k != "domain"}
    try:
        node = helper.make_node(op.op_type, list(op.inputs), list(op.outputs), **attrs)
    except Exception:
        return None
    return _evaluate(node, [g.weights.get(i) for i in op.inputs], 17)


def run(graph: AnalyzedGraph) -> PassResult:
    g = graph.replace()
    n = 0
    declined: list[Decline] = []
    keep = []
    for op in graph.ops:
        outs = None
        if op.op_type in ("Shape", "Size") and op.inputs[0] not in g.weights:
            shp = np.array(g.tensors[op.inputs[0]].shape, dtype=np.int64)
            if op.op_type == "Size":
                outs = [np.array(int(np.prod(shp)), dtype=np.int64)]
            else:
                outs = [shp[slice(op.attrs.get("start", 0), op.attrs.get("end", len(shp)))]]
        elif op.op_type in FOLDABLE and op.op_type != "Reshape" and op.inputs \
                and all((not i) or i in g.weights for i in op.inputs) \
                and not any(o in g.outputs for o in op.outputs):
            outs = _eval(g, op)
            if outs is None:
                declined.append(Decline(op.name, "rule 2: could not be evaluated"))
        if outs is not None and not any(o in g.outputs for o in op.outputs):
            for name, val in zip(op.outputs, outs):
                if name:
                    set_const(g, name, np.asarray(val))
            n += 1
            continue
        if op.op_type == "Reshape" and len(op.inputs) > 1 and op.inputs[1] not in g.weights:
            cn = fresh_name(g, f"{op.name}_shape")
            set_const(g, cn, np.array(g.tensors[op.outputs[0]].shape, dtype=np.int64))
            op = op.with_(inputs=(op.inputs[0], cn))
            n += 1
        keep.append(op)
    g.ops = keep
    g, removed = remove_dead_ops(g, FOLDABLE)
    return PassResult(g, n + removed, tuple(declined))
