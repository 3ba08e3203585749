"""Extra pass, Pad fold: a zero ``Pad`` in front of a Conv or AveragePool becomes that op's ``pads``.

TensorFlow exports "same" padding of strided convs as an explicit ``Pad`` + ``Conv(pads=0)``; the runtime's Conv and
pool kernels pad on the fly, which saves the padded copy of the activation (and keeps the op tileable).

Rules:
1. ``pads`` (an operand from opset 11, an attribute before) and ``value`` must be constants; only a ``constant``
   mode Pad folds (``reflect``, ``edge`` and ``wrap`` are lifted, rule 5).
   With an ``axes`` operand (opset 18) the pads are expanded to every axis first.
2. The padded value must be real zero: 0.0 for float, the zero point for an int8 tensor.
3. Only spatial axes may be padded (batch and channel pads are zero) and pads must be non-negative.
4. The Pad's output must be read only by one Conv or AveragePool (not a graph output). A MaxPool is declined (it
   would pad with -inf, not 0). An AveragePool must either have no pads or ``count_include_pad=1``; it then gets
   ``count_include_pad=1`` since the Pad's zeros were counted.
5. Pads that are not folded are lifted into attributes (``pads`` logical ONNX order, ``value`` real float, ``mode``) so the
   runtime's Pad kernel can run them; pass 13 drops the operands. A reflect/edge/wrap Pad of logical axis 2 (the row
   axis of an nhwc image or an nwc sequence) also gets ``row_src``: per output row of that axis the input row it
   copies (the kind's row map for banded execution, ``tigris.ops.pad``).

Why here: after QDQ fold (so the int8 zero point is known), before the Conv relabels (only ``Conv`` is matched).

Postcondition: every remaining Pad has ``pads``/``value``/``mode`` attributes.
"""
from __future__ import annotations

import numpy as np

from tigris.ir import AnalyzedGraph, Op
from tigris.passes._util import Decline, PassResult, consumers, tidy

NAME = "pad_fold"


def _mode(op: Op) -> str:
    m = op.attrs.get("mode", "constant")
    return m.decode() if isinstance(m, bytes) else str(m)


def _pads(g: AnalyzedGraph, op: Op) -> tuple[list[int], float] | str:
    rank = len(g.tensors[op.inputs[0]].shape)
    if _mode(op) not in ("constant", "reflect", "edge", "wrap"):
        return f"rule 1: mode {_mode(op)!r} is not an ONNX Pad mode"
    if "pads" in op.attrs and (len(op.inputs) < 2 or not op.inputs[1]):
        pads = [int(v) for v in op.attrs["pads"]]
        value = float(op.attrs.get("value", 0.0))
        return pads, value
    if len(op.inputs) < 2 or op.inputs[1] not in g.weights:
        return "rule 1: pads is not a constant"
    pads = [int(v) for v in g.weights[op.inputs[1]].reshape(-1)]
    value = 0.0
    if len(op.inputs) > 2 and op.inputs[2]:
        if op.inputs[2] not in g.weights:
            return "rule 1: value is not a constant"
        cv = g.weights[op.inputs[2]].reshape(-1)
        xq = g.tensors[op.inputs[0]].quant
        if cv.size and np.issubdtype(cv.dtype, np.integer) and xq is not None:
            value = float((int(cv[0]) - int(xq.zero_point[0])) * float(xq.scale[0]))
        else:
            value = float(cv[0]) if cv.size else 0.0
    if len(op.inputs) > 3 and op.inputs[3]:
        if op.inputs[3] not in g.weights:
            return "rule 1: axes is not a constant"
        axes = [int(a) + rank if int(a) < 0 else int(a) for a in g.weights[op.inputs[3]].reshape(-1)]
        full = [0] * (2 * rank)
        for k, ax in enumerate(axes):
            full[ax] = pads[k]
            full[ax + rank] = pads[k + len(axes)]
        pads = full
    if len(pads) != 2 * rank:
        return "rule 1: pads has the wrong length"
    return pads, value


def run(graph: AnalyzedGraph) -> PassResult:
    g = graph.replace()
    declined: list[Decline] = []
    n = 0
    i = 0
    while i < len(g.ops):
        op = g.ops[i]
        if op.op_type != "Pad" or ("pads" in op.attrs and len(op.inputs) == 1 and op.attrs.get("lifted")):
            i += 1
            continue
        r = _pads(g, op)
        if isinstance(r, str):
            declined.append(Decline(op.name, r))
            i += 1
            continue
        pads, value = r
        why = _try_fold(g, i, pads, value) if _mode(op) == "constant" else "rule 1: mode is not constant"
        if why is None:
            n += 1
            continue  # op i removed
        declined.append(Decline(op.name, why))
        attrs = {"pads": pads, "value": value, "mode": _mode(op), "lifted": True}
        src = _row_src(g, op, pads)
        if src is not None:
            attrs["row_src"] = src
        lifted = op.with_(attrs=attrs)
        if lifted.attrs != op.attrs:
            g.ops[i] = lifted
        i += 1
    return PassResult(tidy(g), n, tuple(declined))


def _row_src(g: AnalyzedGraph, op: Op, pads: list[int]) -> list[int] | None:
    """Rule 5: the input row of logical axis 2 each output row copies, for a reflect/edge/wrap Pad of that axis."""
    from tigris.ops.pad import MODES, source_index

    mode = _mode(op)
    shape = g.tensors[op.inputs[0]].shape
    rank = len(pads) // 2
    if mode == "constant" or mode not in MODES or rank < 3 or len(shape) != rank or not (pads[2] or pads[rank + 2]):
        return None
    n, out = int(shape[2]), int(shape[2]) + pads[2] + pads[rank + 2]
    if n < 1 or out < 1:
        return None
    return [int(v) for v in source_index(np.arange(out) - pads[2], n, MODES[mode])]


def _try_fold(g: AnalyzedGraph, i: int, pads: list[int], value: float) -> str | None:
    op = g.ops[i]
    y = op.outputs[0]
    rank = len(pads) // 2
    if value != 0.0:
        return "rule 2: the pad value is not zero"
    if any(p < 0 for p in pads):
        return "rule 3: negative pads"
    if rank < 3 or pads[0] or pads[1] or pads[rank] or pads[rank + 1]:
        return "rule 3: batch or channel axis padded"
    readers = consumers(g, y)
    if len(readers) != 1 or y in g.outputs:
        return "rule 4: the padded tensor has other readers"
    ci = readers[0]
    c = g.ops[ci]
    if c.op_type not in ("Conv", "AveragePool") or c.inputs[0] != y or "pads" not in c.attrs:
        return f"rule 4: read by {c.op_type}, not a Conv or AveragePool"
    old = [int(v) for v in c.attrs["pads"]]
    nsp = rank - 2
    if c.op_type == "AveragePool" and any(old) and not int(c.attrs.get("count_include_pad", 0)):
        return "rule 4: AveragePool already pads without counting the pad"
    new = [old[k] + pads[2 + k] for k in range(nsp)] + [old[nsp + k] + pads[rank + 2 + k] for k in range(nsp)]
    if c.op_type == "AveragePool" and any(p >= k for p, k in zip(new, list(c.attrs["kernel_shape"]) * 2)):
        return "rule 4: the pool's pads would reach its kernel size"
    attrs = {**c.attrs, "pads": new}
    if c.op_type == "AveragePool":
        attrs["count_include_pad"] = 1
    g.ops[ci] = c.with_(inputs=(op.inputs[0], *c.inputs[1:]), attrs=attrs)
    del g.ops[i]
    return None
