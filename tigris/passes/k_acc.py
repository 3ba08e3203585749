"""Builders of int8 input-channel (K) groups: the int32 partial sums of an int8 conv or Gemm over slices of its input
channels, their sum and its requantization (the kinds of ``tigris/ops/acc.py``).

Not a normalization pass: ``tigris.passes.weight_split.split_k`` (and any pass that sums an int8 op over channel
groups) calls these on a graph copy it owns. For an int8 ``Conv``/``Conv1D`` (``group == 1``) or ``Gemm`` ``op``
with constant int8 weight ``W``, optional bias ``B``, input ``x`` and output ``y``:

* :func:`partial` adds ``ConvAcc`` (a conv) or ``GemmAcc`` (a Gemm) over the input channels ``[a, b)``: it reads
  ``x_name``, a tensor holding exactly those channels of ``x`` with ``x``'s encoding (a Slice of ``x``, or any op's
  int8 output of them), the slice ``W[:, a:b]`` (a new constant with ``W``'s quantization), and ``B`` when ``bias``
  (give it to exactly one group); its output is a new int32 accumulator of ``y``'s shape and layout;
  with ``acc_in``, the partial adds into an earlier group's accumulator (``out = acc_in + partial``, in place),
  which is how ``split_k`` chains the groups: one int32 accumulator live, no AccAdd;
* :func:`acc_add` adds ``AccAdd`` of two accumulators (for sums a chain does not express);
* :func:`requantize` adds the ``Requantize`` of an accumulator into ``y`` with ``op``'s fused activation;
* :func:`check_sum_fits` proves that no running sum of the groups can leave int32 (the partial ops' lowering proves
  each group's own sum), so the chain's AccAdds never saturate and the total is the unsplit op's exact integer.
"""
from __future__ import annotations

import numpy as np

from tigris.ir import AnalyzedGraph, Op, Tensor, TigrisError
from tigris.ops import _mac

INT8_K_TYPES = ("Conv", "Conv1D", "Gemm")


def is_int8_mac(graph: AnalyzedGraph, op: Op) -> bool:
    """An int8 Conv/Conv1D/Gemm with a constant int8 weight (what the builders take)."""
    if op.op_type not in INT8_K_TYPES or len(op.inputs) < 2 or op.inputs[1] not in graph.weights:
        return False
    x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    w = graph.tensors.get(op.inputs[1])
    return x.dtype == y.dtype == "int8" and x.quant is not None and y.quant is not None and w is not None and \
        w.dtype == "int8" and w.quant is not None


def why_not(graph: AnalyzedGraph, op: Op) -> str | None:
    """None when the builders can split ``op`` along its input channels, else why not."""
    if not is_int8_mac(graph, op):
        return "not an int8 Conv or Gemm with a constant int8 weight"
    if op.op_type != "Gemm" and int(op.attrs.get("group", 1)) != 1:
        return "a grouped conv"
    if op.attrs.get("fused_activation") not in (None, "relu", "relu6"):
        return f"fused activation {op.attrs.get('fused_activation')!r}"
    for n in (op.inputs[0], op.outputs[0]):
        if graph.tensors[n].quant.per_channel:
            return f"activation {n} is quantized per channel"
    return None


def acc_scale(graph: AnalyzedGraph, op: Op) -> tuple[float, ...]:
    """``s_x * s_w[oc]`` as float64, per output channel: the unsplit lowering's first product."""
    w = np.asarray(graph.weights[op.inputs[1]])
    _, s_w, _ = _mac.int8_weights_zp(graph, op.inputs[1], int(w.shape[0]))
    s_in, _ = _mac.per_tensor(graph.tensors[op.inputs[0]])
    return tuple(float(v) for v in s_in * s_w)


def acc_tensor(graph: AnalyzedGraph, op: Op, name: str) -> str:
    """Add (or keep) the int32 accumulator tensor ``name`` of ``op``'s output shape and layout."""
    y = graph.tensors[op.outputs[0]]
    if name not in graph.tensors:
        graph.tensors[name] = Tensor(name, y.shape, "int32", None, y.layout)
    return name


def partial(graph: AnalyzedGraph, op: Op, x_name: str, a: int, b: int, name: str, acc_name: str, bias: bool,
            attrs: dict | None = None, acc_in: str | None = None) -> tuple[Op, str]:
    """The partial op of ``op`` over input channels ``[a, b)`` reading ``x_name`` (see the module doc): its Op (not
    yet in ``graph.ops``) and its accumulator. Adds the weight slice ``<W>/k<a>_<b>`` and the accumulator tensor.
    ``acc_in``: an accumulator of the same op (an earlier group's) that this partial adds into (the op's fourth
    input; the planner may write the output over it), instead of an AccAdd of the two."""
    why = why_not(graph, op)
    if why:
        raise TigrisError(f"cannot sum int8 input-channel groups: {why}", op.name)
    wn = op.inputs[1]
    w = np.asarray(graph.weights[wn])
    if not 0 <= a < b <= w.shape[1]:
        raise TigrisError(f"input channels [{a}, {b}) outside the weight's {w.shape[1]}", op.name)
    xt = graph.tensors[x_name]
    ax = 1 if op.op_type != "Gemm" else len(xt.shape) - 1
    if xt.shape[ax] != b - a or xt.dtype != "int8" or xt.quant != graph.tensors[op.inputs[0]].quant:
        raise TigrisError(f"{x_name} does not hold input channels [{a}, {b}) in the op's input encoding", op.name)
    wk = f"{wn}/k{a}_{b}"
    k = 1
    while wk in graph.tensors or wk in graph.weights:
        wk, k = f"{wn}/k{a}_{b}_{k}", k + 1
    graph.weights[wk] = np.ascontiguousarray(w[:, a:b])
    t = graph.tensors[wn]
    graph.tensors[wk] = Tensor(wk, tuple(graph.weights[wk].shape), t.dtype, t.quant, t.layout)
    ins = [x_name, wk]
    bn = _mac.optional_input(op, 2)
    if bias and bn:
        ins.append(bn)
    if acc_in:
        if acc_in not in graph.tensors or graph.tensors[acc_in].dtype != "int32":
            raise TigrisError(f"{acc_in} is not an int32 accumulator", op.name)
        ins = ins[:3] + [""] * (3 - len(ins)) + [acc_in]
    acc_tensor(graph, op, acc_name)
    extra = dict(attrs or {})
    if op.op_type == "Gemm":
        return Op(name, "GemmAcc", tuple(ins), (acc_name,), extra), acc_name
    keep = {k2: op.attrs[k2] for k2 in ("kernel_shape", "strides", "dilations", "pads") if k2 in op.attrs}
    return Op(name, "ConvAcc", tuple(ins), (acc_name,), {**keep, "group": 1, **extra}), acc_name


def acc_add(graph: AnalyzedGraph, op: Op, acc_a: str, acc_b: str, out_name: str, name: str,
            attrs: dict | None = None) -> Op:
    """``AccAdd(acc_a, acc_b) -> out_name`` (a new accumulator of ``op``'s output when missing)."""
    acc_tensor(graph, op, out_name)
    return Op(name, "AccAdd", (acc_a, acc_b), (out_name,), dict(attrs or {}))


def requantize(graph: AnalyzedGraph, op: Op, acc_name: str, name: str, attrs: dict | None = None) -> Op:
    """``Requantize(acc_name) -> op.outputs[0]`` with ``op``'s fused activation and multipliers."""
    return Op(name, "Requantize", (acc_name,), (op.outputs[0],),
              {"fused_activation": op.attrs.get("fused_activation"), "acc_scale": acc_scale(graph, op),
               **(attrs or {})})


def check_sum_fits(graph: AnalyzedGraph, op: Op, bounds: list[tuple[int, int]]) -> None:
    """TigrisError unless every running sum of groups ``bounds`` (input-channel ranges, in order) stays in int32:
    ``|bias| + sum over the groups so far of K_g * 255 * max|w - zp_w|`` per output channel below 2**31."""
    w = np.asarray(graph.weights[op.inputs[1]]).astype(np.int64)
    oc = w.shape[0]
    _, s_w, zp_w = _mac.int8_weights_zp(graph, op.inputs[1], oc)
    s_in, _ = _mac.per_tensor(graph.tensors[op.inputs[0]])
    bias = np.abs(_mac.int_bias(graph, _mac.optional_input(op, 2), s_in * s_w))
    d = np.abs(w.reshape(oc, w.shape[1], -1) - zp_w[:, None, None])
    total = bias.astype(np.int64).copy()
    for a, b in bounds:
        total = total + 255 * d[:, a:b].sum(axis=(1, 2)) if b > a else total
        if np.any(total >= _mac.INT32_LIMIT):
            raise TigrisError("an int32 running sum of the input-channel groups could overflow", op.name)
