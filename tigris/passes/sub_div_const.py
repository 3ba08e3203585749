"""Extra pass, Sub/Div by a constant: ``x - c`` becomes ``x + (-c)`` and ``x / c`` becomes ``x * (1/c)`` (float).

Rules:
1. Float outputs: ``x - c`` and ``x / c`` as above (also when ``x`` is int8: a float tail that the float_tail pass
   dequantizes). An int8 ``Sub`` is left alone (its kernel exists).
2. Only when the constant is the second operand (``c - x`` is not the same rewrite) and holds no zero (Div).
3. An int8 Div (ORT leaves Div float between DQ and Q, e.g. HardSwish spelled ``x * Relu6(x + 3) / 6``) by ONE
   constant value becomes an int8 Mul by ``1/c``, stored as the code +-127 with scale ``|1/c| / 127`` (exact to
   float32). Other int8 Divs are declined (no int8 divide kernel): validation reports them.
4. An int8 Sub of an unquantized float constant (ORT leaves it so) becomes an int8 Add of ``-c`` quantized
   symmetric per tensor (exact for a single value).

Why here: exporters write normalization (``(x - mean) / std``) and HardSwish's ``/ 6`` this way; turning them into
Add/Mul lets the HardSwish pattern pass (next) and the runtime's Add/Mul kernels handle them.

Postcondition: no float Sub/Div by a constant second operand remains.
"""
from __future__ import annotations

import numpy as np

from tigris.ir import AnalyzedGraph, Op, QuantParam
from tigris.passes._quant import dequantize
from tigris.passes._util import Decline, PassResult, fresh_name, set_const

NAME = "sub_div_const"
# ONNX operators this pass turns into others (the rewrite table of docs/operators.md).
ONNX_REWRITES = {"Div": "by one constant: Mul by its reciprocal (int8 too)", "Sub": "of a constant: Add of its negation"}


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
        # A float output read from an int8 input is a float tail (the float_tail pass dequantizes the input later):
        # rewritten like a float op.
        if g.tensors[op.outputs[0]].dtype != "float32" or g.tensors[c].dtype != "float32":
            if op.op_type == "Div":
                why = _int8_div(g, i, op)
                if why is None:
                    n += 1
                else:
                    declined.append(Decline(op.name, why))
            elif g.tensors[c].quant is None and _int8_sub(g, i, op):
                n += 1
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


def _int8_div(g: AnalyzedGraph, i: int, op: Op) -> str | None:
    """Rule 3: an int8 Div by one constant value becomes an int8 Mul by its reciprocal, stored as the code +-127 with
    scale |1/c| / 127, which represents 1/c to float32 precision. None when rewritten, else the decline reason."""
    x, c = op.inputs
    y = op.outputs[0]
    tx, ty, tc = g.tensors[x], g.tensors[y], g.tensors[c]
    if tx.dtype != "int8" or tx.quant is None or ty.dtype != "int8" or ty.quant is None:
        return "rule 3: Div mixes int8 and float"
    cv = np.asarray(g.weights[c])
    real = (dequantize(cv, tc.quant) if tc.quant is not None else cv).astype(np.float64)
    if real.size != 1:
        return "rule 3: int8 Div by a non-scalar constant has no exact int8 form"
    if real.reshape(-1)[0] == 0:
        return "rule 2: divides by zero"
    r = 1.0 / float(real.reshape(-1)[0])
    code = np.full(cv.shape, 127 if r > 0 else -127, dtype=np.int8)
    q = QuantParam(np.array([abs(r) / 127.0], dtype=np.float32), np.zeros(1, dtype=np.int64))
    cn = fresh_name(g, f"{c}_recip")
    set_const(g, cn, code, q)
    g.ops[i] = op.with_(op_type="Mul", inputs=(x, cn), attrs={})
    return None


def _int8_sub(g: AnalyzedGraph, i: int, op: Op) -> bool:
    """Rule 4: an int8 Sub of a float constant (ORT leaves ``x - c`` unquantized between DQ and Q) becomes an int8
    Add of ``-c`` quantized symmetric per tensor (scale max|c| / 127): exact for one value, within half a step of
    that scale per element otherwise."""
    x, c = op.inputs
    tx, ty = g.tensors[x], g.tensors[op.outputs[0]]
    if tx.dtype != "int8" or tx.quant is None or ty.dtype != "int8" or ty.quant is None:
        return False
    neg = -np.asarray(g.weights[c], dtype=np.float64)
    m = float(np.abs(neg).max()) if neg.size else 0.0
    if m == 0.0:
        code, scale = np.zeros(neg.shape, np.int8), 1.0
    else:
        scale = m / 127.0
        code = np.clip(np.rint(neg / scale), -127, 127).astype(np.int8)
    q = QuantParam(np.array([scale], dtype=np.float32), np.zeros(1, dtype=np.int64))
    cn = fresh_name(g, f"{c}_neg")
    set_const(g, cn, code, q)
    g.ops[i] = op.with_(op_type="Add", inputs=(x, cn), attrs={"fused_activation": None})
    return True
