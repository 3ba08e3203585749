"""Extra pass, slice normalize: Slice, Split and constant-index Gather become one normalized ``Slice`` form (or a
``Gather`` with an explicit index list) that the slice kernel runs, with every index resolved.

Rules:
1. Slice (operands ``starts``/``ends``/``axes``/``steps`` as constants, or the attributes of opset < 10 and of the
   TFLite importer): every axis gets an explicit start and step, negative starts and ends count from the end, ends
   are clamped as ONNX defines (``[0, d]`` for positive steps, ``[-1, d - 1]`` for negative ones), an omitted
   ``axes`` means the leading axes, negative axes count from the end. The op keeps only its data operand, with
   attributes ``starts``, ``ends``, ``axes`` (every axis) and ``steps``, and ``normalized = True``. Element ``o``
   along axis ``a`` of the output reads element ``starts[a] + o * steps[a]`` of the input.
2. Split (sizes from the ``split`` operand or attribute, opset 18's ``num_outputs`` with a shorter last chunk, or
   equal parts) becomes one normalized Slice per (named) output along the split axis.
3. Gather with constant indices (scalar, 1-D or any rank; negative indices count from the end): the indices,
   flattened, select along ``axis``. When they form an arithmetic progression (one index, a range, every other
   channel) it is a normalized Slice; otherwise a ``Gather`` with attributes ``axis`` and ``indices`` (non-negative)
   and only its data operand. Either keeps the data's rank (``len(indices)`` along ``axis``); a Reshape after it
   gives the output its ONNX shape when the indices are not 1-D (a scalar index drops the axis).
4. Declined: non-constant operands (the op stays as it is and validation reports it), a constant data operand (the
   loader's constant folding owns those), a Gather with ``batch_dims``.

Why here: right after the attribute defaults, before QDQ fold, so QDQ fold sees single-output data-movement ops
(a Split's outputs each get their own Q folded, and int8 tensors passing through carry their quantization) and
every later pass sees only the normalized forms.

Postcondition: every Slice/Split/Gather the pass did not decline is a normalized Slice or Gather on one operand.
"""
from __future__ import annotations

import numpy as np

from tigris.ir import AnalyzedGraph, Op, Tensor
from tigris.passes._util import Decline, PassResult, fresh_name, tidy

NAME = "slice_normalize"
_BIG = 1 << 62


def _ints(g: AnalyzedGraph, op: Op, pos: int, attr: str) -> list[int] | None | str:
    """The int list of operand ``pos`` (a constant) or of attribute ``attr``; None when neither is given, a reason
    string when the operand is not a constant."""
    if len(op.inputs) > pos and op.inputs[pos]:
        v = g.weights.get(op.inputs[pos])
        if v is None:
            return f"operand {op.inputs[pos]} is not a constant"
        return [int(a) for a in np.asarray(v).reshape(-1)]
    if attr in op.attrs and op.attrs[attr] is not None:
        return [int(a) for a in op.attrs[attr]]
    return None


def resolve(shape: tuple[int, ...], starts: list[int], ends: list[int], axes: list[int] | None,
            steps: list[int] | None) -> tuple[list[int], list[int], list[int]] | str:
    """(start, step, count) of every axis of a Slice over ``shape`` (ONNX's clamping rules), or a reason."""
    r = len(shape)
    axes = list(range(len(starts))) if axes is None else [a + r if a < 0 else a for a in axes]
    steps = [1] * len(starts) if steps is None else steps
    if not (len(starts) == len(ends) == len(axes) == len(steps)) or any(not 0 <= a < r for a in axes) \
            or len(set(axes)) != len(axes):
        return "starts, ends, axes and steps disagree"
    start, step, count = [0] * r, [1] * r, list(shape)
    for a, s, e, st in zip(axes, starts, ends, steps):
        d = shape[a]
        if st == 0:
            return "a step of 0"
        s = s + d if s < 0 else s
        e = e + d if e < 0 else e
        if st > 0:
            s, e = min(max(s, 0), d), min(max(e, 0), d)
            n = max(0, -(-(e - s) // st))
        else:
            s, e = min(max(s, 0), d - 1), min(max(e, -1), d - 1)
            n = max(0, -(-(s - e) // -st))
        start[a], step[a], count[a] = (s if n else 0), st, n
    return start, step, count


def slice_op(name: str, x: str, y: str, start: list[int], step: list[int], count: list[int]) -> Op:
    """A normalized Slice (rule 1): ``ends`` is one step past the last element, below every index when that is -1."""
    ends = []
    for s, st, n in zip(start, step, count):
        e = s + n * st
        ends.append(e if e >= 0 else -_BIG)
    return Op(name, "Slice", (x,), (y,), {"starts": list(start), "ends": ends, "axes": list(range(len(start))),
                                          "steps": list(step), "normalized": True})


def _slice(g: AnalyzedGraph, op: Op) -> list[Op] | str:
    x = g.tensors[op.inputs[0]]
    parts = [_ints(g, op, i, k) for i, k in ((1, "starts"), (2, "ends"), (3, "axes"), (4, "steps"))]
    bad = next((p for p in parts if isinstance(p, str)), None)
    if bad:
        return bad
    starts, ends, axes, steps = parts
    if starts is None or ends is None:
        return "starts or ends are missing"
    res = resolve(x.shape, starts, ends, axes, steps)  # type: ignore[arg-type]
    if isinstance(res, str):
        return res
    start, step, count = res
    if tuple(count) != tuple(g.tensors[op.outputs[0]].shape):
        return f"the resolved slice {count} disagrees with the output shape"
    return [slice_op(op.name, x.name, op.outputs[0], start, step, count)]


def _split(g: AnalyzedGraph, op: Op) -> list[Op] | str:
    x = g.tensors[op.inputs[0]]
    r = len(x.shape)
    axis = int(op.attrs.get("axis", 0))
    axis = axis + r if axis < 0 else axis
    if not 0 <= axis < r:
        return f"axis {axis} out of range"
    d = x.shape[axis]
    sizes = _ints(g, op, 1, "split")
    if isinstance(sizes, str):
        return sizes
    k = len(op.outputs)
    if sizes is None:
        n = int(op.attrs.get("num_outputs", k) or k)
        chunk = -(-d // n)
        sizes = [min(chunk, d - i * chunk) for i in range(n)]
    if len(sizes) != k or sum(sizes) != d or any(s < 0 for s in sizes):
        return f"split sizes {sizes} do not cut {d} into {k} outputs"
    ops, off = [], 0
    for i, (y, s) in enumerate(zip(op.outputs, sizes)):
        if y:
            start, step, count = [0] * r, [1] * r, list(x.shape)
            start[axis], count[axis] = off, s
            ops.append(slice_op(op.name if i == 0 else f"{op.name}_{i}", x.name, y, start, step, count))
        off += s
    return ops


def _gather(g: AnalyzedGraph, op: Op) -> list[Op] | str:
    x, y = g.tensors[op.inputs[0]], g.tensors[op.outputs[0]]
    if int(op.attrs.get("batch_dims", 0) or 0):
        return "batch_dims is not 0"
    if len(op.inputs) < 2 or op.inputs[1] not in g.weights:
        return "the indices are not a constant"
    r = len(x.shape)
    axis = int(op.attrs.get("axis", 0))
    axis = axis + r if axis < 0 else axis
    if not 0 <= axis < r:
        return f"axis {axis} out of range"
    d = x.shape[axis]
    idx = np.asarray(g.weights[op.inputs[1]]).astype(np.int64)
    flat = [int(i) + d if i < 0 else int(i) for i in idx.reshape(-1)]
    if not flat or any(not 0 <= i < d for i in flat):
        return f"indices outside [-{d}, {d})"
    shape = list(x.shape)
    shape[axis] = len(flat)
    mid = y.name
    if idx.ndim != 1:
        mid = fresh_name(g, f"{y.name}_gathered")
        g.tensors[mid] = Tensor(mid, tuple(shape), y.dtype, y.quant, y.layout)
    diffs = {b - a for a, b in zip(flat, flat[1:])}
    if len(diffs) <= 1 and 0 not in diffs:
        start, step = [0] * r, [1] * r
        start[axis], step[axis] = flat[0], (diffs.pop() if diffs else 1)
        ops = [slice_op(op.name, x.name, mid, start, step, shape)]
    else:
        ops = [Op(op.name, "Gather", (x.name,), (mid,), {"axis": axis, "indices": flat, "normalized": True})]
    if mid != y.name:
        ops.append(Op(fresh_name(g, f"{op.name}_shape"), "Reshape", (mid,), (y.name,), {}))
    return ops


_RULES = {"Slice": _slice, "Split": _split, "Gather": _gather}


def run(graph: AnalyzedGraph) -> PassResult:
    if not any(op.op_type in _RULES and not op.attrs.get("normalized") for op in graph.ops):
        return PassResult(graph)
    g = graph.replace()
    ops: list[Op] = []
    declined: list[Decline] = []
    n = 0
    for op in graph.ops:
        if op.op_type not in _RULES or op.attrs.get("normalized"):
            ops.append(op)
            continue
        if not op.inputs or op.inputs[0] in g.weights:
            ops.append(op)
            continue
        res = _RULES[op.op_type](g, op)
        if isinstance(res, str):
            declined.append(Decline(op.name, f"{op.op_type}: {res}"))
            ops.append(op)
            continue
        ops.extend(res)
        n += 1
    g.ops = ops
    return PassResult(tidy(g), n, tuple(declined))
