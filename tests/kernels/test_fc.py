"""fc kind: NumPy reference vs ONNX Runtime (Gemm, transB=1), C kernel vs the reference, lowering and errors.

Tolerances: float reference vs ORT and float C vs reference, max abs error <= 1e-5 * max(1, max|ref|); int8
reference vs ORT <= 1 LSB (ORT rounds the float result half to even); int8 C vs reference bit-exact.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

sys.path.insert(0, str(Path(__file__).parent))

from harness import build_kernels, empty_band, ort_run  # noqa: E402
from mac_cases import MacCase, fc_cases  # noqa: E402
from tigris.ir import TigrisError  # noqa: E402
from tigris.ops import kind, lower  # noqa: E402

SETTINGS = dict(deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
FLOAT_TOL = 1e-5


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return build_kernels(["fc.c"], tmp_path_factory.mktemp("fc_kernels"))


def lowered(case: MacCase):
    g = case.graph()
    return lower(g, g.ops[0])


def reference(case: MacCase, low):
    out = case.out_view()
    kind("fc").reference(low, [case.in_view()], out)
    return out.data


def assert_float_close(got, ref):
    tol = FLOAT_TOL * max(1.0, float(np.abs(ref).max(initial=0.0)))
    err = float(np.abs(got.astype(np.float64) - ref.astype(np.float64)).max(initial=0.0))
    assert err <= tol, f"max abs error {err} > {tol}"


@settings(max_examples=60, **SETTINGS)
@given(case=fc_cases())
def test_reference_matches_onnxruntime(case: MacCase):
    low = lowered(case)
    ref = case.logical_y(reference(case, low))
    (expected,) = ort_run(case.onnx_model(), {"x": case.data["x"]})
    if case.int8:
        assert np.abs(ref.astype(np.int32) - expected.astype(np.int32)).max() <= 1
    else:
        assert_float_close(ref, expected)


@settings(max_examples=100, **SETTINGS)
@given(case=fc_cases())
def test_c_kernel_matches_reference(lib, case: MacCase):
    low = lowered(case)
    ref = reference(case, low)
    out = case.out_view()
    assert lib.run(low, [case.in_view()], out) == lib.const["TGRS_OK"]
    if case.int8:
        np.testing.assert_array_equal(out.data, ref)
    else:
        assert_float_close(out.data, ref)
    assert kind("fc").scratch_bytes(low, None, 1) == 0


def test_reads_an_aliased_nhwc_input(lib):
    """A Gemm after a Flatten alias may be handed the NHWC view {1, H, W, C}: N is the element count over K."""
    case = MacCase(op_type="Gemm", n=1, c=24, h=1, w=1, oc=5, int8=True, seed=4).build()
    low = lowered(case)
    ref = reference(case, low)
    x = case.in_view()
    x.data = x.data.reshape(1, 2, 3, 4)
    x.dims, x.rows = (1, 2, 3, 4), 2
    out = case.out_view()
    assert lib.run(low, [x], out) == lib.const["TGRS_OK"]
    np.testing.assert_array_equal(out.data, ref)


def test_bad_inputs_are_refused(lib):
    case = MacCase(op_type="Gemm", n=1, c=10, h=2, w=1, oc=3, int8=True, seed=1).build()
    low = lowered(case)
    out = case.out_view()
    assert lib.run(low, [case.in_view()], out) == lib.const["TGRS_OK"]
    bad_k = lowered(case)
    bad_k.params["k"] = 4  # 20 inputs are 5 rows of 4, but the weight is not a whole number of 4-rows per 3 outputs
    assert lib.run(bad_k, [case.in_view()], case.out_view()) == lib.const["TGRS_ERR_SHAPE"]
    bad_shift = lowered(case)
    bad_shift.consts["shift"] = np.full(3, 40, np.int32)
    assert lib.run(bad_shift, [case.in_view()], case.out_view()) == lib.const["TGRS_ERR_PARAM"]
    short_out = empty_band((1, 1, 1, 5), "int8")
    assert lib.run(low, [case.in_view()], short_out) == lib.const["TGRS_ERR_SHAPE"]


@pytest.mark.parametrize("which", ["x", "w", "y"])
def test_zero_scale_is_an_error_naming_the_tensor(which):
    case = MacCase(op_type="Gemm", n=1, c=4, h=1, w=1, oc=2, int8=True).build()
    g = case.graph()
    t = g.tensors[which]
    s = np.zeros_like(np.asarray(t.quant.scale, dtype=np.float32))
    g.tensors[which] = type(t)(t.name, t.shape, t.dtype, type(t.quant)(s, t.quant.zero_point, t.quant.axis), t.layout)
    with pytest.raises(TigrisError) as e:
        lower(g, g.ops[0])
    assert e.value.where is not None and which in e.value.where


def test_float_bias_in_int8_gemm_is_quantized_to_the_accumulator_scale():
    """A quantizer may leave the bias float; it is rounded to int32 at scale s_in * s_w[oc]."""
    case = MacCase(op_type="Gemm", n=1, c=6, h=1, w=1, oc=3, int8=True, seed=8).build()
    d = case.data
    acc_scale = np.float64(d["s_in"]) * d["s_w"].astype(np.float64)
    g = case.graph()
    g.weights["b"] = (d["b"].astype(np.float64) * acc_scale).astype(np.float32)
    low_f = lower(g, g.ops[0])
    low_i = lowered(case)
    np.testing.assert_array_equal(low_f.consts["bias"], low_i.consts["bias"])


def test_long_int8_rows_cross_the_accumulation_block(lib):
    """K above the C kernel's 32768-product block (plain int32 partial sums combined with a wrapping add)."""
    case = MacCase(op_type="Gemm", n=1, c=33000, h=1, w=1, oc=3, int8=True, seed=6).build()
    low = lowered(case)
    ref = reference(case, low)
    out = case.out_view()
    assert lib.run(low, [case.in_view()], out) == lib.const["TGRS_OK"]
    np.testing.assert_array_equal(out.data, ref)
    assert len(np.unique(ref)) > 1  # not all saturated: the sums themselves are compared


@pytest.mark.parametrize("numerics", ["onnx", "tflm"])
def test_numerics_param_selects_the_rounding(lib, numerics):
    """Scale 0.25 (mult 2**30, shift -1) on accumulators 1 and 5: one rounding gives 0 and 1, TFLM's double rounding
    1 and 2. The C kernel follows the op's NUMERICS parameter exactly like the reference."""
    case = MacCase(op_type="Gemm", n=1, c=1, h=2, w=1, oc=1, bias=False, int8=True, numerics=numerics).build()
    low = lowered(case)
    assert low.params["numerics"] == (1 if numerics == "tflm" else 0)
    low.consts["weight"] = np.ones((1, 1), np.int8)
    low.consts["bias"] = np.zeros(1, np.int32)
    low.consts["mult"] = np.array([1 << 30], np.int32)
    low.consts["shift"] = np.array([-1], np.int32)
    low.params.update(zp_in=0, zp_out=0, act_min=-128, act_max=127)
    case.data["x"] = np.array([[1], [5]], np.int8)
    ref = reference(case, low)
    out = case.out_view()
    assert lib.run(low, [case.in_view()], out) == lib.const["TGRS_OK"]
    np.testing.assert_array_equal(out.data, ref)
    assert ref.ravel().tolist() == ([1, 2] if numerics == "tflm" else [0, 1])
