"""Pass 3, matrix product relabel: MatMul and Gemm become the runtime's ``Gemm`` (weight [OC, K], i.e. transB=1).

Rules:
1. ``MatMul(A, W)`` with A of rank 2 and W a constant [K, OC] becomes ``Gemm(A, W^T)``; a per-channel weight
   quantization axis moves with the transpose (1 -> 0).
2. ``Gemm`` with ``transB=0`` gets its constant weight transposed the same way; ``alpha`` is folded into the weight
   (float: the values; int8: the scales, which keeps the int8 values exact) and ``beta`` into the bias (float only).
3. The bias ``C`` becomes a 1-D [OC] constant (ONNX allows [1, OC] or a scalar broadcast).
4. Declined: a non-constant B or C, ``transA=1``, A of rank 1 or a Gemm input of rank other than 2, a quantized
   bias with ``beta != 1`` (its scale must stay ``s_in * s_w``), a bias that is not per output column (a matrix
   ``[M, OC]``), an int32 output (MatMulInteger, pass integer_ops). Such a ``MatMul`` stays a ``MatMul`` and such
   a ``Gemm`` becomes one (rule 7): the ``matmul`` kind multiplies two activations.
5. The result has exactly the attribute ``fused_activation = None``.
6. A ``MatMul`` whose activation has rank > 2 (``[..., K]``, e.g. a dense layer over time steps) becomes
   ``Reshape`` to ``[N, K]``, ``Gemm``, ``Reshape`` back to ``[..., OC]`` (the reshapes are aliases or get layout
   transposes from the layout pass).

6b. Except a ``MatMul`` of a rank-3 activation ``[1, T, K]`` with ``T > 1`` and ``K > 1`` (the tokens of a
   transformer, the steps of a sequence): the layout rule stores it ``nwc`` (K along the rows), which is not its
   logical order, so the reshapes of rule 6 would need a whole-tensor layout Transpose on each side. It stays a
   ``MatMul`` with its constant ``[K, OC]`` weight, which the strided ``matmul`` kind reads in place on the ``nwc``
   bytes (its bias, an ``Add`` after it, folds into it as for a Gemm: pass 5). ``STRIDED_TOKENS = False`` is the
   earlier rule (the reshapes, ``bench/plan_quality.py --cols``'s row-tiles baseline).
7. A declined ``Gemm`` becomes ``MatMul(A, B[, C])`` with the attributes ``transA``, ``transB``, ``alpha`` and
   ``beta`` (the ``matmul`` kind reads the transposes as strides and stores ``beta * C`` broadcast to [M, N]).

Why here: the BatchNorm, bias and activation passes below match the single op type ``Gemm``.

Postcondition: no MatMul with a constant 2-D weight and rank-2 input remains unless rule 4 declined it; every Gemm
has a [OC, K] weight.
"""
from __future__ import annotations

import numpy as np

from tigris.ir import AnalyzedGraph, Op, QuantParam, Tensor
from tigris.passes._util import Decline, PassResult, fresh_name, set_const

NAME = "matmul_relabel"
STRIDED_TOKENS = True  # rule 6b


def _tq(q: QuantParam | None) -> QuantParam | None:
    if q is None or q.axis is None:
        return q
    return QuantParam(q.scale, q.zero_point, 1 - q.axis)


def run(graph: AnalyzedGraph) -> PassResult:
    g = graph.replace()
    declined: list[Decline] = []
    n = 0
    out_ops: list[Op] = []
    for i, op in enumerate(graph.ops):
        out_ops.append(op)
        if op.op_type not in ("MatMul", "Gemm") or (op.op_type == "Gemm" and set(op.attrs) == {"fused_activation"}):
            continue
        a, w = op.inputs[0], op.inputs[1]

        def decline(why: str) -> None:
            declined.append(Decline(op.name, f"rule 4: {why}"))
            if op.op_type == "Gemm":
                out_ops[-1] = _as_matmul(op)
        if w not in g.weights or g.weights[w].ndim != 2:
            decline("the second operand is not a constant matrix")
            continue
        if g.tensors[op.outputs[0]].dtype == "int32":
            decline("an int32 accumulator output (MatMulInteger)")
            continue
        ra = len(g.tensors[a].shape)
        if ra != 2 and (op.op_type != "MatMul" or ra < 2):
            decline(f"input rank {ra} is not 2")
            continue
        sa = g.tensors[a].shape
        if STRIDED_TOKENS and op.op_type == "MatMul" and ra == 3 and sa[0] == 1 and sa[1] > 1 and sa[2] > 1 \
                and a not in g.weights:
            declined.append(Decline(op.name, "rule 6b: a rank-3 [1, T, K] activation runs as the strided MatMul"))
            continue
        wq = g.tensors[w].quant
        wv = g.weights[w]
        alpha = float(op.attrs.get("alpha", 1.0))
        beta = float(op.attrs.get("beta", 1.0))
        if op.op_type == "Gemm" and int(op.attrs.get("transA", 0)):
            decline("transA=1")
            continue
        trans_b = op.op_type == "Gemm" and bool(int(op.attrs.get("transB", 0)))
        bias = op.inputs[2] if op.op_type == "Gemm" and len(op.inputs) > 2 and op.inputs[2] else None
        if bias is not None and bias not in g.weights:
            decline("the bias is not a constant")
            continue
        bq = g.tensors[bias].quant if bias else None
        if bq is not None and beta != 1.0:
            decline("a quantized bias with beta != 1")
            continue
        oc = wv.shape[0] if trans_b else wv.shape[1]
        if bias is not None and g.weights[bias].size != 1 and tuple(g.weights[bias].shape) not in ((oc,), (1, oc)):
            decline("the bias is not per output column")
            continue
        new_w = wv if trans_b else wv.T
        new_q = wq if trans_b else _tq(wq)
        if alpha != 1.0:
            if new_q is not None:
                new_q = QuantParam((new_q.scale * alpha).astype(np.float32), new_q.zero_point, new_q.axis)
            else:
                new_w = (new_w * alpha).astype(wv.dtype)
        inputs = [a]
        if new_w is wv and new_q is wq:
            inputs.append(w)
        else:
            wn = fresh_name(g, f"{w}_oc_k")
            set_const(g, wn, np.ascontiguousarray(new_w), new_q)
            inputs.append(wn)
        oc = new_w.shape[0]
        if bias:
            bv = g.weights[bias]
            if bv.ndim == 1 and bv.shape[0] == oc and beta == 1.0:
                inputs.append(bias)
            else:
                nb = fresh_name(g, f"{bias}_oc")
                vals = np.broadcast_to(bv.reshape(-1) if bv.size == oc else bv, (oc,)).copy()
                if beta != 1.0:
                    vals = (vals * beta).astype(bv.dtype)
                if bq is not None and bq.axis is not None:
                    bq = QuantParam(bq.scale, bq.zero_point, 0)
                set_const(g, nb, vals, bq)
                inputs.append(nb)
        gemm = op.with_(op_type="Gemm", inputs=tuple(inputs), attrs={"fused_activation": None})
        out_ops[-1] = gemm
        if ra > 2:
            out_ops[-1:] = _flattened(g, gemm, oc)
        n += 1
    g.ops = out_ops
    return PassResult(g, n, tuple(declined))


def _as_matmul(op: Op) -> Op:
    """Rule 7: a Gemm the rules above decline, as the general product of the ``matmul`` kind."""
    attrs = {k: op.attrs.get(k, d) for k, d in (("transA", 0), ("transB", 0), ("alpha", 1.0), ("beta", 1.0))}
    return op.with_(op_type="MatMul", attrs=attrs)


def _flattened(g: AnalyzedGraph, gemm: Op, oc: int) -> list[Op]:
    """Rule 6: ``[..., K] x [K, OC]`` as Reshape to [N, K], Gemm, Reshape back to [..., OC]."""
    a, y = g.tensors[gemm.inputs[0]], g.tensors[gemm.outputs[0]]
    rows = int(np.prod(a.shape[:-1]))
    a2 = fresh_name(g, f"{a.name}_2d")
    g.tensors[a2] = Tensor(a2, (rows, a.shape[-1]), a.dtype, a.quant)
    y2 = fresh_name(g, f"{y.name}_2d", [a2])
    g.tensors[y2] = Tensor(y2, (rows, oc), y.dtype, y.quant)
    r_in = Op(fresh_name(g, f"{gemm.name}_rows", [a2, y2]), "Reshape", (a.name,), (a2,), {})
    r_out = Op(fresh_name(g, f"{gemm.name}_unrows", [a2, y2, r_in.name]), "Reshape", (y2,), (y.name,), {})
    return [r_in, gemm.with_(inputs=(a2, *gemm.inputs[1:]), outputs=(y2,)), r_out]
