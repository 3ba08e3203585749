"""Extra pass, symmetric weights: int8 weights with a non-zero zero point are requantized symmetric per channel.

The runtime's int8 kernels (and CMSIS-NN's) accumulate ``sum((x - zp_x) * w)``: they have no weight zero point. ONNX
quantizers that keep uint8 weights (restated as int8 with zero point ``z - 128`` by pass 2) or asymmetric int8
weights state ``w_real = (q - zp_w) * s_w``, whose integer part ``q - zp_w`` can need 9 bits.

Rules:
1. Applies to the weight of a Conv or Gemm whose weight is int8 with any non-zero zero point.
2. The weight is dequantized and requantized symmetric per output channel (axis 0; scale = max|w| / 127), which
   moves each weight by at most half of its new quantization step.
3. A bias (int32, scale ``s_in * s_w``) is requantized to the new ``s_in * s_w'``; without a per-tensor quantized
   input the rewrite is declined (the bias scale would be undefined).
4. Symmetric weights are left alone (the common case: every shared model).

Why here: after matrix relabel (weights are [OC, ...], so axis 0 is the output channel) and BatchNorm fold (which
requantizes symmetric itself), before bias fold (which needs the final weight scale).

Postcondition: every int8 Conv/Gemm weight has zero points equal to 0.
"""
from __future__ import annotations

import numpy as np

from tigris.ir import AnalyzedGraph, QuantParam
from tigris.passes._quant import dequantize, quantize, symmetric_per_channel
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
        bname = op.inputs[2] if len(op.inputs) > 2 and op.inputs[2] else None
        xq = g.tensors[op.inputs[0]].quant
        if bname and (xq is None or xq.per_channel):
            declined.append(Decline(op.name, "rule 3: a bias but no per-tensor input quantization"))
            continue
        wf = dequantize(g.weights[wt.name], wt.quant)
        new_w, new_q = symmetric_per_channel(wf, 0)
        wn = fresh_name(g, f"{wt.name}_sym")
        set_const(g, wn, new_w, new_q)
        inputs = [op.inputs[0], wn]
        if bname:
            bt = g.tensors[bname]
            bf = dequantize(g.weights[bname], bt.quant) if bt.quant is not None else g.weights[bname]
            s = (float(xq.scale[0]) * new_q.scale.astype(np.float64)).astype(np.float32)
            bq = QuantParam(s, np.zeros(s.size, np.int64), 0 if s.size > 1 else None)
            bn = fresh_name(g, f"{bname}_sym", [wn])
            set_const(g, bn, quantize(np.asarray(bf, np.float32).reshape(-1), bq, "int32"), bq)
            inputs.append(bn)
        g.ops[i] = op.with_(inputs=tuple(inputs))
        n += 1
    return PassResult(g, n, tuple(declined))
