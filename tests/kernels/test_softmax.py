"""Softmax, float32 and int8 (output 1/256, -128 and others), along every physical axis.

Tolerances: float reference vs ORT and C vs reference within 1e-5 x max(1, max|ref|); int8 C vs reference
bit-exact; int8 reference vs ORT (QDQ model) within 1 LSB.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import helper

from harness import build_kernels
from ophelp import (T, assert_float_close, c_runner, graph1, max_lsb, onnx_model, ort_run, phys_inputs, qdq_model,
                    qp, rand_q, ref_runner, run_op, status_error, to_logical, vinfo)
from tigris.ir import TigrisError
from tigris.ops import lower

CASES = [((1, 12), 1), ((1, 2), 1), ((1, 1000), 1), ((1, 5, 3, 4), 1), ((1, 5, 3, 4), 2), ((1, 5, 3, 4), 3),
         ((2, 3, 4, 2), 0), ((1, 7, 6), 1), ((1, 7, 6), 2), ((1, 1, 1, 1), 1)]


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return build_kernels(["softmax.c"], tmp_path_factory.mktemp("softmax"))


def _node(axis):
    return lambda i, o: [helper.make_node("Softmax", i, [o], axis=axis)]


@pytest.mark.parametrize("shape,axis", CASES)
@settings(database=None, max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**16), spread=st.floats(0.1, 20.0))
def test_float_softmax(lib, shape, axis, seed, spread):
    rng = np.random.default_rng(seed)
    g = graph1("Softmax", [T("x", shape)], [T("y", shape)], {"axis": axis})
    low = lower(g, g.ops[0])
    x = (rng.standard_normal(shape) * spread).astype(np.float32)
    phys = phys_inputs(g, low, {"x": x})
    ref = run_op(ref_runner, g, low, phys)
    (ort_y,) = ort_run(onnx_model(_node(axis)(["x"], "y"), [vinfo("x", shape)], [vinfo("y", shape)]), {"x": x})
    assert_float_close(to_logical(g, "y", ref), ort_y)
    assert_float_close(run_op(c_runner(lib), g, low, phys), ref)


@pytest.mark.parametrize("shape,axis", CASES)
@settings(database=None, max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**16), s_in=st.floats(0.002, 0.5), zi=st.integers(-128, 127),
       out_q=st.sampled_from([(1 / 256, -128), (1 / 255, -128), (1 / 128, 0), (0.0035, -100)]))
def test_int8_softmax(lib, shape, axis, seed, s_in, zi, out_q):
    rng = np.random.default_rng(seed)
    s_in = float(np.float32(s_in))
    s_out, zo = float(np.float32(out_q[0])), out_q[1]
    g = graph1("Softmax", [T("x", shape, "int8", qp(s_in, zi))], [T("y", shape, "int8", qp(s_out, zo))],
               {"axis": axis})
    low = lower(g, g.ops[0])
    x = rand_q(rng, shape)
    phys = phys_inputs(g, low, {"x": x})
    ref = run_op(ref_runner, g, low, phys)
    assert np.array_equal(run_op(c_runner(lib), g, low, phys), ref)
    (ort_y,) = ort_run(qdq_model(_node(axis), [("x", shape, s_in, zi)], ("y", shape, s_out, zo)), {"x": x})
    assert max_lsb(to_logical(g, "y", ref), ort_y) <= 1


@pytest.mark.parametrize("shape,axis", CASES)
@settings(database=None, max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**16), s_in=st.floats(0.002, 0.5), zi=st.integers(-128, 127))
def test_int8_softmax_tflm_numerics(lib, shape, axis, seed, s_in, zi):
    """TFLM's fixed-point softmax (exp table, 12-integer-bit sum, Newton reciprocal): C == reference bit for bit,
    and within 1 LSB of ONNX Runtime."""
    rng = np.random.default_rng(seed)
    s_in = float(np.float32(s_in))
    g = graph1("Softmax", [T("x", shape, "int8", qp(s_in, zi))], [T("y", shape, "int8", qp(1 / 256, -128))],
               {"axis": axis})
    g.numerics = "tflm"
    low = lower(g, g.ops[0])
    assert low.params["NUMERICS"] == 1
    x = rand_q(rng, shape)
    phys = phys_inputs(g, low, {"x": x})
    ref = run_op(ref_runner, g, low, phys)
    assert np.array_equal(run_op(c_runner(lib), g, low, phys), ref)
    (ort_y,) = ort_run(qdq_model(_node(axis), [("x", shape, s_in, zi)], ("y", shape, 1 / 256, -128)), {"x": x})
    assert max_lsb(to_logical(g, "y", ref), ort_y) <= 1


def test_int8_softmax_tflm_needs_tflm_output_encoding():
    g = graph1("Softmax", [T("x", (1, 4), "int8", qp(0.5, 0))], [T("y", (1, 4), "int8", qp(1 / 128, 0))],
               {"axis": 1})
    g.numerics = "tflm"
    with pytest.raises(TigrisError, match="1/256"):
        lower(g, g.ops[0])


def test_int8_softmax_saturates_a_certain_class_at_127(lib):
    g = graph1("Softmax", [T("x", (1, 4), "int8", qp(0.5, 0))], [T("y", (1, 4), "int8", qp(1 / 256, -128))],
               {"axis": 1})
    low = lower(g, g.ops[0])
    phys = phys_inputs(g, low, {"x": np.array([[127, -128, -128, -128]], np.int8)})
    for runner in (ref_runner, c_runner(lib)):
        y = run_op(runner, g, low, phys).reshape(-1)
        assert y[0] == 127 and np.all(y[1:] == -128)


def test_row_axis_softmax_refuses_a_band(lib):
    g = graph1("Softmax", [T("x", (1, 3, 4, 2))], [T("y", (1, 3, 4, 2))], {"axis": 2})
    low = lower(g, g.ops[0])
    assert low.params["AXIS"] == 1
    phys = phys_inputs(g, low, {"x": np.zeros((1, 3, 4, 2), np.float32)})
    with pytest.raises(RuntimeError, match=status_error("ERR_TILE")):
        run_op(c_runner(lib), g, low, phys, [(0, 2)], lambda a, b: [(0, 4)])
