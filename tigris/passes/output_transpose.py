"""Pass 15, output transpose trim: a final ``Transpose`` to channels-last before a graph output is removed.

Rules:
1. Applies to a Transpose that writes a graph output, whose permutation is exactly the runtime layout's permutation
   for its input rank (``[0, 2, 3, 1]`` for rank 4, ``[0, 2, 1]`` for rank 3), whose input is read by nothing
   else and is not part of the model interface.
2. The producer of the input then writes the graph output, whose logical shape becomes the pre-transpose shape.
   Since that tensor is stored channels-last, its bytes are exactly the transposed tensor the model declares:
   no data changes, the declared shape stays in ``graph.boundary`` and a note records the trim.
3. Other permutations are declined: removing them would change the bytes, not only the labels.

Why here: late, after every pass that could add or remove ops next to outputs, and before activation fuse, so an
activation in front of the trimmed Transpose still fuses.

A Transpose whose input and output shapes are equal (``[1, 3, 3, 3]``) stays: the boundary marks storage order by a
declared shape that differs from the logical one (``tigris.layout.boundary_is_physical``).

Postcondition: no channels-last Transpose writes a graph output, except one between equal shapes.
"""
from __future__ import annotations

from tigris.ir import AnalyzedGraph, Tensor
from tigris.layout import PERM, layout_for_rank
from tigris.passes._util import Decline, PassResult, consumers, rename_tensor, tidy

NAME = "output_transpose"


def run(graph: AnalyzedGraph) -> PassResult:
    g = graph
    n = 0
    declined: list[Decline] = []
    for op in list(graph.ops):
        if op.op_type != "Transpose" or op.outputs[0] not in g.outputs:
            continue
        x, y = op.inputs[0], op.outputs[0]
        rank = len(g.tensors[x].shape)
        lay = layout_for_rank(rank)
        perm = [int(p) for p in op.attrs.get("perm", list(range(rank))[::-1])]
        if lay not in PERM or tuple(perm) != PERM[lay]:
            declined.append(Decline(op.name, f"rule 3: perm {perm} is not the channels-last permutation"))
            continue
        if x in g.inputs or x in g.outputs or x in g.weights or len(consumers(g, x)) != 1:
            declined.append(Decline(op.name, "rule 1: its input is read elsewhere or part of the interface"))
            continue
        if tuple(g.tensors[x].shape) == tuple(g.tensors[y].shape):
            # e.g. [1, 3, 3, 3]: the boundary's shape could not tell that its bytes are in storage order
            declined.append(Decline(op.name, "rule 1: the transposed shape equals the declared one"))
            continue
        ops = [o for o in g.ops if o.name != op.name]
        ops = rename_tensor(ops, x, y)
        g = g.replace(ops=ops)
        t = g.tensors[x]
        g.tensors[y] = Tensor(y, t.shape, g.tensors[y].dtype, g.tensors[y].quant, lay)
        g.notes.append(f"output {y}: trailing Transpose {perm} removed; the plan stores it as {lay} logical "
                       f"{t.shape}, byte-identical to the declared {graph.tensors[y].shape}")
        g = tidy(g)
        n += 1
    return PassResult(g, n, tuple(declined))
