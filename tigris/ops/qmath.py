"""Integer arithmetic shared by every int8 kernel: the Python definition the C runtime must match bit for bit.

See docs/numerics.md for the prose. Summary:

* A positive real scale ``s`` is stored as ``(mult, shift)`` with ``mult`` in ``[2**30, 2**31)`` (Q0.31 in
  ``[0.5, 1)``) and ``s = mult * 2**(shift - 31)``. ``shift`` is positive for scales >= 1 (a net left shift).
* ``requantize(acc, mult, shift)`` computes ``acc * mult`` exactly in 64 bits and divides by ``2**(31 - shift)``
  with a single rounding, halves away from zero. A divisor exponent of 63 or more yields 0 (the true quotient is
  below one half in magnitude for every int32 ``acc``).
* Results are then offset by the output zero point and clamped to the op's int8 bounds (which carry any fused
  Relu/Relu6).

Two numerics contracts share these definitions (docs/numerics.md, "Numerics contracts"): ``onnx`` (the single
rounding above) and ``tflm``, which reproduces TensorFlow Lite Micro's reference kernels: ``requantize_tflm`` is the
gemmlowp pair (a saturating rounding doubling high multiply, then a rounding divide by a power of two), and the
fixed-point helpers below (``srdhm``, ``rdbpot``, ``reciprocal_q31``, ``exp_on_negative``, ``logistic_q31``,
``tanh_q31``) are the Q-format arithmetic TFLM's softmax, logistic and tanh are stated in. Every function here works
on int64 NumPy arrays holding int32 values and wraps or saturates exactly where the 32-bit definition does.
"""
from __future__ import annotations

import math

import numpy as np

from tigris.ir import TigrisError

MULT_MIN = 1 << 30
MULT_MAX = (1 << 31) - 1
SHIFT_MIN = -32  # below this the scale is so small that requantize returns 0 for every int32 input
SHIFT_MAX = 31  # a divisor exponent of 0: scales up to 2**31


NUMERICS = ("onnx", "tflm")  # the index is the code stored in op params and the plan header (format.Numerics)


def numerics_code(numerics: str, where: str = "") -> int:
    """0 for ``onnx``, 1 for ``tflm``; anything else is a TigrisError."""
    if numerics not in NUMERICS:
        raise TigrisError(f"unknown numerics {numerics!r}; use onnx or tflm", where or "--numerics")
    return NUMERICS.index(numerics)


def round_half_away(x: float) -> int:
    """Round a float to the nearest integer, halves away from zero (C's ``round``, which TFLite uses)."""
    return int(math.copysign(math.floor(abs(x) + 0.5), x))


def quantize_multiplier(real: float, where: str = "", numerics: str = "onnx") -> tuple[int, int]:
    """Decompose a positive scale into a Q0.31 multiplier and a power-of-two shift (see module doc).

    The mantissa ``m * 2**31`` is rounded half to even for ``onnx`` and half away from zero for ``tflm`` (TFLite's
    rounding); the two differ only when ``m`` has an exact half below bit 31.
    """
    if not math.isfinite(real) or real <= 0.0:
        raise TigrisError(f"quantization scale must be positive and finite, got {real!r}", where or None)
    m, e = math.frexp(real)  # real = m * 2**e, m in [0.5, 1)
    mult = round_half_away(m * (1 << 31)) if numerics == "tflm" else int(round(m * (1 << 31)))
    if mult == 1 << 31:  # m rounded up to 1.0
        mult //= 2
        e += 1
    if e > SHIFT_MAX:
        raise TigrisError(f"quantization scale {real!r} is too large (>= 2**31)", where or None)
    if e < SHIFT_MIN:
        # Still exact as a decomposition; requantize treats such a divisor as giving 0.
        pass
    return mult, e


def quantize_multipliers(reals: np.ndarray, where: str = "", numerics: str = "onnx") -> tuple[np.ndarray, np.ndarray]:
    pairs = [quantize_multiplier(float(r), where, numerics) for r in np.asarray(reals, dtype=np.float64).ravel()]
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


def wrap32(x: np.ndarray) -> np.ndarray:
    """Reduce int64 values modulo 2**32 into the int32 range (two's-complement wrapping), as int64."""
    x = np.asarray(x, dtype=np.int64)
    return ((x + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def srdhm(a: np.ndarray, b: np.ndarray | int) -> np.ndarray:
    """Saturating rounding doubling high multiply of int32 values: ``round(a * b / 2**31)``, halves toward +inf.

    (gemmlowp states it as ``(a*b + nudge) / 2**31`` truncated toward zero with ``nudge = 2**30`` for a non-negative
    product and ``1 - 2**30`` otherwise; that equals ``floor((a*b + 2**30) / 2**31)``.) The one overflowing case,
    ``a = b = -2**31``, saturates to ``2**31 - 1``.
    """
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    r = (a * b + (1 << 30)) >> 31
    return np.where((a == -(1 << 31)) & (b == -(1 << 31)), (1 << 31) - 1, r).astype(np.int64)


def rdbpot(x: np.ndarray, e: np.ndarray | int) -> np.ndarray:
    """Rounding divide of int32 ``x`` by ``2**e`` (``0 <= e <= 31``), halves away from zero."""
    x = np.asarray(x, dtype=np.int64)
    e = np.asarray(e, dtype=np.int64)
    mask = (np.int64(1) << e) - 1
    rem = x & mask
    thr = (mask >> 1) + (x < 0)
    return (x >> e) + (rem > thr)


def requantize_tflm(acc: np.ndarray, mult: np.ndarray | int, shift: np.ndarray | int) -> np.ndarray:
    """TFLM's requantization of an int32 ``acc`` by ``(mult, shift)`` (same encoding as :func:`requantize`).

    ``shift > 0``: ``srdhm(acc << shift, mult)`` with the left shift wrapping in int32; ``shift <= 0``:
    ``rdbpot(srdhm(acc, mult), -shift)``, two roundings. ``shift <= -32`` gives 0 (TFLite stores such a scale as 0).
    Not yet offset or clamped.
    """
    acc = np.asarray(acc, dtype=np.int64)
    shift = np.asarray(shift, dtype=np.int64)
    if np.any(shift > SHIFT_MAX):
        raise ValueError("shift above 31")
    left = np.clip(shift, 0, 31)
    right = np.clip(-shift, 0, 31)
    x = wrap32(acc << left)
    r = rdbpot(srdhm(x, mult), right)
    return np.where(shift <= -32, 0, r).astype(np.int64)


def requantize_nm(acc: np.ndarray, mult: np.ndarray | int, shift: np.ndarray | int, numerics: int) -> np.ndarray:
    """:func:`requantize` (numerics code 0, onnx) or :func:`requantize_tflm` (code 1)."""
    return requantize_tflm(acc, mult, shift) if numerics else requantize(acc, mult, shift)


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


# -----------------------------------------------------------------------------------------------------------------
# Fixed-point helpers of the tflm numerics (softmax, logistic, tanh). A value with ``b`` integer bits is an int32 raw
# ``r`` standing for ``r / 2**(31 - b)``; products of values with ``b1`` and ``b2`` integer bits are ``srdhm`` of the
# raws and have ``b1 + b2`` integer bits. Sums and differences of raws wrap in int32 (``wrap32``).

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1


def sat_lshift(x: np.ndarray, e: int) -> np.ndarray:
    """``x * 2**e`` (``e >= 0``) saturated to int32: a rescale to fewer integer bits."""
    x = np.asarray(x, dtype=np.int64)
    if e == 0:
        return x
    thr = (1 << (31 - e)) - 1
    return np.where(x > thr, INT32_MAX, np.where(x < -thr, INT32_MIN, x << e)).astype(np.int64)


def _exp_quarter_interval(a: np.ndarray) -> np.ndarray:
    """exp(a) for a (0 integer bits) in [-1/4, 0): a fourth-order Taylor polynomial around -1/8."""
    exp_m1_8 = 1895147668  # exp(-1/8), 0 integer bits
    one_third = 715827883  # 1/3
    x = wrap32(a + (1 << 28))  # a + 1/8
    x2 = srdhm(x, x)
    x3 = srdhm(x2, x)
    x4 = srdhm(x2, x2)
    x4_4 = rdbpot(x4, 2)
    poly = rdbpot(wrap32(srdhm(wrap32(x4_4 + x3), one_third) + x2), 1)  # x^4/24 + x^3/6 + x^2/2
    return wrap32(exp_m1_8 + srdhm(exp_m1_8, wrap32(x + poly)))


# exp(-2**k) with 0 integer bits, for k = -2 .. 4 (the binary digits of -a above the quarter).
_EXP_POW2 = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308), (2, 39332535), (3, 720401),
             (4, 242))


def exp_on_negative(a: np.ndarray, int_bits: int) -> np.ndarray:
    """exp(a) with 0 integer bits, for raw ``a <= 0`` with ``int_bits`` integer bits (``a = 0`` gives 2**31 - 1).

    ``a`` is split into a remainder in [-1/4, 0) (the polynomial) and a multiple of 1/4 whose binary digits select
    constant factors exp(-2**k).
    """
    a = np.asarray(a, dtype=np.int64)
    frac = 31 - int_bits
    quarter = 1 << (frac - 2)
    a_mod = wrap32((a & (quarter - 1)) - quarter)
    result = _exp_quarter_interval(sat_lshift(a_mod, int_bits))
    remainder = wrap32(a_mod - a)
    for k, factor in _EXP_POW2:
        if int_bits > k and 0 <= frac + k <= 31:
            bit = (remainder >> (frac + k)) & 1
            result = np.where(bit != 0, srdhm(result, factor), result)
    if int_bits > 5:  # below -32 the result is 0 (the factors above cover -a < 32 only)
        result = np.where(a < -(1 << (36 - int_bits)), 0, result)
    return np.where(a == 0, INT32_MAX, result).astype(np.int64)


def _newton_reciprocal(half_den: np.ndarray) -> np.ndarray:
    """x ~ 1 / half_den with 2 integer bits, for half_den (0 integer bits) in [1/2, 1): three Newton steps from
    48/17 - 32/17 * half_den."""
    x = wrap32(1515870810 + srdhm(half_den, -1010580540))
    for _ in range(3):
        hdx = srdhm(half_den, x)
        one_minus = wrap32((1 << 29) - hdx)
        x = wrap32(x + sat_lshift(srdhm(x, one_minus), 2))
    return x


def _rounding_half_sum(a: np.ndarray, b: int) -> np.ndarray:
    s = np.asarray(a, dtype=np.int64) + b
    return np.where(s >= 0, (s + 1) // 2, -((-s + 1) // 2))


def one_over_one_plus_x(a: np.ndarray) -> np.ndarray:
    """1 / (1 + a) for a in [0, 1), 0 integer bits in and out."""
    x = _newton_reciprocal(_rounding_half_sum(a, INT32_MAX))
    return sat_lshift(x, 1)  # x / 2 with 1 integer bit, rescaled to 0 integer bits


def one_minus_x_over_one_plus_x(a: np.ndarray) -> np.ndarray:
    """(1 - a) / (1 + a) for a in [0, 1), 0 integer bits in and out."""
    x = _newton_reciprocal(_rounding_half_sum(a, INT32_MAX))
    return sat_lshift(wrap32(x - (1 << 29)), 2)


def reciprocal_q31(s: np.ndarray, int_bits: int) -> tuple[np.ndarray, np.ndarray]:
    """(r, e) with r (0 integer bits) ~ 2**e / s, for a positive raw ``s`` with ``int_bits`` integer bits: ``s`` is
    normalized by its leading zeros and ``e = int_bits - leading zeros``."""
    s = np.asarray(s, dtype=np.int64)
    clz = 32 - np.array([int(v).bit_length() for v in (s & 0xFFFFFFFF).ravel()], dtype=np.int64).reshape(s.shape)
    e = int_bits - clz
    shifted = wrap32(((s << clz) & 0xFFFFFFFF) - (1 << 31))  # (s normalized to [1, 2)) - 1
    return one_over_one_plus_x(shifted), e


def logistic_q31(a: np.ndarray, int_bits: int) -> np.ndarray:
    """logistic(a), 0 integer bits out, for a raw ``a`` with ``int_bits`` integer bits."""
    a = np.asarray(a, dtype=np.int64)
    pos = a > 0
    absa = np.where(pos, a, wrap32(-a))
    r_pos = one_over_one_plus_x(exp_on_negative(wrap32(-absa), int_bits))
    r_neg = wrap32(INT32_MAX - r_pos)
    return np.where(a == 0, 1 << 30, np.where(pos, r_pos, r_neg)).astype(np.int64)


def tanh_q31(a: np.ndarray, int_bits: int) -> np.ndarray:
    """tanh(a), 0 integer bits out, for a raw ``a`` with ``int_bits`` integer bits."""
    a = np.asarray(a, dtype=np.int64)
    neg = a < 0
    n = np.where(neg, a, wrap32(-a))  # -|a|
    t = one_minus_x_over_one_plus_x(exp_on_negative(n, int_bits + 1))  # exp(2n): the same raw, one more int bit
    return np.where(a == 0, 0, np.where(neg, wrap32(-t), t)).astype(np.int64)
