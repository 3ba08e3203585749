"""Pass 5, constant bias fold: a constant ``Add`` after a quantized product becomes that product's int32 bias.

TFLite converters write the dense layer as ``MatMul`` then ``Add(DQ(int32 bias))``; ORT leaves some classifier
biases as a float ``Add`` on the dequantized product. Neither form can run: the runtime's int8 kernels add the bias
in the int32 accumulator, and a constant operand of an int8 ``Add`` carries no scale in the plan.

Rules:
1. Applies to ``Conv``/``Gemm`` (also ``DepthwiseConv``/``Conv1D``, and a ``MatMul`` with a constant ``[K, OC]``
   weight, matmul_relabel rule 6b) with an int8 input and int8 weight (both with QuantParams), whose output ``t`` is
   read only by an ``Add(t, c)`` (either operand order) with ``c`` constant.
2. ``c`` (dequantized when it is a quantized constant) must hold one value per output channel (or a single value),
   laid along the channel axis (axis 1 of the product's output; the last axis of a MatMul's, whose bias is its
   input ``C``, quantized per output column).
3. The bias becomes ``round(c / (s_in * s_w))`` in int32 per channel, added to any existing bias; its QuantParam has
   scale ``s_in * s_w``.
4. The product then writes the Add's output when that output is int8 (it keeps its own QuantParam) or an
   unquantized float intermediate (a later activation fuse or the output's Q gives it meaning, exactly like the
   product's own float output before). When the product's output was itself int8 (quantized, then dequantized
   for the float Add), the sum is stored in the product's int8 encoding: readers of the sum read it, and if the
   sum is a float graph output a boundary ``DequantizeLinear`` produces it.
5. A float graph (product input float) executes the Add as written: no-op, not a decline.

Why here: after pass 2 (QuantParams exist) and pass 3 (MatMul is Gemm); before activation fuse, which needs the
product to write the tensor the activation reads.

Postcondition: no constant Add reads a quantized product's output.
"""
from __future__ import annotations

import numpy as np

from tigris.ir import AnalyzedGraph, Op, QuantParam
from tigris.passes._quant import dequantize
from tigris.passes._util import Decline, PassResult, consumers, fresh_name, set_const, tidy

NAME = "bias_fold"
_PRODUCTS = ("Conv", "Gemm", "DepthwiseConv", "Conv1D", "MatMul")


def _const_matmul(g: AnalyzedGraph, p: Op) -> bool:
    """A MatMul of an activation by a constant [K, OC] weight, with no bias yet (rule 1)."""
    return p.op_type == "MatMul" and len([i for i in p.inputs if i]) == 2 and p.inputs[1] in g.weights \
        and g.weights[p.inputs[1]].ndim == 2 and p.inputs[0] not in g.weights


def run(graph: AnalyzedGraph) -> PassResult:
    g = graph.replace()
    declined: list[Decline] = []
    n = 0
    done: set[str] = set()
    while True:
        m = _match(g, done)
        if m is None:
            break
        pi, ai, c = m
        add = g.ops[ai]
        done.add(add.name)
        why = _fold(g, pi, ai, c)
        if why:
            declined.append(Decline(add.name, why))
        else:
            n += 1
    return PassResult(tidy(g), n, tuple(declined))


def _match(g: AnalyzedGraph, done: set[str]) -> tuple[int, int, str] | None:
    for ai, add in enumerate(g.ops):
        if add.op_type != "Add" or add.name in done or len(add.inputs) != 2:
            continue
        a, b = add.inputs
        for t, c in ((a, b), (b, a)):
            if c not in g.weights or t in g.weights:
                continue
            pi = next((i for i, o in enumerate(g.ops) if t in o.outputs), None)
            if pi is None or g.ops[pi].op_type not in _PRODUCTS:
                continue
            if g.ops[pi].op_type == "MatMul" and not _const_matmul(g, g.ops[pi]):
                continue
            p = g.ops[pi]
            xq = g.tensors[p.inputs[0]].quant
            wq = g.tensors[p.inputs[1]].quant
            if xq is None or wq is None:
                continue  # rule 5
            if len(consumers(g, t)) != 1 or t in g.outputs:
                done.add(add.name)
                continue
            return pi, ai, c
    return None


def _fold(g: AnalyzedGraph, pi: int, ai: int, c: str) -> str | None:
    p, add = g.ops[pi], g.ops[ai]
    t = p.outputs[0]
    xq = g.tensors[p.inputs[0]].quant
    wq = g.tensors[p.inputs[1]].quant
    mm = p.op_type == "MatMul"
    oc = g.weights[p.inputs[1]].shape[1 if mm else 0]
    if xq.per_channel:
        return "rule 1: the product's input is quantized per channel"
    cq = g.tensors[c].quant
    cv = g.weights[c]
    cf = dequantize(cv, cq) if cq is not None else cv.astype(np.float32)
    out_shape = g.tensors[t].shape
    # rule 2: c must broadcast along the channel axis only
    if cf.size == 1:
        per = np.full(oc, float(cf.reshape(-1)[0]))
    else:
        shaped = np.broadcast_to(cf, np.broadcast_shapes(cf.shape, out_shape)) if cf.ndim <= len(out_shape) else None
        if shaped is None or tuple(shaped.shape) != tuple(out_shape):
            return "rule 2: the constant does not broadcast to the product's output"
        moved = np.moveaxis(shaped, -1 if mm else 1, 0).reshape(oc, -1)
        if not np.all(moved == moved[:, :1]):
            return "rule 2: the constant varies along a non-channel axis"
        per = moved[:, 0].astype(np.float64)
    s_acc = xq.scale[0].astype(np.float64) * wq.scale.astype(np.float64)
    s_acc = np.broadcast_to(s_acc, (oc,))
    add_q = np.rint(per / s_acc)
    old = p.inputs[2] if len(p.inputs) > 2 and p.inputs[2] else None
    if old:
        oq = g.tensors[old].quant
        ov = g.weights[old]
        if oq is None or not np.allclose(np.broadcast_to(oq.scale, (oc,)), s_acc.astype(np.float32), rtol=1e-5):
            old_q = np.rint(dequantize(ov, oq) / s_acc) if oq is not None else np.rint(ov / s_acc)
        else:
            old_q = ov.astype(np.float64)
        add_q = add_q + old_q
    if np.any(np.abs(add_q) > 2**31 - 1):
        return "rule 3: the bias does not fit int32"
    s32 = s_acc.astype(np.float32)
    bq = QuantParam(s32, np.zeros(oc, dtype=np.int64), 0) if oc > 1 else QuantParam(s32[:1], np.zeros(1, np.int64))
    bn = fresh_name(g, f"{p.name}_bias")
    set_const(g, bn, add_q.astype(np.int32), bq)
    y = add.outputs[0]
    yt = g.tensors[y]
    tq = g.tensors[t].quant
    if yt.quant is not None or yt.dtype != "float32" or (tq is None and y not in g.outputs):
        # rule 4: int8 sum, or an unquantized float intermediate that a later activation/Q-fold consumes
        g.ops[pi] = p.with_(inputs=(p.inputs[0], p.inputs[1], bn), outputs=(y,))
        del g.ops[ai]
        return None
    if tq is None:
        return "rule 4: the sum is a float graph output and the product has no int8 encoding of its own"
    # rule 4, float sum of a quantized product: keep the product's own encoding
    g.ops[pi] = p.with_(inputs=(p.inputs[0], p.inputs[1], bn))
    if y in g.outputs:
        g.ops[ai] = Op(add.name, "DequantizeLinear", (t,), (y,), {})
    else:
        del g.ops[ai]
        g.ops[:] = [o.with_(inputs=tuple(t if i == y else i for i in o.inputs)) for o in g.ops]
    return None
