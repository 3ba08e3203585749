"""Pass 4, BatchNorm fold: ``Conv -> BatchNormalization`` becomes one Conv with scaled weights and a new bias (also
``Gemm -> BatchNormalization``: a dense autoencoder's BatchNorm; the Gemm weight is [OC, K] after pass 3).

With ``f = gamma / sqrt(var + eps)`` per output channel: ``W' = W * f`` and ``b' = (b - mean) * f + beta``.

Rules:
1. Never in training mode (``training_mode = 1`` or the running-statistics outputs used): that normalizes with the
   batch's own statistics, so the BatchNorm stays and validation reports it. Applies when the BatchNorm's input is a
   Conv output read by nothing else (and not a graph output), and all four
   BatchNorm parameters are constants. The Conv then writes the BatchNorm's output tensor (and its quantization).
2. Float weights are scaled directly.
3. Int8 weights are folded in float per channel and requantized symmetric per channel (scale = max|w| / 127); the
   int32 bias is recomputed with scale ``s_in * s_w'``. This needs a per-tensor quantized Conv input; without one
   the rewrite is declined. The BatchNorm is never simply dropped.
3c. When the Conv's output is itself an int8 tensor with its own QuantParam (the model quantizes the Conv output
   and dequantizes it again before the BatchNorm: ONNX Runtime's QDQ output for an unfolded BatchNorm), folding would
   drop a rounding and a clamp that the model states (measured: 66 LSB at an LCNet stem whose calibration range the
   input exceeds). The BatchNorm becomes an int8 1x1 depthwise Conv instead: weight ``127 * sign(f)`` with per-channel
   scale ``|f| / 127``, int32 bias ``round((beta - mean * f) / (s_in * s_w))``. The Conv output keeps its rounding and
   clamp; the BatchNorm is then one per-channel requantization, which is what the model states up to the bias
   rounding (below 1/254 of an input LSB). A BatchNorm on a rank-2 tensor (after a Gemm) has no depthwise form
   and folds as in rule 3.
4. A BatchNorm not preceded by a foldable Conv, on a float rank >= 2 input, becomes ``Mul`` + ``Add`` with per-channel
   constants (the runtime has both kernels).
4b. One on a rank-4 int8 input with per-tensor quantization (after an int8 op other than a Conv: a ConvTranspose, an
   Add) becomes the int8 1x1 depthwise Conv of rule 3c. Otherwise it is declined and validation reports it.
5. ``ConvTranspose -> BatchNormalization`` with float weights folds like rule 2, along the weight's output-channel
   axis (``[C_in, OC/group, k...]``: output channel ``g * OC/group + j`` is column ``j`` of the rows of group ``g``).
   With int8 weights the BatchNorm takes rule 3c/4b.

Why here: after QDQ fold (so int8 weights carry their QuantParam) and matrix relabel; before the relabel passes, so
only the op type ``Conv`` is matched.

Postcondition: no BatchNormalization follows a Conv with constant operands.
"""
from __future__ import annotations

import numpy as np

from tigris.ir import AnalyzedGraph, Op, QuantParam, Tensor
from tigris.passes._quant import dequantize, quantize, symmetric_per_channel
from tigris.passes._util import Decline, PassResult, consumers, fresh_name, set_const, tidy

NAME = "bn_fold"
# ONNX operators this pass turns into others (the rewrite table of docs/operators.md).
ONNX_REWRITES = {"BatchNormalization": "folded into the preceding Conv/Gemm/ConvTranspose; on a quantized output a "
                                       "1x1 depthwise Conv; elsewhere (float) a per-channel Mul + Add"}


def _real(g: AnalyzedGraph, name: str) -> np.ndarray:
    q = g.tensors[name].quant
    w = g.weights[name]
    return (dequantize(w, q) if q is not None else w).astype(np.float64)


def _params(g: AnalyzedGraph, bn: Op) -> tuple[np.ndarray, np.ndarray] | None:
    if len(bn.inputs) < 5 or not all(t in g.weights for t in bn.inputs[1:5]):
        return None
    # A QDQ model (ORT's quantizer) stores gamma as int8 and beta as an int32 "bias" behind DequantizeLinear, so after
    # QDQ fold the raw integers carry a QuantParam: fold the real values, never the stored codes.
    gamma, beta, mean, var = (_real(g, t).reshape(-1) for t in bn.inputs[1:5])
    eps = float(bn.attrs.get("epsilon", 1e-5))
    f = gamma / np.sqrt(var + eps)
    return f, beta - mean * f


def run(graph: AnalyzedGraph) -> PassResult:
    g = graph.replace()
    declined: list[Decline] = []
    n = 0
    while True:
        target = None
        for j, bn in enumerate(g.ops):
            if bn.op_type == "BatchNormalization" and bn.name not in {d.node for d in declined}:
                target = j
                break
        if target is None:
            break
        bn = g.ops[target]
        if int(bn.attrs.get("training_mode", 0)) or len([o for o in bn.outputs if o]) > 1:
            # training mode normalizes with the batch's own statistics and outputs the updated running ones
            declined.append(Decline(bn.name, "rule 1: training mode (batch statistics) is not inference"))
            continue
        fs = _params(g, bn)
        if fs is None:
            declined.append(Decline(bn.name, "rule 1: its parameters are not constants"))
            continue
        f, shift = fs
        x = bn.inputs[0]
        pi = next((i for i, o in enumerate(g.ops) if x in o.outputs), None)
        conv = g.ops[pi] if pi is not None else None
        # a Gemm's weight is [OC, K] after matmul_relabel: output channels first, like a Conv's
        ok = conv is not None and conv.op_type in ("Conv", "Gemm") and len(consumers(g, x)) == 1 \
            and x not in g.outputs \
            and conv.inputs[1] in g.weights
        if conv is not None and conv.op_type == "ConvTranspose" and len(consumers(g, x)) == 1 \
                and x not in g.outputs and conv.inputs[1] in g.weights and g.tensors[conv.inputs[1]].quant is None \
                and _fold_into_convtranspose(g, pi, target, f, shift) is None:
            n += 1
            continue
        if ok and _int8_between(g, conv, x) and _to_depthwise(g, target, f, shift) is None:
            n += 1
            continue
        if ok:
            why = _fold_into_conv(g, pi, target, f, shift)
            if why is None:
                n += 1
                continue
            declined.append(Decline(bn.name, why))
            continue
        why = _to_mul_add(g, target, f, shift)
        xt = g.tensors[x]
        if why is not None and xt.dtype == "int8" and xt.quant is not None and not xt.quant.per_channel:
            why = _to_depthwise(g, target, f, shift)  # rule 4b
        if why is None:
            n += 1
        else:
            declined.append(Decline(bn.name, why))
    return PassResult(tidy(g), n, tuple(declined))


def _fold_into_conv(g: AnalyzedGraph, pi: int, bi: int, f: np.ndarray, shift: np.ndarray) -> str | None:
    conv, bn = g.ops[pi], g.ops[bi]
    wname = conv.inputs[1]
    w = g.weights[wname]
    wq = g.tensors[wname].quant
    oc = w.shape[0]
    if f.size != oc:
        return f"rule 1: {f.size} BatchNorm channels for {oc} conv outputs"
    bname = conv.inputs[2] if len(conv.inputs) > 2 and conv.inputs[2] else None
    shp = (oc,) + (1,) * (w.ndim - 1)
    if wq is None:
        b = g.weights[bname].astype(np.float64) if bname else np.zeros(oc)
        new_w = (w.astype(np.float64) * f.reshape(shp)).astype(np.float32)
        new_b = (b * f + shift).astype(np.float32)
        new_wq = new_bq = None
    else:
        xq = g.tensors[conv.inputs[0]].quant
        if xq is None or xq.per_channel:
            return "rule 3: int8 weights but the conv input has no per-tensor quantization"
        wf = dequantize(w, wq).astype(np.float64) * f.reshape(shp)
        new_w, new_wq = symmetric_per_channel(wf.astype(np.float32), 0)
        if bname:
            bq = g.tensors[bname].quant
            b = dequantize(g.weights[bname], bq).astype(np.float64) if bq is not None else g.weights[bname]
        else:
            b = np.zeros(oc)
        bf = b * f + shift
        s_b = (xq.scale[0] * new_wq.scale.astype(np.float64)).astype(np.float32)
        new_bq = QuantParam(s_b, np.zeros(s_b.size, dtype=np.int64), 0 if s_b.size > 1 else None)
        new_b = quantize(bf.astype(np.float32), new_bq, "int32")
    wn = fresh_name(g, f"{wname}_bn")
    set_const(g, wn, new_w, new_wq)
    bn_name = fresh_name(g, f"{bn.name}_bias", [wn])
    set_const(g, bn_name, new_b, new_bq)
    g.ops[pi] = conv.with_(inputs=(conv.inputs[0], wn, bn_name), outputs=(bn.outputs[0],))
    del g.ops[bi]
    return None


def _fold_into_convtranspose(g: AnalyzedGraph, pi: int, bi: int, f: np.ndarray, shift: np.ndarray) -> str | None:
    """Rule 5: float weights [C_in, OCg, k...] scaled per output channel g * OCg + j."""
    conv, bn = g.ops[pi], g.ops[bi]
    wname = conv.inputs[1]
    w = g.weights[wname].astype(np.float64)
    group = int(conv.attrs.get("group", 1))
    cin, ocg = w.shape[:2]
    oc = ocg * group
    if f.size != oc or cin % group:
        return f"rule 5: {f.size} BatchNorm channels for {oc} ConvTranspose outputs"
    fg = f.reshape(group, 1, ocg, *([1] * (w.ndim - 2)))
    new_w = (w.reshape(group, cin // group, ocg, *w.shape[2:]) * fg).reshape(w.shape).astype(np.float32)
    bname = conv.inputs[2] if len(conv.inputs) > 2 and conv.inputs[2] else None
    b = g.weights[bname].astype(np.float64) if bname else np.zeros(oc)
    wn = fresh_name(g, f"{wname}_bn")
    set_const(g, wn, new_w)
    bn_name = fresh_name(g, f"{bn.name}_bias", [wn])
    set_const(g, bn_name, (b * f + shift).astype(np.float32))
    g.ops[pi] = conv.with_(inputs=(conv.inputs[0], wn, bn_name), outputs=(bn.outputs[0],))
    del g.ops[bi]
    return None


def _int8_between(g: AnalyzedGraph, conv: Op, x: str) -> bool:
    """Rule 3c: an int8 Conv whose output the model quantizes on its own grid before the BatchNorm."""
    t = g.tensors[x]
    return g.tensors[conv.inputs[1]].quant is not None and t.dtype == "int8" and t.quant is not None \
        and not t.quant.per_channel


def _to_depthwise(g: AnalyzedGraph, bi: int, f: np.ndarray, shift: np.ndarray) -> str | None:
    bn = g.ops[bi]
    x = g.tensors[bn.inputs[0]]
    if len(x.shape) != 4 or f.size != x.shape[1]:
        return "rule 3c: not a rank-4 tensor with one parameter per channel"
    c = f.size
    mag = np.abs(f)
    s_w = np.where(mag > 0, mag / 127.0, 1.0).astype(np.float32)
    w = np.where(f < 0, -127, np.where(f > 0, 127, 0)).astype(np.int8).reshape(c, 1, 1, 1)
    wq = QuantParam(s_w, np.zeros(c, dtype=np.int64), 0)
    s_b = (np.float32(x.quant.scale[0]) * s_w).astype(np.float32)
    bq = QuantParam(s_b, np.zeros(c, dtype=np.int64), 0)
    b = quantize(shift.astype(np.float32), bq, "int32")
    wn = fresh_name(g, f"{bn.name}_weight")
    set_const(g, wn, w, wq)
    bn_b = fresh_name(g, f"{bn.name}_bias", [wn])
    set_const(g, bn_b, b, bq)
    g.ops[bi] = Op(bn.name, "Conv", (bn.inputs[0], wn, bn_b), bn.outputs,
                   {"kernel_shape": [1, 1], "strides": [1, 1], "dilations": [1, 1], "pads": [0, 0, 0, 0],
                    "group": c})
    return None


def _to_mul_add(g: AnalyzedGraph, bi: int, f: np.ndarray, shift: np.ndarray) -> str | None:
    bn = g.ops[bi]
    x = g.tensors[bn.inputs[0]]
    if x.dtype != "float32" or len(x.shape) < 2:
        return "rule 4: not after a foldable Conv, and the input is not a float tensor of rank >= 2"
    shp = (x.shape[1],) + (1,) * (len(x.shape) - 2)
    fn = fresh_name(g, f"{bn.name}_scale")
    set_const(g, fn, f.astype(np.float32).reshape(shp))
    sn = fresh_name(g, f"{bn.name}_shift", [fn])
    set_const(g, sn, shift.astype(np.float32).reshape(shp))
    mid = fresh_name(g, f"{bn.name}_scaled", [fn, sn])
    g.tensors[mid] = Tensor(mid, x.shape, "float32")
    mul = Op(fresh_name(g, f"{bn.name}_mul", [fn, sn, mid]), "Mul", (bn.inputs[0], fn), (mid,), {})
    add = Op(bn.name, "Add", (mid, sn), (bn.outputs[0],), {"fused_activation": None})
    g.ops[bi:bi + 1] = [mul, add]
    return None
