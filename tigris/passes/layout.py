"""Layout pass (last in stage 2): every activation gets its storage layout; reshapes become aliases or transposes.

Rules (design.md "Layouts"):
1. Rank-4 activations are ``nhwc``, rank-3 ``nwc``, others ``plain`` (``tigris.layout.layout_for_rank``). Constants stay
   ``plain`` (ONNX layout; stage 7 transposes weights).
1b. A graph input read only by reshape-family ops stays ``plain``: the caller's bytes are in declared logical order
   already and the reshape then usually aliases them (TFLite models flatten their NHWC input first); making it
   ``nhwc`` would force a conversion at the boundary and a Transpose back right after.
2. A Reshape/Flatten/Squeeze/Unsqueeze whose input and output store their elements in the same order becomes an
   alias: ``attrs['alias'] = True`` (no kernel runs; the output shares the input's buffer).
3. Flatten -> Gemm: when a reshape to [N, K] reads a channels-last activation whose order differs and *every*
   reader is a Gemm reading it as the activation operand, the Gemm weight columns are permuted in the IR weights
   (``W'[:, p] = W[:, order[p]]``, ``order`` = logical index stored at position p) so the Gemm reads the NHWC bytes
   directly. The reshape is an alias marked ``attrs['nhwc_order'] = True``: its output holds the activation in
   physical (NHWC-flattened) order, which only those Gemms read.
4. Otherwise an explicit ``Transpose`` with the identity logical ``perm`` converts to plain logical order before the
   reshape (when the input is not plain-ordered) and/or back to the output's layout after it (when the output is
   not plain-ordered); a Transpose's ``perm`` is logical, so between tensors of different layouts it is the pure
   layout conversion. The reshape itself is then an alias (rule 2).

Why last: it assigns physical facts that earlier passes must not disturb; Concat axis normalize and output
transpose trim predicted these layouts with the same rule.

Postcondition: every activation's ``layout`` follows rule 1 (or was set channels-last by the input/output transpose
passes), and every reshape-family op has ``alias = True``.
"""
from __future__ import annotations

import numpy as np

from tigris.ir import AnalyzedGraph, Op, Tensor
from tigris.layout import byte_order, in_logical_order, layout_for_rank, same_order
from tigris.passes._util import PassResult, consumers, fresh_name, set_const

NAME = "layout"
_RESHAPES = ("Reshape", "Flatten", "Squeeze", "Unsqueeze")


def _assign(g: AnalyzedGraph) -> int:
    n = 0
    readers: dict[str, set[str]] = {}
    for op in g.ops:
        for t in op.inputs:
            readers.setdefault(t, set()).add(op.op_type)
    for name, t in list(g.tensors.items()):
        if name in g.weights:
            continue
        if name in g.inputs and t.layout == "plain" and readers.get(name) and readers[name] <= set(_RESHAPES):
            continue  # rule 1b
        want = layout_for_rank(len(t.shape))
        if t.layout == "plain" and want != "plain":
            g.tensors[name] = Tensor(name, t.shape, t.dtype, t.quant, want)
            n += 1
    return n


def run(graph: AnalyzedGraph) -> PassResult:
    g = graph.replace()
    n = _assign(g)
    ops: list[Op] = []
    for op in g.ops:
        if op.op_type not in _RESHAPES or op.attrs.get("alias"):
            ops.append(op)
            continue
        x, y = g.tensors[op.inputs[0]], g.tensors[op.outputs[0]]
        if same_order((x.shape, x.layout), (y.shape, y.layout)):
            ops.append(op.with_(attrs={**op.attrs, "alias": True}))
            n += 1
            continue
        if _permute_gemms(g, op):
            ops.append(op.with_(attrs={**op.attrs, "alias": True, "nhwc_order": True}))
            n += 1
            continue
        src, dst = x.name, y.name
        plain_in = in_logical_order(x.shape, x.layout)
        plain_out = in_logical_order(y.shape, y.layout)
        if not plain_in:
            mid = fresh_name(g, f"{x.name}_plain")
            g.tensors[mid] = Tensor(mid, x.shape, x.dtype, x.quant, "plain")
            ops.append(Op(fresh_name(g, f"{op.name}_to_plain"), "Transpose", (x.name,), (mid,),
                          {"perm": list(range(len(x.shape)))}))
            src = mid
        if not plain_out:
            mid = fresh_name(g, f"{y.name}_plain")
            g.tensors[mid] = Tensor(mid, y.shape, y.dtype, y.quant, "plain")
            dst = mid
        ops.append(op.with_(inputs=(src,) + op.inputs[1:], outputs=(dst,), attrs={**op.attrs, "alias": True}))
        if not plain_out:
            ops.append(Op(fresh_name(g, f"{op.name}_from_plain"), "Transpose", (dst,), (y.name,),
                          {"perm": list(range(len(y.shape)))}))
        n += 1
    g.ops = ops
    return PassResult(g, n)


def _permute_gemms(g: AnalyzedGraph, op: Op) -> bool:
    x, y = g.tensors[op.inputs[0]], g.tensors[op.outputs[0]]
    if len(y.shape) != 2 or y.shape[0] != x.shape[0] or len(x.shape) < 3 or y.name in g.outputs:
        return False
    readers = [g.ops[i] for i in consumers(g, y.name)]
    if not readers or any(r.op_type != "Gemm" or r.inputs[0] != y.name or r.inputs[1] not in g.weights
                          or y.name in r.inputs[1:] for r in readers):
        return False
    order = byte_order((1,) + tuple(x.shape[1:]), x.layout)
    for k, r in enumerate(readers):
        w = g.weights[r.inputs[1]]
        if w.shape[1] != order.size:
            return False
    new_names: dict[str, str] = {}
    for r in readers:
        wn = r.inputs[1]
        if wn not in new_names:
            nn = fresh_name(g, f"{wn}_nhwc")
            set_const(g, nn, np.ascontiguousarray(g.weights[wn][:, order]), g.tensors[wn].quant)
            new_names[wn] = nn
    for i, o in enumerate(g.ops):
        if o in readers:
            g.ops[i] = o.with_(inputs=(o.inputs[0], new_names[o.inputs[1]], *o.inputs[2:]))
    still_read = {t for o in g.ops for t in o.inputs}
    for old in new_names:  # pass 17 already ran: do not leave the unpermuted weight behind in the blob
        if old not in still_read:
            del g.weights[old]
            del g.tensors[old]
    return True
