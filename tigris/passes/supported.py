"""Validation after stage 2: which nodes the runtime cannot run, all of them at once.

The supported set is design.md's normalized op vocabulary. A node is unsupported when its op type is not in the
vocabulary, when an operand that must be constant is not, when an attribute the kernel needs is missing (a pass
declined to set it), or when its activations mix float and int8 (a float op between a DQ and a Q that no pass
folded). Each entry names the node, its op type and the reason, so the user sees everything to fix in one run.
"""
from __future__ import annotations

import numpy as np

from tigris.ir import AnalyzedGraph, Op, UnsupportedModelError

VOCAB = frozenset({
    "Conv", "DepthwiseConv", "Conv1D", "Gemm", "MaxPool", "AveragePool", "GlobalAveragePool", "Add", "Mul", "Sub",
    "Concat", "Resize", "Relu", "Relu6", "Sigmoid", "Tanh", "HardSwish", "Clip", "HardSigmoid", "LeakyRelu",
    "PRelu", "Softmax", "Pad", "Transpose", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "QuantizeLinear",
    "DequantizeLinear",
})
_CONVS = ("Conv", "DepthwiseConv", "Conv1D")
_SINGLE_INPUT = ("Reshape", "Flatten", "Squeeze", "Unsqueeze", "Clip", "Pad", "Resize", "Relu", "Relu6", "Sigmoid",
                 "Tanh", "HardSwish", "HardSigmoid", "LeakyRelu", "Softmax", "Transpose", "GlobalAveragePool",
                 "MaxPool", "AveragePool")
_POOL_ATTRS = ("kernel_shape", "strides", "pads")


def _reason(g: AnalyzedGraph, op: Op) -> str | None:
    t = op.op_type
    if t not in VOCAB:
        return f"no runtime kernel for {t}"
    ins = [i for i in op.inputs if i]
    if t == "Pad":
        mode = op.attrs.get("mode", "constant")
        mode = mode.decode() if isinstance(mode, bytes) else str(mode)
        if mode != "constant":
            return f"Pad mode {mode!r} (only constant padding is supported)"
    if t in _SINGLE_INPUT and len(ins) != 1:
        return f"operand(s) {ins[1:]} were not folded into attributes"
    if t in _CONVS:
        if len(ins) < 2 or ins[1] not in g.weights or (len(ins) > 2 and ins[2] not in g.weights):
            return "weight or bias is not a constant"
        rank = len(g.tensors[ins[0]].shape)
        if (t == "Conv1D") != (rank == 3) or rank not in (3, 4):
            return f"{t} on a rank-{rank} input"
        if any(k not in op.attrs for k in ("kernel_shape", "strides", "dilations", "pads", "group")):
            return "attributes are not explicit"
    if t == "Gemm":
        if len(ins) < 2 or ins[1] not in g.weights or g.weights[ins[1]].ndim != 2 or \
                (len(ins) > 2 and ins[2] not in g.weights) or "fused_activation" not in op.attrs:
            return "not a product with a constant [OC, K] weight"
    if t in ("MaxPool", "AveragePool") and any(k not in op.attrs for k in _POOL_ATTRS):
        return "attributes are not explicit"
    if t in ("MaxPool", "AveragePool") and (len(g.tensors[ins[0]].shape), len(op.attrs["kernel_shape"])) not in \
            ((4, 2), (3, 1)):
        # 1-D pools on [N, C, L] (a KWS model's pooling over time) run like Conv1D: L is the row axis.
        return "only 2-D pooling on [N, C, H, W] and 1-D pooling on [N, C, L] are supported"
    if t == "Concat" and not op.attrs.get("axis_physical"):
        return "axis was not normalized"
    if t == "Resize" and "scales" not in op.attrs:
        return "scales were not extracted (non-integer resize)"
    if t == "Clip" and ("min" not in op.attrs or "max" not in op.attrs):
        return "bounds are not constants"
    if t == "Softmax" and op.attrs.get("coerce_2d"):
        return "pre-opset-13 Softmax over a non-final axis"
    if t == "Softmax" and float(op.attrs.get("beta", 1.0)) != 1.0:
        return f"Softmax with beta {op.attrs['beta']} (a TFLite option; the kernels compute beta = 1)"
    if t == "Pad" and "pads" not in op.attrs:
        return "pads are not constant"
    if t == "PRelu" and (len(ins) != 2 or ins[1] not in g.weights):
        return "slope is not a constant"
    if t in ("QuantizeLinear", "DequantizeLinear"):
        f, q = (ins[0], op.outputs[0]) if t == "QuantizeLinear" else (op.outputs[0], ins[0])
        if len(ins) != 1:
            return "its scale or zero point is not a constant"
        qt, ft = g.tensors[q], g.tensors[f]
        if ft.dtype != "float32" or qt.dtype != "int8" or qt.quant is None or qt.quant.per_channel:
            return f"only float32 <-> per-tensor int8 is supported ({ft.dtype}, {qt.dtype})"
        return None
    acts = [n for n in (*ins, *op.outputs) if n and n not in g.weights]
    deep = [n for n in acts if len(g.tensors[n].shape) > 4]
    if deep:
        return f"rank-{len(g.tensors[deep[0]].shape)} tensor {deep[0]} (runtime tensors have at most 4 dimensions)"
    kinds = set()
    for n in acts:
        tt = g.tensors[n]
        if tt.dtype == "float32" and tt.quant is None:
            kinds.add("float")
        elif tt.dtype == "int8" and tt.quant is not None:
            if tt.quant.per_channel:
                return f"activation {n} is quantized per channel"
            kinds.add("int8")
        else:
            return f"activation {n} has dtype {tt.dtype}{' with' if tt.quant else ' without'} quantization"
    if len(kinds) > 1:
        floats = [n for n in acts if g.tensors[n].dtype == "float32"]
        return f"mixes int8 and float activations (float {floats[0]} between quantized ops was not folded)"
    if t == "Resize":
        mode = op.attrs.get("mode", "nearest")
        mode = mode.decode() if isinstance(mode, bytes) else str(mode)
        if mode not in ("nearest", "linear"):
            return f"Resize mode {mode!r} (nearest and linear are supported)"
        if "int8" in kinds and mode != "nearest":
            return f"int8 Resize in {mode} mode (the int8 kernel is nearest only; float linear is supported)"
    if "int8" in kinds and t in (*_CONVS, "Gemm"):
        w = g.tensors[ins[1]]
        if w.dtype != "int8" or w.quant is None:
            return "int8 op with a non-int8 weight"
        if np.any(w.quant.zero_point != 0):
            return "int8 weight with a non-zero zero point"
        if len(ins) > 2 and (g.tensors[ins[2]].dtype != "int32" or g.tensors[ins[2]].quant is None):
            return "int8 op with a non-int32 bias"
    # PRelu is absent: its int8 kernel takes the slope's real values (float or dequantized) into its multipliers.
    if "int8" in kinds and t in ("Add", "Mul", "Sub"):
        for n in ins:
            if n in g.weights and g.tensors[n].quant is None:
                return f"int8 {t} with an unquantized constant operand {n}"
    return None


def unsupported_nodes(graph: AnalyzedGraph) -> list[dict[str, str]]:
    """Every node the runtime cannot run, as ``{"node", "op", "reason"}`` (the analyze --json contract)."""
    out = []
    for op in graph.ops:
        r = _reason(graph, op)
        if r:
            out.append({"node": op.name, "op": op.op_type, "reason": r})
    return out


def check_supported(graph: AnalyzedGraph) -> None:
    """Raise :class:`UnsupportedModelError` listing every unsupported node; return None when all can run."""
    nodes = unsupported_nodes(graph)
    if nodes:
        raise UnsupportedModelError(nodes, graph.name)
