"""Extra pass, Softmax lines across rows: a rank-3 output Softmax over its last axis runs over the channels instead.

A rank-3 activation ``[N, C, L]`` is stored ``nwc``, with ``L`` on the row axis. Detector heads end in a Softmax
over the class scores of a ``[1, boxes, classes]`` tensor, so the classes (the last axis) land on the rows and every
line of the Softmax runs across all rows: spatial rule 8 makes it structural and its whole input plus its whole
output set the smallest fast budget (the det_head family: 3,840 bytes, float, for 160 boxes of 3 classes). The same
Softmax over the transposed tensor ``[1, classes, boxes]`` has its lines along the channels, one line per row, so it
tiles by boxes; and the transposed output, stored ``nwc``, has the bytes of the declared ``[1, boxes, classes]``
output, so the output transpose trim (pass 15) removes the Transpose after it.

Rules:
1. Applies to a Softmax whose input and output are rank 3, whose axis is the last one, whose input has more than
   one box (``shape[1] > 1``) and more than one class, and whose output reaches a graph output through a chain of
   zero or more DequantizeLinear/QuantizeLinear ops (an int8 head's boundary dequantize), each the only reader of
   the tensor before it, and nothing else reads.
2. It becomes ``Transpose([0, 2, 1])`` -> ``Softmax(axis=1)`` -> the chain on the transposed shape ->
   ``Transpose([0, 2, 1])`` writing the same graph output; the Transposes move codes of an int8 tensor unchanged (the
   first keeps the input's grid, the last the output's), and the chain is element-wise with one grid, so the lines
   and their arithmetic are exactly those of the original Softmax.
3. Any other Softmax is left alone: over a non-final axis its lines already lie along the channels or elsewhere, and
   with other readers of its output the last Transpose would stay and move the whole tensor again.

Why before the output transpose trim: that pass removes the second Transpose; it runs after every pass that moves
ops near outputs, and so must this one.

Postcondition: no graph-output Softmax over the last axis of a rank-3 tensor with several rows remains.
"""
from __future__ import annotations

from tigris.ir import AnalyzedGraph, Op, Tensor
from tigris.passes._util import Decline, PassResult, consumers, fresh_name, tidy

NAME = "softmax_lines"
# bench/plan_quality.py --cols turns the pass off for its "row tiles" column (the rules before it)
ENABLED = True


_CHAIN = ("DequantizeLinear", "QuantizeLinear")


def _chain_to_output(g: AnalyzedGraph, y: str) -> list[Op] | None:
    """The element-wise ops from ``y`` to a graph output (rule 1), or None when some other reader or op is met."""
    chain: list[Op] = []
    while y not in g.outputs:
        readers = consumers(g, y)
        if len(readers) != 1 or g.ops[readers[0]].op_type not in _CHAIN:
            return None
        op = g.ops[readers[0]]
        if any(t in g.weights or g.tensors[t].shape != g.tensors[y].shape for t in op.inputs[:1]):
            return None
        chain.append(op)
        y = op.outputs[0]
    return chain if not consumers(g, y) else None


def run(graph: AnalyzedGraph) -> PassResult:
    g = graph
    n = 0
    declined: list[Decline] = []
    for op in list(graph.ops) if ENABLED else ():
        if op.op_type != "Softmax":
            continue
        x, y = op.inputs[0], op.outputs[0]
        tx, ty = g.tensors[x], g.tensors[y]
        if len(tx.shape) != 3 or len(ty.shape) != 3 or int(op.attrs.get("axis", -1)) not in (2, -1):
            continue
        chain = _chain_to_output(g, y)
        if chain is None:
            declined.append(Decline(op.name, "rule 3: its output is read by more than a dequantize to a graph output"))
            continue
        if tx.shape[1] < 2 or tx.shape[2] < 2:
            declined.append(Decline(op.name, "rule 1: one box or one class, nothing to gain"))
            continue
        shape_t = (tx.shape[0], tx.shape[2], tx.shape[1])
        out = chain[-1].outputs[0] if chain else y
        taken: list[str] = []

        def fresh(base: str) -> str:
            taken.append(fresh_name(g, base, taken))
            return taken[-1]

        tensors = dict(g.tensors)
        xt = fresh(f"{x}_lines")
        tensors[xt] = Tensor(xt, shape_t, tx.dtype, tx.quant)
        # the Softmax and its chain write transposed copies of their tensors; the last Transpose writes ``out``
        renamed: dict[str, str] = {}
        for t in [y, *(c.outputs[0] for c in chain)]:
            renamed[t] = fresh(f"{t}_lines")
            tensors[renamed[t]] = Tensor(renamed[t], shape_t, g.tensors[t].dtype, g.tensors[t].quant)
        new_ops = {op.name: [Op(fresh(f"{op.name}_to_lines"), "Transpose", (x,), (xt,), {"perm": [0, 2, 1]}),
                             op.with_(inputs=(xt,), outputs=(renamed[y],), attrs={**op.attrs, "axis": 1})]}
        for c in chain:
            new_ops[c.name] = [c.with_(inputs=(renamed[c.inputs[0]], *c.inputs[1:]),
                                       outputs=(renamed[c.outputs[0]],))]
        new_ops[(chain[-1] if chain else op).name].append(
            Op(fresh(f"{op.name}_from_lines"), "Transpose", (renamed[out],), (out,), {"perm": [0, 2, 1]}))
        ops: list[Op] = []
        for o in g.ops:
            ops.extend(new_ops.get(o.name, [o]))
        g = g.replace(ops=ops, tensors=tensors)
        g.notes.append(f"Softmax {op.name}: runs over axis 1 of the transposed {list(shape_t)} so its lines lie "
                       f"along the channels (rows = boxes)")
        n += 1
    return PassResult(tidy(g), n, tuple(declined))
