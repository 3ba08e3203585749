"""Extra pass, per-element boundary QDQ: a per-axis or blocked QuantizeLinear/DequantizeLinear at the model boundary
gets a scale and a zero point per element.

Activations are quantized per tensor inside the runtime, so QDQ fold leaves a quantization with one scale per
channel (``axis``) or per block of ``block_size`` elements along an axis (opset 21) where it meets a graph input or
output: the model then quantizes (or dequantizes) at its interface with those parameters. The quantize and dequantize
kernels take a scale and a zero point per element instead (``tigris/ops/quant.py``, ``PER_ELEM``).

Rules:
1. Applies to a ``QuantizeLinear`` whose output is a graph output read by nothing else, or a ``DequantizeLinear``
   whose input is a graph input read by nothing else, when its 8-bit tensor carries a per-channel QuantParam (QDQ
   fold, rule 1) or the op still reads constant scale and zero point operands of more than one element (a blocked
   quantization, which QDQ fold declines).
2. The scale and zero point are expanded to the tensor's shape: along ``axis`` per channel, or repeated
   ``block_size`` times along it (the last block may be shorter); a uint8 tensor is restated as int8 (codes and zero
   points minus 128, QDQ fold rule 7), so the interface keeps its declared uint8.
3. The op reads the expanded arrays as new constants and gets ``per_element = 1``; the 8-bit tensor is given the
   per-tensor QuantParam (1, 0) as a placeholder, which no kernel reads (only this op touches the tensor).
4. Anything else is left alone (validation reports what no kernel runs).

Why here: right after QDQ fold, which states every other quantization and declines these.

Postcondition: no boundary Q/DQ with a per-axis or blocked quantization remains unmarked.
"""
from __future__ import annotations

import numpy as np

from tigris.ir import AnalyzedGraph, QuantParam, Tensor
from tigris.passes._util import Decline, PassResult, fresh_name, set_const

NAME = "qdq_per_element"


def _expand(a: np.ndarray, shape: tuple[int, ...], axis: int, block: int) -> np.ndarray:
    a = np.asarray(a)
    if a.size == 1:
        return np.broadcast_to(a.reshape(()), shape)
    if block > 0:  # blocked: a has the tensor's shape except ceil(d / block) along axis
        return np.repeat(a, block, axis=axis).take(range(shape[axis]), axis=axis).reshape(shape)
    view = [1] * len(shape)
    view[axis] = a.size
    return np.broadcast_to(a.reshape(view), shape)


def run(graph: AnalyzedGraph) -> PassResult:
    g = graph.replace()
    declined: list[Decline] = []
    fired = 0
    readers: dict[str, int] = {}
    for op in graph.ops:
        for i in op.inputs:
            if i:
                readers[i] = readers.get(i, 0) + 1
    for k, op in enumerate(graph.ops):
        if op.op_type not in ("QuantizeLinear", "DequantizeLinear") or op.attrs.get("per_element"):
            continue
        quantize = op.op_type == "QuantizeLinear"
        qname = op.outputs[0] if quantize else op.inputs[0]
        qt = g.tensors[qname]
        operands = [i for i in op.inputs[1:] if i]
        per_channel = qt.quant is not None and qt.quant.per_channel
        blocked = qt.quant is None and operands and all(i in g.weights for i in operands) \
            and np.asarray(g.weights[operands[0]]).size > 1
        if not (per_channel or blocked):
            continue
        boundary = (qname in g.outputs and readers.get(qname, 0) == 0) if quantize else \
            (qname in g.inputs and readers.get(qname, 0) == 1)
        if not boundary:
            declined.append(Decline(op.name, "rule 1: the per-axis quantized tensor is not only the model's interface"))
            continue
        shape = tuple(qt.shape)
        rank = len(shape)
        axis = int(op.attrs.get("axis", 1))
        axis += rank if axis < 0 else 0
        if per_channel:
            scale, zp = qt.quant.scale, qt.quant.zero_point  # already restated to int8 by QDQ fold
            axis = int(qt.quant.axis if qt.quant.axis is not None else axis) % rank
            block = 0
            shift = 0
        else:
            scale = np.asarray(g.weights[operands[0]], np.float32)
            zp = np.asarray(g.weights[operands[1]]) if len(operands) > 1 else np.zeros(scale.shape, np.int64)
            block = int(op.attrs.get("block_size", 0))
            if qt.dtype not in ("int8", "uint8") or (zp.dtype.kind not in "iu"):
                declined.append(Decline(op.name, f"rule 2: {qt.dtype} tensor"))
                continue
            shift = 128 if qt.dtype == "uint8" else 0
        try:
            s_full = np.ascontiguousarray(_expand(scale, shape, axis, block), np.float32)
            z_full = np.ascontiguousarray(_expand(np.asarray(zp, np.int64) - shift, shape, axis, block), np.int64)
        except ValueError as e:
            declined.append(Decline(op.name, f"rule 2: scale of shape {np.shape(scale)} for {list(shape)}: {e}"))
            continue
        sname = fresh_name(g, f"{op.name}_scale_e")
        set_const(g, sname, s_full)
        zname = fresh_name(g, f"{op.name}_zero_point_e")
        set_const(g, zname, z_full.astype(np.int32))
        g.tensors[qname] = Tensor(qname, qt.shape, "int8",
                                  QuantParam(np.array([1.0], np.float32), np.array([0], np.int64), None), qt.layout)
        attrs = {a: v for a, v in op.attrs.items() if a not in ("axis", "block_size")}
        attrs["per_element"] = 1
        g.ops[k] = op.with_(inputs=(op.inputs[0], sname, zname), attrs=attrs)
        fired += 1
    return PassResult(g, fired, tuple(declined))
