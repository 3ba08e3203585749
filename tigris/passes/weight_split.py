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

Channel groups: a ``DepthwiseConv`` (any channel multiplier ``m``) computes output channels ``[c*m, (c+1)*m)`` from
input channel ``c`` alone, so it splits along its *input* channels: group ``g`` is a ``Slice`` of input channels
``[c_g, c_{g+1})`` (a strided copy of a channel run per pixel; int8 keeps the input's encoding, so it copies bytes),
a depthwise conv over them with ``group = c_{g+1} - c_g`` and the slice ``[c_g*m, c_{g+1}*m)`` of its weights, bias
and per-channel quantization, and the same joining Concats. ``tigris.api`` splits a depthwise conv (and, when the
weights are not what fails, a Conv/Gemm/MatMul) when its *activations* do not fit even at one output row per tile
("Channel groups" in docs/memory-planning.md); ``group_op`` builds one group on its own, which is how the group
count is found (the bound of one group as a unit of its own).

Group bounds: float convs store their weights in panels of ``PACK_NR`` (8) output channels with zero-filled tail
channels, so their groups are whole panels (except the last) to store no extra padding; other ops split at any
channel. Groups are as even as that allows.
"""
from __future__ import annotations

import numpy as np

from tigris.ir import AnalyzedGraph, Op, QuantParam, Tensor, TigrisError
from tigris.layout import physical_axis
from tigris.ops.base import MAX_INPUTS
from tigris.passes import k_acc

SPLIT_TYPES = ("Conv", "Conv1D", "Gemm", "MatMul")  # independent output channels given the weights
CHANNEL_TYPES = ("DepthwiseConv",)  # independent channels: a group reads only its own input channels
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
    """The channels a group count divides: output channels of a splittable op (its weight's output-channel axis),
    input channels of a depthwise conv (each one with its ``m`` output channels)."""
    if op.op_type in CHANNEL_TYPES:
        return int(graph.tensors[op.inputs[0]].shape[1])
    return int(np.asarray(graph.weights[op.inputs[1]]).shape[_weight_axis(op)])


def _depth_mult(graph: AnalyzedGraph, op: Op) -> int:
    return int(np.asarray(graph.weights[op.inputs[1]]).shape[0]) // output_channels(graph, op)


def splittable(graph: AnalyzedGraph, op: Op, channels: bool = False) -> str | None:
    """None when ``op`` may run as output-channel (weight) groups, else why not; ``channels``: as channel groups,
    which also takes a depthwise conv."""
    if op.op_type not in SPLIT_TYPES and not (channels and op.op_type in CHANNEL_TYPES):
        return f"{op.op_type} has no independent output channels to split"
    if len(op.inputs) < 2 or op.inputs[1] not in graph.weights:
        return "its weight is not a constant"
    if op.op_type in CHANNEL_TYPES:
        x = graph.tensors[op.inputs[0]]
        w = np.asarray(graph.weights[op.inputs[1]])
        if len(x.shape) not in (3, 4) or int(op.attrs.get("group", 0)) != x.shape[1] or w.shape[0] % x.shape[1]:
            return "not a depthwise conv over its input's channels"
        return None if x.shape[1] >= 2 else "one channel"
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


def _fresh_names(g: AnalyzedGraph):
    """``passes._util.fresh_name`` on a name set kept up to date here (one set per split, not one per name)."""
    used = set(g.tensors) | {o.name for o in g.ops}

    def fresh_name(_g: AnalyzedGraph, base: str) -> str:
        name, k = base, 1
        while name in used:
            name, k = f"{base}_{k}", k + 1
        used.add(name)
        return name

    return fresh_name


def _channel_axis(op: Op, y: Tensor) -> int:
    """The logical channel axis of the op's output."""
    return len(y.shape) - 1 if op.op_type in ("Gemm", "MatMul") else 1


def _add_group(g: AnalyzedGraph, op: Op, a: int, b: int, k: int, groups: int, fresh_name) -> tuple[list[Op], str]:
    """Add to ``g`` the tensors and constants of group ``k`` of ``op`` (channels ``[a, b)`` as ``output_channels``
    counts them) and return its ops (a depthwise conv's input Slice, then the sub-op) and its output tensor."""
    from tigris.passes.slice_normalize import slice_op

    y = g.tensors[op.outputs[0]]
    tag = f"{GROUP_SUFFIX}{k}"
    ins = list(op.inputs)
    ops: list[Op] = []
    attrs = {**op.attrs, "weight_group": (op.name, k, groups)}
    if op.op_type in CHANNEL_TYPES:
        m = _depth_mult(g, op)
        oc, wa, wb = output_channels(g, op) * m, a * m, b * m
        x = g.tensors[op.inputs[0]]
        shape = list(x.shape)
        shape[1] = b - a
        xs = fresh_name(g, x.name + tag)
        g.tensors[xs] = Tensor(xs, tuple(shape), x.dtype, x.quant, x.layout)
        start = [0] * len(shape)
        start[1] = a
        sl = slice_op(fresh_name(g, f"{op.name}{GROUP_SUFFIX}slice{k}"), x.name, xs, start, [1] * len(shape),
                      shape)
        ops.append(sl.with_(attrs={**sl.attrs, "weight_group": (op.name, k, groups)}))
        ins[0] = xs
        attrs["group"] = b - a
    else:
        oc, wa, wb = output_channels(g, op), a, b
    for j in range(1, len(ins)):
        if ins[j] and ins[j] in g.weights:
            axis = _weight_axis(op) if j == 1 else None
            if j == 2 and op.op_type == "MatMul":
                c = np.asarray(g.weights[ins[j]])
                if c.ndim == 0 or c.shape[-1] != oc:
                    continue  # broadcast along N (a scalar or a column): every group reads the same bias
                axis = c.ndim - 1
            ins[j] = _slice_const(g, ins[j], oc, wa, wb, fresh_name(g, ins[j] + tag), axis)
    shape = list(y.shape)
    shape[_channel_axis(op, y)] = wb - wa
    t = fresh_name(g, y.name + tag)
    g.tensors[t] = Tensor(t, tuple(shape), y.dtype, y.quant, y.layout)
    ops.append(op.with_(name=fresh_name(g, op.name + tag), inputs=tuple(ins), outputs=(t,), attrs=attrs))
    return ops, t


def _dense_operand(graph: AnalyzedGraph, op: Op, n: int) -> bool:
    """Whether every constant operand of element-wise ``op`` after a dense layer of ``n`` output features is one
    value or a vector along the features (every axis before the last of size 1, per-tensor quantization), so the
    op on features ``[a, b)`` reads the constant's slice ``[a, b)`` (``_add_tail`` slices it)."""
    for name in op.inputs:
        if not name or not graph.is_const(name):
            continue
        w = np.asarray(graph.weights[name])
        if w.size == 1:
            continue
        if w.ndim > 2 or w.shape[-1] != n or any(d != 1 for d in w.shape[:-1]):
            return False
        t = graph.tensors.get(name)
        if t is not None and t.quant is not None and np.asarray(t.quant.scale).size > 1:
            return False
    return True


DENSE_TAIL_KINDS = ("add", "mul", "ewise")  # element-wise with a constant operand along the features


def channel_tail(graph: AnalyzedGraph, name: str) -> tuple[str, ...]:
    """The ops after op ``name`` that its channel groups take along (docs/memory-planning.md "Channel tails"): the
    longest chain of ops whose kind is ``channel_local``, each the only reader of the tensor before it (which is no
    graph output) and reading nothing else, with the channel count of ``name``'s output on logical axis 1 of a
    rank-3/4 tensor; cut after the last op whose output is smaller than ``name``'s (a GlobalAveragePool, a pool
    over the image), so the groups' joining Concats copy the reduced tensor instead of the whole one. () when the
    chain reduces nothing (the tail would only move the join).

    After a dense layer (a Gemm, a MatMul with a ``[M, N]`` output) the features are axis 1 of a rank-2 tensor, and
    the chain may also hold element-wise ops whose constant operand is one value or a vector along the features
    (a folded BatchNorm's Add, ``_dense_operand``); it is cut after the last op whose output has fewer bytes or is
    a graph output: a graph output is written by no op in place, so the op on the whole vector needs its input and
    its output, where the groups' joins in place need the output and one group."""
    from tigris.ops import kind_for

    op = graph.op_by_name(name)
    y = graph.tensors[op.outputs[0]]
    dense = op.op_type in ("Gemm", "MatMul")
    if (dense and len(y.shape) != 2) or (not dense and len(y.shape) not in (3, 4)):
        return ()
    consumers = graph.consumer_map()
    chain: list[str] = []
    best = 0
    t = y
    while t.name not in graph.outputs and len(consumers.get(t.name, ())) == 1:
        nxt = graph.ops[consumers[t.name][0]]
        acts = [n for n in nxt.inputs if n and not graph.is_const(n)]
        if acts != [t.name] or len(nxt.outputs) != 1 or nxt.name == name:
            break
        kind = kind_for(nxt.op_type)
        local = kind is not None and kind.channel_local(graph, nxt)
        consts = [n for n in nxt.inputs if n and graph.is_const(n)]
        if dense and not local and kind is not None and kind.name in DENSE_TAIL_KINDS:
            local = _dense_operand(graph, nxt, int(y.shape[1]))
            consts = []
        out = graph.tensors[nxt.outputs[0]]
        if not local or len(out.shape) != len(y.shape) or out.shape[1] != y.shape[1] or consts:
            break
        chain.append(nxt.name)
        if out.numel < y.numel or (dense and (out.nbytes < y.nbytes or out.name in graph.outputs)):
            best = len(chain)
        t = out
    return tuple(chain[:best])


def _add_tail(g: AnalyzedGraph, origin: str, tail: tuple[str, ...], t: str, a: int, b: int, k: int, groups: int,
              fresh_name) -> tuple[list[Op], str]:
    """Add to ``g`` group ``k``'s copies of the ``tail`` ops (channels ``[a, b)`` of their outputs), the first
    reading the group's output ``t``; return them and the last one's output."""
    ops: list[Op] = []
    tag = f"{GROUP_SUFFIX}{k}"
    for name in tail:
        op = g.op_by_name(name)
        y = g.tensors[op.outputs[0]]
        shape = list(y.shape)
        shape[1] = b - a
        out = fresh_name(g, y.name + tag)
        g.tensors[out] = Tensor(out, tuple(shape), y.dtype, y.quant, y.layout)
        n = int(y.shape[1])
        # the activation is the group's; a constant along the features (a dense tail's, _dense_operand) its slice
        ins = tuple(n_ if not n_ or not g.is_const(n_) else
                    _slice_const(g, n_, n, a, b, fresh_name(g, n_ + tag), np.asarray(g.weights[n_]).ndim - 1)
                    for n_ in op.inputs)
        ins = tuple(t if n_ and not g.is_const(n_) else n_ for n_ in ins)
        ops.append(op.with_(name=fresh_name(g, op.name + tag), inputs=ins, outputs=(out,),
                            attrs={**op.attrs, "weight_group": (origin, k, groups)}))
        t = out
    return ops, t


def _check(graph: AnalyzedGraph, name: str, channels: bool) -> tuple[int, Op]:
    idx = next((i for i, o in enumerate(graph.ops) if o.name == name), None)
    if idx is None:
        raise TigrisError("no such op to split into weight groups", name)
    op = graph.ops[idx]
    why = splittable(graph, op, channels=channels or op.op_type in CHANNEL_TYPES)
    if why is not None:
        raise TigrisError(f"cannot split into weight groups: {why}", name)
    y = graph.tensors[op.outputs[0]]
    oc = output_channels(graph, op) * (_depth_mult(graph, op) if op.op_type in CHANNEL_TYPES else 1)
    if y.shape[_channel_axis(op, y)] != oc:
        raise TigrisError(f"output {y.name} has {y.shape[_channel_axis(op, y)]} channels, its weight {oc}", name)
    return idx, op


def group_op(graph: AnalyzedGraph, name: str, channels: int, tail: tuple[str, ...] = ()) -> AnalyzedGraph:
    """A graph of one group of op ``name`` on its own: channels ``[0, channels)`` (as ``output_channels`` counts
    them), its ops (a depthwise conv's Slice and the sub-op, then the copies of the ``tail`` ops) and nothing else;
    the graph's input is the op's input, its output the group's. What a group needs as a unit of its own is
    ``tigris.plan.op_lower_bounds`` of it."""
    _, op = _check(graph, name, True)
    g = graph.replace()
    fresh_name = _fresh_names(g)
    ops, t = _add_group(g, op, 0, channels, 0, 2, fresh_name)
    if tail:
        m = _depth_mult(g, op) if op.op_type in CHANNEL_TYPES else 1
        more, t = _add_tail(g, name, tail, t, 0, channels * m, 0, 2, fresh_name)
        ops += more
    ins = [n for o in ops for n in o.inputs if n and n not in g.weights and n not in {p for q in ops for p in q.outputs}]
    g.ops, g.inputs, g.outputs = ops, list(dict.fromkeys(ins)), [t]
    return g


def split_op(graph: AnalyzedGraph, name: str, groups: int, tail: tuple[str, ...] = ()) -> AnalyzedGraph:
    """``graph`` with op ``name`` rewritten into ``groups`` channel groups and the Concats that join them (see the
    module docstring); with ``tail`` (``channel_tail``), every group also runs its copy of those ops on its
    channels, and the Concats join the last tail op's outputs into its output tensor instead. A new graph;
    ``graph`` is unchanged. TigrisError if the op cannot be split so."""
    idx, op = _check(graph, name, False)
    if tail and channel_tail(graph, name)[:len(tail)] != tuple(tail):
        raise TigrisError(f"cannot split with tail {list(tail)}: not a chain of channel-local ops after it", name)
    oc = output_channels(graph, op)
    try:
        bounds = group_bounds(oc, groups, channel_step(graph, op))
    except ValueError as e:
        raise TigrisError(f"cannot split into weight groups: {e}", name) from None
    g = graph.replace()
    fresh_name = _fresh_names(g)
    y = g.tensors[op.outputs[0]]
    cax = _channel_axis(op, y)
    subs: list[list[Op]] = []
    outs: list[str] = []
    m = _depth_mult(g, op) if op.op_type in CHANNEL_TYPES else 1
    for k, (a, b) in enumerate(bounds):
        ops, t = _add_group(g, op, a, b, k, groups, fresh_name)
        if tail:
            more, t = _add_tail(g, name, tuple(tail), t, a * m, b * m, k, groups, fresh_name)
            ops += more
        subs.append(ops)
        outs.append(t)
    if tail:  # the groups write the tail's output; the tensors before it are no longer made
        gone = [y.name] + [g.op_by_name(n).outputs[0] for n in tail[:-1]]
        y = g.tensors[g.op_by_name(tail[-1]).outputs[0]]
    new_ops = _joined(g, op, y, cax, groups, subs, outs, fresh_name)
    dropped = set(tail)
    g.ops = g.ops[:idx] + new_ops + [o for o in g.ops[idx + 1:] if o.name not in dropped]
    if tail:
        for n in gone:
            g.tensors.pop(n, None)
    _drop_unused_weights(g, op)
    for t_ in tail:  # a dense tail's constants are now stored only as their slices too
        _drop_unused_weights(g, graph.op_by_name(t_), first=0)
    return g


def _drop_unused_weights(g: AnalyzedGraph, op: Op, first: int = 1) -> None:
    used = {n for o in g.ops for n in o.inputs}
    for n in op.inputs[first:]:
        if n and n in g.weights and n not in used:  # the whole constant is now stored only as its slices
            del g.weights[n]
            g.tensors.pop(n, None)


def _joined(g: AnalyzedGraph, op: Op, y: Tensor, cax: int, groups: int, subs: list[list[Op]], outs: list[str],
            fresh_name) -> list[Op]:
    """The groups' ops ``subs`` (outputs ``outs``) interleaved with the Concats along logical axis ``cax`` that join
    their outputs into ``y``, at most MAX_INPUTS inputs each (two when they join in place)."""
    rank = len(y.shape)
    cat_attrs = {"axis": physical_axis(cax, rank), "logical_axis": cax, "axis_physical": True,
                 "weight_group": (op.name, -1, groups)}
    new_ops: list[Op] = []
    pending = list(zip(subs, outs))
    acc: list[str] = []
    part = 0
    # joined in place (lifetime rule 8): each Concat adds one group to the joined prefix, whose home it takes
    most = 2 if joins_in_place(g, y.name, cax) else MAX_INPUTS
    while pending:
        take = most - len(acc)
        chunk, pending = pending[:take], pending[take:]
        new_ops += [o for s, _ in chunk for o in s]
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
    return new_ops


EXPANSION_RATIO = 4  # an expansion widens the channels at least this much (inverted residuals: 6)


def expansion_of(graph: AnalyzedGraph, name: str) -> str | None:
    """The depthwise conv whose input op ``name`` (a 1x1 ``Conv``, ``group == 1``, at least ``EXPANSION_RATIO``
    times as many output channels as input channels) makes, when ``split_expansion`` may split the pair: the
    depthwise conv (multiplier 1) is the expanded tensor's only reader, which is no graph output, and both split by
    channels. None otherwise."""
    idx = next((i for i, o in enumerate(graph.ops) if o.name == name), None)
    if idx is None:
        return None
    op = graph.ops[idx]
    if op.op_type != "Conv" or op.attrs.get("group", 1) != 1 or list(op.attrs.get("kernel_shape", ())) != [1, 1]:
        return None
    e = op.outputs[0]
    x = graph.tensors.get(op.inputs[0])
    if x is None or len(x.shape) != 4 or graph.tensors[e].shape[1] < EXPANSION_RATIO * x.shape[1]:
        return None
    readers = [o for o in graph.ops if e in o.inputs]
    if len(readers) != 1 or e in graph.outputs or readers[0].op_type not in CHANNEL_TYPES:
        return None
    dw = readers[0]
    if dw.inputs[0] != e or _depth_mult(graph, dw) != 1 or splittable(graph, op, channels=True) or \
            splittable(graph, dw, channels=True):
        return None
    return dw.name


def split_expansion(graph: AnalyzedGraph, name: str, groups: int) -> AnalyzedGraph:
    """``graph`` with the 1x1 expansion ``name`` and the depthwise conv it feeds (``expansion_of``) run as ``groups``
    channel groups: group k is the expand's output-channel group k and the depthwise conv on exactly those channels,
    reading the group's output directly (no Slice), and the Concats join the depthwise outputs into its output
    tensor. The expanded tensor is never made whole, so a tiled unit holds one group's expanded rows at a time
    (docs/memory-planning.md "Boards without slow memory"). Each channel is computed by the same arithmetic from the
    same bytes, so int8 outputs are the unsplit graph's. A new graph; TigrisError if the pair cannot be split."""
    dw_name = expansion_of(graph, name)
    if dw_name is None:
        raise TigrisError("cannot split as an expansion: not a 1x1 conv feeding only a depthwise conv", name)
    idx, op = _check(graph, name, True)
    _, dw = _check(graph, dw_name, True)
    try:
        bounds = group_bounds(output_channels(graph, op), groups, channel_step(graph, op))
    except ValueError as e:
        raise TigrisError(f"cannot split into channel groups: {e}", name) from None
    g = graph.replace()
    fresh_name = _fresh_names(g)
    subs: list[list[Op]] = []
    outs: list[str] = []
    for k, (a, b) in enumerate(bounds):
        ops, t = _add_group(g, op, a, b, k, groups, fresh_name)
        (sl, d), u = _add_group(g, dw, a, b, k, groups, fresh_name)
        g.tensors.pop(sl.outputs[0], None)  # the expand's group is the depthwise group's input: no Slice
        subs.append(ops + [d.with_(inputs=(t,) + tuple(d.inputs[1:]))])
        outs.append(u)
    y = g.tensors[dw.outputs[0]]
    new_ops = _joined(g, dw, y, 1, groups, subs, outs, fresh_name)
    g.ops = g.ops[:idx] + new_ops + [o for o in g.ops[idx + 1:] if o.name != dw.name]
    g.tensors.pop(op.outputs[0], None)
    _drop_unused_weights(g, op)
    _drop_unused_weights(g, dw)
    return g


def joins_in_place(graph: AnalyzedGraph, name: str, cax: int) -> bool:
    """Whether the Concats joining groups into tensor ``name`` along logical axis ``cax`` run in place (lifetime
    rule 8, ``Concat.prefix_over``): a tensor of one row whose axes before the joined one are all 1 (the pooled
    vector of a classifier head), so the joined part is always the prefix of the next join's output; the groups'
    outputs share its encoding, so an int8 join copies bytes. Each join then takes two inputs: the prefix and the
    next group."""
    from tigris.layout import tensor_view_dims
    from tigris.plan import lifetime

    y = graph.tensors[name]
    if not lifetime.PREFIX or y.dtype not in ("float32", "int8"):
        return False
    dims = tensor_view_dims(y)
    axis = physical_axis(cax, len(y.shape))
    from tigris.ops.concat import view_axis

    axis = view_axis(graph, Op("probe", "Concat", (name,), (name,),
                               {"axis": axis, "logical_axis": cax, "axis_physical": True}))
    return dims[1] == 1 and all(dims[i] == 1 for i in range(axis))


def joining_concat(graph: AnalyzedGraph, op: Op) -> Op:
    """The shape of the Concats ``split_op`` joins the groups of ``op`` with (two inputs of the output's
    tensor, the output itself): what a caller asks the Concat kind about before splitting (e.g. whether it is
    column-local)."""
    y = graph.tensors[op.outputs[0]]
    cax = _channel_axis(op, y)
    return Op(f"{op.name}{GROUP_SUFFIX}cat", "Concat", (y.name, y.name), (y.name,),
              {"axis": physical_axis(cax, len(y.shape)), "logical_axis": cax, "axis_physical": True,
               "weight_group": (op.name, -1, 2)})


# Input-channel (K) groups (docs/memory-planning.md "Weights that do not fit"): an op whose output-channel groups
# cannot fit, because one of them (a panel of every input channel) is already over the budget, is split along its
# input channels instead. y = sum over groups g of op(x[..., K_g], W[:, K_g]) (+ bias once): group g is a Slice of
# the input channels K_g, the op on them with the weight's slice and no bias (group 0 keeps the bias) and no fused
# activation, then an Add of the running sum and the group's partial result; the last Add writes the output and
# carries the fused activation. The float results differ from the unsplit op's only by summation order. An int8
# Conv/Gemm sums exact int32 partial sums instead (tigris.passes.k_acc: ConvAcc/GemmAcc per group, each from the
# second on adding into the previous group's accumulator, then one Requantize into the output with the op's
# multipliers and activation), so its output is the unsplit op's bytes.

K_SPLIT_TYPES = ("Conv", "Conv1D", "Gemm", "MatMul")
K_SUFFIX = "/kgroup"  # K-group op names are f"{op.name}{K_SUFFIX}{g}" (and ...slice{g}, ...add{g})


def _k_weight_axis(op: Op) -> int:
    """The input-channel (K) axis of the op's weight: I of OIHW, K of a Gemm's [N, K], of a MatMul's constant B
    [K, N] (0) or, with transB, [N, K] (1)."""
    return 1 - _weight_axis(op) if op.op_type == "MatMul" else 1


def _k_input_axis(graph: AnalyzedGraph, op: Op) -> int:
    """The logical axis of the op's input that the weight's K axis reduces: channels of a conv, the last of A (the
    one before it for a MatMul with transA, whose A is [..., K, M])."""
    if op.op_type in ("Conv", "Conv1D"):
        return 1
    rank = len(graph.tensors[op.inputs[0]].shape)
    return rank - 2 if op.op_type == "MatMul" and int(op.attrs.get("transA", 0) or 0) else rank - 1


def input_channels(graph: AnalyzedGraph, op: Op) -> int:
    """The channels a K-group count divides: the weight's input-channel axis."""
    return int(np.asarray(graph.weights[op.inputs[1]]).shape[_k_weight_axis(op)])


def k_splittable(graph: AnalyzedGraph, op: Op) -> str | None:
    """None when ``op`` may run as input-channel (K) groups, else why not."""
    if op.op_type not in K_SPLIT_TYPES:
        return f"{op.op_type} does not reduce input channels with a constant weight"
    why = splittable(graph, op)
    if why is not None and why != "one output channel":
        return why
    ins = [n for n in op.inputs if n]
    if k_acc.is_int8_mac(graph, op):
        why = k_acc.why_not(graph, op)
        if why is not None:
            return why
    elif any(graph.tensors[n].dtype != "float32" for n in (op.inputs[0], op.outputs[0])) or \
            any(graph.tensors[n].quant is not None for n in ins if n in graph.tensors):
        return "neither a float op nor an int8 Conv/Gemm with int8 weights"
    x = graph.tensors[op.inputs[0]]
    if x.shape[_k_input_axis(graph, op)] != input_channels(graph, op):
        return "its input's channels are not its weight's"
    return None if input_channels(graph, op) >= 2 else "one input channel"


def _add_k_group(g: AnalyzedGraph, op: Op, a: int, b: int, k: int, groups: int, fresh_name) -> tuple[list[Op], str]:
    """Add to ``g`` group ``k`` of ``op`` (input channels ``[a, b)``): its input Slice and the partial op; return
    them and the partial op's output."""
    from tigris.passes.slice_normalize import slice_op

    x = g.tensors[op.inputs[0]]
    y = g.tensors[op.outputs[0]]
    tag = f"{K_SUFFIX}{k}"
    wg = (op.name, k, groups)
    ax = _k_input_axis(g, op)
    shape = list(x.shape)
    shape[ax] = b - a
    xs = fresh_name(g, x.name + tag)
    g.tensors[xs] = Tensor(xs, tuple(shape), x.dtype, x.quant, x.layout)
    start = [0] * len(shape)
    start[ax] = a
    sl = slice_op(fresh_name(g, f"{op.name}{K_SUFFIX}slice{k}"), x.name, xs, start, [1] * len(shape), shape)
    ops = [sl.with_(attrs={**sl.attrs, "weight_group": wg})]
    if k_acc.is_int8_mac(g, op):  # the exact int32 partial sum of the slice (ConvAcc/GemmAcc)
        part, p = k_acc.partial(g, op, xs, a, b, fresh_name(g, op.name + tag), fresh_name(g, y.name + tag),
                                k == 0, {"weight_group": wg})
        return ops + [part], p
    wn = op.inputs[1]
    w = np.asarray(g.weights[wn])
    wk = fresh_name(g, wn + tag)
    g.weights[wk] = np.ascontiguousarray(np.take(w, np.arange(a, b), axis=_k_weight_axis(op)))
    t = g.tensors.get(wn)
    if t is not None:
        ws = list(t.shape)
        ws[_k_weight_axis(op)] = b - a
        g.tensors[wk] = Tensor(wk, tuple(ws), t.dtype, t.quant, t.layout)
    ins = [xs, wk] + (list(op.inputs[2:]) if k == 0 else [])  # the bias is added once, by group 0
    while ins and not ins[-1]:
        ins.pop()
    attrs = {**op.attrs, "weight_group": wg}
    if "fused_activation" in attrs:
        attrs["fused_activation"] = None  # the activation applies to the sum: the last Add carries it
    p = fresh_name(g, y.name + tag)
    g.tensors[p] = Tensor(p, y.shape, y.dtype, y.quant, y.layout)
    ops.append(op.with_(name=fresh_name(g, op.name + tag), inputs=tuple(ins), outputs=(p,), attrs=attrs))
    return ops, p


def k_group_op(graph: AnalyzedGraph, name: str, channels: int) -> AnalyzedGraph:
    """A graph of one K group of op ``name`` on its own (input channels ``[0, channels)``: its Slice and partial
    op): what a group needs as a unit of its own is ``tigris.plan.op_lower_bounds`` of it."""
    op = graph.op_by_name(name)
    why = k_splittable(graph, op)
    if why is not None:
        raise TigrisError(f"cannot split into input-channel groups: {why}", name)
    g = graph.replace()
    ops, t = _add_k_group(g, op, 0, channels, 1, 2, _fresh_names(g))
    g.ops, g.inputs, g.outputs = ops, [op.inputs[0]], [t]
    return g


def split_k(graph: AnalyzedGraph, name: str, groups: int) -> AnalyzedGraph:
    """``graph`` with op ``name`` rewritten into ``groups`` input-channel groups summed by a chain of Adds (see
    above); every op made carries ``weight_group`` (an Add's index is -1, like a joining Concat's). A new graph;
    TigrisError if the op cannot be split so."""
    idx = next((i for i, o in enumerate(graph.ops) if o.name == name), None)
    if idx is None:
        raise TigrisError("no such op to split into input-channel groups", name)
    op = graph.ops[idx]
    why = k_splittable(graph, op)
    if why is not None:
        raise TigrisError(f"cannot split into input-channel groups: {why}", name)
    try:
        bounds = group_bounds(input_channels(graph, op), groups)
    except ValueError as e:
        raise TigrisError(f"cannot split into input-channel groups: {e}", name) from None
    if groups < 2:
        raise TigrisError("cannot split into input-channel groups: fewer than 2", name)
    g = graph.replace()
    fresh_name = _fresh_names(g)
    y = g.tensors[op.outputs[0]]
    int8 = k_acc.is_int8_mac(g, op)
    if int8:
        k_acc.check_sum_fits(g, op, bounds)
    new_ops: list[Op] = []
    acc = ""
    for k, (a, b) in enumerate(bounds):
        ops, p = _add_k_group(g, op, a, b, k, groups, fresh_name)
        new_ops += ops
        if k == 0:
            acc = p
            continue
        last = k == groups - 1
        if int8:  # the partial adds into the running int32 sum (in place); the last sum is requantized
            part = new_ops[-1]
            new_ops[-1] = part.with_(inputs=tuple(list(part.inputs[:3]) + [""] * (3 - len(part.inputs[:3])) + [acc]))
            acc = p
            if last:
                new_ops.append(k_acc.requantize(g, op, acc, fresh_name(g, f"{op.name}{K_SUFFIX}requant"),
                                                {"weight_group": (op.name, -1, groups)}))
            continue
        out = y.name if last else fresh_name(g, f"{y.name}{K_SUFFIX}sum{k}")
        if not last:
            g.tensors[out] = Tensor(out, y.shape, y.dtype, y.quant, y.layout)
        attrs = {"fused_activation": op.attrs.get("fused_activation") if last else None,
                 "weight_group": (op.name, -1, groups)}
        new_ops.append(Op(fresh_name(g, f"{op.name}{K_SUFFIX}add{k}"), "Add", (acc, p), (out,), attrs))
        acc = out
    g.ops = g.ops[:idx] + new_ops + g.ops[idx + 1:]
    used = {n for o in g.ops for n in o.inputs}
    for n in op.inputs[1:2]:
        if n and n in g.weights and n not in used:  # the whole weight is now stored only as its slices
            del g.weights[n]
            g.tensors.pop(n, None)
    return g
