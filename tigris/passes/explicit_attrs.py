"""Extra pass, explicit attributes: Conv and pooling ops get every attribute the runtime reads, with defaults filled.

Rules:
1. Conv: ``kernel_shape`` from the weight when absent; ``strides``/``dilations`` default to ones; ``group`` to 1.
2. MaxPool/AveragePool: ``strides``/``dilations`` default to ones, ``ceil_mode`` and ``count_include_pad`` to 0.
3. ``auto_pad`` (SAME_UPPER, SAME_LOWER, VALID) is resolved into explicit ``pads`` for the static input shape, and
   removed; pads are (begin..., end...) per spatial axis, which for 2-D is (top, left, bottom, right).
4. Concat and Flatten axes become non-negative.
6. Conv, ConvTranspose and Add get ``fused_activation = None`` (pass 16 may set it).
7. ConvTranspose: ``kernel_shape`` from the weight (``[C_in, OC/group, k...]``), ``strides``/``dilations`` ones,
   ``group`` 1, ``output_padding`` zeros; ``output_shape`` and ``auto_pad`` become explicit ``pads`` as ONNX defines
   them: ``total = s * (in - 1) + output_padding + (k - 1) * d + 1 - out`` with ``out = output_shape`` (or
   ``in * s`` for SAME_* without one), begin ``total // 2`` for SAME_UPPER and ``total - total // 2`` otherwise, end
   the rest (a negative pad extends the output). ``output_shape`` and ``auto_pad`` are removed.
5. Conv's kernel shape is read from the weight *tensor* shape, so it works before QDQ fold made the weight a
   constant.

Why here (before any relabel): later passes (BatchNorm fold, Pad fold, relabels, the verifier's shape check) read
these attributes and should not each re-implement ONNX's defaults.

Postcondition: every Conv/ConvTranspose/MaxPool/AveragePool has ``kernel_shape``, ``strides``, ``dilations``, ``pads`` (and
``group`` for Conv) and no ``auto_pad``.
"""
from __future__ import annotations

from tigris.ir import AnalyzedGraph, Op
from tigris.passes._util import Decline, PassResult

NAME = "explicit_attrs"
_POOLS = ("MaxPool", "AveragePool")


def _same_pads(x: tuple[int, ...], k: list[int], s: list[int], d: list[int], upper: bool) -> list[int]:
    begin, end = [], []
    for xi, ki, si, di in zip(x, k, s, d):
        eff = (ki - 1) * di + 1
        out = -(-xi // si)
        total = max((out - 1) * si + eff - xi, 0)
        b = total // 2 if upper else total - total // 2
        begin.append(b)
        end.append(total - b)
    return begin + end


def _fill_transpose(graph: AnalyzedGraph, op: Op) -> Op | str:
    a = dict(op.attrs)
    x = graph.tensors[op.inputs[0]].shape
    nsp = len(x) - 2
    k = [int(v) for v in (a.get("kernel_shape") or graph.tensors[op.inputs[1]].shape[2:])]
    s = [int(v) for v in a.get("strides") or [1] * nsp]
    d = [int(v) for v in a.get("dilations") or [1] * nsp]
    op_ = [int(v) for v in a.get("output_padding") or [0] * nsp]
    if not (len(k) == len(s) == len(d) == len(op_) == nsp):
        return "rule 7: kernel_shape, strides, dilations or output_padding do not match the input rank"
    ap = a.pop("auto_pad", "NOTSET") or "NOTSET"
    ap = ap.decode() if isinstance(ap, bytes) else str(ap)
    out = a.pop("output_shape", None)
    if out is not None or ap in ("SAME_UPPER", "SAME_LOWER"):
        out = [int(v) for v in out][-nsp:] if out is not None else [xi * si for xi, si in zip(x[2:], s)]
        total = [si * (xi - 1) + oi + (ki - 1) * di + 1 - o
                 for xi, ki, si, di, oi, o in zip(x[2:], k, s, d, op_, out)]
        begin = [t // 2 if ap == "SAME_UPPER" else t - t // 2 for t in total]
        pads = begin + [t - b for t, b in zip(total, begin)]
    elif ap == "VALID":
        pads = [0] * (2 * nsp)
    else:
        pads = [int(v) for v in a.get("pads") or [0] * (2 * nsp)]
    a.update(kernel_shape=k, strides=s, dilations=d, pads=pads, output_padding=op_, group=int(a.get("group", 1)))
    a.setdefault("fused_activation", None)
    return op.with_(attrs=a)


def _fill(graph: AnalyzedGraph, op: Op) -> Op | str:
    a = dict(op.attrs)
    x = graph.tensors[op.inputs[0]].shape
    nsp = len(x) - 2
    if op.op_type == "Conv":
        k = a.get("kernel_shape") or list(graph.tensors[op.inputs[1]].shape[2:])  # rule 5
        a["group"] = int(a.get("group", 1))
        a.setdefault("fused_activation", None)
    else:
        k = a.get("kernel_shape")
        a.setdefault("ceil_mode", 0)
        if op.op_type == "AveragePool":
            a.setdefault("count_include_pad", 0)
    k = [int(v) for v in k]
    s = [int(v) for v in a.get("strides", [1] * nsp)]
    d = [int(v) for v in a.get("dilations", [1] * nsp)]
    ap = a.pop("auto_pad", "NOTSET") or "NOTSET"
    if ap in ("SAME_UPPER", "SAME_LOWER"):
        pads = _same_pads(x[2:], k, s, d, ap == "SAME_UPPER")
    elif ap == "VALID":
        pads = [0] * (2 * nsp)
    else:
        pads = [int(v) for v in a.get("pads", [0] * (2 * nsp))]
    a.update(kernel_shape=k, strides=s, dilations=d, pads=pads)
    return op.with_(attrs=a)


def run(graph: AnalyzedGraph) -> PassResult:
    ops = []
    n = 0
    declined: list[Decline] = []
    for op in graph.ops:
        new = op
        if op.op_type == "Conv" or op.op_type in _POOLS or op.op_type == "ConvTranspose":
            r = (_fill_transpose if op.op_type == "ConvTranspose" else _fill)(graph, op)
            if isinstance(r, str):
                declined.append(Decline(op.name, r))
            else:
                new = r
        elif op.op_type == "Add" and "fused_activation" not in op.attrs:
            new = op.with_(attrs={**op.attrs, "fused_activation": None})
        elif op.op_type in ("Concat", "Flatten") and not op.attrs.get("axis_physical"):
            rank = len(graph.tensors[op.inputs[0]].shape)
            ax = int(op.attrs.get("axis", 1))
            if ax < 0:
                new = op.with_(attrs={**op.attrs, "axis": ax + rank})
        if new is not op and new.attrs != op.attrs:
            n += 1
        else:
            new = op
        ops.append(new)
    return PassResult(graph.replace(ops=ops), n, tuple(declined))
