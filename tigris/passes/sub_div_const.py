"""Extra pass, Sub/Div by a constant: ``x - c`` becomes ``x + (-c)`` and ``x / c`` becomes ``x * (1/c)`` (float).

Rules:
1. Only float tensors: for int8, ``-c`` and ``1/c`` would need new quantization of the constant and the runtime's
   int8 ``Sub`` already exists.
2. Only when the constant is the second operand (``c - x`` is not the same rewrite) and holds no zero (Div).
3. Declined for an int8 Div (no int8 divide kernel): validation reports it.

Why here: exporters write normalization (``(x - mean) / std``) and HardSwish's ``/ 6`` this way; turning them into
Add/Mul lets the HardSwish pattern pass (next) and the runtime's Add/Mul kernels handle them.

Postcondition: no float Sub/Div by a constant second operand remains.
"""
from __future__ import annotations

import numpy as np

from tigris.ir import AnalyzedGraph
from tigris.passes._util import Decline, PassResult, fresh_name, set_const

NAME = "sub_div_const"


def run(graph: AnalyzedGraph) -> PassResult:
    g = graph.replace()
    n = 0
    declined: list[Decline] = []
    for i, op in enumerate(graph.ops):
        if op.op_type not in ("Sub", "Div") or len(op.inputs) != 2:
            continue
        x, c = op.inputs
        if c not in g.weights or x in g.weights:
            continue
        if g.tensors[x].dtype != "float32" or g.tensors[op.outputs[0]].dtype != "float32":
            if op.op_type == "Div":
                declined.append(Decline(op.name, "rule 3: int8 Div has no kernel"))
            continue
        cv = g.weights[c].astype(np.float32)
        if op.op_type == "Div":
            if np.any(cv == 0):
                declined.append(Decline(op.name, "rule 2: divides by zero"))
                continue
            nv, new_type, suffix = (1.0 / cv).astype(np.float32), "Mul", "recip"
        else:
            nv, new_type, suffix = (-cv).astype(np.float32), "Add", "neg"
        cn = fresh_name(g, f"{c}_{suffix}")
        set_const(g, cn, nv)
        attrs = {"fused_activation": None} if new_type == "Add" else {}
        g.ops[i] = op.with_(op_type=new_type, inputs=(x, cn), attrs=attrs)
        n += 1
    return PassResult(g, n, tuple(declined))
