"""The ``cast`` kind: ONNX Cast of a float32 tensor to int32, elementwise and band-aware (pointwise).

``y = (int32) x``, truncating toward zero like the C conversion ONNX Runtime uses, with NaN -> 0 and values outside
the int32 range saturated (where a plain C conversion would be undefined). It is how ConvInteger's exact float
convolution becomes its int32 result (pass integer_ops); no parameters, no constants.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
from onnx import TensorProto

from tigris.ir import AnalyzedGraph, Op
from tigris.ops._common import same_rows
from tigris.ops.base import Lowered, OpKind, TensorView

INT32_LO, INT32_HI = -(2.0**31), 2.0**31 - 128  # the largest float32 below 2**31 is 2**31 - 128


class Cast(OpKind):
    COLS = "pixel"
    name = "cast"
    ir_ops = ("Cast",)
    ONNX_OPS = {"Cast": "float32 to int32 (truncation toward zero, saturated)"}
    DTYPES = ("float32 -> int32",)
    INT8_EXACTNESS = "bit-exact"
    TILING = "pointwise"

    def unsupported(self, graph: AnalyzedGraph, op: Op) -> str | None:
        ins = [i for i in op.inputs if i]
        x, y = graph.tensors[ins[0]], graph.tensors[op.outputs[0]]
        if len(ins) != 1 or x.dtype != "float32" or x.quant is not None or y.dtype != "int32" or \
                int(op.attrs.get("to", TensorProto.INT32)) != TensorProto.INT32:
            return f"only a Cast of float32 to int32 is supported ({x.dtype} -> {y.dtype})"
        if len(x.shape) > 4:
            return f"rank-{len(x.shape)} tensor {x.name} (runtime tensors have at most 4 dimensions)"
        if x.shape != y.shape or x.layout != y.layout:
            return "output shape or layout differs from the input's"
        return None

    def lower(self, graph: AnalyzedGraph, op: Op) -> Lowered:
        return Lowered(self.name, op.name, [op.inputs[0]], [op.outputs[0]], macs=graph.tensors[op.outputs[0]].numel)

    def reference(self, low: Lowered, inputs: Sequence[TensorView], out: TensorView) -> None:
        x = np.nan_to_num(same_rows(inputs[0], out).astype(np.float32), nan=0.0)
        out.data[...] = np.trunc(np.clip(x, np.float32(INT32_LO), np.float32(INT32_HI))).astype(np.int32)
