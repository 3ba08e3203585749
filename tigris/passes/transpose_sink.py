"""Extra pass, Transpose sinking: NHWC islands between Transposes (onnx2tf / TensorFlow exports) lose their Transposes.

Models converted from channels-last frameworks wrap every Conv in ``Transpose(perm=[0, 3, 1, 2])`` before and
``Transpose(perm=[0, 2, 3, 1])`` after, and run their activations, residual Adds, squeeze-excite means and Muls,
channel Gathers between them on the channels-last tensor. Each such Transpose is a whole-tensor data move the planner
cannot cut into row bands (its output rows are input columns), so the largest of them sets the smallest fast budget
(the mcunet_nhwc family: 65,536 bytes for a 16x16x32 float tensor transposed). Element-wise and reducing ops commute
with a permutation of the axes, so the Transposes move past them towards the next Conv, where they meet their
inverse and cancel.

Rules:
1. A Transpose ``y = T_P(x)`` (logical perm ``P``) whose input and output have the same encoding, whose output is not
   a graph output and each of whose readers absorbs it (rule 2) is removed; each reader then runs on ``x`` and a
   Transpose by ``P`` follows it (none when the reader is itself a Transpose: the two compose, and an identity
   composition is no op at all: its readers read ``x``).
2. Readers that absorb ``T_P``, each computing on ``x``'s axes what it computed on ``y``'s:
   * a Transpose by ``Q``: one Transpose by ``P[Q]``;
   * an element-wise op of one activation whose constant operands are scalars (activations, Clip, per-tensor
     Quantize/Dequantize);
   * an element-wise op of several operands (Add, Sub, Mul, Div, Max, Min, Pow) whose every activation operand is
     ``y``, the output of a Transpose by the same ``P`` with equal encodings (read before it) or an operand of the
     same rank with fewer elements than ``y`` (a squeeze-excite gate), which takes the inverse permutation (it
     cancels once the gate's own producers have taken the Transpose), and whose constants broadcast: each is
     extended to the rank with leading ones and permuted back (``c.transpose(argsort(P))``);
   * a ReduceMean/ReduceMax/ReduceMin/ReduceSum with axes as an attribute: the axes ``P[a]``; without keepdims the
     kept axes come out in ``x``'s order, and the Transpose that follows restores ``y``'s (none when it is the same);
   * a Gather with its index list as an attribute (the form slice_normalize gives it) along axis ``P[a]``, and a
     normalized Slice, its per-axis starts, ends and steps permuted.
1b. A Transpose that also requantizes (int8 per tensor, ONNX Runtime gives a Transpose the grid of a Clip it
   removed after it) first splits into an identity permutation that requantizes, in place of the Transpose, and the
   pure permutation, which then sinks; the identity Transpose is pointwise along the rows and the columns (it runs
   on row and column tiles), and every code is requantized once, as before.
3. The rewrite is applied to a fixed point and kept only when it lowers the number of elements the graph's
   Transposes move (an identity Transpose counts nothing); otherwise the graph is returned unchanged with a decline.

Why after QDQ fold: the int8 Transposes then move int8 codes with their quantization carried over, so the encoding
test of rule 1 sees the real grids. Why before ReduceMean to GAP and activation fuse: a mean over NHWC axes [1, 2]
becomes one over [2, 3] (a GlobalAveragePool), and a Clip or Relu that followed the Transpose after a Conv then
follows the Conv directly and fuses into it. The leading Transpose of a channels-last graph input stays for the
input transpose pass (a Conv does not absorb it).

Postcondition: no Transpose whose readers all absorb it remains where that lowered the data moved.
"""
from __future__ import annotations

import numpy as np

from tigris.ir import AnalyzedGraph, Op, Tensor
from tigris.passes._util import Decline, PassResult, consumers, fresh_name, producer, set_const, tidy

NAME = "transpose_sink"

_UNARY = ("Relu", "Relu6", "Clip", "Sigmoid", "Tanh", "HardSwish", "HardSigmoid", "LeakyRelu", "Elu", "Selu",
          "Exp", "Log", "Abs", "Neg", "Sqrt", "Reciprocal", "Erf", "Softplus", "Softsign", "Gelu", "Mish",
          "QuantizeLinear", "DequantizeLinear", "Floor", "Ceil", "Round", "Sign", "Sin", "Cos")
_BINARY = ("Add", "Sub", "Mul", "Div", "Max", "Min", "Pow")
_REDUCE = ("ReduceMean", "ReduceMax", "ReduceMin", "ReduceSum")
# False: the pass does nothing (the earlier rule; bench/plan_quality.py --cols plans its row-tiles baseline so).
ENABLED = True
MAX_STEPS = 10_000  # a safety bound on the fixed point; every step moves a Transpose forward or removes one


def _perm(op: Op, rank: int) -> list[int]:
    p = op.attrs.get("perm")
    return list(range(rank))[::-1] if p is None else [int(v) for v in p]


def _same_enc(g: AnalyzedGraph, a: str, b: str) -> bool:
    qa, qb = g.tensors[a].quant, g.tensors[b].quant
    return (qa is None and qb is None) or (qa is not None and qb is not None and qa == qb)


def _movable(g: AnalyzedGraph, t: Op, requant: bool = True) -> list[int] | None:
    """Rule 1's conditions on the Transpose itself: its perm, or None. ``requant`` admits one whose output has
    another per-tensor int8 encoding than its input (rule 1b)."""
    if t.op_type != "Transpose" or len(t.inputs) != 1 or len(t.outputs) != 1:
        return None
    x, y = t.inputs[0], t.outputs[0]
    if x in g.weights or y in g.outputs or x not in g.tensors or y not in g.tensors:
        return None
    rank = len(g.tensors[x].shape)
    p = _perm(t, rank)
    if sorted(p) != list(range(rank)) or p == list(range(rank)):
        return None  # an identity permutation has nothing to sink (it requantizes, or a later pass removes it)
    if not _same_enc(g, x, y):
        qx, qy = g.tensors[x].quant, g.tensors[y].quant
        if not requant or qx is None or qy is None or qx.per_channel or qy.per_channel:
            return None
    return p


def _x_shape(shape: tuple[int, ...], p: list[int]) -> tuple[int, ...]:
    """The shape s with s.transpose(p) == shape."""
    out = [0] * len(p)
    for j, a in enumerate(p):
        out[a] = int(shape[j])
    return tuple(out)


def _absorbs(g: AnalyzedGraph, c: Op, y: str, p: list[int]) -> bool:
    rank = len(p)
    if len(c.outputs) != 1 or not c.outputs[0]:
        return False
    z = c.outputs[0]
    if c.op_type == "Transpose":
        return c.inputs[0] == y and sorted(_perm(c, rank)) == list(range(rank))
    if len(g.tensors[z].shape) != rank and c.op_type not in _REDUCE:
        return False
    if c.op_type in _UNARY:
        others = [i for i in c.inputs if i and i != y]
        return c.inputs[0] == y and "axis" not in c.attrs \
            and all(i in g.weights and np.asarray(g.weights[i]).size == 1 for i in others)
    if c.op_type in _BINARY:
        for i in c.inputs:
            if not i or i == y:
                continue
            if i in g.weights:
                if np.asarray(g.weights[i]).ndim > rank:
                    return False
                q = g.tensors[i].quant
                if q is not None and q.per_channel:
                    return False
                continue
            k = producer(g, i)
            if k is not None and _movable(g, g.ops[k], requant=False) == p:
                continue
            t = g.tensors[i]
            if len(t.shape) != rank or t.numel >= g.tensors[y].numel:
                return False  # rule 2's smaller operand: only that takes the inverse Transpose
        return True
    if c.op_type in _REDUCE:
        return c.inputs[0] == y and len([i for i in c.inputs if i]) == 1 and c.attrs.get("axes") is not None
    if c.op_type == "Gather":
        return c.inputs[0] == y and len(c.inputs) == 1 and c.attrs.get("indices") is not None \
            and "axis" in c.attrs
    if c.op_type == "Slice":
        return c.inputs[0] == y and len(c.inputs) == 1 and bool(c.attrs.get("normalized")) \
            and sorted(int(a) for a in c.attrs["axes"]) == list(range(rank))
    return False


def _sink(g: AnalyzedGraph, ti: int) -> AnalyzedGraph | None:
    """Rule 1 for the Transpose at index ``ti``: the rewritten graph, or None when a reader does not absorb it."""
    t = g.ops[ti]
    p = _movable(g, t)
    if p is None:
        return None
    x, y = t.inputs[0], t.outputs[0]
    rank = len(p)
    readers = consumers(g, y)
    if not readers or not all(_absorbs(g, g.ops[i], y, p) for i in readers):
        return None
    g = g.replace()
    inv = [int(v) for v in np.argsort(p)]
    new_ops: dict[int, list[Op]] = {}
    pre: dict[int, list[Op]] = {}
    renames: dict[str, str] = {}
    split: list[Op] = []
    if not _same_enc(g, x, y):  # rule 1b: the requantization stays where it was, as an identity permutation
        tx, ty = g.tensors[x], g.tensors[y]
        r = fresh_name(g, f"{x}_requant")
        g.tensors[r] = Tensor(r, tx.shape, tx.dtype, ty.quant, tx.layout)
        split = [Op(fresh_name(g, f"{t.name}_requant"), "Transpose", (x,), (r,), {"perm": list(range(rank))})]
        x = r
    for i in readers:
        c = g.ops[i]
        z = c.outputs[0]
        zt = g.tensors[z]
        if c.op_type == "Transpose":
            comp = [p[k] for k in _perm(c, rank)]
            if comp == list(range(rank)) and _same_enc(g, x, z) and z not in g.outputs:
                renames[z] = x
                new_ops[i] = []
            else:
                new_ops[i] = [c.with_(inputs=(x,), attrs={**c.attrs, "perm": comp})]
            continue
        attrs = dict(c.attrs)
        inputs = []
        for inp in c.inputs:
            if inp == y:
                inp = x
            elif inp and inp in g.weights and c.op_type in _BINARY:
                w = np.asarray(g.weights[inp])
                full = w.reshape((1,) * (rank - w.ndim) + w.shape)
                cn = fresh_name(g, f"{inp}_t{''.join(map(str, inv))}")
                set_const(g, cn, np.ascontiguousarray(np.transpose(full, inv)), g.tensors[inp].quant)
                inp = cn
            elif inp and inp not in g.weights and c.op_type in _BINARY:
                k = producer(g, inp)
                if k is not None and _movable(g, g.ops[k], requant=False) == p:
                    inp = g.ops[k].inputs[0]  # the same Transpose's input
                else:  # a smaller operand takes the inverse permutation (it cancels once its producer sinks)
                    to = g.tensors[inp]
                    tn = fresh_name(g, f"{inp}_t{''.join(map(str, inv))}")
                    g.tensors[tn] = Tensor(tn, _x_shape(to.shape, p), to.dtype, to.quant, to.layout)
                    pre.setdefault(i, []).append(Op(fresh_name(g, f"{c.name}_pre"), "Transpose", (inp,), (tn,),
                                                    {"perm": inv}))
                    inp = tn
            inputs.append(inp)
        follow: list[int] | None = p
        zshape = _x_shape(zt.shape, p) if len(zt.shape) == rank else None
        if c.op_type in _REDUCE:
            axes = [int(a) % rank for a in c.attrs["axes"]]
            attrs["axes"] = sorted(p[a] for a in axes)
            if not int(c.attrs.get("keepdims", 1)):
                kept = [j for j in range(rank) if j not in axes]
                order = sorted(p[j] for j in kept)
                follow = [order.index(p[j]) for j in kept]
                xs = g.tensors[x].shape
                zshape = tuple(int(xs[a]) for a in order)
        elif c.op_type == "Gather":
            attrs["axis"] = p[int(c.attrs["axis"]) % rank]
        elif c.op_type == "Slice":
            by_axis = {int(a): k for k, a in enumerate(c.attrs["axes"])}
            for key in ("starts", "ends", "steps"):
                vals = [int(v) for v in c.attrs[key]]
                attrs[key] = [vals[by_axis[inv[a]]] for a in range(rank)]
            attrs["axes"] = list(range(rank))
        if follow == list(range(len(follow))):
            new_ops[i] = [c.with_(inputs=tuple(inputs), attrs=attrs)]
            continue
        zn = fresh_name(g, f"{z}_sunk")
        g.tensors[zn] = Tensor(zn, zshape, zt.dtype, zt.quant, zt.layout)
        new_ops[i] = [c.with_(inputs=tuple(inputs), outputs=(zn,), attrs=attrs),
                      Op(fresh_name(g, f"{c.name}_transpose"), "Transpose", (zn,), (z,), {"perm": follow})]
    ops: list[Op] = []
    for i, op in enumerate(g.ops):
        if i == ti:
            ops.extend(split)
            continue
        ops.extend(pre.get(i, []) + new_ops.get(i, [op]))
    for old, new in renames.items():
        ops = [o.with_(inputs=tuple(new if v == old else v for v in o.inputs)) if old in o.inputs else o
               for o in ops]
    g.ops = ops
    g = _drop_dead_transposes(g)
    return tidy(g)


def _drop_dead_transposes(g: AnalyzedGraph) -> AnalyzedGraph:
    while True:
        read = {v for o in g.ops for v in o.inputs if v} | set(g.outputs)
        keep = [o for o in g.ops if o.op_type != "Transpose" or o.outputs[0] in read]
        if len(keep) == len(g.ops):
            return g
        g = g.replace(ops=keep)


def moved_elements(g: AnalyzedGraph) -> int:
    """Elements the graph's non-identity Transposes move (rule 3's measure)."""
    n = 0
    for op in g.ops:
        if op.op_type == "Transpose" and op.outputs[0] in g.tensors:
            rank = len(g.tensors[op.outputs[0]].shape)
            if _perm(op, rank) != list(range(rank)):
                n += int(np.prod(g.tensors[op.outputs[0]].shape, dtype=np.int64))
    return n


def run(graph: AnalyzedGraph) -> PassResult:
    if not ENABLED or not any(op.op_type == "Transpose" for op in graph.ops):
        return PassResult(graph, 0)
    g, n = graph, 0
    for _ in range(MAX_STEPS):
        for i, op in enumerate(g.ops):
            if op.op_type == "Transpose":
                h = _sink(g, i)
                if h is not None:
                    g, n = h, n + 1
                    break
        else:
            break
    if n == 0:
        return PassResult(graph, 0)
    before, after = moved_elements(graph), moved_elements(g)
    if after >= before:
        return PassResult(graph, 0, (Decline("graph", f"sinking the Transposes moves {after} elements, not fewer "
                                                      f"than {before}"),))
    g.notes.append(f"transpose_sink: {n} Transpose moves, {before} -> {after} transposed elements")
    return PassResult(g, n)
