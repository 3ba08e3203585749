"""Quantization helpers the passes share: reading Q/DQ operands, restating uint8 as int8, (de)quantizing constants.

Sign convention (the IR's, see tigris/ir.py): real = (q - zero_point) * scale.
"""
from __future__ import annotations

import numpy as np

from tigris.ir import AnalyzedGraph, Op, QuantParam


def qparam_of(graph: AnalyzedGraph, op: Op, data_rank: int) -> QuantParam | str:
    """The QuantParam a QuantizeLinear/DequantizeLinear states, or a reason it cannot be read statically."""
    if len(op.inputs) < 2 or op.inputs[1] not in graph.weights:
        return "its scale is not a constant"
    scale = np.asarray(graph.weights[op.inputs[1]], dtype=np.float32).reshape(-1)
    if len(op.inputs) > 2 and op.inputs[2]:
        if op.inputs[2] not in graph.weights:
            return "its zero point is not a constant"
        zp = np.asarray(graph.weights[op.inputs[2]]).reshape(-1)
    else:
        zp = np.zeros(scale.size, dtype=np.int64)
    if zp.size != scale.size:
        zp = np.broadcast_to(zp, scale.shape)
    if "block_size" in op.attrs and int(op.attrs["block_size"]) != 0:
        return "blocked quantization is not supported"
    axis: int | None = None
    if scale.size > 1:
        ax = int(op.attrs.get("axis", 1))
        axis = ax + data_rank if ax < 0 else ax
    return QuantParam(scale.astype(np.float32), zp.astype(np.int64), axis)


def zp_dtype(graph: AnalyzedGraph, op: Op) -> str:
    """The integer type a Q produces / a DQ reads: its zero point's type, else the ONNX default uint8."""
    if len(op.inputs) > 2 and op.inputs[2] in graph.weights:
        return str(graph.weights[op.inputs[2]].dtype)
    return "uint8"


def restate_uint8(q: QuantParam) -> QuantParam:
    """uint8 v and int8 v-128 denote the same real number when the zero point shifts by the same 128."""
    return QuantParam(q.scale, (q.zero_point.astype(np.int64) - 128), q.axis)


def _bshape(q: QuantParam, rank: int) -> tuple[int, ...]:
    if q.axis is None or q.scale.size == 1:
        return (1,) * rank
    s = [1] * rank
    s[q.axis] = q.scale.size
    return tuple(s)


def dequantize(values: np.ndarray, q: QuantParam) -> np.ndarray:
    shp = _bshape(q, values.ndim)
    return ((values.astype(np.float64) - q.zero_point.reshape(shp)) * q.scale.astype(np.float64).reshape(shp)).astype(
        np.float32)


def quantize(values: np.ndarray, q: QuantParam, dtype: str = "int8") -> np.ndarray:
    """Round half to even like ONNX QuantizeLinear, then saturate to the dtype."""
    shp = _bshape(q, values.ndim)
    info = np.iinfo(np.dtype(dtype))
    r = np.rint(values.astype(np.float64) / q.scale.astype(np.float64).reshape(shp)) + q.zero_point.reshape(shp)
    return np.clip(r, info.min, info.max).astype(dtype)


def symmetric_per_channel(w: np.ndarray, axis: int = 0) -> tuple[np.ndarray, QuantParam]:
    """Requantize a float weight symmetric per channel along ``axis`` (the convention of the models we load)."""
    red = tuple(i for i in range(w.ndim) if i != axis)
    amax = np.max(np.abs(w.astype(np.float64)), axis=red) if red else np.abs(w.astype(np.float64))
    scale = np.where(amax > 0, amax / 127.0, 1.0).astype(np.float32)
    q = QuantParam(scale, np.zeros(scale.size, dtype=np.int64), axis if scale.size > 1 else None)
    return quantize(w, q, "int8"), q
