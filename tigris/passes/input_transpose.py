"""Extra pass, leading input Transpose: an NHWC model input turned into NCHW by a first Transpose needs no Transpose.

TensorFlow-converted models declare NHWC inputs and start with ``Transpose(perm=[0, 3, 1, 2])``. Our NCHW-logical,
NHWC-stored tensor of the transposed shape has exactly the input's bytes, so the Transpose is dropped and the graph
input is declared with the transposed logical shape and layout ``nhwc`` (``nwc`` for rank 3, perm ``[0, 2, 1]``).

Rules:
1. The Transpose reads a graph input of rank 4 (or 3), its perm is ``[0, 3, 1, 2]`` (or ``[0, 2, 1]``), and it is
   the input's only reader; its output is not a graph output.
2. Readers of the Transpose's output read the graph input; the input's tensor takes the output's logical shape (and
   quantization) with the channels-last layout. ``graph.boundary`` keeps the declared (NHWC) shape, and a note
   records the change.
3. Any other leading Transpose is left alone (it moves bytes).
3b. So is one whose output shape equals its input's (``[1, 3, 3, 3]``): the boundary marks channels-last bytes by a
   declared shape that differs from the logical one (``tigris.layout.boundary_is_physical``), which it cannot here.
4. The same holds when a boundary ``QuantizeLinear`` sits between the float graph input and the Transpose (a
   float-interface int8 model): both the input and the quantized tensor take the transposed logical shape.
5. Elementwise ops between the input and such a Transpose (a TF model normalizing its NHWC input, ``(x - mean) /
   std``, before transposing; a boundary Q) are moved after it, their constants transposed with the same perm, one
   at a time while each is its operand's only reader; then rules 1-4 apply.

Why just before the layout pass: it assigns a layout, which only the layout pass's rule may predict; earlier passes
see the ordinary NCHW graph.

Postcondition: no graph input is read by a Transpose that only converts NHWC to NCHW.
"""
from __future__ import annotations

import numpy as np

from tigris.ir import AnalyzedGraph, Tensor
from tigris.passes._util import PassResult, consumers, fresh_name, replace_uses, set_const, tidy

NAME = "input_transpose"
_TO_LOGICAL = {4: ((0, 3, 1, 2), "nhwc"), 3: ((0, 2, 1), "nwc")}


def _through_quantize(g: AnalyzedGraph, x: str) -> tuple[str, str] | None:
    """Rule 4: (graph input, boundary QuantizeLinear name) when ``x`` is the int8 output of a boundary Q that is its
    input's only reader."""
    q = next((o for o in g.ops if x in o.outputs), None)
    if q is None or q.op_type != "QuantizeLinear" or q.inputs[0] not in g.inputs:
        return None
    if len(consumers(g, q.inputs[0])) != 1 or x in g.outputs:
        return None
    return q.inputs[0], q.name


_ELEMENTWISE = ("Add", "Mul", "Sub", "Relu", "Relu6", "Clip", "Sigmoid", "Tanh", "HardSwish", "HardSigmoid",
                "LeakyRelu", "QuantizeLinear")


def _hoist(g: AnalyzedGraph, tname: str) -> AnalyzedGraph | None:
    """Rule 5: ``src -> E -> x -> Transpose -> y`` becomes ``src -> Transpose -> E -> y`` for an elementwise E whose
    only activation operand is ``src`` (read by E alone) and whose constants broadcast; constants are transposed
    with the same perm. None when the pattern does not apply."""
    t = next(o for o in g.ops if o.name == tname)
    x, y = t.inputs[0], t.outputs[0]
    e = next((o for o in g.ops if x in o.outputs), None)
    if e is None or e.op_type not in _ELEMENTWISE or len(e.outputs) != 1 or x in g.outputs:
        return None
    acts = [i for i in e.inputs if i and i not in g.weights]
    if len(acts) != 1 or len(consumers(g, x)) != 1 or len(consumers(g, acts[0])) != 1 or acts[0] in g.outputs:
        return None
    src = acts[0]
    perm = [int(p) for p in t.attrs.get("perm", ())]
    rank = len(perm)
    if len(g.tensors[src].shape) != rank:
        return None
    g = g.replace()
    new_inputs = []
    for i in e.inputs:
        if i and i in g.weights:
            w = np.asarray(g.weights[i])
            if w.ndim > rank:
                return None
            full = w.reshape((1,) * (rank - w.ndim) + w.shape)
            cn = fresh_name(g, f"{i}_{'_'.join(map(str, perm))}")
            set_const(g, cn, np.ascontiguousarray(np.transpose(full, perm)), g.tensors[i].quant)
            i = cn
        elif i == src:
            i = x  # the transposed source; the name is free again once E writes y
        new_inputs.append(i)
    ts = g.tensors[src]
    g.tensors[x] = Tensor(x, tuple(ts.shape[p] for p in perm), ts.dtype, ts.quant, ts.layout)
    ops = []
    for o in g.ops:
        if o.name == t.name:
            continue
        if o.name == e.name:
            ops.append(t.with_(inputs=(src,), outputs=(x,)))
            o = o.with_(inputs=tuple(new_inputs), outputs=(y,))
        ops.append(o)
    g.ops = ops
    return g


def run(graph: AnalyzedGraph) -> PassResult:
    g = graph
    n = 0
    for op in list(graph.ops):
        if op.op_type != "Transpose" or op.outputs[0] in g.outputs:
            continue
        if tuple(int(p) for p in op.attrs.get("perm", ())) in [v[0] for v in _TO_LOGICAL.values()]:
            while (h := _hoist(g, op.name)) is not None:  # rule 5
                g = h
                n += 1
            op = next(o for o in g.ops if o.name == op.name)
        via = None if op.inputs[0] in g.inputs else _through_quantize(g, op.inputs[0])
        if op.inputs[0] not in g.inputs and via is None:
            continue
        x, y = op.inputs[0], op.outputs[0]
        rank = len(g.tensors[x].shape)
        want = _TO_LOGICAL.get(rank)
        perm = tuple(int(p) for p in op.attrs.get("perm", ()))
        if want is None or perm != want[0] or len(consumers(g, x)) != 1:
            continue
        if tuple(g.tensors[x].shape) == tuple(g.tensors[y].shape):
            continue  # rule 3b: the declared shape could not mark the bytes as channels-last (equal shapes)
        ops = replace_uses([o for o in g.ops if o.name != op.name], y, x)
        g = g.replace(ops=ops)
        ty, tx = g.tensors[y], g.tensors[x]
        g.tensors[x] = Tensor(x, ty.shape, tx.dtype, tx.quant or ty.quant, want[1])
        if via is not None:  # the float graph input before the boundary Q takes the same logical shape
            src = g.tensors[via[0]]
            g.tensors[via[0]] = Tensor(via[0], ty.shape, src.dtype, src.quant, want[1])
        name = via[0] if via is not None else x
        g.notes.append(f"input {name}: leading Transpose {list(perm)} removed; declared {tx.shape} is stored as "
                       f"{want[1]} logical {ty.shape}")
        g = tidy(g)
        n += 1
    return PassResult(g, n)
