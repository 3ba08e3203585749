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

Why just before the layout pass: it assigns a layout, which only the layout pass's rule may predict; earlier passes
see the ordinary NCHW graph.

Postcondition: no graph input is read by a Transpose that only converts NHWC to NCHW.
"""
from __future__ import annotations

from tigris.ir import AnalyzedGraph, Tensor
from tigris.passes._util import PassResult, consumers, replace_uses, tidy

NAME = "input_transpose"
_TO_LOGICAL = {4: ((0, 3, 1, 2), "nhwc"), 3: ((0, 2, 1), "nwc")}


def run(graph: AnalyzedGraph) -> PassResult:
    g = graph
    n = 0
    for op in list(graph.ops):
        if op.op_type != "Transpose" or op.inputs[0] not in g.inputs or op.outputs[0] in g.outputs:
            continue
        x, y = op.inputs[0], op.outputs[0]
        rank = len(g.tensors[x].shape)
        want = _TO_LOGICAL.get(rank)
        perm = tuple(int(p) for p in op.attrs.get("perm", ()))
        if want is None or perm != want[0] or len(consumers(g, x)) != 1:
            continue
        ops = replace_uses([o for o in g.ops if o.name != op.name], y, x)
        g = g.replace(ops=ops)
        ty, tx = g.tensors[y], g.tensors[x]
        g.tensors[x] = Tensor(x, ty.shape, tx.dtype, tx.quant or ty.quant, want[1])
        g.notes.append(f"input {x}: leading Transpose {list(perm)} removed; declared {tx.shape} is stored as "
                       f"{want[1]} logical {ty.shape}")
        g = tidy(g)
        n += 1
    return PassResult(g, n)
