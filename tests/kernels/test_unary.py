"""Activations (relu, relu6, clip, sigmoid, tanh, hardsigmoid, hardswish, leakyrelu, exp, log, sqrt, reciprocal, neg,
abs, erf, gelu in both forms, softplus, elu, selu) and PRelu.

Tolerances: float reference vs ORT and C vs reference within 1e-5 x max(1, max|ref|); int8 C vs reference
bit-exact (a table lookup); int8 reference vs ORT (QDQ model) within 1 LSB.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import helper, numpy_helper

from harness import build_kernels
from ophelp import (T, assert_float_close, c_runner, graph1, max_lsb, onnx_model, ort_run, phys_inputs, qdq_model,
                    qp, rand_q, ref_runner, run_op, split_rows, status_error, to_logical, vinfo)
from tigris.layout import tensor_view_dims
from tigris.ops import lower
from tigris.ops.unary import int8_table


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return build_kernels(["unary.c"], tmp_path_factory.mktemp("unary"))


# (IR op, IR attrs, ONNX node builder)
FUNCS = {
    "Relu": ({}, lambda i, o: [helper.make_node("Relu", i, [o])]),
    "Relu6": ({}, lambda i, o: [helper.make_node("Clip", i + ["c_lo", "c_hi"], [o])]),
    "Clip": ({"min": -1.5, "max": 2.25}, lambda i, o: [helper.make_node("Clip", i + ["k_lo", "k_hi"], [o])]),
    "Sigmoid": ({}, lambda i, o: [helper.make_node("Sigmoid", i, [o])]),
    "Tanh": ({}, lambda i, o: [helper.make_node("Tanh", i, [o])]),
    "HardSigmoid": ({"alpha": 0.3, "beta": 0.4},
                    lambda i, o: [helper.make_node("HardSigmoid", i, [o], alpha=0.3, beta=0.4)]),
    "HardSwish": ({}, lambda i, o: [helper.make_node("HardSwish", i, [o])]),
    "LeakyRelu": ({"alpha": 0.07}, lambda i, o: [helper.make_node("LeakyRelu", i, [o], alpha=0.07)]),
    "Exp": ({}, lambda i, o: [helper.make_node("Exp", i, [o])]),
    "Log": ({}, lambda i, o: [helper.make_node("Log", i, [o])]),
    "Sqrt": ({}, lambda i, o: [helper.make_node("Sqrt", i, [o])]),
    "Reciprocal": ({}, lambda i, o: [helper.make_node("Reciprocal", i, [o])]),
    "Neg": ({}, lambda i, o: [helper.make_node("Neg", i, [o])]),
    "Abs": ({}, lambda i, o: [helper.make_node("Abs", i, [o])]),
    "Erf": ({}, lambda i, o: [helper.make_node("Erf", i, [o])]),
    "Gelu": ({}, lambda i, o: [helper.make_node("Gelu", i, [o])]),
    "Gelu-tanh": ({"approximate": "tanh"}, lambda i, o: [helper.make_node("Gelu", i, [o], approximate="tanh")]),
    "Softplus": ({}, lambda i, o: [helper.make_node("Softplus", i, [o])]),
    "Elu": ({"alpha": 0.7}, lambda i, o: [helper.make_node("Elu", i, [o], alpha=0.7)]),
    "Selu": ({"alpha": 1.5, "gamma": 1.2}, lambda i, o: [helper.make_node("Selu", i, [o], alpha=1.5, gamma=1.2)]),
}
# Functions defined on part of the line get inputs inside it: float inputs mapped there, int8 zero points at -128
# (every code then dequantizes to a non-negative value; 1/0 and log(0) saturate the same way in ONNX Runtime).
FLOAT_DOMAIN = {"Log": lambda x: np.abs(x) + 0.05, "Sqrt": np.abs,
                "Reciprocal": lambda x: np.where(x < 0, x - 0.1, x + 0.1)}
NONNEG = ("Log", "Sqrt", "Reciprocal")
# Exp at the largest inputs: ~e^19 needs an output scale near 1e6, a regime no quantized model has; the int8 test
# keeps Exp's inputs below e^6.
OPSET = {"Gelu": 20, "Gelu-tanh": 20}
CLIP_INITS = [numpy_helper.from_array(np.array(v, np.float32), n)
              for n, v in (("c_lo", 0.0), ("c_hi", 6.0), ("k_lo", -1.5), ("k_hi", 2.25))]


shapes = st.sampled_from([(1, 3, 5, 4), (1, 1, 1, 1), (1, 17, 3, 7), (1, 40), (1, 6, 9), (2, 3, 2, 2)])


@pytest.mark.parametrize("fn", sorted(FUNCS))
@settings(database=None, max_examples=15, deadline=None)
@given(shape=shapes, seed=st.integers(0, 2**16))
def test_float_unary(lib, fn, shape, seed):
    rng = np.random.default_rng(seed)
    attrs, node = FUNCS[fn]
    g = graph1(fn.split("-")[0], [T("x", shape)], [T("y", shape)], attrs)
    low = lower(g, g.ops[0])
    x = FLOAT_DOMAIN.get(fn, lambda v: v)(rng.standard_normal(shape) * 4).astype(np.float32)
    phys = phys_inputs(g, low, {"x": x})
    ref = run_op(ref_runner, g, low, phys)
    (ort_y,) = ort_run(onnx_model(node(["x"], "y"), [vinfo("x", shape)], [vinfo("y", shape)], CLIP_INITS,
                                  **_opset(fn)), {"x": x})
    assert_float_close(to_logical(g, "y", ref), ort_y)
    assert_float_close(run_op(c_runner(lib), g, low, phys), ref)
    h = phys["x"].shape[1]
    bands = split_rows(h, [1, h // 2])
    assert_float_close(run_op(c_runner(lib), g, low, phys, bands, lambda a, b: [(a, b)]), ref)


@pytest.mark.parametrize("fn", sorted(FUNCS))
@settings(database=None, max_examples=15, deadline=None)
@given(shape=shapes, seed=st.integers(0, 2**16), s_in=st.floats(0.002, 0.2), s_out=st.floats(0.002, 0.2),
       zi=st.integers(-128, 127), zo=st.integers(-128, 127))
def test_int8_unary(lib, fn, shape, seed, s_in, s_out, zi, zo):
    rng = np.random.default_rng(seed)
    s_in, s_out = float(np.float32(s_in)), float(np.float32(s_out))
    if fn in NONNEG:
        zi = -128
    if fn == "Exp":
        s_in = min(s_in, 0.02)
        s_out = max(s_out, 2.0)
    attrs, node = FUNCS[fn]
    g = graph1(fn.split("-")[0], [T("x", shape, "int8", qp(s_in, zi))], [T("y", shape, "int8", qp(s_out, zo))], attrs)
    low = lower(g, g.ops[0])
    x = rand_q(rng, shape)
    phys = phys_inputs(g, low, {"x": x})
    ref = run_op(ref_runner, g, low, phys)
    h = phys["x"].shape[1]
    assert np.array_equal(run_op(c_runner(lib), g, low, phys, split_rows(h, [h // 2]), lambda a, b: [(a, b)]), ref)
    m = qdq_model(node, [("x", shape, s_in, zi)], ("y", shape, s_out, zo), CLIP_INITS, **_opset(fn))
    (ort_y,) = ort_run(m, {"x": x})
    assert max_lsb(to_logical(g, "y", ref), ort_y) <= 1


def _opset(fn: str) -> dict:
    return {"opset": OPSET[fn]} if fn in OPSET else {}


def test_int8_table_is_exhaustive_against_ort():
    # Every input code through the table equals ORT's QDQ sigmoid within 1 LSB (all 256 codes, one call).
    s_in, zi, s_out, zo = 0.05, 3, 1.0 / 256, -128
    lut = int8_table(4, 0.0, 0.0, s_in, zi, s_out, zo)
    x = np.arange(-128, 128, dtype=np.int8).reshape(1, 256)
    m = qdq_model(FUNCS["Sigmoid"][1], [("x", (1, 256), s_in, zi)], ("y", (1, 256), s_out, zo))
    (ort_y,) = ort_run(m, {"x": x})
    assert max_lsb(lut.reshape(1, 256), ort_y) <= 1


@settings(database=None, max_examples=25, deadline=None)
@given(c=st.integers(1, 20), h=st.integers(1, 5), w=st.integers(1, 5), per_channel=st.booleans(),
       seed=st.integers(0, 2**16), s_in=st.floats(0.005, 0.1), s_out=st.floats(0.005, 0.1),
       zi=st.integers(-128, 127), zo=st.integers(-128, 127))
def test_prelu_float_and_int8(lib, c, h, w, per_channel, seed, s_in, s_out, zi, zo):
    rng = np.random.default_rng(seed)
    shape = (1, c, h, w)
    slope = (rng.standard_normal((c, 1, 1) if per_channel else (1,)) * 0.5).astype(np.float32)
    slope.reshape(-1)[0] = 0.0  # a zero slope takes the (0, 0) multiplier path
    node = lambda i, o: [helper.make_node("PRelu", [i[0], "slope"], [o])]  # noqa: E731
    # float
    g = graph1("PRelu", [T("x", shape), T("slope", slope.shape, data=slope)], [T("y", shape)])
    low = lower(g, g.ops[0])
    x = (rng.standard_normal(shape) * 3).astype(np.float32)
    phys = phys_inputs(g, low, {"x": x})
    ref = run_op(ref_runner, g, low, phys)
    (ort_y,) = ort_run(onnx_model(node(["x"], "y"), [vinfo("x", shape)], [vinfo("y", shape)],
                                  [numpy_helper.from_array(slope, "slope")]), {"x": x})
    assert_float_close(to_logical(g, "y", ref), ort_y)
    assert_float_close(run_op(c_runner(lib), g, low, phys, split_rows(h, [1]), lambda a, b: [(a, b)]), ref, 0.0)
    # int8, slope kept float (a QDQ model would state it as DQ(int8); the real value is what lowering uses)
    s_in, s_out = float(np.float32(s_in)), float(np.float32(s_out))
    g = graph1("PRelu", [T("x", shape, "int8", qp(s_in, zi)), T("slope", slope.shape, data=slope)],
               [T("y", shape, "int8", qp(s_out, zo))])
    low = lower(g, g.ops[0])
    xq = rand_q(rng, shape)
    phys = phys_inputs(g, low, {"x": xq})
    ref = run_op(ref_runner, g, low, phys)
    assert np.array_equal(run_op(c_runner(lib), g, low, phys, split_rows(h, [h - 1]), lambda a, b: [(a, b)]), ref)
    m = qdq_model(node, [("x", shape, s_in, zi)], ("y", shape, s_out, zo), [numpy_helper.from_array(slope, "slope")])
    (ort_y,) = ort_run(m, {"x": xq})
    assert max_lsb(to_logical(g, "y", ref), ort_y) <= 1


@st.composite
def _slope_case(draw):
    """An input of rank 2-4 and a slope of any shape that broadcasts to it (trailing axes, each kept or 1)."""
    rank = draw(st.integers(2, 4))
    shape = tuple(draw(st.integers(1, 5)) for _ in range(rank))
    k = draw(st.integers(1, rank))  # the slope's rank: ONNX broadcasts it against the trailing axes
    sshape = tuple(d if draw(st.booleans()) else 1 for d in shape[rank - k:])
    return shape, sshape


@settings(database=None, max_examples=40, deadline=None)
@given(cs=_slope_case(), seed=st.integers(0, 2**16), s_in=st.floats(0.005, 0.1), s_out=st.floats(0.005, 0.1),
       zi=st.integers(-128, 127), zo=st.integers(-128, 127))
def test_prelu_any_slope_shape(lib, cs, seed, s_in, s_out, zi, zo):
    """A slope that varies along any axes (ONNX's [5] against [3, 4, 5], a full [3, 4, 5], per position [H, W]) in
    float32 and int8, run on row bands: C vs reference exact, reference vs ORT within tolerance / 1 LSB."""
    shape, sshape = cs
    rng = np.random.default_rng(seed)
    slope = (rng.standard_normal(sshape) * 0.5).astype(np.float32)
    node = lambda i, o: [helper.make_node("PRelu", [i[0], "slope"], [o])]  # noqa: E731
    inits = [numpy_helper.from_array(slope, "slope")]
    g = graph1("PRelu", [T("x", shape), T("slope", slope.shape, data=slope)], [T("y", shape)])
    low = lower(g, g.ops[0])
    x = (rng.standard_normal(shape) * 3).astype(np.float32)
    phys = phys_inputs(g, low, {"x": x})
    rows = tensor_view_dims(g.tensors["x"])[1]
    bands = split_rows(rows, [1, rows // 2 + 1])
    ref = run_op(ref_runner, g, low, phys, bands, lambda a, b: [(a, b)])
    (ort_y,) = ort_run(onnx_model(node(["x"], "y"), [vinfo("x", shape)], [vinfo("y", shape)], inits), {"x": x})
    assert_float_close(to_logical(g, "y", ref), ort_y)
    assert_float_close(run_op(c_runner(lib), g, low, phys, bands, lambda a, b: [(a, b)]), ref, 0.0)
    s_in, s_out = float(np.float32(s_in)), float(np.float32(s_out))
    g = graph1("PRelu", [T("x", shape, "int8", qp(s_in, zi)), T("slope", slope.shape, data=slope)],
               [T("y", shape, "int8", qp(s_out, zo))])
    low = lower(g, g.ops[0])
    xq = rand_q(rng, shape)
    phys = phys_inputs(g, low, {"x": xq})
    ref = run_op(ref_runner, g, low, phys)
    assert np.array_equal(run_op(c_runner(lib), g, low, phys, bands, lambda a, b: [(a, b)]), ref)
    (ort_y,) = ort_run(qdq_model(node, [("x", shape, s_in, zi)], ("y", shape, s_out, zo), inits), {"x": xq})
    assert max_lsb(to_logical(g, "y", ref), ort_y) <= 1


def test_prelu_rejects_a_slope_index_past_its_values(lib):
    shape = (1, 3, 4, 5)
    slope = np.ones((4, 5), np.float32)
    g = graph1("PRelu", [T("x", shape), T("slope", slope.shape, data=slope)], [T("y", shape)])
    low = lower(g, g.ops[0])
    assert low.params["COUNT"] == 20
    phys = phys_inputs(g, low, {"x": np.zeros(shape, np.float32)})
    low.params["SH"] += 1
    with pytest.raises(RuntimeError, match=status_error("ERR_PARAM")):
        run_op(c_runner(lib), g, low, phys)


def test_unary_rejects_missing_table_and_short_band(lib):
    g = graph1("Sigmoid", [T("x", (1, 2, 4, 4), "int8", qp(0.1, 0))], [T("y", (1, 2, 4, 4), "int8", qp(1 / 256, -128))])
    low = lower(g, g.ops[0])
    phys = phys_inputs(g, low, {"x": np.zeros((1, 2, 4, 4), np.int8)})
    with pytest.raises(RuntimeError, match=status_error("ERR_TILE")):
        run_op(c_runner(lib), g, low, phys, [(0, 3)], lambda a, b: [(a, b - 1)])
    low.consts["LUT"] = low.consts["LUT"][:255]
    with pytest.raises(RuntimeError, match=status_error("ERR_PARAM")):
        run_op(c_runner(lib), g, low, phys)


def test_gelu_unknown_approximation_is_unsupported():
    from tigris.ops import Unsupported, unsupported_reason
    g = graph1("Gelu", [T("x", (1, 4))], [T("y", (1, 4))], {"approximate": "sigmoid"})
    assert "approximate" in unsupported_reason(g, g.ops[0])
    with pytest.raises(Unsupported):
        lower(g, g.ops[0])
