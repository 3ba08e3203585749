"""Dense ends as rows: an int8 Gemm that reads a ``[1, C]`` graph input, or writes a ``[1, N]`` graph output, in
parts of the vector (docs/memory-planning.md "Dense ends as rows").

Not a normalization pass: ``tigris.api`` applies it to a prepared graph as a fallback, only when no other shape fits
the budget, so every plan that fitted before keeps its bytes. A Gemm on a vector is structural: as a unit of its own
it needs its whole input and output vectors, and a graph input or output is reloaded (spilled) whole. Stored as
``C`` rows of one value (logical ``[1, 1, C]``, layout ``nwc``; the same bytes in the same order), a boundary vector is
read and written in row bands instead:

* **Input end** (:func:`split_input`). The Gemm runs as ``go`` output-feature groups (``weight_split.split_op``,
  joined in place), and each group as ``gk`` input-feature (K) groups summed in int32 (``tigris.passes.k_acc``): group
  ``k`` is a ``Slice`` of input rows ``[a, b)`` (pointwise along the rows: a unit reloads only those rows of the
  input's home), an alias ``Reshape`` of the slice to ``[1, b - a]``, and a ``GemmAcc`` adding into the group's
  accumulator; one ``Requantize`` per output group. Fast memory then holds one slice, one group's accumulator
  (4 bytes per output feature of the group) and its output, never the whole input.
* **Output end** (:func:`split_output`). The Gemm runs as ``go`` output-feature groups, each group's output aliased
  to rows, and one ``Concat`` along the rows (``row_bands``: pointwise along the rows, input ``i`` supplying the
  output rows it covers, ``Concat.input_rows_of``) writes the graph output in row bands, each band spilled to its
  part of the output's home. Fast memory holds one group's input and output, or a band of the join.

int8 results are the unsplit Gemm's bytes: the K groups' int32 total is the integer the unsplit kernel accumulates
and the requantization the same function of it (``k_acc``), an output group computes its features from the same
bytes, and the Concat of inputs sharing its encoding copies bytes.
"""
from __future__ import annotations

from tigris.ir import AnalyzedGraph, Op, Tensor, TigrisError
from tigris.passes import k_acc
from tigris.passes.weight_split import GROUP_SUFFIX, K_SUFFIX, _fresh_names, group_bounds, split_op

ROWS_LAYOUT = "nwc"


def _vector(graph: AnalyzedGraph, name: str) -> bool:
    t = graph.tensors[name]
    return len(t.shape) == 2 and t.shape[0] == 1 and t.shape[1] >= 2 and t.dtype == "int8"


def input_gemm(graph: AnalyzedGraph) -> str | None:
    """The int8 Gemm that is the only reader of a ``[1, C]`` int8 graph input, when the input end applies."""
    for x in graph.inputs:
        if not _vector(graph, x) or graph.tensors[x].quant is None or graph.tensors[x].quant.per_channel:
            continue
        readers = [o for o in graph.ops if x in o.inputs]
        if len(readers) == 1 and readers[0].op_type == "Gemm" and readers[0].inputs[0] == x \
                and x not in readers[0].inputs[1:] and k_acc.why_not(graph, readers[0]) is None \
                and not int(readers[0].attrs.get("transA", 0) or 0) and x not in graph.outputs:
            return readers[0].name
    return None


def output_gemm(graph: AnalyzedGraph) -> str | None:
    """The int8 Gemm writing a ``[1, N]`` int8 graph output read by no op, when the output end applies."""
    for y in graph.outputs:
        if not _vector(graph, y) or y in graph.inputs or any(y in o.inputs for o in graph.ops):
            continue
        made = [o for o in graph.ops if y in o.outputs]
        if len(made) == 1 and made[0].op_type == "Gemm" and k_acc.is_int8_mac(graph, made[0]):
            return made[0].name
    return None


def _rows(graph: AnalyzedGraph, name: str) -> None:
    t = graph.tensors[name]
    graph.tensors[name] = Tensor(name, (1, 1, t.shape[1]), t.dtype, t.quant, ROWS_LAYOUT)


def split_input(graph: AnalyzedGraph, name: str, go: int, gk: int) -> AnalyzedGraph:
    """``graph`` with Gemm ``name`` (:func:`input_gemm`) run as ``go`` output groups of ``gk`` K groups each over row
    slices of its graph input, which is stored as rows. A new graph."""
    from tigris.passes.slice_normalize import slice_op

    op = graph.op_by_name(name)
    if input_gemm(graph) != name or gk < 2:
        raise TigrisError("cannot read the input vector in rows: not an int8 Gemm on a graph input vector", name)
    x = op.inputs[0]
    xt = graph.tensors[x]
    c = xt.shape[1]
    bounds = group_bounds(c, gk)
    k_acc.check_sum_fits(graph, op, bounds)
    g = split_op(graph, name, go) if go > 1 else graph.replace()
    fresh_name = _fresh_names(g)
    subs = [o for o in g.ops if o.op_type == "Gemm" and x in o.inputs]
    _rows(g, x)
    plain = xt.layout
    ops = list(g.ops)
    for sub in subs:
        i = ops.index(sub)
        wg = sub.attrs.get("weight_group", (name, 0, 1))
        new: list[Op] = []
        acc = ""
        for k, (a, b) in enumerate(bounds):
            tag = f"{K_SUFFIX}{k}"
            xs = fresh_name(g, f"{sub.name}{tag}rows")
            g.tensors[xs] = Tensor(xs, (1, 1, b - a), xt.dtype, xt.quant, ROWS_LAYOUT)
            new.append(_with(slice_op(fresh_name(g, f"{sub.name}{K_SUFFIX}slice{k}"), x, xs, [0, 0, a], [1, 1, 1],
                                      [1, 1, b - a]), weight_group=wg))
            xv = fresh_name(g, f"{sub.name}{tag}vec")
            g.tensors[xv] = Tensor(xv, (1, b - a), xt.dtype, xt.quant, plain)
            new.append(Op(fresh_name(g, f"{sub.name}{tag}vector"), "Reshape", (xs,), (xv,),
                          {"alias": True, "weight_group": wg}))
            part, p = k_acc.partial(g, sub, xv, a, b, fresh_name(g, sub.name + tag),
                                    fresh_name(g, sub.outputs[0] + tag), k == 0, {"weight_group": wg},
                                    acc_in=acc or None)
            new.append(part)
            acc = p
        new.append(k_acc.requantize(g, sub, acc, fresh_name(g, f"{sub.name}{K_SUFFIX}requant"), {"weight_group": wg}))
        ops[i:i + 1] = new
        w = sub.inputs[1]
        if w in g.weights and not any(w in o.inputs for o in ops):
            del g.weights[w]
            g.tensors.pop(w, None)
    g.ops = ops
    return g


def _with(op: Op, **attrs) -> Op:
    return op.with_(attrs={**op.attrs, **attrs})


def split_output(graph: AnalyzedGraph, name: str, go: int) -> AnalyzedGraph:
    """``graph`` with Gemm ``name`` (:func:`output_gemm`) run as ``go`` output groups (at most 4) joined along the
    rows of its graph output, which is stored as rows. A new graph."""
    from tigris.ops.base import MAX_INPUTS

    if output_gemm(graph) != name or not 2 <= go <= MAX_INPUTS:
        raise TigrisError("cannot write the output vector in rows: not an int8 Gemm writing a graph output", name)
    y = graph.op_by_name(name).outputs[0]
    g = split_op(graph, name, go)
    fresh_name = _fresh_names(g)
    joins = [o for o in g.ops if o.op_type == "Concat" and o.attrs.get("weight_group", ("",))[0] == name]
    subs = [o for o in g.ops if o.op_type == "Gemm" and o.attrs.get("weight_group", ("",))[0] == name]
    made = {o.outputs[0] for o in joins}
    ops = [o for o in g.ops if o not in joins]
    for n in made - {y}:
        g.tensors.pop(n, None)
    _rows(g, y)
    rows_in = []
    wg = (name, -1, go)
    for sub in subs:  # each group writes its features as rows (fc writes its outputs in order, whatever the dims)
        _rows(g, sub.outputs[0])
        rows_in.append(sub.outputs[0])
    last = max(ops.index(s) for s in subs)
    ops.insert(last + 1, Op(fresh_name(g, f"{name}{GROUP_SUFFIX}rowcat"), "Concat", tuple(rows_in), (y,),
                            {"axis": 1, "logical_axis": 2, "axis_physical": True, "row_bands": True,
                             "weight_group": wg}))
    g.ops = ops
    return g
