"""DepthToSpace and SpaceToDepth (DCR and CRD) on NHWC views, any element type; int8 requantizes when the output's
quantization differs from the input's.

Both move elements between a *deep* view ``D = {N, h, w, C * b * b}`` and a *shallow* view ``S = {N, h * b, w * b, C}``:
``D[n, y, x, k] == S[n, y * b + i, x * b + j, c]`` with ``k = (i * b + j) * C + c`` (DCR) or ``k = c * b * b + i * b + j``
(CRD). DepthToSpace reads D and writes S (``DIR = 0``), SpaceToDepth the reverse (``DIR = 1``); ``MODE`` is 0 for
DCR, 1 for CRD. int8: ``zo + requant(q - zi, MULT, SHIFT)`` as the slice kind, a byte copy when the encodings agree.

Tiling: pointwise with a row map: DepthToSpace output rows ``[a, e)`` read input rows ``[a // b, (e - 1) // b + 1)``,
SpaceToDepth output rows ``[a, e)`` read ``[a * b, e * b)``.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from tigris.ir import AnalyzedGraph, Op, TigrisError
from tigris.layout import tensor_view_dims
from tigris.ops._common import TileError, dtype_kind, per_tensor, requantize_even
from tigris.ops.base import Lowered, OpKind, TensorView
from tigris.ops.qmath import quantize_multiplier


def _mode(op: Op) -> str:
    m = op.attrs.get("mode", "DCR")
    return (m.decode() if isinstance(m, bytes) else str(m)).upper()


def _block(op: Op) -> int:
    return int(op.attrs.get("blocksize", 0) or 0)


def deep_index(b: int, c: int, mode: str) -> np.ndarray:
    """k of every (i, j, c) as an array [b, b, C] (the module doc's formula)."""
    i, j, cc = np.meshgrid(np.arange(b), np.arange(b), np.arange(c), indexing="ij")
    return (i * b + j) * c + cc if mode == "DCR" else cc * b * b + i * b + j


class DepthSpace(OpKind):
    name = "depthspace"
    ir_ops = ("DepthToSpace", "SpaceToDepth")
    ONNX_OPS = {"DepthToSpace": "blocksize, mode DCR and CRD", "SpaceToDepth": "blocksize, mode DCR and CRD"}
    INT8_EXACTNESS = "bit-exact"
    TILING = "pointwise"
    TILING_DOC = "pointwise; output rows read the rows of the same pixels (a row map scaled by the block size)"
    PARAMS = ("BLOCK", "MODE", "DIR", "MULT", "SHIFT")

    def check_operands(self, graph: AnalyzedGraph, op: Op) -> str | None:
        if _block(op) < 1:
            return f"blocksize {_block(op)}"
        if _mode(op) not in ("DCR", "CRD"):
            return f"mode {_mode(op)!r}"
        if len(graph.tensors[op.inputs[0]].shape) != 4:
            return "only rank-4 [N, C, H, W] tensors"
        return super().check_operands(graph, op)

    def rows_needed(self, op: Op, a: int, e: int) -> tuple[int, int]:
        b = max(1, _block(op))
        if op.op_type == "DepthToSpace":
            return (a // b, (e - 1) // b + 1) if e > a else (a, e)
        return a * b, e * b

    def lower(self, graph: AnalyzedGraph, op: Op) -> Lowered:
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        b, d2s = _block(op), op.op_type == "DepthToSpace"
        if x.layout != "nhwc" or y.layout != "nhwc" or x.dtype != y.dtype:
            raise TigrisError(f"{op.op_type} needs NHWC tensors of one element type", op.name)
        deep, shallow = (tensor_view_dims(x), tensor_view_dims(y)) if d2s else (tensor_view_dims(y), tensor_view_dims(x))
        if (deep[0], deep[1] * b, deep[2] * b, deep[3]) != (shallow[0], shallow[1], shallow[2], shallow[3] * b * b):
            raise TigrisError(f"{op.op_type} blocksize {b}: {list(x.shape)} -> {list(y.shape)}", op.name)
        params = {"BLOCK": b, "MODE": 0 if _mode(op) == "DCR" else 1, "DIR": 0 if d2s else 1}
        if dtype_kind(graph, op) == "int8":
            si, _ = per_tensor(x, f"{op.op_type} input")
            so, _ = per_tensor(y, f"{op.op_type} output")
            params["MULT"], params["SHIFT"] = quantize_multiplier(si / so, op.name)
        return Lowered(self.name, op.name, [op.inputs[0]], [op.outputs[0]], params=params, macs=y.numel)

    def reference(self, low: Lowered, inputs: Sequence[TensorView], out: TensorView) -> None:
        x = inputs[0]
        p = low.params
        b, mode = p["BLOCK"], "DCR" if p["MODE"] == 0 else "CRD"
        r0, r1 = out.row0, out.row0 + out.rows
        if p["DIR"] == 0:  # D2S: output rows [r0, r1) come from input rows r // b
            c = out.dims[3]
            lo, hi = r0 // b, (r1 - 1) // b + 1
            if lo < x.row0 or hi > x.row0 + x.rows:
                raise TileError("DepthToSpace input band misses rows")
            d = x.data[:, lo - x.row0:hi - x.row0]                             # [N, hi-lo, w, C*b*b]
            k = deep_index(b, c, mode)                                          # [b, b, C]
            s = d[:, :, :, k]                                                   # [N, hb, w, b(i), b(j), C]
            s = s.transpose(0, 1, 3, 2, 4, 5).reshape(d.shape[0], (hi - lo) * b, d.shape[2] * b, c)
            v = s[:, r0 - lo * b:r1 - lo * b]
        else:  # S2D: output rows [r0, r1) read input rows [r0 * b, r1 * b)
            c = x.dims[3]
            if r0 * b < x.row0 or r1 * b > x.row0 + x.rows:
                raise TileError("SpaceToDepth input band misses rows")
            s = x.data[:, r0 * b - x.row0:r1 * b - x.row0]                     # [N, rows*b, W, C]
            n, hh, ww = s.shape[0], s.shape[1] // b, s.shape[2] // b
            s = s.reshape(n, hh, b, ww, b, c).transpose(0, 1, 3, 2, 4, 5)      # [N, h, w, i, j, C]
            v = np.empty((n, hh, ww, c * b * b), dtype=s.dtype)
            v[:, :, :, deep_index(b, c, mode).reshape(-1)] = s.reshape(n, hh, ww, -1)
        if out.dtype in ("int8", "uint8"):
            q = requantize_even(v.astype(np.int64) - x.zero_point, p["MULT"], p["SHIFT"])
            v = np.clip(q + out.zero_point, -128, 127)
        out.data[...] = v.astype(out.data.dtype)
