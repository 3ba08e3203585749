"""Weight groups: an op whose weights do not fit the fast budget runs as output-channel groups.

Not a normalization pass (it is not in ``PIPELINE``): it depends on the budget, so ``tigris.api`` applies it after a
plan of the normalized graph failed (``api._split_weights``, docs/memory-planning.md "Weights that do not fit").

Without ``--xip`` every unit copies (or LZ4-decodes) its ops' weights into its fast prefix, so an op whose weights
alone exceed the fast budget cannot be planned, however small its activations and tiles. The output channels of a
``Conv`` (``group == 1``, 2-D or 1-D), of a ``Gemm`` and of a ``MatMul`` with a constant 2-D ``B`` are independent
given their weights: channel ``c`` of the output reads only row ``c`` of the weights (column ``c`` of ``B``) and entry
``c`` of the bias and of the per-channel quantization. So the op is
rewritten into ``G`` ops of the same type, op ``g`` computing output channels ``[c_g, c_{g+1})`` from the matching
slice of the weights, followed by ``Concat`` ops along the channel axis that assemble the original output tensor:

* every sub-op keeps the op's attributes (window, fused activation) and reads the same input; its output tensor
  has the original dtype, quantization and layout with ``c_{g+1} - c_g`` channels;
* weight, bias and per-channel weight (and int32 bias) scales are sliced along their output-channel axis; a
  per-tensor scale, a scalar bias are shared;
* the Concats take at most ``MAX_INPUTS`` operands: the first assembles sub-ops 0..3, each next one the previous
  result and the next three sub-ops, interleaved with the sub-ops in execution order (so only a few sub-outputs
  are live at a time). Every Concat input has the output's quantization, so an int8 Concat copies bytes.

Each sub-op is then an ordinary op: the planner places its weights in its unit's prefix, the writer stores them in
that unit's blob (LZ4-compressed on its own with ``-c lz4``), the loader checks it like any op, and the checker
proves its buffers. A channel is computed by the same kernel arithmetic from the same weights and inputs, so int8
results are the same bytes as the unsplit op's (tests/passes/test_weight_split.py compares both on the host
runtime), float results equal within rounding (a float kernel blocks channels, so a channel's summation order may
depend on where its group starts).

Group bounds: float convs store their weights in panels of ``PACK_NR`` (8) output channels with zero-filled tail
channels, so their groups are whole panels (except the last) to store no extra padding; other ops split at any
channel. Groups are as even as that allows.
"""
from __future__ import annotations

import numpy as np

from tigris.ir import AnalyzedGraph, Op, QuantParam, Tensor, TigrisError
from tigris.layout import physical_axis
from tigris.ops.base import MAX_INPUTS

SPLIT_TYPES = ("Conv", "Conv1D", "Gemm", "MatMul")
# Every op the rewrite makes carries attrs["weight_group"] = (original op name, group index or -1 for a joining
# Concat, group count), so a caller can map a planner's answer about it back to the op it came from.
GROUP_SUFFIX = "/wgroup"  # sub-op names are f"{op.name}{GROUP_SUFFIX}{g}"


def _weight_axis(op: Op) -> int:
    """The output-channel axis of the op's weight: OC of OIHW / [OC, K], or N of a MatMul's constant B ([K, N], or
    [N, K] with transB)."""
    if op.op_type == "MatMul":
        return 0 if int(op.attrs.get("transB", 0) or 0) else 1
    return 0


def output_channels(graph: AnalyzedGraph, op: Op) -> int:
    """Output channels of a splittable op (its weight's output-channel axis)."""
    return int(np.asarray(graph.weights[op.inputs[1]]).shape[_weight_axis(op)])


def splittable(graph: AnalyzedGraph, op: Op) -> str | None:
    """None when ``op`` may run as output-channel groups, else why not."""
    if op.op_type not in SPLIT_TYPES:
        return f"{op.op_type} has no independent output channels to split"
    if len(op.inputs) < 2 or op.inputs[1] not in graph.weights:
        return "its weight is not a constant"
    if op.op_type == "MatMul" and (np.asarray(graph.weights[op.inputs[1]]).ndim != 2 or graph.is_const(op.inputs[0])
                                   or len(graph.tensors[op.inputs[0]].shape) < 2):
        return "a MatMul splits only with a constant 2-D B and a variable A of rank >= 2"
    if op.op_type != "Gemm" and int(op.attrs.get("group", 1)) != 1:
        return "a grouped convolution"
    if output_channels(graph, op) < 2:
        return "one output channel"
    return None


def channel_step(graph: AnalyzedGraph, op: Op) -> int:
    """The granularity of group bounds: whole weight panels for a float conv, one channel otherwise."""
    if op.op_type in ("Conv", "Conv1D") and graph.tensors[op.outputs[0]].dtype == "float32":
        from tigris.ops.conv import PACK_NR

        return PACK_NR
    return 1


def max_groups(graph: AnalyzedGraph, op: Op) -> int:
    step = channel_step(graph, op)
    return -(-output_channels(graph, op) // step)


def group_bounds(oc: int, groups: int, step: int = 1) -> list[tuple[int, int]]:
    """``groups`` consecutive channel ranges covering ``[0, oc)`` exactly, each a whole number of ``step``-channel
    units (the last may be shorter) and as even as that allows."""
    units = -(-oc // step)
    if not 1 <= groups <= units:
        raise ValueError(f"{groups} groups of {oc} channels in steps of {step}")
    cuts = [min(oc, (g * units // groups) * step) for g in range(groups + 1)]
    return [(cuts[g], cuts[g + 1]) for g in range(groups)]


def _slice_quant(q: QuantParam | None, axis_len: int, a: int, b: int) -> QuantParam | None:
    if q is None or np.asarray(q.scale).size != axis_len:
        return q  # per tensor (or no quantization): shared by every group
    zp = np.asarray(q.zero_point)
    return QuantParam(np.asarray(q.scale).reshape(-1)[a:b].copy(),
                      zp.reshape(-1)[a:b].copy() if zp.size == axis_len else zp, q.axis)


def _slice_const(g: AnalyzedGraph, name: str, oc: int, a: int, b: int, new: str, axis: int | None) -> str:
    """The slice ``[a, b)`` of constant ``name`` along its output-channel axis (``axis``; None: the first axis of
    length ``oc``, for a ``[1, OC]`` bias the last, and for a MatMul's bias, broadcast to ``[M, N]``, the last) as a
    new constant; a constant without such an axis (a scalar bias) is shared."""
    w = np.asarray(g.weights[name])
    axes = [ax for ax in range(w.ndim) if w.shape[ax] == oc]
    if w.size <= 1 or not axes:
        return name
    ax = axis if axis is not None else (axes[0] if w.shape[0] == oc else axes[-1])
    g.weights[new] = np.ascontiguousarray(np.take(w, np.arange(a, b), axis=ax))
    t = g.tensors.get(name)
    if t is not None:
        shape = list(t.shape)
        shape[ax] = b - a
        g.tensors[new] = Tensor(new, tuple(shape), t.dtype, _slice_quant(t.quant, oc, a, b), t.layout)
    return new


def split_op(graph: AnalyzedGraph, name: str, groups: int) -> AnalyzedGraph:
    """``graph`` with op ``name`` rewritten into ``groups`` output-channel groups and the Concats that join them (see
    the module docstring). A new graph; ``graph`` is unchanged. TigrisError if the op cannot be split so."""
    idx = next((i for i, o in enumerate(graph.ops) if o.name == name), None)
    if idx is None:
        raise TigrisError("no such op to split into weight groups", name)
    op = graph.ops[idx]
    why = splittable(graph, op)
    if why is not None:
        raise TigrisError(f"cannot split into weight groups: {why}", name)
    oc = output_channels(graph, op)
    try:
        bounds = group_bounds(oc, groups, channel_step(graph, op))
    except ValueError as e:
        raise TigrisError(f"cannot split into weight groups: {e}", name) from None
    g = graph.replace()
    used = set(g.tensors) | {o.name for o in g.ops}

    def fresh_name(_g: AnalyzedGraph, base: str) -> str:
        """``passes._util.fresh_name`` on a name set kept up to date here (one set per split, not one per name)."""
        name, k = base, 1
        while name in used:
            name, k = f"{base}_{k}", k + 1
        used.add(name)
        return name

    y = g.tensors[op.outputs[0]]
    cax = len(y.shape) - 1 if op.op_type in ("Gemm", "MatMul") else 1  # the logical channel axis of the output
    if y.shape[cax] != oc:
        raise TigrisError(f"output {y.name} has {y.shape[cax]} channels, its weight {oc}", name)
    subs: list[Op] = []
    outs: list[str] = []
    for k, (a, b) in enumerate(bounds):
        tag = f"{GROUP_SUFFIX}{k}"
        ins = list(op.inputs)
        for j in range(1, len(ins)):
            if ins[j] and ins[j] in g.weights:
                axis = _weight_axis(op) if j == 1 else None
                if j == 2 and op.op_type == "MatMul":
                    c = np.asarray(g.weights[ins[j]])
                    if c.ndim == 0 or c.shape[-1] != oc:
                        continue  # broadcast along N (a scalar or a column): every group reads the same bias
                    axis = c.ndim - 1
                ins[j] = _slice_const(g, ins[j], oc, a, b, fresh_name(g, ins[j] + tag), axis)
        shape = list(y.shape)
        shape[cax] = b - a
        t = fresh_name(g, y.name + tag)
        g.tensors[t] = Tensor(t, tuple(shape), y.dtype, y.quant, y.layout)
        attrs = {**op.attrs, "weight_group": (op.name, k, groups)}
        subs.append(op.with_(name=fresh_name(g, op.name + tag), inputs=tuple(ins), outputs=(t,), attrs=attrs))
        outs.append(t)
    rank = len(y.shape)
    cat_attrs = {"axis": physical_axis(cax, rank), "logical_axis": cax, "axis_physical": True,
                 "weight_group": (op.name, -1, groups)}
    new_ops: list[Op] = []
    pending = list(zip(subs, outs))
    acc: list[str] = []
    part = 0
    while pending:
        take = MAX_INPUTS - len(acc)
        chunk, pending = pending[:take], pending[take:]
        new_ops += [s for s, _ in chunk]
        acc += [t for _, t in chunk]
        if pending:
            shape = list(y.shape)
            shape[cax] = sum(g.tensors[t].shape[cax] for t in acc)
            t = fresh_name(g, f"{y.name}{GROUP_SUFFIX}cat{part}")
            g.tensors[t] = Tensor(t, tuple(shape), y.dtype, y.quant, y.layout)
            new_ops.append(Op(fresh_name(g, f"{op.name}{GROUP_SUFFIX}cat{part}"), "Concat", tuple(acc), (t,),
                              dict(cat_attrs)))
            part += 1
            acc = [t]
    new_ops.append(Op(fresh_name(g, f"{op.name}{GROUP_SUFFIX}cat"), "Concat", tuple(acc), (y.name,),
                      dict(cat_attrs)))
    g.ops = g.ops[:idx] + new_ops + g.ops[idx + 1:]
    used = {n for o in g.ops for n in o.inputs}
    for n in op.inputs[1:]:
        if n and n in g.weights and n not in used:  # the whole constant is now stored only as its slices
            del g.weights[n]
            g.tensors.pop(n, None)
    return g

