"""Extra pass, identity cleanup: remove ``Identity`` and inference-mode ``Dropout``; merge back-to-back reshapes.

Rules:
1. ``Identity`` and ``Dropout`` (whose mask output is unread) pass their input through; they are removed and their
   readers read the input directly.
1b. A reshape-family op (Reshape, Flatten, Squeeze, Unsqueeze) whose output shape equals its input shape is an
   identity too (TFLite converters leave such reshapes around pooling layers).
2. ``Dropout`` in training mode (a ``training_mode`` operand that is true or not a constant) is declined: it is not
   an identity, unless its ``ratio`` is a constant 0 (nothing is dropped, nothing rescaled). The op records why in
   ``unsupported_why``, which the support check reports.
3. Two consecutive reshape-family ops (Reshape, Flatten, Squeeze, Unsqueeze) where the middle tensor has no other
   reader and is not a graph output become one ``Reshape`` to the final shape (the output shape is the truth).
4. An Identity or Dropout that cannot be bypassed because its input and output are both part of the model interface
   (a graph input copied to a graph output) becomes a same-shape ``Reshape``, which lowers to a copy; a
   reshape-family op in that position stays as it is.
5. A variadic ``Max``/``Min`` (ONNX allows one operand or more) becomes two-operand ops: with one operand it is an
   identity (rule 1 then removes it), with ``n > 2`` a chain ``op(op(x0, x1), x2)...`` whose intermediate results
   take the broadcast shape and the output's dtype (the runtime's kernel takes two operands). When the output goes
   only to a QuantizeLinear, each intermediate result gets that QuantizeLinear -> DequantizeLinear pair too, so an
   int8 model's chain stays int8; this is exact, since quantizing is monotonic and saturating, so it commutes with
   max and min: ``q(max(max(a, b), c)) == q(max(dq(q(max(a, b))), c))``.

Why here (right after pass 1): exporters leave Identity/Dropout between producers and consumers, which hides the
patterns later passes match (Conv->Relu, DQ->op->Q); removing them first lets every later pass see direct edges.

Postcondition: no Identity or removable Dropout remains; no reshape reads another reshape's private output.
"""
from __future__ import annotations

import numpy as np

from tigris.ir import AnalyzedGraph, Tensor
from tigris.passes._util import Decline, PassResult, bypass, consumers, fresh_name, tidy

NAME = "cleanup"
# ONNX operators this pass turns into others (the rewrite table of docs/operators.md).
ONNX_REWRITES = {"Identity": "removed", "Dropout": "removed (inference mode)"}
_RESHAPES = {"Reshape", "Flatten", "Squeeze", "Unsqueeze"}


def run(graph: AnalyzedGraph) -> PassResult:
    g, n = _split_variadic(graph)
    declined: list[Decline] = []
    skip: set[str] = set()
    while True:
        idx = next((i for i, op in enumerate(g.ops) if op.name not in skip and _removable(g, i)), None)
        if idx is None:
            break
        op = g.ops[idx]
        if op.op_type == "Dropout" and len(op.inputs) > 2 and op.inputs[2] \
                and (op.inputs[2] not in g.weights or bool(g.weights[op.inputs[2]].reshape(-1)[0])) \
                and not (op.inputs[1] in g.weights and float(g.weights[op.inputs[1]].reshape(-1)[0]) == 0.0):
            declined.append(Decline(op.name, "rule 2: training_mode is true or not a constant"))
            skip.add(op.name)
            ops = list(g.ops)  # the support check reports this reason instead of a missing kernel
            ops[idx] = op.with_(attrs={**op.attrs, "unsupported_why": "Dropout in training mode drops a random "
                                       "selection of elements (training_mode true or not a constant, ratio not 0)"})
            g = g.replace(ops=ops)
            continue
        ng, why = bypass(g, idx)
        if why:
            if op.op_type in ("Identity", "Dropout"):
                ops = list(g.ops)
                ops[idx] = op.with_(op_type="Reshape", inputs=op.inputs[:1], outputs=op.outputs[:1], attrs={})
                g = tidy(g.replace(ops=ops))
                n += 1
            else:
                declined.append(Decline(op.name, f"rule 4: {why}"))
            skip.add(op.name)
            continue
        g = ng
        n += 1
    # rule 3
    while True:
        pair = _reshape_pair(g)
        if pair is None:
            break
        i, j = pair
        first, second = g.ops[i], g.ops[j]
        merged = second.with_(op_type="Reshape", inputs=(first.inputs[0],), attrs={})
        ops = list(g.ops)
        ops[j] = merged
        del ops[i]
        g = tidy(g.replace(ops=ops))
        n += 1
    return PassResult(g, n, tuple(declined))


def _removable(g: AnalyzedGraph, i: int) -> bool:
    op = g.ops[i]
    if op.op_type == "Identity":
        return True
    if op.op_type in _RESHAPES and op.inputs and op.outputs \
            and g.tensors[op.inputs[0]].shape == g.tensors[op.outputs[0]].shape:
        return True  # rule 1b
    if op.op_type == "Dropout":
        mask = op.outputs[1] if len(op.outputs) > 1 else ""
        mask_read = bool(mask) and (bool(consumers(g, mask)) or mask in g.outputs)
        return not mask_read
    return False


def _reshape_pair(g: AnalyzedGraph) -> tuple[int, int] | None:
    for j, op in enumerate(g.ops):
        if op.op_type not in _RESHAPES:
            continue
        mid = op.inputs[0]
        for i, prev in enumerate(g.ops[:j]):
            if prev.op_type in _RESHAPES and prev.outputs[0] == mid and mid not in g.outputs \
                    and len(consumers(g, mid)) == 1 and g.tensors[mid].quant == g.tensors[op.outputs[0]].quant:
                return i, j
    return None


def _split_variadic(g: AnalyzedGraph) -> tuple[AnalyzedGraph, int]:
    """Rule 5."""
    if not any(op.op_type in ("Max", "Min") and len([i for i in op.inputs if i]) != 2 for op in g.ops):
        return g, 0
    ops, tensors, n = [], dict(g.tensors), 0
    for op in g.ops:
        ins = [i for i in op.inputs if i]
        if op.op_type not in ("Max", "Min") or len(ins) == 2 or not ins:
            ops.append(op)
            continue
        n += 1
        if len(ins) == 1:
            ops.append(op.with_(op_type="Identity", inputs=tuple(ins), attrs={}))
            continue
        y = tensors[op.outputs[0]]
        readers = consumers(g, op.outputs[0])
        q = g.ops[readers[0]] if len(readers) == 1 and op.outputs[0] not in g.outputs else None
        q = q if q is not None and q.op_type == "QuantizeLinear" and len(q.inputs) >= 2 else None
        acc = ins[0]
        for k, x in enumerate(ins[1:]):
            last = k == len(ins) - 2
            if last:
                out = op.outputs[0]
            else:
                out = fresh_name(g.replace(tensors=tensors), f"{op.outputs[0]}_part{k}")
                shape = tuple(np.broadcast_shapes(tensors[acc].shape, tensors[x].shape))
                tensors[out] = Tensor(out, shape, y.dtype, None, y.layout)
            name = op.name if last else fresh_name(g.replace(tensors=tensors), f"{op.name}_part{k}")
            ops.append(op.with_(name=name, inputs=(acc, x), outputs=(out,)))
            acc = out
            if q is not None and not last:
                qt = tensors[q.outputs[0]]
                qn = fresh_name(g.replace(tensors=tensors), f"{out}_q")
                tensors[qn] = Tensor(qn, tensors[out].shape, qt.dtype, qt.quant, qt.layout)
                dn = fresh_name(g.replace(tensors=tensors), f"{out}_dq")
                tensors[dn] = Tensor(dn, tensors[out].shape, y.dtype, None, y.layout)
                ops.append(q.with_(name=fresh_name(g.replace(tensors=tensors), f"{qn}_op"), inputs=(out, *q.inputs[1:]),
                                   outputs=(qn,)))
                ops.append(q.with_(name=fresh_name(g.replace(tensors=tensors), f"{dn}_op"), op_type="DequantizeLinear",
                                   inputs=(qn, *q.inputs[1:]), outputs=(dn,)))
                acc = dn
    return tidy(g.replace(ops=ops, tensors=tensors)), n
