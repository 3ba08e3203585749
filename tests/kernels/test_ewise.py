"""Max / Min / Div / Pow between two operands with broadcasting (kind ewise; constant on either side), and Pow with a
scalar constant exponent (the unary kind's x ** e).

Tolerances: float reference vs ORT within 1e-5 x max(1, max|ref|) and C vs reference within the same (powf and
NumPy's power may differ in the last bits; max, min and division are exact); int8 C vs reference bit-exact, and
reference vs ORT's QDQ evaluation within 1 LSB (Max/Min/Div take the same float32 steps, so they agree exactly).
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
from test_binary import _build, _need, _onnx, case
from tigris.ops import Unsupported, lower, unsupported_reason


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return build_kernels(["binary.c", "unary.c"], tmp_path_factory.mktemp("ewise"))


def _case(draw_case, op):
    cs = dict(draw_case)
    cs["op"], cs["act"] = op, None
    return cs


@pytest.mark.parametrize("op", ["Max", "Min", "Div", "Pow"])
@settings(database=None, max_examples=30, deadline=None)
@given(cs=case(), seed=st.integers(0, 2**16))
def test_float_ewise(lib, op, cs, seed):
    cs = _case(cs, op)
    rng = np.random.default_rng(seed)
    g, data = _build(cs, False, rng)
    if op == "Pow":  # a positive base and small exponents keep x ** e finite and real
        data["a"][...] = np.abs(data["a"]) + 0.1
        data["b"][...] = np.clip(data["b"], -3.0, 3.0)
    low = lower(g, g.ops[0])
    phys = phys_inputs(g, low, data)
    ref = run_op(ref_runner, g, low, phys)
    m, feeds = _onnx(cs, data, False)
    (ort_y,) = ort_run(m, feeds)
    assert_float_close(to_logical(g, "y", ref), ort_y)
    exact = 0.0 if op != "Pow" else None
    kw = {"rtol": exact} if exact is not None else {}
    assert_float_close(run_op(c_runner(lib), g, low, phys), ref, **kw)
    bands = split_rows(cs["h"], [1, cs["h"] // 2])
    need = _need(g, low) if low.kind == "ewise" else (lambda a, b: [(a, b)])  # a scalar exponent: unary x ** e
    assert_float_close(run_op(c_runner(lib), g, low, phys, bands, need), ref, **kw)


@pytest.mark.parametrize("op", ["Max", "Min", "Div"])
@settings(database=None, max_examples=40, deadline=None)
@given(cs=case(), seed=st.integers(0, 2**16), sa=st.floats(1e-3, 1.0), ra=st.floats(0.01, 100.0),
       ro=st.floats(0.2, 5.0), zs=st.lists(st.integers(-128, 127), min_size=3, max_size=3))
def test_int8_ewise(lib, op, cs, seed, sa, ra, ro, zs):
    """Each operand on its own scale and zero point."""
    cs = _case(cs, op)
    rng = np.random.default_rng(seed)
    sa = float(np.float32(sa))
    sb = float(np.float32(sa * ra))
    so = float(np.float32((max(sa, sb) if op != "Div" else sa / sb * 4) * ro))
    scales = {"a": (sa, zs[0]), "b": (sb, zs[1]), "y": (so, zs[2])}
    g, data = _build(cs, True, rng, qp(*scales["a"]), qp(*scales["b"]), qp(*scales["y"]))
    if op == "Div":  # no 0 / 0 (NaN has no defined quantization); x / 0 saturates in both
        b = data["b"]
        b[b == zs[1]] = zs[1] + 1 if zs[1] < 127 else zs[1] - 1
    low = lower(g, g.ops[0])
    assert low.kind == "ewise"
    phys = phys_inputs(g, low, data)
    ref = run_op(ref_runner, g, low, phys)
    assert np.array_equal(run_op(c_runner(lib), g, low, phys), ref)
    bands = split_rows(cs["h"], [1, cs["h"] // 2 + 1])
    assert np.array_equal(run_op(c_runner(lib), g, low, phys, bands, _need(g, low)), ref)
    m, feeds = _onnx(cs, data, True, scales)
    (ort_y,) = ort_run(m, feeds)
    assert max_lsb(to_logical(g, "y", ref), ort_y) <= 1


@pytest.mark.parametrize("e", [2.0, 0.5, -1.0, 3.0])
@pytest.mark.parametrize("int8", [False, True])
def test_pow_scalar_exponent_is_a_unary_table(lib, e, int8):
    shape = (1, 3, 4, 5)
    rng = np.random.default_rng(int(e * 10) + 100 + int8)
    k = np.array(e, np.float32)
    s_in, zi, s_out, zo = 0.02, -128, (0.05 if e > 0 else 0.5), -128
    if int8:
        g = graph1("Pow", [T("x", shape, "int8", qp(s_in, zi)), T("e", (), data=k)], [T("y", shape, "int8", qp(s_out, zo))])
        x = rand_q(rng, shape)
    else:
        g = graph1("Pow", [T("x", shape), T("e", (), data=k)], [T("y", shape)])
        x = (np.abs(rng.standard_normal(shape)) + 0.1).astype(np.float32)
    low = lower(g, g.ops[0])
    assert low.kind == "unary" and low.inputs == ["x"]
    phys = phys_inputs(g, low, {"x": x})
    ref = run_op(ref_runner, g, low, phys)
    node = lambda i, o: [helper.make_node("Pow", [i[0], "e"], [o])]  # noqa: E731
    inits = [numpy_helper.from_array(k, "e")]
    if int8:
        assert np.array_equal(run_op(c_runner(lib), g, low, phys, split_rows(4, [2]), lambda a, b: [(a, b)]), ref)
        (ort_y,) = ort_run(qdq_model(node, [("x", shape, s_in, zi)], ("y", shape, s_out, zo), inits), {"x": x})
        assert max_lsb(to_logical(g, "y", ref), ort_y) <= 1
    else:
        assert_float_close(run_op(c_runner(lib), g, low, phys), ref)
        (ort_y,) = ort_run(onnx_model(node(["x"], "y"), [vinfo("x", shape)], [vinfo("y", shape)], inits), {"x": x})
        assert_float_close(to_logical(g, "y", ref), ort_y)


def test_int8_pow_with_a_tensor_exponent_is_unsupported():
    shape = (1, 2, 2, 2)
    g = graph1("Pow", [T("x", shape, "int8", qp(0.1, 0)), T("e", shape, "int8", qp(0.1, 0))],
               [T("y", shape, "int8", qp(0.1, 0))])
    assert "exponent" in unsupported_reason(g, g.ops[0])
    with pytest.raises(Unsupported):
        lower(g, g.ops[0])


def test_ewise_rejects_bad_func_and_short_band(lib):
    shape = (1, 2, 4, 4)
    g = graph1("Max", [T("a", shape), T("b", shape)], [T("y", shape)])
    low = lower(g, g.ops[0])
    z = np.zeros(shape, np.float32)
    phys = phys_inputs(g, low, {"a": z, "b": z})
    with pytest.raises(RuntimeError, match=status_error("ERR_TILE")):
        run_op(c_runner(lib), g, low, phys, [(0, 3)], lambda a, b: [(a, b - 1), (a, b)])
    low.params["FUNC"] = 9
    with pytest.raises(RuntimeError, match=status_error("ERR_PARAM")):
        run_op(c_runner(lib), g, low, phys)
