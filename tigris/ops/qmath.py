"""Integer arithmetic shared by every int8 kernel: the Python definition the C runtime must match bit for bit.

See docs/numerics.md for the prose. Summary:

* A positive real scale ``s`` is stored as ``(mult, shift)`` with ``mult`` in ``[2**30, 2**31)`` (Q0.31 in
  ``[0.5, 1)``) and ``s = mult * 2**(shift - 31)``. ``shift`` is positive for scales >= 1 (a net left shift).
* ``requantize(acc, mult, shift)`` computes ``acc * mult`` exactly in 64 bits and divides by ``2**(31 - shift)``
  with a single rounding, halves away from zero. A divisor exponent of 63 or more yields 0 (the true quotient is
  below one half in magnitude for every int32 ``acc``).
* Results are then offset by the output zero point and clamped to the op's int8 bounds (which carry any fused
  Relu/Relu6).
"""
from __future__ import annotations

import math

import numpy as np

from tigris.ir import TigrisError

MULT_MIN = 1 << 30
MULT_MAX = (1 << 31) - 1
SHIFT_MIN = -32  # below this the scale is so small that requantize returns 0 for every int32 input
SHIFT_MAX = 31  # a divisor exponent of 0: scales up to 2**31


def quantize_multiplier(real: float, where: str = "") -> tuple[int, int]:
    """Decompose a positive scale into a Q0.31 multiplier and a power-of-two shift (see module doc)."""
    if not math.isfinite(real) or real <= 0.0:
        raise TigrisError(f"quantization scale must be positive and finite, got {real!r}", where or None)
    m, e = math.frexp(real)  # real = m * 2**e, m in [0.5, 1)
    mult = int(round(m * (1 << 31)))
    if mult == 1 << 31:  # m rounded up to 1.0
        mult //= 2
        e += 1
    if e > SHIFT_MAX:
        raise TigrisError(f"quantization scale {real!r} is too large (>= 2**31)", where or None)
    if e < SHIFT_MIN:
        # Still exact as a decomposition; requantize treats such a divisor as giving 0.
        pass
    return mult, e


def quantize_multipliers(reals: np.ndarray, where: str = "") -> tuple[np.ndarray, np.ndarray]:
    pairs = [quantize_multiplier(float(r), where) for r in np.asarray(reals, dtype=np.float64).ravel()]
    mult = np.array([p[0] for p in pairs], dtype=np.int32)
    shift = np.array([p[1] for p in pairs], dtype=np.int32)
    return mult, shift


def rounding_rshift(x: np.ndarray, n: np.ndarray | int) -> np.ndarray:
    """Divide int64 ``x`` by ``2**n`` (n >= 0), rounding halves away from zero; n >= 63 gives 0."""
    x = np.asarray(x, dtype=np.int64)
    n = np.broadcast_to(np.asarray(n, dtype=np.int64), x.shape)
    big = n >= 63
    nn = np.where(big, 0, n)
    half = np.where(nn > 0, np.left_shift(np.int64(1), np.maximum(nn - 1, 0)), 0)
    ax = np.abs(x)
    q = np.right_shift(ax + half, nn)
    q = np.where(x < 0, -q, q)
    return np.where(big, 0, q).astype(np.int64)


def requantize(acc: np.ndarray, mult: np.ndarray | int, shift: np.ndarray | int) -> np.ndarray:
    """round(acc * mult * 2**(shift - 31)) with one rounding, halves away from zero, as int64 (not yet clamped)."""
    acc = np.asarray(acc, dtype=np.int64)
    prod = acc * np.asarray(mult, dtype=np.int64)
    n = 31 - np.asarray(shift, dtype=np.int64)
    if np.any(n < 0):
        raise ValueError("shift above 31")
    return rounding_rshift(prod, n)


def saturate(x: np.ndarray, lo: int = -128, hi: int = 127) -> np.ndarray:
    return np.clip(x, lo, hi)


def quantize_float(x: np.ndarray, scale: float, zero_point: int, lo: int = -128, hi: int = 127) -> np.ndarray:
    """float -> int8 as QuantizeLinear does: round half to even of x / scale, plus zero point, saturated.

    This is the only place float rounding enters int8 results (model-boundary Quantize and compile-time tables);
    it divides in float32 like ONNX Runtime so boundary results agree.
    """
    quot = np.asarray(x, dtype=np.float32) / np.float32(scale)
    # Clip before the integer conversion: a quotient beyond int64 (or an infinity) would wrap instead of saturating.
    quot = np.clip(np.nan_to_num(quot, nan=0.0), -(2.0**40), 2.0**40)
    q = np.rint(quot).astype(np.int64) + int(zero_point)
    return np.clip(q, lo, hi)
