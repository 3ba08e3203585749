"""The matmul kind: products of two activations with batch broadcasting (ranks 1-4, layouts by rank, so nwc/nhwc
operands exercise the strides), Gemm's transA/transB/alpha/beta/C, a constant operand, float32 and int8.

Tolerances: float C vs reference and reference vs ORT within 1e-5 x max(1, max|ref|); int8 C vs reference
bit-exact, reference vs ORT's QDQ evaluation within 1 LSB.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import helper, numpy_helper

from harness import build_kernels
from ophelp import (T, assert_float_close, c_runner, graph1, max_lsb, onnx_model, ort_run, phys_inputs, qdq_model,
                    qp, rand_q, ref_runner, run_op, status_error, to_logical, vinfo)
from tigris.ir import QuantParam
from tigris.ops import lower, unsupported_reason


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return build_kernels(["matmul.c"], tmp_path_factory.mktemp("matmul"))


@st.composite
def shapes(draw):
    nb = draw(st.integers(0, 2))
    batch = tuple(draw(st.integers(1, 3)) for _ in range(nb))
    m, k, n = (draw(st.integers(1, 6)) for _ in range(3))

    def side(core):
        if draw(st.integers(0, 5)) == 0:
            return (k,)
        keep = draw(st.integers(0, nb))
        own = tuple(d if draw(st.booleans()) else 1 for d in batch[nb - keep:])
        return own + core

    a = side((m, k))
    b = side((k, n))
    ba, bb = a[:-2], b[:-2]
    full = np.broadcast_shapes(ba, bb) if (ba or bb) else ()
    out = tuple(full) + ((m,) if len(a) > 1 else ()) + ((n,) if len(b) > 1 else ())
    return a, b, out


def _g(a, b, y, dt="float32", q=(None, None, None), attrs=None, bdata=None, c=None):
    ins = [T("a", a, dt, q[0]), T("b", b, dt if bdata is None else str(bdata.dtype), q[1], data=bdata)]
    if c is not None:
        ins.append(T("c", c.shape, str(c.dtype), None, data=c))
    return graph1("MatMul", ins, [T("y", y, dt, q[2])], attrs)


@settings(database=None, max_examples=40, deadline=None)
@given(sh=shapes(), seed=st.integers(0, 2**16))
def test_float_matmul(lib, sh, seed):
    a, b, y = sh
    rng = np.random.default_rng(seed)
    g = _g(a, b, y)
    low = lower(g, g.ops[0])
    xa = rng.standard_normal(a).astype(np.float32)
    xb = rng.standard_normal(b).astype(np.float32)
    phys = phys_inputs(g, low, {"a": xa, "b": xb})
    ref = run_op(ref_runner, g, low, phys)
    assert_float_close(to_logical(g, "y", ref), np.matmul(xa, xb))
    (ort_y,) = ort_run(onnx_model([helper.make_node("MatMul", ["a", "b"], ["y"])],
                                  [vinfo("a", a), vinfo("b", b)], [vinfo("y", y)]), {"a": xa, "b": xb})
    assert_float_close(to_logical(g, "y", ref), ort_y)
    assert_float_close(run_op(c_runner(lib), g, low, phys), ref)


@settings(database=None, max_examples=40, deadline=None)
@given(sh=shapes(), seed=st.integers(0, 2**16), sa=st.floats(0.005, 0.1), sb=st.floats(0.005, 0.1),
       za=st.integers(-128, 127), zb=st.integers(-128, 127), zy=st.integers(-128, 127), ry=st.floats(0.5, 4.0))
def test_int8_matmul(lib, sh, seed, sa, sb, za, zb, zy, ry):
    a, b, y = sh
    rng = np.random.default_rng(seed)
    k = a[-1]
    sa, sb = float(np.float32(sa)), float(np.float32(sb))
    sy = float(np.float32(sa * sb * 40 * np.sqrt(k) * ry))
    g = _g(a, b, y, "int8", (qp(sa, za), qp(sb, zb), qp(sy, zy)))
    low = lower(g, g.ops[0])
    xa, xb = rand_q(rng, a), rand_q(rng, b)
    phys = phys_inputs(g, low, {"a": xa, "b": xb})
    ref = run_op(ref_runner, g, low, phys)
    assert np.array_equal(run_op(c_runner(lib), g, low, phys), ref)
    m = qdq_model(lambda i, o: [helper.make_node("MatMul", i, [o])], [("a", a, sa, za), ("b", b, sb, zb)],
                  ("y", y, sy, zy))
    (ort_y,) = ort_run(m, {"a": xa, "b": xb})
    assert max_lsb(to_logical(g, "y", ref), ort_y) <= 1


@pytest.mark.parametrize("ta,tb,alpha,beta,cshape", [
    (0, 0, 1.0, 1.0, None), (1, 0, 0.5, 1.0, (5,)), (0, 1, 1.0, 0.25, (3, 5)), (1, 1, 0.7, 1.3, (1,)),
    (1, 1, -2.0, 0.5, (3, 1)),
])
def test_float_gemm_two_activations(lib, ta, tb, alpha, beta, cshape):
    rng = np.random.default_rng(7)
    m, k, n = 3, 4, 5
    a = (k, m) if ta else (m, k)
    b = (n, k) if tb else (k, n)
    c = rng.standard_normal(cshape).astype(np.float32) if cshape else None
    attrs = dict(transA=ta, transB=tb, alpha=alpha, beta=beta)
    g = _g(a, b, (m, n), attrs=attrs, c=c)
    low = lower(g, g.ops[0])
    xa = rng.standard_normal(a).astype(np.float32)
    xb = rng.standard_normal(b).astype(np.float32)
    phys = phys_inputs(g, low, {"a": xa, "b": xb})
    ref = run_op(ref_runner, g, low, phys)
    ins = ["a", "b"] + (["c"] if c is not None else [])
    inits = [numpy_helper.from_array(c, "c")] if c is not None else []
    (ort_y,) = ort_run(onnx_model([helper.make_node("Gemm", ins, ["y"], **attrs)], [vinfo("a", a), vinfo("b", b)],
                                  [vinfo("y", (m, n))], inits), {"a": xa, "b": xb})
    assert_float_close(to_logical(g, "y", ref), ort_y)
    assert_float_close(run_op(c_runner(lib), g, low, phys), ref)


@pytest.mark.parametrize("per_col", [False, True])
def test_int8_constant_b_with_column_scales(lib, per_col):
    """A constant B (the activation is A of rank 3, nwc) with one scale per output column and a zero point."""
    rng = np.random.default_rng(3)
    a, b, y = (2, 4, 6), (6, 5), (2, 4, 5)
    sb = (rng.uniform(0.01, 0.03, 5) if per_col else np.array([0.02])).astype(np.float32)
    wq = QuantParam(sb, np.zeros(sb.size, np.int64) + 3, 1 if per_col else None)
    w = rand_q(rng, b)
    g = graph1("MatMul", [T("a", a, "int8", qp(0.05, -7)), T("b", b, "int8", wq, data=w)],
               [T("y", y, "int8", qp(0.3, 4))])
    assert unsupported_reason(g, g.ops[0]) is None
    low = lower(g, g.ops[0])
    xa = rand_q(rng, a)
    phys = phys_inputs(g, low, {"a": xa})
    ref = run_op(ref_runner, g, low, phys)
    assert np.array_equal(run_op(c_runner(lib), g, low, phys), ref)
    init = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(sb if per_col else sb.reshape(()), "ws"),
            numpy_helper.from_array(np.full(sb.shape if per_col else (), 3, np.int8), "wz")]
    dq = helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wf"], axis=1) if per_col else \
        helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wf"])
    m = qdq_model(lambda i, o: [dq, helper.make_node("MatMul", [i[0], "wf"], [o])], [("a", a, 0.05, -7)],
                  ("y", y, 0.3, 4), init)
    (ort_y,) = ort_run(m, {"a": xa})
    assert max_lsb(to_logical(g, "y", ref), ort_y) <= 1


def test_int32_accumulator_output(lib):
    """Unit scales and an int32 output: the exact sum of (a - za) * (b - zb) (ONNX MatMulInteger)."""
    rng = np.random.default_rng(5)
    a, b, y = (3, 7), (7, 4), (3, 4)
    one = QuantParam(np.array([1.0], np.float32), np.array([0], np.int64))
    g = graph1("MatMul", [T("a", a, "int8", qp(1.0, 5)), T("b", b, "int8", qp(1.0, -3))],
               [T("y", y, "int32", one)])
    low = lower(g, g.ops[0])
    xa, xb = rand_q(rng, a), rand_q(rng, b)
    phys = phys_inputs(g, low, {"a": xa, "b": xb})
    ref = run_op(ref_runner, g, low, phys)
    want = (xa.astype(np.int64) - 5) @ (xb.astype(np.int64) + 3)
    assert np.array_equal(to_logical(g, "y", ref), want)
    assert np.array_equal(run_op(c_runner(lib), g, low, phys), ref)


@pytest.mark.parametrize("param,delta,err", [("K", 1, "ERR_SHAPE"), ("AM", 100, "ERR_SHAPE"),
                                              ("YN", 1000, "ERR_SHAPE"), ("K_POS", 3, "ERR_PARAM"),
                                              ("M", -5, "ERR_PARAM"), ("NMULT", 1, "ERR_PARAM")])
def test_bad_params_are_refused(lib, param, delta, err):
    g = _g((2, 3, 4), (2, 4, 5), (2, 3, 5), "int8", (qp(0.1, 0), qp(0.1, 0), qp(0.5, 0)))
    low = lower(g, g.ops[0])
    phys = phys_inputs(g, low, {"a": np.zeros((2, 3, 4), np.int8), "b": np.zeros((2, 4, 5), np.int8)})
    low.params[param] += delta
    with pytest.raises(RuntimeError, match=status_error(err)):
        run_op(c_runner(lib), g, low, phys)


def test_unsupported_reasons():
    g = _g((2, 3, 4), (3, 4, 5), (3, 3, 5))
    assert "do not broadcast" in unsupported_reason(g, g.ops[0])
    g = _g((2, 2, 2, 3, 4), (4, 5), (2, 2, 2, 3, 5))
    assert "3 batch axes" in unsupported_reason(g, g.ops[0])
    k = 40000
    g = _g((1, k), (k, 2), (1, 2), "int8", (qp(0.1, 0), qp(0.1, 0), qp(0.5, 0)))
    assert "K = 40000" in unsupported_reason(g, g.ops[0])


@pytest.mark.parametrize("ta,tb,alpha,beta,cshape", [(0, 0, 1.0, 1.0, None), (1, 0, 0.5, 1.0, (5,)),
                                                     (0, 1, 1.0, 0.5, (3, 5)), (1, 1, 1.5, 2.0, (1,))])
def test_int8_gemm_two_activations(lib, ta, tb, alpha, beta, cshape):
    """int8 Gemm of two activations with every attribute and an int32 bias C quantized at s_a * s_b (how ORT writes
    it): bit-exact C vs reference, within 1 LSB of ORT's QDQ evaluation."""
    rng = np.random.default_rng(11)
    m, k, n = 3, 6, 5
    a = (k, m) if ta else (m, k)
    b = (n, k) if tb else (k, n)
    sa, sb, sy = 0.04, 0.03, float(np.float32(0.04 * 0.03 * 40 * alpha))
    sc = float(np.float32(sa * sb))
    c = rng.integers(-3000, 3000, cshape).astype(np.int32) if cshape else None
    attrs = dict(transA=ta, transB=tb, alpha=alpha, beta=beta)
    ins = [T("a", a, "int8", qp(sa, 3)), T("b", b, "int8", qp(sb, -9))]
    if c is not None:
        ins.append(T("c", c.shape, "int32", QuantParam(np.array([sc], np.float32), np.array([0], np.int64)), data=c))
    g = graph1("MatMul", ins, [T("y", (m, n), "int8", qp(sy, -4))], attrs)
    low = lower(g, g.ops[0])
    xa, xb = rand_q(rng, a), rand_q(rng, b)
    phys = phys_inputs(g, low, {"a": xa, "b": xb})
    ref = run_op(ref_runner, g, low, phys)
    assert np.array_equal(run_op(c_runner(lib), g, low, phys), ref)
    init, extra = [], []
    if c is not None:
        init = [numpy_helper.from_array(c, "cq"), numpy_helper.from_array(np.array(sc, np.float32), "cs"),
                numpy_helper.from_array(np.array(0, np.int32), "cz")]
        extra = [helper.make_node("DequantizeLinear", ["cq", "cs", "cz"], ["cf"])]
    mdl = qdq_model(lambda i, o: extra + [helper.make_node("Gemm", i + (["cf"] if c is not None else []), [o],
                                                            **attrs)],
                    [("a", a, sa, 3), ("b", b, sb, -9)], ("y", (m, n), sy, -4), init)
    (ort_y,) = ort_run(mdl, {"a": xa, "b": xb})
    assert max_lsb(to_logical(g, "y", ref), ort_y) <= 1


def test_int8_gemm_transposed_a_with_per_channel_weights_and_bias_verifies(tmp_path):
    """End to end: a QDQ Gemm with transA = 1 (so not the fc kind), constant per-channel weights and an int32 bias
    per channel: tigris verify passes (bit-exact vs the reference, within 1 LSB of ORT)."""
    from onnx import TensorProto
    import onnx

    from tigris import api

    rng = np.random.default_rng(0)
    k, m, n = 6, 3, 4
    w = rng.integers(-127, 128, (n, k)).astype(np.int8)
    ws = rng.uniform(0.01, 0.03, n).astype(np.float32)
    sa = np.float32(0.05)
    arrs = {"w": w, "ws": ws, "wz": np.zeros(n, np.int8), "b": rng.integers(-500, 500, n).astype(np.int32),
            "bs": (sa * ws).astype(np.float32), "bz": np.zeros(n, np.int32), "as": sa.reshape(()),
            "az": np.array(2, np.int8), "ys": np.array(0.2, np.float32), "yz": np.array(-3, np.int8)}
    nodes = [helper.make_node("DequantizeLinear", ["a", "as", "az"], ["af"]),
             helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wf"], axis=0),
             helper.make_node("DequantizeLinear", ["b", "bs", "bz"], ["bf"], axis=0),
             helper.make_node("Gemm", ["af", "wf", "bf"], ["yf"], transA=1, transB=1),
             helper.make_node("QuantizeLinear", ["yf", "ys", "yz"], ["y"])]
    mdl = onnx_model(nodes, [helper.make_tensor_value_info("a", TensorProto.INT8, [k, m])],
                     [helper.make_tensor_value_info("y", TensorProto.INT8, [m, n])],
                     [numpy_helper.from_array(v, name) for name, v in arrs.items()])
    p = tmp_path / "gemm_ta.onnx"
    onnx.save(mdl, str(p))
    r = api.verify(p, "4M")
    assert r["pass"] and r["outputs"][0]["reference_bit_exact"] and r["outputs"][0]["max_lsb"] <= 1
