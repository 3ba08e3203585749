"""QuantizeLinear / DequantizeLinear, int8 and uint8, at the model boundary.

Tolerances: Quantize C vs reference bit-exact, reference vs ORT within 1 LSB (ties are checked exactly below);
Dequantize C vs reference exactly (same float32 operations), reference vs ORT within 1e-5 x max(1, max|ref|).
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper

from harness import HOST_VARIANTS, build_kernels, runnable_host_variants
from ophelp import (T, assert_float_close, c_runner, graph1, max_lsb, onnx_model, ort_run, phys_inputs, qp,
                    ref_runner, run_op, split_rows, status_error, to_logical, vinfo)
from tigris.ops import kind_for


def lower(graph, op):
    """The kind's own lowering: the kernels also convert uint8, which the compiler's support check (and so
    tigris.ops.lower) refuses for a Quantize/Dequantize in the graph."""
    return kind_for(op.op_type).lower(graph, op)

SHAPES = [(1, 3, 5, 4), (1, 1, 1, 1), (1, 640), (1, 10, 7), (1, 17, 2, 3)]


# Every host variant (harness.HOST_VARIANTS): the AVX2 build has its own vector loop (target.h), which must give the
# reference's bytes like the plain loops.
@pytest.fixture(scope="module", params=runnable_host_variants())
def lib(request, tmp_path_factory):
    return build_kernels(["quant.c"], tmp_path_factory.mktemp("quant"), extra_flags=HOST_VARIANTS[request.param])


def _q_model(shape, dtype, s, zp, op):
    onnx_t = TensorProto.INT8 if dtype == "int8" else TensorProto.UINT8
    inits = [helper.make_tensor("s", TensorProto.FLOAT, [], [s]), helper.make_tensor("z", onnx_t, [], [zp])]
    if op == "QuantizeLinear":
        return onnx_model([helper.make_node(op, ["x", "s", "z"], ["y"])], [vinfo("x", shape)],
                          [vinfo("y", shape, dtype)], inits)
    return onnx_model([helper.make_node(op, ["x", "s", "z"], ["y"])], [vinfo("x", shape, dtype)],
                      [vinfo("y", shape)], inits)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", ["int8", "uint8"])
@settings(database=None, max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**16), scale=st.floats(1e-4, 10.0), zp_u=st.integers(0, 255), spread=st.floats(0.1, 300))
def test_quantize(lib, shape, dtype, seed, scale, zp_u, spread):
    rng = np.random.default_rng(seed)
    scale = float(np.float32(scale))
    zp = zp_u if dtype == "uint8" else zp_u - 128
    g = graph1("QuantizeLinear", [T("x", shape)], [T("y", shape, dtype, qp(scale, zp))])
    low = lower(g, g.ops[0])
    x = (rng.standard_normal(shape) * spread * scale).astype(np.float32)
    special = np.array([2.5 * scale, -3.5 * scale, 1e30], np.float32)  # ties, saturation
    x.reshape(-1)[: min(3, x.size)] = special[: min(3, x.size)]
    phys = phys_inputs(g, low, {"x": x})
    ref = run_op(ref_runner, g, low, phys)
    h = phys["x"].shape[1]
    assert np.array_equal(run_op(c_runner(lib), g, low, phys, split_rows(h, [h // 2]), lambda a, b: [(a, b)]), ref)
    (ort_y,) = ort_run(_q_model(shape, dtype, scale, zp, "QuantizeLinear"), {"x": x})
    assert max_lsb(to_logical(g, "y", ref), ort_y) <= 1


def test_quantize_ties_round_to_even(lib):
    g = graph1("QuantizeLinear", [T("x", (1, 8))], [T("y", (1, 8), "int8", qp(0.5, 0))])
    low = lower(g, g.ops[0])
    x = np.array([[0.25, 0.75, 1.25, -0.25, -0.75, -1.25, 100.0, -100.0]], np.float32)  # /0.5: .5 1.5 2.5 ...
    phys = phys_inputs(g, low, {"x": x})
    expect = np.array([0, 2, 2, 0, -2, -2, 127, -128], np.int8)
    for runner in (ref_runner, c_runner(lib)):
        assert np.array_equal(run_op(runner, g, low, phys).reshape(-1), expect)
    (ort_y,) = ort_run(_q_model((1, 8), "int8", 0.5, 0, "QuantizeLinear"), {"x": x})
    assert np.array_equal(ort_y.reshape(-1), expect)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", ["int8", "uint8"])
@settings(database=None, max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**16), scale=st.floats(1e-6, 1e3), zp_u=st.integers(0, 255))
def test_dequantize(lib, shape, dtype, seed, scale, zp_u):
    rng = np.random.default_rng(seed)
    scale = float(np.float32(scale))
    zp = zp_u if dtype == "uint8" else zp_u - 128
    g = graph1("DequantizeLinear", [T("x", shape, dtype, qp(scale, zp))], [T("y", shape)])
    low = lower(g, g.ops[0])
    lo, hi = (0, 256) if dtype == "uint8" else (-128, 128)
    x = rng.integers(lo, hi, size=shape).astype(np.uint8 if dtype == "uint8" else np.int8)
    phys = phys_inputs(g, low, {"x": x})
    ref = run_op(ref_runner, g, low, phys)
    h = phys["x"].shape[1]
    assert_float_close(run_op(c_runner(lib), g, low, phys, split_rows(h, [1]), lambda a, b: [(a, b)]), ref, 0.0)
    (ort_y,) = ort_run(_q_model(shape, dtype, scale, zp, "DequantizeLinear"), {"x": x})
    assert_float_close(to_logical(g, "y", ref), ort_y)


def test_quantize_rejects_bad_scale_and_dtype(lib):
    g = graph1("QuantizeLinear", [T("x", (1, 4))], [T("y", (1, 4), "int8", qp(0.5, 0))])
    low = lower(g, g.ops[0])
    phys = phys_inputs(g, low, {"x": np.zeros((1, 4), np.float32)})
    low.params["SCALE"] = 0
    with pytest.raises(RuntimeError, match=status_error("ERR_PARAM")):
        run_op(c_runner(lib), g, low, phys)
    low.params["SCALE"], low.params["U8"] = 0x3F000000, 1  # 0.5; but the output view is int8
    with pytest.raises(RuntimeError, match=status_error("ERR_DTYPE")):
        run_op(c_runner(lib), g, low, phys)
