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
{ tgrs_rq r = tgrs_rq_make(mult, shift, zp); return tgrs_rq_s8(&r, acc, lo, hi); }
"""


@pytest.fixture(scope="module")
def rq(tmp_path_factory):
    d = tmp_path_factory.mktemp("requant")
    (d / "t.c").write_text(_SRC)
    so = d / "t.so"
    subprocess.run(["gcc", *CFLAGS_STRICT, "-O2", "-fPIC", "-shared", f"-I{KERNEL_DIR}", "-o", str(so), str(d / "t.c")],
                   check=True, capture_output=True)
    ffi = cffi.FFI()
    ffi.cdef("int64_t t_requant(int32_t, int32_t, int32_t);"
             "int32_t t_requant_s8(int32_t, int32_t, int32_t, int32_t, int32_t, int32_t);"
             "int32_t t_wrap_add(int32_t, int32_t);"
             "int32_t t_rq_s8(int32_t, int32_t, int32_t, int32_t, int32_t, int32_t);")
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


def test_wrap_add_is_twos_complement(rq):
    assert rq.t_wrap_add(2**31 - 1, 1) == -(2**31)
    assert rq.t_wrap_add(-5, 3) == -2
