"""Q0.31 requantization: qmath.quantize_multiplier edge cases, and runtime_c's requant.h bit-exact against
qmath.requantize (the definition every int8 kernel shares; docs/numerics.md).

Tolerances: the decomposition reproduces a scale within a relative error of 2**-30 (issue 5); C vs Python exact.
"""
from __future__ import annotations

import math
import subprocess

import cffi
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tigris.ir import TigrisError
from tigris.ops import qmath

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from harness import CFLAGS_STRICT, KERNEL_DIR  # noqa: E402

SETTINGS = dict(deadline=None, database=None, max_examples=400)

_SRC = """
#include "requant.h"
int64_t t_requant(int32_t acc, int32_t mult, int32_t shift) { return tgrs_requant(acc, mult, shift); }
int32_t t_requant_s8(int32_t acc, int32_t mult, int32_t shift, int32_t zp, int32_t lo, int32_t hi)
{ return tgrs_requant_s8(acc, mult, shift, zp, lo, hi); }
int32_t t_wrap_add(int32_t a, int32_t b) { return tgrs_wrap_add(a, b); }
int32_t t_rq_s8(int32_t acc, int32_t mult, int32_t shift, int32_t zp, int32_t lo, int32_t hi)
{ tgrs_rq r = tgrs_rq_make(mult, shift, zp, TGRS_RQ_ONNX); return tgrs_rq_s8(&r, acc, lo, hi); }
int32_t t_srdhm(int32_t a, int32_t b) { return tgrs_srdhm(a, b); }
int32_t t_rdbpot(int32_t x, int32_t e) { return tgrs_rdbpot(x, e); }
int32_t t_requant_tflm(int32_t acc, int32_t mult, int32_t shift) { return tgrs_requant_tflm(acc, mult, shift); }
int32_t t_requant_nm_s8(int32_t acc, int32_t mult, int32_t shift, int32_t zp, int32_t lo, int32_t hi, int32_t nm)
{ return tgrs_requant_nm_s8(acc, mult, shift, zp, lo, hi, nm); }
int32_t t_rq_tflm_s8(int32_t acc, int32_t mult, int32_t shift, int32_t zp, int32_t lo, int32_t hi)
{ tgrs_rq r = tgrs_rq_make(mult, shift, zp, TGRS_RQ_TFLM); return tgrs_rq_s8(&r, acc, lo, hi); }
"""


@pytest.fixture(scope="module")
def rq(tmp_path_factory):
    d = tmp_path_factory.mktemp("requant")
    (d / "t.c").write_text(_SRC)
    so = d / "t.so"
    # kcheck.c holds the out-of-line parts (the TFLM branch of tgrs_rq_s8, tgrs_requant_nm_s8).
    subprocess.run(["gcc", *CFLAGS_STRICT, "-O2", "-fPIC", "-shared", f"-I{KERNEL_DIR}",
                    f"-I{KERNEL_DIR.parents[1] / 'include'}", "-o", str(so), str(d / "t.c"),
                    str(KERNEL_DIR / "kcheck.c")], check=True, capture_output=True)
    ffi = cffi.FFI()
    ffi.cdef("int64_t t_requant(int32_t, int32_t, int32_t);"
             "int32_t t_requant_s8(int32_t, int32_t, int32_t, int32_t, int32_t, int32_t);"
             "int32_t t_wrap_add(int32_t, int32_t);"
             "int32_t t_rq_s8(int32_t, int32_t, int32_t, int32_t, int32_t, int32_t);"
             "int32_t t_srdhm(int32_t, int32_t); int32_t t_rdbpot(int32_t, int32_t);"
             "int32_t t_requant_tflm(int32_t, int32_t, int32_t);"
             "int32_t t_requant_nm_s8(int32_t, int32_t, int32_t, int32_t, int32_t, int32_t, int32_t);"
             "int32_t t_rq_tflm_s8(int32_t, int32_t, int32_t, int32_t, int32_t, int32_t);")
    return ffi.dlopen(str(so))


# -- decomposition ---------------------------------------------------------------------------------------------------
@settings(**SETTINGS)
@given(st.floats(min_value=1e-300, max_value=2.0**31 * 0.99, allow_nan=False, allow_infinity=False))
def test_decomposition_reproduces_the_scale(real):
    mult, shift = qmath.quantize_multiplier(real)
    assert qmath.MULT_MIN <= mult <= qmath.MULT_MAX
    assert shift <= qmath.SHIFT_MAX
    approx = mult * 2.0 ** (shift - 31)
    assert abs(approx - real) <= real * 2.0**-30


@pytest.mark.parametrize("real, shift", [(1.0, 1), (0.5, 0), (2.0, 2), (3.0, 2), (0.75, 0), (1e-7, -23)])
def test_shift_sign_convention(real, shift):
    """shift > 0 means a net left shift (scale >= 1); 1.0 is 2**30 * 2**(1 - 31)."""
    m, s = qmath.quantize_multiplier(real)
    assert s == shift
    assert m * 2.0 ** (s - 31) == pytest.approx(real, rel=2**-30)


def test_mantissa_rounding_up_to_one_renormalizes():
    m, s = qmath.quantize_multiplier(1.0 - 2.0**-40)  # the Q0.31 mantissa rounds to 2**31
    assert (m, s) == (1 << 30, 1)


@pytest.mark.parametrize("bad", [0.0, -1.0, -1e-9, float("nan"), float("inf"), -float("inf"), 2.0**31])
def test_bad_scales_are_errors(bad):
    with pytest.raises(TigrisError) as e:
        qmath.quantize_multiplier(bad, "conv1: x")
    assert e.value.where == "conv1: x"


# -- requantize: C == Python -----------------------------------------------------------------------------------------
def _py(acc, mult, shift):
    return int(qmath.requantize(np.array([acc]), mult, shift)[0])


@settings(**SETTINGS)
@given(acc=st.integers(-(2**31), 2**31 - 1), mult=st.integers(2**30, 2**31 - 1), shift=st.integers(-80, 31))
def test_c_requant_equals_python(rq, acc, mult, shift):
    assert rq.t_requant(acc, mult, shift) == _py(acc, mult, shift)


@settings(**SETTINGS)
@given(acc=st.integers(-(2**31), 2**31 - 1), mult=st.integers(2**30, 2**31 - 1), shift=st.integers(-40, 31),
       zp=st.integers(-128, 127), lo=st.integers(-128, 127), width=st.integers(0, 255))
def test_c_requant_s8_equals_python(rq, acc, mult, shift, zp, lo, width):
    hi = min(127, lo + width)
    expect = int(qmath.saturate(qmath.requantize(np.array([acc]), mult, shift) + zp, lo, hi)[0])
    assert rq.t_requant_s8(acc, mult, shift, zp, lo, hi) == expect
    assert rq.t_rq_s8(acc, mult, shift, zp, lo, hi) == expect  # the per-channel prepared form


@settings(**SETTINGS)
@given(acc=st.integers(-(2**31), 2**31 - 1), mult=st.integers(2**30, 2**31 - 1), shift=st.integers(-(2**31), 31))
def test_prepared_requant_any_shift(rq, acc, mult, shift):
    """Shifts far below -31 (tiny scales) and up to 31 (the largest): prepared form == definition, full range."""
    expect = int(qmath.saturate(qmath.requantize(np.array([acc]), mult, max(shift, -200)) + 0, -128, 127)[0])
    assert rq.t_rq_s8(acc, mult, shift, 0, -128, 127) == expect


@pytest.mark.parametrize("acc, expect", [(3, 2), (-3, -2), (1, 1), (-1, -1), (5, 3), (-5, -3), (2, 1), (0, 0)])
def test_halves_round_away_from_zero(rq, acc, expect):
    """mult 2**30, shift 0 is the scale 0.5: odd accumulators land exactly on halves."""
    assert _py(acc, 1 << 30, 0) == expect
    assert rq.t_requant(acc, 1 << 30, 0) == expect


def test_extreme_shifts(rq):
    big = 2**31 - 1
    assert rq.t_requant(big, big, 31) == big * big  # divisor 2**0: the exact product
    assert rq.t_requant(-(2**31), 2**30, 31) == -(2**61)
    assert rq.t_requant(big, big, -31) == _py(big, big, -31) == 1  # 2**62 / 2**62, rounded: 1
    assert rq.t_requant(big, big, -32) == 0  # divisor exponent 63: always below one half
    assert rq.t_requant(big, big, -(2**31)) == 0  # no overflow computing 31 - shift
    assert rq.t_requant_s8(big, big, 31, 0, -128, 127) == 127  # saturation
    assert rq.t_requant_s8(-big, big, 31, 0, -128, 127) == -128
    for acc in (big, -big, 3, -3, 1, -1, 0):  # the prepared form at the same extremes
        for shift in (31, 0, -31, -32, -(2**31)):
            assert rq.t_rq_s8(acc, big, shift, 5, -128, 127) == rq.t_requant_s8(acc, big, shift, 5, -128, 127)


@pytest.mark.parametrize("shift", range(-34, 2))
def test_prepared_requant_32bit_form_at_ties_and_edges(rq, shift):
    """Shifts <= -2 take the prepared form's 32-bit path: exact ties of both signs (acc * mult = odd * 2^(n-1)),
    one off each tie, and the accumulator extremes, against the definition."""
    n = 31 - shift
    accs = [0, 1, -1, 2**31 - 1, -(2**31), 2**30, -(2**30)]
    mult = 1 << 30
    if n - 31 >= 0:
        for odd in (1, 3, 5, 127, 2**20 + 1):
            tie = odd << (n - 31)
            if tie < 2**31:
                accs += [tie, -tie, tie + 1, -tie - 1, tie - 1, -tie + 1]
    for acc in accs:
        for m, zp in ((mult, 0), (2**31 - 1, -7), (1518500250, 100)):
            expect = int(qmath.saturate(qmath.requantize(np.array([acc]), m, shift) + zp, -128, 127)[0])
            assert rq.t_rq_s8(acc, m, shift, zp, -128, 127) == expect, (acc, m, shift, zp)
            assert rq.t_rq_s8(acc, m, shift, zp, -20, 30) == max(-20, min(30, expect))


def test_wrap_add_is_twos_complement(rq):
    assert rq.t_wrap_add(2**31 - 1, 1) == -(2**31)
    assert rq.t_wrap_add(-5, 3) == -2


# -- tflm numerics: the gemmlowp pair, C == Python == the stated definition ------------------------------------------
def _srdhm_spec(a: int, b: int) -> int:
    """gemmlowp's statement: (a*b + nudge) / 2**31 truncated toward zero, nudge 2**30 or 1 - 2**30 by the sign."""
    if a == b == -(2**31):
        return 2**31 - 1
    ab = a * b
    num = ab + ((1 << 30) if ab >= 0 else 1 - (1 << 30))
    q = abs(num) // (1 << 31)
    return q if num >= 0 else -q


def _rdbpot_spec(x: int, e: int) -> int:
    """x / 2**e rounded to nearest, halves away from zero (exact rational arithmetic)."""
    from fractions import Fraction

    v = Fraction(x, 2**e)
    q = math.floor(abs(v) + Fraction(1, 2))
    return q if v >= 0 else -q


def _tflm_spec(acc: int, mult: int, shift: int) -> int:
    if shift <= -32:
        return 0
    if shift > 0:
        x = ((acc << shift) + 2**31) % 2**32 - 2**31  # TFLM's int32 multiply by 2**shift wraps
        return _srdhm_spec(x, mult)
    return _rdbpot_spec(_srdhm_spec(acc, mult), -shift)


I32 = st.integers(-(2**31), 2**31 - 1)


@settings(**SETTINGS)
@given(a=I32, b=I32)
def test_srdhm_matches_its_statement(rq, a, b):
    assert int(qmath.srdhm(np.array([a]), b)[0]) == _srdhm_spec(a, b) == rq.t_srdhm(a, b)


@settings(**SETTINGS)
@given(x=I32, e=st.integers(0, 31))
def test_rdbpot_matches_its_statement(rq, x, e):
    assert int(qmath.rdbpot(np.array([x]), e)[0]) == _rdbpot_spec(x, e) == rq.t_rdbpot(x, e)


@settings(**SETTINGS)
@given(acc=I32, mult=st.integers(2**30, 2**31 - 1), shift=st.integers(-40, 31), zp=st.integers(-128, 127),
       lo=st.integers(-128, 127), width=st.integers(0, 255))
def test_tflm_requant_c_equals_python(rq, acc, mult, shift, zp, lo, width):
    hi = min(127, lo + width)
    r = _tflm_spec(acc, mult, shift)
    assert int(qmath.requantize_tflm(np.array([acc]), mult, shift)[0]) == r
    assert rq.t_requant_tflm(acc, mult, shift) == r
    expect = max(lo, min(hi, r + zp))
    assert rq.t_requant_nm_s8(acc, mult, shift, zp, lo, hi, 1) == expect
    assert rq.t_rq_tflm_s8(acc, mult, shift, zp, lo, hi) == expect  # the prepared form
    onnx = int(qmath.saturate(qmath.requantize(np.array([acc]), mult, shift) + zp, lo, hi)[0])
    assert rq.t_requant_nm_s8(acc, mult, shift, zp, lo, hi, 0) == onnx


@pytest.mark.parametrize("acc, onnx, tflm", [
    # mult 2**30, shift -1: scale 0.25. srdhm (by 0.5) rounds halves up, rdbpot (by 2) rounds halves away from zero
    (1, 0, 1),     # 0.25: srdhm 0.5 -> 1, rdbpot 0.5 -> 1: the double rounding moves it by one
    (-1, 0, 0),    # -0.25: srdhm -0.5 -> 0
    (2, 1, 1),     # 0.5
    (-2, -1, -1),  # -0.5: srdhm -1, rdbpot -0.5 -> -1
    (3, 1, 1),     # 0.75: srdhm 1.5 -> 2, rdbpot 1
    (-3, -1, -1),  # -0.75: srdhm -1.5 -> -1, rdbpot -0.5 -> -1
    (5, 1, 2),     # 1.25: srdhm 2.5 -> 3, rdbpot 1.5 -> 2
    (-5, -1, -1),  # -1.25: srdhm -2.5 -> -2, rdbpot -1
    (6, 2, 2),     # 1.5
])
def test_double_rounding_examples(rq, acc, onnx, tflm):
    assert _py(acc, 1 << 30, -1) == onnx
    got = int(qmath.requantize_tflm(np.array([acc]), 1 << 30, -1)[0])
    assert got == tflm == _tflm_spec(acc, 1 << 30, -1) == rq.t_requant_tflm(acc, 1 << 30, -1)


def test_numerics_codes():
    assert qmath.numerics_code("onnx") == 0 and qmath.numerics_code("tflm") == 1
    with pytest.raises(TigrisError):
        qmath.numerics_code("tflite")
