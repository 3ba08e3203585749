"""Extra pass, vector input as rows: a float ``[1, C]`` graph input quantized at the boundary is stored as ``C`` rows.

A rank-2 activation is ``plain``, one row of ``C`` values (view ``{1, 1, 1, C}``), so an op over it runs on the
whole vector: the boundary QuantizeLinear of a float-interface dense model needs the whole float input and its int8
output at once (dense_ae int8: 128 + 32 bytes), more than any later layer. The same bytes read as the rank-3
logical ``[1, 1, C]`` (``nwc``, view ``{1, C, 1, 1}``: one channel per row) are ``C`` rows, so the QuantizeLinear,
pointwise, runs on row bands like any tiled op: each tile reloads a band of the float input and spills its int8
rows (docs/memory-planning.md "Vector inputs as rows").

Rules:
1. Applies to a graph input of logical shape ``[1, C]`` (C > 1), float32, whose only reader is a per-tensor
   QuantizeLinear (scalar scale and zero point) whose output is no graph output.
2. The input and the QuantizeLinear's output take logical shape ``[1, 1, C]`` with layout ``nwc``; a Reshape back
   to ``[1, C]`` feeds the former readers (one channel per row stores the elements in logical order, so the layout
   pass makes it an alias). ``graph.boundary`` keeps the declared ``[1, C]``: the declared shape differs from the
   logical one with the same element count, so the host passes the caller's bytes as they are
   (``tigris.layout.boundary_is_physical``), which are the physical bytes already. A note records the change.

Why just before the layout pass: it assigns a layout (the one the layout rule gives rank 3), and earlier passes see
the model's own shapes.

Postcondition: no float ``[1, C]`` graph input is read by a per-tensor QuantizeLinear alone.
"""
from __future__ import annotations

from tigris.ir import AnalyzedGraph, Op, Tensor
from tigris.passes._util import PassResult, consumers, fresh_name

NAME = "vector_rows"

# False: a float [1, C] input stays one plain row (the earlier rule; bench/plan_quality.py --cols plans its
# row-tiles baseline so).
ENABLED = True


def _scalar(g: AnalyzedGraph, name: str | None) -> bool:
    return not name or (name in g.weights and int(g.weights[name].size) == 1)


def run(graph: AnalyzedGraph) -> PassResult:
    if not ENABLED:
        return PassResult(graph, 0)
    g = graph
    n = 0
    for x in list(graph.inputs):
        tx = g.tensors[x]
        if len(tx.shape) != 2 or tx.shape[0] != 1 or tx.shape[1] < 2 or tx.dtype != "float32":
            continue
        readers = consumers(g, x)
        if len(readers) != 1:
            continue
        q = g.ops[readers[0]]
        if q.op_type != "QuantizeLinear" or q.inputs[0] != x or len(q.outputs) != 1 or q.outputs[0] in g.outputs \
                or not all(_scalar(g, c) for c in q.inputs[1:]) or x in q.inputs[1:]:
            continue
        y = q.outputs[0]
        ty = g.tensors[y]
        c = tx.shape[1]
        rows = fresh_name(g, f"{y}_rows")
        g = g.replace()
        g.tensors[x] = Tensor(x, (1, 1, c), tx.dtype, tx.quant, "nwc")
        g.tensors[rows] = Tensor(rows, (1, 1, c), ty.dtype, ty.quant, "nwc")
        ops = list(g.ops)  # readers of y keep reading y, now the Reshape's output
        i = readers[0]
        ops[i] = q.with_(outputs=(rows,))
        ops.insert(i + 1, Op(fresh_name(g, f"{y}_vector"), "Reshape", (rows,), (y,)))
        g = g.replace(ops=ops)
        g.notes.append(f"input {x}: declared {list(tx.shape)} is stored as nwc logical [1, 1, {c}] (one value per "
                       "row), so its QuantizeLinear runs on row bands")
        n += 1
    return PassResult(g, n)
