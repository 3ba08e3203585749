"""Extra pass, identity cleanup: remove ``Identity`` and inference-mode ``Dropout``; merge back-to-back reshapes.

Rules:
1. ``Identity`` and ``Dropout`` (whose mask output is unread) pass their input through; they are removed and their
   readers read the input directly.
1b. A reshape-family op (Reshape, Flatten, Squeeze, Unsqueeze) whose output shape equals its input shape is an
   identity too (TFLite converters leave such reshapes around pooling layers).
2. ``Dropout`` in training mode (a ``training_mode`` operand that is true or not a constant) is declined: it is not
   an identity.
3. Two consecutive reshape-family ops (Reshape, Flatten, Squeeze, Unsqueeze) where the middle tensor has no other
   reader and is not a graph output become one ``Reshape`` to the final shape (the output shape is the truth).
4. An Identity or Dropout that cannot be bypassed because its input and output are both part of the model interface
   (a graph input copied to a graph output) becomes a same-shape ``Reshape``, which lowers to a copy; a
   reshape-family op in that position stays as it is.

Why here (right after pass 1): exporters leave Identity/Dropout between producers and consumers, which hides the
patterns later passes match (Conv->Relu, DQ->op->Q); removing them first lets every later pass see direct edges.

Postcondition: no Identity or removable Dropout remains; no reshape reads another reshape's private output.
"""
from __future__ import annotations

from tigris.ir import AnalyzedGraph
from tigris.passes._util import Decline, PassResult, bypass, consumers, tidy

NAME = "cleanup"
_RESHAPES = {"Reshape", "Flatten", "Squeeze", "Unsqueeze"}


def run(graph: AnalyzedGraph) -> PassResult:
    g = graph
    n = 0
    declined: list[Decline] = []
    skip: set[str] = set()
    while True:
        idx = next((i for i, op in enumerate(g.ops) if op.name not in skip and _removable(g, i)), None)
        if idx is None:
            break
        op = g.ops[idx]
        if op.op_type == "Dropout" and len(op.inputs) > 2 and op.inputs[2] \
                and (op.inputs[2] not in g.weights or bool(g.weights[op.inputs[2]].reshape(-1)[0])):
            declined.append(Decline(op.name, "rule 2: training_mode is true or not a constant"))
            skip.add(op.name)
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
