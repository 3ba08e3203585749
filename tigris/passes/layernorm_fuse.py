"""LayerNorm fuse: the decomposed layer normalization becomes one ``LayerNormalization``; a LayerNormalization's
Mean / InvStdDev outputs become ops of their own.

Rules:
1. The chain exporters write for a layer norm over the trailing axes ``A = [axis, rank)`` (PyTorch before opset 17,
   Keras, hand-written models)::

       m = ReduceMean(x, A, keepdims=1); d = Sub(x, m); s = Pow(d, 2) | Mul(d, d); v = ReduceMean(s, A, keepdims=1)
       e = Add(v, eps); r = Sqrt(e); n = Div(d, r) | Mul(d, Reciprocal(r)); [y = Mul(n, gamma)]; [y = Add(y, beta)]

   (commutative operands in either order; ``eps`` a one-element constant, ``gamma``/``beta`` constants broadcasting
   to the normalized shape) becomes ``LayerNormalization(x, gamma, beta)`` with ``axis`` and ``epsilon``, writing the
   chain's last output. Every intermediate must be float, read only inside the chain and not a graph output
   (otherwise declined: the chain's values are needed as they are).
2. A ``LayerNormalization`` whose ``Mean`` or ``InvStdDev`` output is read or is a graph output keeps only ``Y``;
   those outputs are computed by ``ReduceMean``, ``Sub``, ``Mul``, ``ReduceMean``, ``Add`` (epsilon), ``Sqrt``,
   ``Reciprocal`` (float only; the runtime's ops have one output each). An unused one is dropped.
3. A LayerNormalization without ``B`` keeps two inputs; the kind adds zero.

Why here: after QDQ fold, so the constants are plain values with their quantization; before the passes that rewrite
Sub/Div by constants and before activation fuse, which would otherwise take the chain's ops apart.

Postcondition: every LayerNormalization has exactly one output.
"""
from __future__ import annotations

import numpy as np

from tigris.ir import AnalyzedGraph, Op, Tensor
from tigris.passes._util import Decline, PassResult, fresh_name, scalar, tidy

NAME = "layernorm_fuse"


def _axes(g: AnalyzedGraph, op: Op) -> list[int] | None:
    from tigris.ops.reduce import _axes as reduce_axes

    if int(op.attrs.get("keepdims", 1)) != 1:
        return None
    return reduce_axes(g, op)


def run(graph: AnalyzedGraph) -> PassResult:
    g = graph.replace()
    declined: list[Decline] = []
    n = 0
    ops = list(graph.ops)
    readers: dict[str, list[int]] = {}
    for i, op in enumerate(ops):
        for t in dict.fromkeys(op.inputs):
            if t:
                readers.setdefault(t, []).append(i)
    prod = {t: i for i, op in enumerate(ops) for t in op.outputs if t}
    remove: set[int] = set()
    replace: dict[int, Op] = {}
    for i, op in enumerate(ops):
        if op.op_type != "ReduceMean" or i in remove:
            continue
        got = _match(g, ops, readers, prod, i)
        if isinstance(got, str):
            if got:
                declined.append(Decline(op.name, f"rule 1: {got}"))
            continue
        chain, ln = got
        remove.update(chain)
        replace[max(chain)] = ln
        n += 1
    out: list[Op] = []
    for i, op in enumerate(ops):
        if i in replace:
            out.append(replace[i])
        elif i not in remove:
            out.append(op)
    final: list[Op] = []
    for op in out:
        if op.op_type == "LayerNormalization" and len([o for o in op.outputs if o]) > 1:
            split = _split_stats(g, op, out)
            if isinstance(split, str):
                declined.append(Decline(op.name, f"rule 2: {split}"))
                final.append(op)
                continue
            final += split
            n += 1
        else:
            final.append(op)
    g.ops = final
    return PassResult(tidy(g) if n else g, n, tuple(declined))


def _match(g: AnalyzedGraph, ops: list[Op], readers, prod, i: int):
    """(chain op indices, the LayerNormalization) for the chain starting at ReduceMean ``ops[i]``; a reason string
    when it is a layer norm that cannot be fused; "" when it is not one."""
    rm1 = ops[i]
    x = rm1.inputs[0]
    xt = g.tensors[x]
    rank = len(xt.shape)
    axes = _axes(g, rm1)
    if not axes or rank == 0 or axes != list(range(axes[0], rank)):
        return ""
    m = rm1.outputs[0]

    def only(t: str) -> Op | None:
        rs = readers.get(t, [])
        return ops[rs[0]] if len(rs) == 1 else None

    subs = [ops[j] for j in readers.get(m, []) if ops[j].op_type == "Sub" and ops[j].inputs == (x, m)]
    if len(readers.get(m, [])) != 1 or len(subs) != 1:
        return ""
    sub = subs[0]
    d = sub.outputs[0]
    dr = [ops[j] for j in readers.get(d, [])]
    if len(dr) != 2:
        return ""
    sq = next((o for o in dr if (o.op_type == "Pow" and o.inputs[0] == d and scalar(g.weights.get(o.inputs[1]))
                                 == 2.0) or (o.op_type == "Mul" and o.inputs == (d, d))), None)
    if sq is None:
        return ""
    norm = next(o for o in dr if o is not sq)
    rm2 = only(sq.outputs[0])
    if rm2 is None or rm2.op_type != "ReduceMean" or _axes(g, rm2) != axes:
        return ""
    add = only(rm2.outputs[0])
    if add is None or add.op_type != "Add":
        return ""
    v = rm2.outputs[0]
    eps_name = add.inputs[1] if add.inputs[0] == v else add.inputs[0]
    eps = scalar(g.weights.get(eps_name))
    if eps is None or g.tensors[eps_name].quant is not None:
        return ""
    sqrt = only(add.outputs[0])
    if sqrt is None or sqrt.op_type != "Sqrt":
        return ""
    r = sqrt.outputs[0]
    chain = [rm1, sub, sq, rm2, add, sqrt]
    if norm.op_type == "Div" and norm.inputs == (d, r) and len(readers.get(r, [])) == 1:
        chain.append(norm)
    elif norm.op_type == "Mul" and len(readers.get(r, [])) == 1:
        rec = only(r)
        if rec is None or rec.op_type != "Reciprocal" or set(norm.inputs) != {d, rec.outputs[0]} or \
                len(readers.get(rec.outputs[0], [])) != 1:
            return ""
        chain += [rec, norm]
    else:
        return ""
    y = norm.outputs[0]
    norm_shape = tuple(xt.shape[axes[0]:])
    gamma = beta = None
    nxt = only(y)
    if nxt is not None and nxt.op_type == "Mul" and y not in g.outputs:
        k = nxt.inputs[1] if nxt.inputs[0] == y else nxt.inputs[0]
        if k in g.weights and _fits(g.weights[k].shape, norm_shape):
            gamma, y = k, nxt.outputs[0]
            chain.append(nxt)
            nxt = only(y)
    if nxt is not None and nxt.op_type == "Add" and y not in g.outputs:
        k = nxt.inputs[1] if nxt.inputs[0] == y else nxt.inputs[0]
        if k in g.weights and _fits(g.weights[k].shape, norm_shape):
            beta, y = k, nxt.outputs[0]
            chain.append(nxt)
    idx = [ops.index(o) for o in chain]
    for o in chain[:-1]:
        t = o.outputs[0]
        if t in g.outputs:
            return f"intermediate {t} is a graph output"
        if g.tensors[t].quant is not None or g.tensors[t].dtype != "float32":
            return f"intermediate {t} is quantized"
        if any(j not in idx for j in readers.get(t, [])):
            return f"intermediate {t} is read outside the layer norm"
    if gamma is None:
        gamma = fresh_name(g, f"{rm1.name}_ln_scale")
        g.weights[gamma] = np.ones(norm_shape, np.float32)
        g.tensors[gamma] = Tensor(gamma, norm_shape, "float32")
    ins = (x, gamma) + ((beta,) if beta else ())
    ln = Op(fresh_name(g, f"{rm1.name}_layernorm"), "LayerNormalization", ins, (y,),
            {"axis": axes[0], "epsilon": float(eps), "stash_type": 1})
    return idx, ln


def _fits(shape, to) -> bool:
    shape = tuple(int(s) for s in shape)
    if len(shape) > len(to):
        return all(s == 1 for s in shape[:len(shape) - len(to)]) and _fits(shape[len(shape) - len(to):], to)
    return all(a in (1, b) for a, b in zip(shape[::-1], to[::-1]))


def _split_stats(g: AnalyzedGraph, op: Op, ops: list[Op]) -> list[Op] | str:
    """Rule 2: Y alone from the kind; Mean and InvStdDev from ops of their own."""
    x = op.inputs[0]
    xt = g.tensors[x]
    rank = len(xt.shape)
    ax = int(op.attrs.get("axis", -1)) % max(rank, 1)
    read = {t for o in ops for t in o.inputs}
    want = [t if t and (t in read or t in g.outputs) else "" for t in list(op.outputs[1:3]) + [""] * 2][:2]
    keep = op.with_(outputs=(op.outputs[0],))
    if not any(want):
        return [keep]
    if xt.dtype != "float32" or xt.quant is not None:
        return "the Mean / InvStdDev outputs of an int8 LayerNormalization"
    axes = list(range(ax, rank))
    red = tuple(1 if i >= ax else d for i, d in enumerate(xt.shape))

    def t(base: str, shape) -> str:
        name = fresh_name(g, f"{op.name}_{base}")
        g.tensors[name] = Tensor(name, tuple(shape), "float32")
        return name

    taken = {x.name for x in ops}

    def o(kind: str, ins, out: str, **attrs) -> Op:
        name = fresh_name(g, f"{op.name}_{kind.lower()}", taken)
        taken.add(name)
        return Op(name, kind, tuple(ins), (out,), attrs)

    mean = want[0] or t("mean", red)
    res = [keep, o("ReduceMean", [x], mean, axes=axes, keepdims=1)]
    if want[1]:
        d, sq, var, ve, sd = t("d", xt.shape), t("sq", xt.shape), t("var", red), t("var_eps", red), t("std", red)
        eps = fresh_name(g, f"{op.name}_epsilon")
        g.weights[eps] = np.array(np.float32(op.attrs.get("epsilon", 1e-5)))
        g.tensors[eps] = Tensor(eps, (), "float32")
        res += [o("Sub", [x, mean], d), o("Mul", [d, d], sq), o("ReduceMean", [sq], var, axes=axes, keepdims=1),
                o("Add", [var, eps], ve), o("Sqrt", [ve], sd), o("Reciprocal", [sd], want[1])]
    return res
