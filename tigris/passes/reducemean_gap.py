"""Pass 10, ReduceMean to GAP: ``ReduceMean(axes=[2, 3])`` on a rank-4 tensor becomes ``GlobalAveragePool``.

Rules:
1. The axes (attribute, or constant operand from opset 18) must be exactly the two spatial axes of a rank-4 input
   (negative axes normalized), or the last axis of a rank-3 one (a sequence's ``[N, C, L]``, a token's features:
   the GAP's view ``[N, L, 1, C]`` averages along L, the rows, so it accumulates over row tiles; ``SEQUENCES``).
2. ``keepdims=1`` (the default): GlobalAveragePool writes the output directly.
3. ``keepdims=0``: GlobalAveragePool writes a new [N, C, 1, 1] tensor and a ``Reshape`` produces the [N, C] output
   (an alias at run time, since the bytes are the same).
4. Anything else is left alone (validation reports the ReduceMean).
5. ``GlobalMaxPool`` on a rank-4 tensor becomes a ``MaxPool`` whose window is the whole image (stride 1, no pads):
   the runtime has no global max kernel, and the windowed one computes exactly this.
6. ``AveragePool`` on a rank-4 tensor whose window is the whole image (kernel ``[H, W]``, dilations 1, no pads, a
   ``1x1`` output), or on a rank-3 one whose window is the whole sequence (kernel ``[L]``, a length-1 output; the
   GAP's view is ``[N, L, 1, C]``), becomes ``GlobalAveragePool``: both divide the same sum by ``H*W`` with one rounding, halves to
   even (int8) or in float32, so the bits agree, and a GAP may accumulate over the tiles of a unit (also a
   column-split one) where a window over the whole image needs every input row and column at once. Int8 with the
   ``tflm`` numerics: TFLM's AVERAGE_POOL_2D averages the raw codes rounding halves away from zero where its MEAN
   requantizes, so the GAP is marked ``tflm_avgpool`` and keeps the pool's arithmetic (its ``TFLM_AVG``
   parameter, docs/numerics.md); only with equal input and output quantization (TFLM's rule, which the
   AveragePool's lowering states otherwise).

Why here: exporters (Keras, timm) write global pooling as a mean over H and W; the runtime's GAP kernel does it.

Postcondition: no ReduceMean over exactly the spatial axes of a rank-4 tensor, no rank-4 GlobalMaxPool, and no
rank-4 AveragePool over the whole image nor rank-3 one over the whole sequence (int8 under the tflm numerics: with
equal encodings) remains.
"""
from __future__ import annotations

from tigris.ir import AnalyzedGraph, Op, Tensor
from tigris.passes._util import Decline, PassResult, fresh_name

NAME = "reducemean_gap"

# Rule 6 for rank-3 tensors too (an AveragePool over the whole sequence); False: rank 4 only (the earlier rule, a
# baseline of bench/plan_quality.py).
SEQUENCES = True


def run(graph: AnalyzedGraph) -> PassResult:
    g = graph.replace()
    ops: list[Op] = []
    n = 0
    declined: list[Decline] = []
    for op in graph.ops:
        if op.op_type == "GlobalMaxPool" and len(g.tensors[op.inputs[0]].shape) == 4:
            # rule 5: one window over the whole image; the pool kernel runs it (and reads whole rows)
            h, w = g.tensors[op.inputs[0]].shape[2:]
            ops.append(Op(op.name, "MaxPool", op.inputs[:1], op.outputs,
                          {"kernel_shape": [h, w], "strides": [1, 1], "dilations": [1, 1], "pads": [0, 0, 0, 0],
                           "ceil_mode": 0}))
            n += 1
            continue
        if op.op_type == "AveragePool" and _whole_image(g, op):
            tflm = g.numerics == "tflm" and g.tensors[op.inputs[0]].dtype == "int8"
            ops.append(Op(op.name, "GlobalAveragePool", op.inputs[:1], op.outputs,
                          {"tflm_avgpool": 1} if tflm else {}))  # rule 6
            n += 1
            continue
        if op.op_type != "ReduceMean":
            ops.append(op)
            continue
        x = g.tensors[op.inputs[0]]
        axes = op.attrs.get("axes")
        if len(op.inputs) > 1 and op.inputs[1]:
            axes = g.weights[op.inputs[1]].reshape(-1).tolist() if op.inputs[1] in g.weights else None
        r = len(x.shape)
        norm = sorted({int(a) + r if int(a) < 0 else int(a) for a in axes}) if axes is not None else None
        if not ((r == 4 and norm == [2, 3]) or (SEQUENCES and r == 3 and norm == [2])):
            declined.append(Decline(op.name, f"rule 1: axes {axes} on rank {r} are not the spatial axes"))
            ops.append(op)
            continue
        if int(op.attrs.get("keepdims", 1)):
            ops.append(Op(op.name, "GlobalAveragePool", op.inputs[:1], op.outputs, {}))
        else:
            mid = fresh_name(g, f"{op.name}_gap")
            g.tensors[mid] = Tensor(mid, (x.shape[0], x.shape[1]) + (1,) * (r - 2), x.dtype,
                                    g.tensors[op.outputs[0]].quant)
            ops.append(Op(op.name, "GlobalAveragePool", op.inputs[:1], (mid,), {}))
            ops.append(Op(fresh_name(g, f"{op.name}_squeeze", [mid]), "Reshape", (mid,), op.outputs, {}))
        n += 1
    g.ops = ops
    return PassResult(g, n, tuple(declined))


def _whole_image(g: AnalyzedGraph, op: Op) -> bool:
    """Rule 6: an AveragePool whose one window is the whole ``[H, W]`` image (or ``[L]`` sequence), so its output is
    the GAP's."""
    x, y = g.tensors[op.inputs[0]], g.tensors[op.outputs[0]]
    a = op.attrs
    if len(x.shape) not in ((3, 4) if SEQUENCES else (4,)) or len(y.shape) != len(x.shape) or any(int(d) != 1 for d in y.shape[2:]):
        return False
    if list(a.get("kernel_shape") or []) != list(x.shape[2:]) or a.get("auto_pad", "NOTSET") not in ("NOTSET", "VALID"):
        return False
    if any(int(v) != 1 for v in a.get("dilations") or []) or any(int(v) != 0 for v in a.get("pads") or []):
        return False
    if x.dtype == "uint8" or (x.dtype == "int8" and (x.quant is None or y.quant is None)):
        return False
    if g.numerics == "tflm" and x.dtype == "int8":
        qx, qy = x.quant, y.quant
        return (not qx.per_channel and not qy.per_channel and float(qx.scale[0]) == float(qy.scale[0])
                and int(qx.zero_point[0]) == int(qy.zero_point[0]))
    return True
