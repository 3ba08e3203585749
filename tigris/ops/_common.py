"""Helpers shared by the non-conv op kinds (pool, binary, concat, resize, unary, softmax, pad, transpose, quant, copy).

They answer three questions every lowering asks: how a logical axis of a tensor maps onto its rank-4 physical view
(``tigris.layout`` defines the layouts; this module derives axis maps from it), what an int8 tensor's per-tensor
quantization is, and which rows of an input band an output band needs (the reference side of ``TGRS_ERR_TILE``).
"""
from __future__ import annotations

import numpy as np

from tigris.ir import AnalyzedGraph, Op, Tensor, TigrisError
from tigris.layout import tensor_view_dims
from tigris.ops._mac import act_bounds_int8
from tigris.ops.base import TensorView

# -----------------------------------------------------------------------------------------------------------------
# Layout: logical axis <-> physical view axis


def phys_axes(shape: tuple[int, ...], layout: str) -> list[int | None]:
    """For each of the 4 physical view axes, the logical axis it holds, or None for a padding axis of size 1.

    nhwc: {N,H,W,C} <- logical (0, 2, 3, 1); nwc: {N,L,1,C} <- (0, 2, None, 1); plain: logical order padded on the
    left. Plain tensors of rank > 4 fold their leading axes (tigris.layout); they have no axis map and are rejected
    by the callers that need one.
    """
    r = len(shape)
    if layout == "nhwc":
        return [0, 2, 3, 1]
    if layout == "nwc":
        return [0, 2, None, 1]
    if r > 4:
        raise TigrisError(f"rank {r} tensors are not supported by this op")
    return [None] * (4 - r) + list(range(r))


def logical_to_phys_axis(t: Tensor, axis: int) -> int:
    """The physical view axis holding logical axis ``axis`` (non-negative) of tensor ``t``."""
    m = phys_axes(t.shape, t.layout)
    return m.index(axis)


def broadcast_phys_dims(operand_shape: tuple[int, ...], out: Tensor) -> tuple[int, int, int, int]:
    """Physical dims of an operand broadcast (NumPy rules) against ``out``: each is out's dim or 1.

    The operand's logical shape is left-padded with ones to out's rank, then laid out like ``out``; this is how a
    per-channel ``[C,1,1]`` constant becomes ``{1,1,1,C}`` against an NHWC activation.
    """
    r = len(out.shape)
    s = tuple(int(d) for d in operand_shape)
    if len(s) > r:
        raise TigrisError(f"operand rank {len(s)} exceeds output rank {r}")
    s = (1,) * (r - len(s)) + s
    for a, b in zip(s, out.shape):
        if a not in (1, b):
            raise TigrisError(f"operand shape {list(operand_shape)} does not broadcast to {list(out.shape)}")
    m = phys_axes(out.shape, out.layout)
    return tuple(1 if ax is None else s[ax] for ax in m)  # type: ignore[return-value]


def const_to_phys(arr: np.ndarray, out: Tensor) -> np.ndarray:
    """A constant operand (ONNX layout) as a contiguous array of its broadcast physical dims (see above)."""
    a = np.asarray(arr)
    r = len(out.shape)
    a = a.reshape((1,) * (r - a.ndim) + a.shape)
    m = phys_axes(out.shape, out.layout)
    perm = [ax for ax in m if ax is not None]
    a = np.transpose(a, perm)
    return np.ascontiguousarray(a.reshape(broadcast_phys_dims(arr.shape, out)))


def operand_phys_dims(t: Tensor, out: Tensor) -> tuple[int, int, int, int]:
    """Physical dims under which a non-constant operand tensor ``t`` broadcasts against ``out``.

    Its bytes are in ``t``'s own physical order; broadcasting by strides is only possible when that order agrees with
    the broadcast dims (the same layout, or a layout change that keeps the non-unit axes in the same order).
    """
    if t.shape == out.shape and t.layout == out.layout:
        return tensor_view_dims(t)
    dims = broadcast_phys_dims(t.shape, out)
    own = [d for d in tensor_view_dims(t) if d != 1]
    mapped = [d for d in dims if d != 1]
    if own != mapped:
        raise TigrisError(f"operand {t.name} ({t.layout}) cannot be broadcast against {out.name} ({out.layout})")
    return dims


# -----------------------------------------------------------------------------------------------------------------
# Quantization


def is_int8(t: Tensor) -> bool:
    return t.dtype in ("int8", "uint8") and t.quant is not None


def per_tensor(t: Tensor, what: str = "") -> tuple[float, int]:
    """(scale, zero_point) of a per-tensor quantized tensor; per-channel activations are not supported here."""
    if t.quant is None:
        raise TigrisError(f"{what or 'tensor'} is not quantized", t.name)
    if t.quant.scale.size != 1:
        raise TigrisError(f"{what or 'tensor'} must be quantized per tensor", t.name)
    return float(t.quant.scale.reshape(-1)[0]), int(t.quant.zero_point.reshape(-1)[0])


def dtype_kind(graph: AnalyzedGraph, op: Op) -> str:
    """"int8" when the op's activation input and output are quantized, "float32" when both are float."""
    ins = [graph.tensors[n] for n in op.inputs if n and not graph.is_const(n)]
    out = graph.tensors[op.outputs[0]]
    q = [is_int8(t) for t in ins + [out]]
    if all(q):
        return "int8"
    if not any(q) and all(t.dtype == "float32" for t in ins + [out]):
        return "float32"
    raise TigrisError(f"{op.op_type}: mixed float and int8 operands are not supported", op.name)


def act_bounds(act: str | None, scale: float, zp: int, numerics: str = "onnx") -> tuple[int, int]:
    """int8 clamp bounds of a fused activation; the one rule lives in :func:`tigris.ops._mac.act_bounds_int8`."""
    return act_bounds_int8(act, zp, scale, "", numerics)


def float_act_bounds(act: str | None) -> tuple[float, float]:
    if act is None:
        return float("-inf"), float("inf")
    if act == "relu":
        return 0.0, float("inf")
    if act == "relu6":
        return 0.0, 6.0
    raise TigrisError(f"unknown fused activation {act!r}")


def rshift_half_even(x: np.ndarray, n: np.ndarray | int) -> np.ndarray:
    """x / 2**n rounded to nearest, halves to even, exactly in int64 (|x| < 2**62); n <= 0 returns x, n >= 63 gives 0.

    The non-MAC int8 ops round this way (docs/numerics.md): power-of-two related scales put exact results on halves,
    and the ONNX model states those as QuantizeLinear's rounding, half to even.
    """
    x = np.asarray(x, dtype=np.int64)
    n = np.broadcast_to(np.asarray(n, dtype=np.int64), x.shape)
    nn = np.clip(n, 1, 62)
    a = np.abs(x)
    q = a >> nn
    r = a & ((np.int64(1) << nn) - 1)
    half = np.int64(1) << (nn - 1)
    q = q + ((r > half) | ((r == half) & ((q & 1) == 1))).astype(np.int64)
    q = np.where(x < 0, -q, q)
    return np.where(n <= 0, x, np.where(n >= 63, 0, q)).astype(np.int64)


def requantize_even(acc: np.ndarray, mult: np.ndarray | int, shift: np.ndarray | int) -> np.ndarray:
    """qmath.requantize's exact product ``acc * mult / 2**(31 - shift)``, rounded halves to even (not yet clamped)."""
    prod = np.asarray(acc, dtype=np.int64) * np.asarray(mult, dtype=np.int64)
    return rshift_half_even(prod, 31 - np.asarray(shift, dtype=np.int64))


# -----------------------------------------------------------------------------------------------------------------
# Bands


class TileError(Exception):
    """The reference twin of TGRS_ERR_TILE: an input band misses rows the output band needs."""


def band_rows(v: TensorView, first: int, last: int) -> tuple[int, int]:
    """Local row indices [a, b) of global rows [first, last) in band view ``v``; raises TileError when missing."""
    if first < v.row0 or last > v.row0 + v.rows:
        raise TileError(f"rows [{first},{last}) not in band [{v.row0},{v.row0 + v.rows})")
    return first - v.row0, last - v.row0


def same_rows(v: TensorView, out: TensorView) -> np.ndarray:
    """The rows of an elementwise input that match the output band (same dims), as a view of ``v.data``."""
    a, b = band_rows(v, out.row0, out.row0 + out.rows)
    return v.data[:, a:b]


def out_rows(out: TensorView) -> range:
    return range(out.row0, out.row0 + out.rows)


__all__ = [
    "TileError",
    "act_bounds",
    "band_rows",
    "broadcast_phys_dims",
    "const_to_phys",
    "dtype_kind",
    "float_act_bounds",
    "is_int8",
    "logical_to_phys_axis",
    "operand_phys_dims",
    "out_rows",
    "per_tensor",
    "phys_axes",
    "requantize_even",
    "rshift_half_even",
    "same_rows",
]


def same_bytes(a: Tensor, b: Tensor) -> bool:
    """Whether a value stored as ``a`` reads as the same value stored as ``b``: one element type and, quantized,
    one per-tensor scale and zero point (an int8 Concat or Slice between them copies bytes)."""
    if a.dtype != b.dtype or (a.quant is None) != (b.quant is None):
        return False
    if a.quant is None:
        return True
    if a.quant.scale.size != 1 or b.quant.scale.size != 1:
        return False
    return float(a.quant.scale.reshape(-1)[0]) == float(b.quant.scale.reshape(-1)[0]) \
        and int(a.quant.zero_point.reshape(-1)[0]) == int(b.quant.zero_point.reshape(-1)[0])


def view_elem_bytes(t: Tensor) -> int:
    """Bytes per element of ``t``'s stored form."""
    return t.nbytes // max(1, t.numel)
