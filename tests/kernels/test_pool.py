"""MaxPool / AveragePool / GlobalAveragePool: reference vs ONNX Runtime, C vs reference, banded vs whole.

Tolerances: float C vs reference and reference vs ORT within 1e-5 x max(1, max|ref|); int8 C vs reference
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
                    qp, rand_q, ref_runner, run_op, split_rows, status_error, to_logical, vinfo)
from tigris.ir import TigrisError
from tigris.ops import lower
from tigris.ops._common import TileError


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return build_kernels(["pool.c", "gap_accum.c"], tmp_path_factory.mktemp("pool"))  # pool.c calls its check


def _out_size(n, k, s, d, p0, p1, ceil):
    eff = (k - 1) * d + 1
    num = n + p0 + p1 - eff
    o = (-(-num // s) if ceil else num // s) + 1
    if ceil and (o - 1) * s >= n + p0:  # ONNX: the last window must start inside the image or left pad
        o -= 1
    return o


@st.composite
def window_case(draw):
    h = draw(st.integers(1, 9))
    w = draw(st.integers(1, 9))
    c = draw(st.integers(1, 37))
    kh = draw(st.integers(1, min(4, h + 1)))
    kw = draw(st.integers(1, min(4, w + 1)))
    sh, sw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    pads = [draw(st.integers(0, k - 1)) for k in (kh, kw, kh, kw)]
    ceil = draw(st.booleans())
    cip = draw(st.booleans())
    oh = _out_size(h, kh, sh, 1, pads[0], pads[2], ceil)
    ow = _out_size(w, kw, sw, 1, pads[1], pads[3], ceil)
    if oh < 1 or ow < 1:
        oh = ow = 0
    return dict(h=h, w=w, c=c, k=[kh, kw], s=[sh, sw], pads=pads, ceil=int(ceil), cip=int(cip), oh=oh, ow=ow)


def _pool_graph(op_type, cs, dtype="float32", qin=None, qout=None, dil=(1, 1)):
    attrs = dict(kernel_shape=cs["k"], strides=cs["s"], dilations=list(dil), pads=cs["pads"], ceil_mode=cs["ceil"],
                 count_include_pad=cs["cip"])
    return graph1(op_type, [T("x", (1, cs["c"], cs["h"], cs["w"]), dtype, qin)],
                  [T("y", (1, cs["c"], cs["oh"], cs["ow"]), dtype, qout)], attrs)


def _onnx_pool(op_type, cs, dil=(1, 1)):
    attrs = dict(kernel_shape=cs["k"], strides=cs["s"], pads=cs["pads"], ceil_mode=cs["ceil"])
    if op_type == "AveragePool":
        attrs["count_include_pad"] = cs["cip"]
    if list(dil) != [1, 1]:
        attrs["dilations"] = list(dil)
    return lambda ins, out: [helper.make_node(op_type, ins, [out], **attrs)]


def _need(low, g):
    """Input rows an output band needs (clipped to the image), from the op geometry."""
    p = low.params
    H = g.tensors["x"].shape[2]

    def need(r0, r1):
        a = max(0, r0 * p["SH"] - p["PT"])
        b = min(H, (r1 - 1) * p["SH"] - p["PT"] + (p["KH"] - 1) * p["DH"] + 1)
        return [(a, max(a, b))]

    return need


@pytest.mark.parametrize("op_type", ["MaxPool", "AveragePool"])
@settings(database=None, max_examples=30, deadline=None)
@given(cs=window_case(), seed=st.integers(0, 2**16))
def test_float_window_matches_ort_and_c(lib, op_type, cs, seed):
    if cs["oh"] == 0:
        return
    rng = np.random.default_rng(seed)
    g = _pool_graph(op_type, cs)
    low = lower(g, g.ops[0])
    x = rng.standard_normal((1, cs["c"], cs["h"], cs["w"])).astype(np.float32)
    phys = phys_inputs(g, low, {"x": x})
    ref = run_op(ref_runner, g, low, phys)
    (ort_y,) = ort_run(onnx_model(_onnx_pool(op_type, cs)(["x"], "y"), [vinfo("x", x.shape)],
                                  [vinfo("y", (1, cs["c"], cs["oh"], cs["ow"]))]), {"x": x})
    assert_float_close(to_logical(g, "y", ref), ort_y)
    got = run_op(c_runner(lib), g, low, phys)
    assert_float_close(got, ref)
    # Banded execution (input bands cut to the rows each output band needs) equals whole execution.
    bands = split_rows(cs["oh"], [1, cs["oh"] // 2 + 1])
    assert_float_close(run_op(c_runner(lib), g, low, phys, bands, _need(low, g)), ref, rtol=0.0)
    assert_float_close(run_op(ref_runner, g, low, phys, bands, _need(low, g)), ref, rtol=0.0)


@pytest.mark.parametrize("op_type", ["MaxPool", "AveragePool"])
@settings(database=None, max_examples=30, deadline=None)
@given(cs=window_case(), seed=st.integers(0, 2**16), s_in=st.floats(0.005, 0.5), ratio=st.floats(0.25, 4.0),
       zi=st.integers(-128, 127), zo=st.integers(-128, 127), same=st.booleans())
def test_int8_window_bit_exact_and_within_one_lsb_of_ort(lib, op_type, cs, seed, s_in, ratio, zi, zo, same):
    if cs["oh"] == 0:
        return
    rng = np.random.default_rng(seed)
    if same:  # equal scales: the identity multiplier (C's 32-bit division path for averages)
        ratio = 1.0
    s_out = float(np.float32(s_in * ratio))
    s_in = float(np.float32(s_in))
    g = _pool_graph(op_type, cs, "int8", qp(s_in, zi), qp(s_out, zo))
    low = lower(g, g.ops[0])
    x = rand_q(rng, (1, cs["c"], cs["h"], cs["w"]))
    phys = phys_inputs(g, low, {"x": x})
    ref = run_op(ref_runner, g, low, phys)
    got = run_op(c_runner(lib), g, low, phys)
    assert np.array_equal(got, ref)
    bands = split_rows(cs["oh"], [1, 2, cs["oh"] - 1])
    assert np.array_equal(run_op(c_runner(lib), g, low, phys, bands, _need(low, g)), ref)
    m = qdq_model(_onnx_pool(op_type, cs), [("x", x.shape, s_in, zi)], ("y", (1, cs["c"], cs["oh"], cs["ow"]),
                                                                       s_out, zo))
    (ort_y,) = ort_run(m, {"x": x})
    assert max_lsb(to_logical(g, "y", ref), ort_y) <= 1


def test_dilated_maxpool_matches_ort(lib):
    cs = dict(h=9, w=8, c=5, k=[3, 2], s=[2, 1], pads=[2, 1, 1, 0], ceil=0, cip=0)
    cs["oh"] = _out_size(9, 3, 2, 2, 2, 1, False)
    cs["ow"] = _out_size(8, 2, 1, 3, 1, 0, False)
    g = _pool_graph("MaxPool", cs, dil=(2, 3))
    low = lower(g, g.ops[0])
    x = np.random.default_rng(3).standard_normal((1, 5, 9, 8)).astype(np.float32)
    phys = phys_inputs(g, low, {"x": x})
    ref = run_op(ref_runner, g, low, phys)
    (ort_y,) = ort_run(onnx_model(_onnx_pool("MaxPool", cs, (2, 3))(["x"], "y"), [vinfo("x", x.shape)],
                                  [vinfo("y", (1, 5, cs["oh"], cs["ow"]))]), {"x": x})
    assert_float_close(to_logical(g, "y", ref), ort_y)
    assert_float_close(run_op(c_runner(lib), g, low, phys), ref, rtol=0.0)


def test_short_band_is_a_tile_error(lib):
    cs = dict(h=8, w=4, c=3, k=[3, 3], s=[1, 1], pads=[1, 1, 1, 1], ceil=0, cip=1, oh=8, ow=4)
    g = _pool_graph("AveragePool", cs)
    low = lower(g, g.ops[0])
    phys = phys_inputs(g, low, {"x": np.ones((1, 3, 8, 4), np.float32)})
    short = lambda r0, r1: [(r0, r1)]  # noqa: E731 - misses the halo rows
    with pytest.raises(RuntimeError, match=status_error("ERR_TILE")):
        run_op(c_runner(lib), g, low, phys, [(2, 5)], short)
    with pytest.raises(TileError):
        run_op(ref_runner, g, low, phys, [(2, 5)], short)


def test_int8_avgpool_rounds_halves_to_even(lib):
    # 2x1 window, same scale: (q0 + q1) / 2 with odd sums lands on exact halves.
    cs = dict(h=2, w=4, c=1, k=[2, 1], s=[2, 1], pads=[0, 0, 0, 0], ceil=0, cip=0, oh=1, ow=4)
    g = _pool_graph("AveragePool", cs, "int8", qp(0.1, 0), qp(0.1, 0))
    low = lower(g, g.ops[0])
    x = np.array([[[[1, -1, 3, -3], [0, 0, 0, 0]]]], dtype=np.int8)
    phys = phys_inputs(g, low, {"x": x})
    # Halves to even, as QuantizeLinear states them (docs/numerics.md): 0.5 -> 0, -0.5 -> 0, 1.5 -> 2, -1.5 -> -2.
    expect = np.array([0, 0, 2, -2], dtype=np.int8)
    assert np.array_equal(to_logical(g, "y", run_op(ref_runner, g, low, phys)).ravel(), expect)
    assert np.array_equal(to_logical(g, "y", run_op(c_runner(lib), g, low, phys)).ravel(), expect)


@settings(database=None, max_examples=40, deadline=None)
@given(cs=window_case(), seed=st.integers(0, 2**16), s=st.floats(0.005, 0.5), z=st.integers(-128, 127))
def test_int8_avgpool_tflm_numerics(lib, cs, seed, s, z):
    """TFLM's average of the raw codes, halves away from zero: C == reference whole and banded, within 1 LSB of ORT."""
    if cs["oh"] == 0:
        return
    cs = dict(cs, cip=0)  # TFLM never counts padding
    rng = np.random.default_rng(seed)
    s = float(np.float32(s))
    g = _pool_graph("AveragePool", cs, "int8", qp(s, z), qp(s, z))
    g.numerics = "tflm"
    low = lower(g, g.ops[0])
    x = rand_q(rng, (1, cs["c"], cs["h"], cs["w"]))
    phys = phys_inputs(g, low, {"x": x})
    ref = run_op(ref_runner, g, low, phys)
    assert np.array_equal(run_op(c_runner(lib), g, low, phys), ref)
    bands = split_rows(cs["oh"], [1, 2, cs["oh"] - 1])
    assert np.array_equal(run_op(c_runner(lib), g, low, phys, bands, _need(low, g)), ref)
    m = qdq_model(_onnx_pool("AveragePool", cs), [("x", x.shape, s, z)], ("y", (1, cs["c"], cs["oh"], cs["ow"]), s, z))
    (ort_y,) = ort_run(m, {"x": x})
    assert max_lsb(to_logical(g, "y", ref), ort_y) <= 1


def test_int8_avgpool_tflm_rounds_raw_sums_half_away(lib):
    """The same window as above with zero point 5 under TFLM: raw codes (6, 4), (4, 5), (8, 5), (2, 5) average to
    5, 4.5 -> 5, 6.5 -> 7, 3.5 -> 4: halves away from zero on the raw sum, not on the sum minus the zero point."""
    cs = dict(h=2, w=4, c=1, k=[2, 1], s=[2, 1], pads=[0, 0, 0, 0], ceil=0, cip=0, oh=1, ow=4)
    g = _pool_graph("AveragePool", cs, "int8", qp(0.1, 5), qp(0.1, 5))
    g.numerics = "tflm"
    low = lower(g, g.ops[0])
    x = np.array([[[[6, 4, 8, 2], [4, 5, 5, 5]]]], dtype=np.int8)
    phys = phys_inputs(g, low, {"x": x})
    expect = np.array([5, 5, 7, 4], dtype=np.int8)
    assert np.array_equal(to_logical(g, "y", run_op(ref_runner, g, low, phys)).ravel(), expect)
    assert np.array_equal(to_logical(g, "y", run_op(c_runner(lib), g, low, phys)).ravel(), expect)
    g2 = _pool_graph("AveragePool", cs, "int8", qp(0.1, 5), qp(0.2, 5))
    g2.numerics = "tflm"
    with pytest.raises(TigrisError, match="equal input and output quantization"):
        lower(g2, g2.ops[0])


@settings(database=None, max_examples=25, deadline=None)
@given(h=st.integers(1, 12), w=st.integers(1, 12), c=st.integers(1, 40), seed=st.integers(0, 2**16),
       s_in=st.floats(0.001, 1.0), ratio=st.floats(0.1, 10.0), zi=st.integers(-128, 127), zo=st.integers(-128, 127))
def test_gap_float_and_int8(lib, h, w, c, seed, s_in, ratio, zi, zo):
    rng = np.random.default_rng(seed)
    # float
    g = graph1("GlobalAveragePool", [T("x", (1, c, h, w))], [T("y", (1, c, 1, 1))])
    low = lower(g, g.ops[0])
    x = rng.standard_normal((1, c, h, w)).astype(np.float32)
    phys = phys_inputs(g, low, {"x": x})
    ref = run_op(ref_runner, g, low, phys)
    (ort_y,) = ort_run(onnx_model([helper.make_node("GlobalAveragePool", ["x"], ["y"])], [vinfo("x", x.shape)],
                                  [vinfo("y", (1, c, 1, 1))]), {"x": x})
    assert_float_close(to_logical(g, "y", ref), ort_y)
    assert_float_close(run_op(c_runner(lib), g, low, phys), ref)
    # int8
    s_in = float(np.float32(s_in))
    s_out = float(np.float32(s_in * ratio))
    g = graph1("GlobalAveragePool", [T("x", (1, c, h, w), "int8", qp(s_in, zi))],
               [T("y", (1, c, 1, 1), "int8", qp(s_out, zo))])
    low = lower(g, g.ops[0])
    xq = rand_q(rng, (1, c, h, w))
    phys = phys_inputs(g, low, {"x": xq})
    ref = run_op(ref_runner, g, low, phys)
    assert np.array_equal(run_op(c_runner(lib), g, low, phys), ref)
    m = qdq_model(lambda i, o: [helper.make_node("GlobalAveragePool", i, [o])], [("x", xq.shape, s_in, zi)],
                  ("y", (1, c, 1, 1), s_out, zo))
    (ort_y,) = ort_run(m, {"x": xq})
    assert max_lsb(to_logical(g, "y", ref), ort_y) <= 1


def test_int8_pool_rejects_bad_params(lib):
    cs = dict(h=4, w=4, c=2, k=[2, 2], s=[2, 2], pads=[0, 0, 0, 0], ceil=0, cip=0, oh=2, ow=2)
    g = _pool_graph("MaxPool", cs, "int8", qp(0.1, 0), qp(0.1, 0))
    low = lower(g, g.ops[0])
    phys = phys_inputs(g, low, {"x": np.zeros((1, 2, 4, 4), np.int8)})
    low.params["SHIFT"] = 40
    with pytest.raises(RuntimeError, match=status_error("ERR_PARAM")):
        run_op(c_runner(lib), g, low, phys)
    low.params["SHIFT"], low.params["KH"] = 1, 0
    with pytest.raises(RuntimeError, match=status_error("ERR_PARAM")):
        run_op(c_runner(lib), g, low, phys)


def test_int8_avgpool_refuses_a_scale_ratio_too_small_for_an_exact_divisor():
    from tigris.ir import TigrisError

    cs = dict(h=4, w=4, c=2, k=[3, 3], s=[1, 1], pads=[0, 0, 0, 0], ceil=0, cip=0, oh=2, ow=2)
    g = _pool_graph("AveragePool", cs, "int8", qp(1e-12, 0), qp(1.0, 0))
    with pytest.raises(TigrisError, match="too small"):
        lower(g, g.ops[0])
