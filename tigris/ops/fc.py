"""The ``fc`` kind: fully connected (IR ``Gemm`` with the weight as ``[OC, K]``, i.e. ``transB = 1``).

Runtime form (C: ``runtime_c/src/kernels/fc.c``). Input ``[N, K]`` plain, output ``[N, OC]`` plain; the kernel takes
``N`` as the input's element count over ``K``, so it also reads an aliased NHWC tensor (a Flatten whose Gemm columns
the layout pass permuted). Weight ``W[oc * K + k]`` (compiler pass 3 guarantees that orientation); bias ``[OC]``.
int8 conventions as in ``tigris/ops/_mac.py``. No scratch.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Sequence

import numpy as np

from tigris.ir import AnalyzedGraph, Op, TigrisError
from tigris.ops import _mac
from tigris.ops.base import Lowered, TensorView


class FullyConnected(_mac.MacKind):
    name = "fc"
    ir_ops = ("Gemm",)
    ONNX_OPS = {"Gemm": "constant B (transB 0 or 1), constant C ([OC], [1, OC] or scalar), alpha, beta; transA = 0; "
                        "fused Relu/Relu6",
                "MatMul": "constant B [K, OC]; activation of rank 2, or rank > 2 as a dense layer over its last axis"}

    def check_operands(self, graph: AnalyzedGraph, op: Op) -> str | None:
        ins = [i for i in op.inputs if i]
        if len(ins) < 2 or ins[1] not in graph.weights or graph.weights[ins[1]].ndim != 2 or \
                (len(ins) > 2 and ins[2] not in graph.weights) or "fused_activation" not in op.attrs:
            return "not a product with a constant [OC, K] weight"
        return None

    # float32 kernels whose weights the plan may store as IEEE halves (compile --weights fp16, param wf16)
    DTYPES = ("float32", "float32 with float16 weights", "int8")
    PARAMS = (
        "act_min", "act_max",  # int8 clamp bounds (fused activation included)
        "fmin", "fmax",  # float clamp bounds as f32 bits
        "zp_in", "zp_out",
        "k",  # input features per row
        "numerics",  # int8: 0 onnx, 1 tflm requantization (docs/numerics.md)
        "wzp",  # int8: 1 when the weights have zero points (the bias const is [bias, zp_w])
        "wf16",  # float: 1 when the weight const holds IEEE halves (widened into the scratch by the kernel)
        "arrange",  # weight arrangement id (tigris.emit.format.Arrange; 0 = the plain [OC, K] order)
    )
    CONSTS = ("weight", "bias", "mult", "shift")

    def arrange(self, low: Lowered, target: str) -> Lowered:
        """Cortex-M4: an int8 op without weight zero points, at least four rows and four features, gets FC_ROWS4
        (:func:`rows4`): the DSP loop then loads two rows' four weights with one LDRD and widens one input word for
        four rows, with one weight pointer."""
        from tigris.emit.format import Arrange

        w = np.asarray(low.consts.get("weight"))
        if target != "cortex-m4" or w.dtype != np.int8 or low.params.get("wzp", 0) or low.params.get("arrange", 0):
            return low
        k = int(low.params["k"])
        if k < 4 or w.size // k < 4:
            return low
        return replace(low, params={**low.params, "arrange": int(Arrange.FC_ROWS4)},
                       consts={**low.consts, "weight": rows4(w.reshape(-1, k))})

    def lower(self, graph: AnalyzedGraph, op: Op) -> Lowered:
        x = graph.tensors[op.inputs[0]]
        y = graph.tensors[op.outputs[0]]
        wname = op.inputs[1]
        bname = _mac.optional_input(op, 2)
        int8 = _mac.is_int8_op(graph, op)
        w_raw = np.asarray(graph.weights[wname])
        if w_raw.ndim != 2:
            raise TigrisError(f"fully connected weight must be [OC, K], got {w_raw.shape}", wname)
        oc, k = w_raw.shape
        if x.numel % k or y.numel != x.numel // k * oc:
            raise TigrisError(f"inconsistent Gemm shapes: A {x.shape}, W {w_raw.shape}, Y {y.shape}", op.name)
        params: dict[str, int] = dict(k=k)
        fused = op.attrs.get("fused_activation")
        if int8:
            w_q, s_w, zp_w = _mac.int8_weights_zp(graph, wname, oc)
            rq = _mac.int8_mac_params(graph, op, x, y, wname, bname, w_q, s_w, zp_w, fused, params)
            consts = dict(weight=np.ascontiguousarray(w_q, np.int8), **rq)
        else:
            lo, hi = _mac.act_bounds_f32(fused, op.name)
            params.update(fmin=lo, fmax=hi)
            wf = np.ascontiguousarray(_mac.float_weights(graph, wname), np.float32)
            consts = dict(weight=_mac.stored_float_weight(graph, wf, params, op.name),
                          bias=_mac.float_bias(graph, bname, oc))
        return Lowered(kind=self.name, op_name=op.name, inputs=[x.name], outputs=[y.name], params=params,
                       consts=consts, macs=x.numel // k * oc * k)

    def scratch_bytes(self, low: Lowered, graph: AnalyzedGraph | None, out_rows: int) -> int:
        """None, except the float32 copy of IEEE-half weights (param wf16) the kernel widens them into."""
        return _mac.f16_scratch_bytes(low)

    def reference(self, low: Lowered, inputs: Sequence[TensorView], out: TensorView) -> None:
        p = low.params
        k = int(p["k"])
        w = np.asarray(low.consts["weight"])
        if p.get("arrange", 0):  # FC_ROWS4, the only fc arrangement (arrange refuses the others)
            w = unrows4(w.reshape(-1), w.size // k, k)
        a = np.asarray(inputs[0].data).reshape(-1, k)
        # float64 products are exact for int8 (|acc| < 2**31 is proven at lowering), and accurate for float32.
        if out.dtype == "int8" and p.get("wzp", 0):
            # exact zero points: sum (x - zp_in) * (w - zp_w)
            bz = np.asarray(low.consts["bias"], dtype=np.int64)
            oc = w.shape[0]
            acc = (a.astype(np.int64) - int(p["zp_in"])) @ (w.astype(np.int64) - bz[oc:, None]).T + bz[:oc]
            res = _mac.epilogue_int8(acc, low.consts["mult"], low.consts["shift"], p["zp_out"], p["act_min"],
                                     p["act_max"], p.get("numerics", 0))
            out.data[...] = res.reshape(out.data.shape)
            return
        acc = a.astype(np.float64) @ w.astype(np.float64).T
        if out.dtype == "int8":
            acc = acc.astype(np.int64) + np.asarray(low.consts["bias"], dtype=np.int64)
            res = _mac.epilogue_int8(acc, low.consts["mult"], low.consts["shift"], p["zp_out"], p["act_min"],
                                     p["act_max"], p.get("numerics", 0))
        else:
            res = _mac.epilogue_f32(acc + np.asarray(low.consts["bias"], dtype=np.float64), p["fmin"], p["fmax"])
        out.data[...] = res.reshape(out.data.shape)


def rows4(w: np.ndarray) -> np.ndarray:
    """The FC_ROWS4 arrangement of int8 weights ``w`` [OC, K] (docs/format.md "Weight arrangements"), flat, the same
    length: rows in blocks of four; block b holds, for every group of four features below K4 = K rounded down to a
    multiple of four, the four bytes of row 4b, then of 4b+1, 4b+2, 4b+3 (16 bytes per group), then each row's
    K - K4 tail features in row order. Rows past the last whole block stay in plain order, so every block starts
    where it starts in the plain layout."""
    oc, k = w.shape
    b, k4 = oc // 4, k & ~3
    blocks = w[: 4 * b].reshape(b, 4, k)
    head = blocks[:, :, :k4].reshape(b, 4, k4 // 4, 4).transpose(0, 2, 1, 3).reshape(b, 4 * k4)
    tail = blocks[:, :, k4:].reshape(b, 4 * (k - k4))
    return np.ascontiguousarray(np.concatenate([np.concatenate([head, tail], axis=1).reshape(-1),
                                                w[4 * b:].reshape(-1)]))


def unrows4(flat: np.ndarray, oc: int, k: int) -> np.ndarray:
    """[OC, K] from the FC_ROWS4 arrangement (the inverse of :func:`rows4`)."""
    idx = rows4(np.arange(oc * k, dtype=np.int64).reshape(oc, k))
    out = np.empty(oc * k, dtype=flat.dtype)
    out[idx] = flat
    return out.reshape(oc, k)
