"""Index ops: ArgMax/ArgMin, TopK and NonMaxSuppression in the form their kinds run.

Rules:
1. An int64 index tensor (the output of ArgMax/ArgMin, TopK's indices, NonMaxSuppression's selected indices) is
   restated as int32 inside the plan: every index a microcontroller tensor can hold fits. A graph output keeps its
   declared int64 boundary, so ``tigris run`` and ``api.run_plan`` return int64 as the model states it
   (docs/format.md, "Index outputs").
2. ArgMax/ArgMin: ``axis``, ``keepdims`` and ``select_last_index`` become explicit (ONNX defaults 0, 1, 0).
2b. An ArgMax/ArgMin over the channels (axis 1) of a rank-4 input with ``keepdims`` 0 whose output is a graph
   output, read by no op, keeps the reduced axis instead: its output is stated ``[N, 1, H, W]`` (``nhwc`` by the
   layout rule, stored ``{N, H, W, 1}``), which holds exactly the bytes of the declared ``[N, H, W]`` in logical
   order (the boundary keeps the declared shape, ``tigris.layout.boundary_is_physical``). Its rows are then the
   image's rows, so the op runs on row bands and column tiles like a per-pixel op (docs/memory-planning.md "Column
   tiles"); as a rank-3 ``nwc`` tensor its rows would be the image's columns (a whole-tensor transposition).
3. TopK with a constant ``k`` becomes one op per output it has in use: ``TopKValues`` and ``TopKIndices`` (same
   input, attributes ``k``, ``axis``, ``largest``, ``sorted``); the ``k`` operand is dropped. A non-constant ``k``
   is declined (the op stays TopK, which has no kernel).
4. NonMaxSuppression with constant ``max_output_boxes_per_class``, ``iou_threshold`` and ``score_threshold``
   operands (each may be absent) takes them as attributes ``max_per_class``, ``iou_threshold``,
   ``score_threshold`` (None when absent: every box is a candidate) and ``center_point_box``; its inputs are the
   boxes and scores. Its output already has its maximum shape (the loader bounds it, ``[B * C * min(max, N), 3]``).
   A non-constant bound is declined.
4b. With one batch and several classes, the op becomes one NonMaxSuppression per class, in class order: op c reads
   the boxes, the class's scores (a normalized ``Slice`` ``[1, 1, N]`` of the scores) and, from class 1 on, the
   rows of the op before it (its third input, of the output's shape), which it keeps, appending its own selected
   rows (class ``class0`` = c) after them; attribute ``classes`` is C. Each class's selection depends on its own
   scores only and ONNX lists the classes in order, so the last op writes exactly the output of the one op. A
   class op then needs the boxes, one class's scores and the rows (``tigris.ops.index`` "nms"), never every
   class's scores at once; the last one holds the rows twice (its input and the graph output), so the split is
   made only where the other classes' scores are more bytes than the rows (float scores of a few classes; int8
   ones, which the kind reads as they are, rarely).

Why here: after QDQ fold, before float tail (which gives a quantized reader of these float ops its dequantize).

Postcondition: no int64 activation; every TopK and NonMaxSuppression that can run has constant bounds as attributes.
"""
from __future__ import annotations

import numpy as np

from tigris.ir import AnalyzedGraph, Op, Tensor
from tigris.passes._util import Decline, PassResult, fresh_name

NAME = "index_ops"

_INDEX_OUT = {"ArgMax": (0,), "ArgMin": (0,), "TopK": (1,), "NonMaxSuppression": (0,)}


def _const(g: AnalyzedGraph, ins: tuple[str, ...], i: int):
    """(present, value) of operand ``i``: absent operands are (False, None); a non-constant one raises KeyError."""
    if len(ins) <= i or not ins[i]:
        return False, None
    if ins[i] not in g.weights:
        raise KeyError(ins[i])
    v = np.asarray(g.weights[ins[i]]).reshape(-1)
    return (v.size > 0), (v[0] if v.size else None)


# Rule 2b on (False: a channel ArgMax's keepdims-0 graph output stays rank 3; bench/plan_quality.py's earlier rules).
KEEP_PIXELS = True


def _keeps_pixels(g: AnalyzedGraph, op: Op, a: dict) -> bool:
    """Rule 2b's condition: a keepdims-0 reduction over axis 1 of a rank-4 input, its output a graph output only."""
    x, y = g.tensors[op.inputs[0]], g.tensors[op.outputs[0]]
    read = any(y.name in o.inputs for o in g.ops)
    return (len(x.shape) == 4 and a["axis"] % 4 == 1 and a["keepdims"] == 0 and y.name in g.outputs
            and y.name not in g.inputs and not read and len(y.shape) == 3)


# Rule 4b on (False: one NonMaxSuppression over every class, bench/plan_quality.py's earlier rules).
PER_CLASS = True


def _per_class(g: AnalyzedGraph, op: Op) -> list[Op]:
    """Rule 4b: ``op`` as one NonMaxSuppression per class, each after the Slice of its class's scores."""
    boxes, scores = op.inputs
    st, y = g.tensors[scores], g.tensors[op.outputs[0]]
    if not PER_CLASS or len(st.shape) != 3 or st.shape[0] != 1 or st.shape[1] < 2:
        return [op]
    _, c_all, n = st.shape
    from tigris.ops import index

    # the last class op holds the rows twice (before and after) instead of every other class's scores
    score_bytes = 1 if st.dtype == "int8" and index.INT8_INPUTS else 4
    if (c_all - 1) * n * score_bytes <= 4 * y.shape[0] * 3:
        return [op]
    out: list[Op] = []
    prev = None
    for c in range(c_all):
        sc = fresh_name(g, f"{scores}_class{c}")
        g.tensors[sc] = Tensor(sc, (1, 1, n), st.dtype, st.quant, st.layout)
        out.append(Op(fresh_name(g, f"{op.name}_scores{c}", [sc]), "Slice", (scores,), (sc,),
                      {"starts": [0, c, 0], "ends": [1, c + 1, n], "axes": [0, 1, 2], "steps": [1, 1, 1],
                       "normalized": True}))
        yc = y.name
        if c < c_all - 1:
            yc = fresh_name(g, f"{y.name}_upto{c}", [sc])
            g.tensors[yc] = Tensor(yc, y.shape, y.dtype, None, y.layout)
        name = op.name if c == c_all - 1 else fresh_name(g, f"{op.name}_class{c}", [sc, yc])
        out.append(Op(name, op.op_type, (boxes, sc) + ((prev,) if prev else ()), (yc,),
                      {**op.attrs, "class0": c, "classes": c_all}))
        prev = yc
    return out


def run(graph: AnalyzedGraph) -> PassResult:
    if not any(op.op_type in _INDEX_OUT for op in graph.ops):
        return PassResult(graph, 0)
    g = graph.replace()
    ops: list[Op] = []
    declined: list[Decline] = []
    n = 0
    used = {t for op in graph.ops for t in op.inputs} | set(graph.outputs)
    for op in graph.ops:
        if op.op_type not in _INDEX_OUT:
            ops.append(op)
            continue
        for i in _INDEX_OUT[op.op_type]:
            t = op.outputs[i] if len(op.outputs) > i else ""
            if t and g.tensors[t].dtype == "int64":
                old = g.tensors[t]
                g.tensors[t] = Tensor(old.name, old.shape, "int32", None, old.layout)
        if op.op_type in ("ArgMax", "ArgMin"):
            a = dict(op.attrs)
            a.update(axis=int(a.get("axis", 0)), keepdims=int(a.get("keepdims", 1)),
                     select_last_index=int(a.get("select_last_index", 0)))
            if KEEP_PIXELS and _keeps_pixels(g, op, a):
                y = g.tensors[op.outputs[0]]
                x = g.tensors[op.inputs[0]]
                shape = (x.shape[0], 1, x.shape[2], x.shape[3])
                g.tensors[y.name] = Tensor(y.name, shape, y.dtype, y.quant, y.layout)
                a["keepdims"] = 1
                g.notes.append(f"output {y.name}: {op.op_type} over the channels keeps the axis, stored as logical "
                               f"{list(shape)}, byte-identical to the declared {list(y.shape)}")
            ops.append(op.with_(attrs=a))
            n += 1
            continue
        if op.op_type == "TopK":
            try:
                has_k, k = _const(g, op.inputs, 1)
            except KeyError:
                declined.append(Decline(op.name, "rule 3: k is not a constant"))
                ops.append(op)
                continue
            a = {"k": int(k) if has_k else int(op.attrs.get("k", 1)), "axis": int(op.attrs.get("axis", -1)),
                 "largest": int(op.attrs.get("largest", 1)), "sorted": int(op.attrs.get("sorted", 1))}
            for which, t in zip(("TopKValues", "TopKIndices"), op.outputs):
                if t and t in used:
                    ops.append(Op(f"{op.name}" if which == "TopKValues" else f"{op.name}_indices", which,
                                  (op.inputs[0],), (t,), dict(a)))
            n += 1
            continue
        try:
            has_m, m = _const(g, op.inputs, 2)
            has_iou, iou = _const(g, op.inputs, 3)
            has_s, s = _const(g, op.inputs, 4)
        except KeyError as e:
            declined.append(Decline(op.name, f"rule 4: operand {e.args[0]} is not a constant"))
            ops.append(op)
            continue
        a = {"max_per_class": max(int(m), 0) if has_m else 0, "iou_threshold": float(iou) if has_iou else 0.0,
             "score_threshold": float(np.float32(s)) if has_s else None,
             "center_point_box": int(op.attrs.get("center_point_box", 0))}
        ops.extend(_per_class(g, op.with_(inputs=tuple(op.inputs[:2]), attrs=a)))
        n += 1
    g.ops = ops
    return PassResult(g, n, tuple(declined))
