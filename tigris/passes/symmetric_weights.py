"""Extra pass, symmetric weights: int8 weights with a non-zero zero point become symmetric where that is exact.

ONNX quantizers that keep uint8 weights (restated as int8 with zero point ``z - 128`` by pass 2) and old TFLite/Coral
models state ``w_real = (q - zp_w) * s_w``. The int8 kernels carry such zero points exactly (param ``wzp``:
``sum (x - zp_in) * (w - zp_w)``, docs/numerics.md), but on a slower path; when every ``q - zp_w`` of a channel
already fits in int8, storing ``q - zp_w`` with zero point 0 is the same number and runs on the fast kernels.

Rules:
1. Applies to the weight of a Conv or Gemm whose weight is int8 with any non-zero zero point.
2. When every stored value minus its (per-tensor or per-channel) zero point lies in [-128, 127], the weight becomes
   those differences with zero point 0 and the same scales: an exact restatement (the bias is unchanged, its scale
   ``s_in * s_w`` is the same).
3. Otherwise the weight keeps its zero point (declined, with the reason): the kernels subtract it exactly. Nothing is
   ever re-rounded.
4. Symmetric weights are left alone (the common case: every shared model).

Why here: after matrix relabel (weights are [OC, ...], so axis 0 is the output channel) and BatchNorm fold, before
bias fold (which reads the weight scale).

Postcondition: an int8 Conv/Gemm weight with a non-zero zero point has some ``q - zp_w`` outside int8.
"""
from __future__ import annotations

import numpy as np

from tigris.ir import AnalyzedGraph, QuantParam
from tigris.passes._util import Decline, PassResult, fresh_name, set_const

NAME = "symmetric_weights"


def run(graph: AnalyzedGraph) -> PassResult:
    g = graph.replace()
    n = 0
    declined: list[Decline] = []
    for i, op in enumerate(graph.ops):
        if op.op_type not in ("Conv", "Gemm") or len(op.inputs) < 2 or op.inputs[1] not in g.weights:
            continue
        wt = g.tensors[op.inputs[1]]
        if wt.dtype != "int8" or wt.quant is None or not np.any(wt.quant.zero_point != 0):
            continue
        w = np.asarray(g.weights[wt.name]).astype(np.int64)
        zp = np.asarray(wt.quant.zero_point, dtype=np.int64).ravel()
        if zp.size > 1:
            if wt.quant.axis not in (None, 0) or zp.size != w.shape[0]:
                declined.append(Decline(op.name, "rule 3: per-channel zero points not along the output channels"))
                continue
            zp = zp.reshape((-1,) + (1,) * (w.ndim - 1))
        d = w - zp
        if d.min() < -128 or d.max() > 127:
            declined.append(Decline(op.name, "rule 3: weight minus zero point exceeds int8; the kernels subtract "
                                             "the zero point exactly"))
            continue
        q = QuantParam(wt.quant.scale, np.zeros_like(np.asarray(wt.quant.zero_point, dtype=np.int64)),
                       wt.quant.axis)
        wn = fresh_name(g, f"{wt.name}_sym")
        set_const(g, wn, d.astype(np.int8), q)
        g.ops[i] = op.with_(inputs=(op.inputs[0], wn, *op.inputs[2:]))
        n += 1
    return PassResult(g, n, tuple(declined))
