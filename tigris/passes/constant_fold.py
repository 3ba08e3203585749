"""Pass 1, constant op fold: ONNX ``Constant`` nodes become entries of ``graph.weights``.

Rules:
1. A ``Constant`` with ``value`` (tensor), ``value_float(s)`` or ``value_int(s)`` becomes a weight named after its
   output; the node is removed.
2. A ``Constant`` whose output is a graph output is declined: the runtime produces outputs, it does not store them.
3. ``sparse_value`` and ``value_string(s)`` are declined (no kernel reads them).

Why first: every later pass asks "is this operand a constant?" by looking in ``weights``; a value hidden in a
``Constant`` op would make them decline rewrites they could do.

Postcondition: no ``Constant`` op remains except declined ones.
"""
from __future__ import annotations

import numpy as np

from tigris.ir import AnalyzedGraph
from tigris.passes._util import Decline, PassResult, set_const, tidy

NAME = "constant_fold"
# ONNX operators this pass turns into others (the rewrite table of docs/operators.md).
ONNX_REWRITES = {"Constant": "a weight"}


def _value(attrs: dict) -> np.ndarray | None:
    if isinstance(attrs.get("value"), np.ndarray):
        return attrs["value"]
    if "value_float" in attrs:
        return np.array(attrs["value_float"], dtype=np.float32)
    if "value_floats" in attrs:
        return np.array(attrs["value_floats"], dtype=np.float32)
    if "value_int" in attrs:
        return np.array(attrs["value_int"], dtype=np.int64)
    if "value_ints" in attrs:
        return np.array(attrs["value_ints"], dtype=np.int64)
    return None


def run(graph: AnalyzedGraph) -> PassResult:
    g = graph.replace()
    keep = []
    declined: list[Decline] = []
    n = 0
    for op in graph.ops:
        if op.op_type != "Constant":
            keep.append(op)
            continue
        out = op.outputs[0]
        val = _value(op.attrs)
        if out in graph.outputs:
            declined.append(Decline(op.name, "rule 2: its output is a graph output"))
            keep.append(op)
        elif val is None:
            declined.append(Decline(op.name, "rule 3: no numeric value attribute"))
            keep.append(op)
        else:
            set_const(g, out, val)
            n += 1
    g.ops = keep
    return PassResult(tidy(g), n, tuple(declined))
