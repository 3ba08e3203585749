"""Concat const: a Concat of constants around activations (a transformer's class token) becomes Pad + Add.

``Concat(c_1..c_i, a_1..a_k, c_j..c_n)`` along axis ``ax``, constants only before and after the activations, is
``Add(Pad(A), K)``: ``A`` is the activations' own Concat (or the single activation), padded along ``ax`` by the
constants' total lengths with the value 0, and ``K`` is the concatenated constants with zeros where ``A`` lies.
Every element is ``x + 0`` or ``0 + c``, so the float result is exact.

int8: ``K`` is quantized in the output's encoding (``rint(c / s_y) + zp_y``, saturated; the Concat kernel would
requantize the constant's codes to the same grid) and ``zp_y`` where ``A`` lies; the Pad writes the zero point of
``A``. The int8 Add then requantizes ``A`` into the output's encoding with one rounding, as the Concat kernel does.

Rules:
1. Only constants at the ends and at least one activation; constants in between, or a Concat of constants only
   (constant fold's), are left alone.
2. The constants' real values come from their quantization when they have one.

Why here: after operand stripping (the new Pad states its pads as attributes, as pass 13 leaves every Pad) and
before Concat axis normalize, which then sees only activation Concats.

Postcondition: no Concat reads a constant unless rule 1 left it.
"""
from __future__ import annotations

import numpy as np

from tigris.ir import AnalyzedGraph, Op, QuantParam, Tensor
from tigris.passes._util import PassResult, fresh_name, set_const

NAME = "concat_const"


def _real(g: AnalyzedGraph, name: str) -> np.ndarray:
    w = np.asarray(g.weights[name])
    q = g.tensors[name].quant
    if q is None:
        return w.astype(np.float64)
    return (w.astype(np.float64) - float(np.asarray(q.zero_point).ravel()[0])) * float(np.asarray(q.scale).ravel()[0])


def run(graph: AnalyzedGraph) -> PassResult:
    g = graph.replace()
    n = 0
    ops: list[Op] = []
    for op in graph.ops:
        ins = [i for i in op.inputs if i]
        const = [g.is_const(i) for i in ins]
        if op.op_type != "Concat" or not any(const) or all(const):
            ops.append(op)
            continue
        first = const.index(False)
        last = len(const) - 1 - const[::-1].index(False)
        if any(const[first:last + 1]) or any(g.tensors[i].quant is not None and g.tensors[i].quant.per_channel
                                             for i in ins if g.is_const(i)):
            ops.append(op)
            continue
        y = g.tensors[op.outputs[0]]
        rank = len(y.shape)
        ax = int(op.attrs.get("axis", 0)) % rank
        acts = ins[first:last + 1]
        taken: list[str] = []
        if len(acts) == 1:
            a = acts[0]
        else:
            shape = list(y.shape)
            shape[ax] = sum(g.tensors[t].shape[ax] for t in acts)
            a = fresh_name(g, f"{op.name}_inner")
            g.tensors[a] = Tensor(a, tuple(shape), y.dtype, y.quant)
            inner = fresh_name(g, f"{op.name}_concat", [a])
            taken += [a, inner]
            ops.append(Op(inner, "Concat", tuple(acts), (a,), dict(op.attrs)))
        at = g.tensors[a]
        before = sum(g.tensors[t].shape[ax] for t in ins[:first])
        after = sum(g.tensors[t].shape[ax] for t in ins[last + 1:])
        pads = [0] * (2 * rank)
        pads[ax], pads[rank + ax] = before, after
        padded = fresh_name(g, f"{op.name}_padded", taken)
        g.tensors[padded] = Tensor(padded, y.shape, at.dtype, at.quant)
        parts = [np.broadcast_to(_real(g, t), g.tensors[t].shape) for t in ins[:first]]
        parts.append(np.zeros(at.shape, np.float64))
        parts += [np.broadcast_to(_real(g, t), g.tensors[t].shape) for t in ins[last + 1:]]
        k = np.concatenate(parts, axis=ax)
        kn = fresh_name(g, f"{op.name}_constants", taken + [padded])
        if y.quant is not None:
            s = float(np.asarray(y.quant.scale).ravel()[0])
            z = int(np.asarray(y.quant.zero_point).ravel()[0])
            codes = np.clip(np.rint(k / s) + z, -128, 127).astype(np.int8)
            set_const(g, kn, codes, QuantParam(np.array([s], np.float32), np.array([z], np.int64)))
        else:
            set_const(g, kn, k.astype(np.float32))
        pad = Op(fresh_name(g, f"{op.name}_pad", taken + [padded, kn]), "Pad", (a,), (padded,),
                 {"pads": pads, "value": 0.0, "mode": "constant"})
        ops += [pad, Op(op.name, "Add", (padded, kn), op.outputs, {"fused_activation": None})]
        n += 1
    g.ops = ops
    return PassResult(g, n)
