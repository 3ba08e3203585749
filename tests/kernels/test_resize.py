"""Resize: nearest (every coordinate mode and nearest mode; float32 and int8), linear and cubic (float32, and int8 as
the float island DequantizeLinear -> Resize -> QuantizeLinear computes it); integer scales, any output size (the `sizes` operand) and fractional `scales`, whole and in row bands.

Tolerances: float reference vs ORT and C vs reference within 1e-5 x max(1, max|ref|) (nearest is exact);
int8 C vs reference bit-exact; int8 reference vs ORT (QDQ) within 1 LSB.
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
from tigris.ops import lower

CTM = ["half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel", "tf_half_pixel_for_nn"]
NMODES = ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return build_kernels(["resize.c"], tmp_path_factory.mktemp("resize"))


@st.composite
def case(draw):
    mode = draw(st.sampled_from(["nearest", "linear"]))
    ctm = draw(st.sampled_from(CTM if mode == "nearest" else CTM[:4]))
    nm = draw(st.sampled_from(NMODES))
    c, h, w = draw(st.integers(1, 6)), draw(st.integers(1, 6)), draw(st.integers(1, 6))
    sh, sw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    return dict(mode=mode, ctm=ctm, nm=nm, shape=(1, c, h, w), scales=[1, 1, sh, sw], out=(1, c, h * sh, w * sw))


def _attrs(cs):
    return {"mode": cs["mode"], "coordinate_transformation_mode": cs["ctm"], "nearest_mode": cs["nm"],
            "scales": cs["scales"]}


def _node(cs):
    return lambda i, o: [helper.make_node("Resize", [i[0], "", "scales"], [o], mode=cs["mode"],
                                          coordinate_transformation_mode=cs["ctm"], nearest_mode=cs["nm"])]


def _inits(cs):
    return [numpy_helper.from_array(np.array(cs["scales"], np.float32), "scales")]


def test_unscaled_axis_is_the_identity_in_every_mode(lib):
    # ORT copies an axis whose scale is 1 even where tf_half_pixel_for_nn's formula would shift it by half a pixel.
    cs = dict(mode="nearest", ctm="tf_half_pixel_for_nn", nm="round_prefer_ceil", shape=(1, 1, 2, 3),
              scales=[1, 1, 2, 1], out=(1, 1, 4, 3))
    g = graph1("Resize", [T("x", cs["shape"])], [T("y", cs["out"])], _attrs(cs))
    low = lower(g, g.ops[0])
    x = np.arange(6, dtype=np.float32).reshape(cs["shape"])
    phys = phys_inputs(g, low, {"x": x})
    got = to_logical(g, "y", run_op(c_runner(lib), g, low, phys))
    (ort_y,) = ort_run(onnx_model(_node(cs)(["x"], "y"), [vinfo("x", cs["shape"])], [vinfo("y", cs["out"])],
                                  _inits(cs), opset=13), {"x": x})
    assert np.array_equal(got, ort_y)


def _need(low):
    pairs = low.consts["RIDX"].reshape(-1, low.params["KR"])

    def need(r0, r1):
        rows = pairs[r0:r1]
        return [(int(rows.min()), int(rows.max()) + 1)]

    return need


@settings(database=None, max_examples=80, deadline=None)
@given(cs=case(), seed=st.integers(0, 2**16))
def test_float_resize(lib, cs, seed):
    rng = np.random.default_rng(seed)
    g = graph1("Resize", [T("x", cs["shape"])], [T("y", cs["out"])], _attrs(cs))
    low = lower(g, g.ops[0])
    x = rng.standard_normal(cs["shape"]).astype(np.float32)
    phys = phys_inputs(g, low, {"x": x})
    ref = run_op(ref_runner, g, low, phys)
    (ort_y,) = ort_run(onnx_model(_node(cs)(["x"], "y"), [vinfo("x", cs["shape"])], [vinfo("y", cs["out"])],
                                  _inits(cs), opset=13), {"x": x})
    assert_float_close(to_logical(g, "y", ref), ort_y)
    assert_float_close(run_op(c_runner(lib), g, low, phys), ref)
    H = cs["out"][2]
    assert_float_close(run_op(c_runner(lib), g, low, phys, split_rows(H, [1, H // 2 + 1]), _need(low)), ref, 0.0)


@settings(database=None, max_examples=50, deadline=None)
@given(cs=case(), seed=st.integers(0, 2**16), s_in=st.floats(0.01, 0.5), ratio=st.sampled_from([1.0, 0.7, 2.5]),
       zi=st.integers(-128, 127), zo=st.integers(-128, 127), same=st.booleans())
def test_int8_nearest_resize(lib, cs, seed, s_in, ratio, zi, zo, same):
    cs = dict(cs, mode="nearest")
    rng = np.random.default_rng(seed)
    s_in = float(np.float32(s_in))
    s_out = s_in if same else float(np.float32(s_in * ratio))
    zo = zi if same else zo
    g = graph1("Resize", [T("x", cs["shape"], "int8", qp(s_in, zi))], [T("y", cs["out"], "int8", qp(s_out, zo))],
               _attrs(cs))
    low = lower(g, g.ops[0])
    x = rand_q(rng, cs["shape"])
    phys = phys_inputs(g, low, {"x": x})
    ref = run_op(ref_runner, g, low, phys)
    H = cs["out"][2]
    assert np.array_equal(run_op(c_runner(lib), g, low, phys, split_rows(H, [H // 2]), _need(low)), ref)
    m = qdq_model(_node(cs), [("x", cs["shape"], s_in, zi)], ("y", cs["out"], s_out, zo), _inits(cs), opset=13)
    (ort_y,) = ort_run(m, {"x": x})
    assert max_lsb(to_logical(g, "y", ref), ort_y) <= 1


def test_resize_short_band_is_a_tile_error(lib):
    cs = dict(mode="linear", ctm="half_pixel", nm="floor", shape=(1, 2, 4, 3), scales=[1, 1, 2, 2], out=(1, 2, 8, 6))
    g = graph1("Resize", [T("x", cs["shape"])], [T("y", cs["out"])], _attrs(cs))
    low = lower(g, g.ops[0])
    phys = phys_inputs(g, low, {"x": np.ones(cs["shape"], np.float32)})
    with pytest.raises(RuntimeError, match=status_error("ERR_TILE")):
        run_op(c_runner(lib), g, low, phys, [(3, 5)], lambda r0, r1: [(2, 3)])  # rows 3..4 also read row 1


def test_int8_requantized_ties_round_half_to_even_like_ort(lib):
    # s_in = s_out / 2 (powers of two, so ORT's float result is exact): odd codes land on halves; ORT's QuantizeLinear rounds them to even, and so do we (0 LSB).
    cs = dict(mode="nearest", ctm="asymmetric", nm="floor", shape=(1, 3, 4, 5), scales=[1, 1, 2, 2],
              out=(1, 3, 8, 10))
    g = graph1("Resize", [T("x", cs["shape"], "int8", qp(0.125, 5))], [T("y", cs["out"], "int8", qp(0.25, -3))],
               _attrs(cs))
    low = lower(g, g.ops[0])
    x = rand_q(np.random.default_rng(4), cs["shape"])
    phys = phys_inputs(g, low, {"x": x})
    ref = run_op(ref_runner, g, low, phys)
    assert np.array_equal(run_op(c_runner(lib), g, low, phys), ref)
    m = qdq_model(_node(cs), [("x", cs["shape"], 0.125, 5)], ("y", cs["out"], 0.25, -3), _inits(cs), opset=13)
    (ort_y,) = ort_run(m, {"x": x})
    assert np.array_equal(to_logical(g, "y", ref), ort_y)


# --- general resizes: any output size (the `sizes` operand) or a fractional `scales` operand (pass 12 rule 3) ---

@st.composite
def general_case(draw):
    mode = draw(st.sampled_from(["nearest", "linear"]))
    ctm = draw(st.sampled_from(CTM if mode == "nearest" else CTM[:4]))
    nm = draw(st.sampled_from(NMODES))
    c, h, w = draw(st.integers(1, 4)), draw(st.integers(1, 6)), draw(st.integers(1, 6))
    if draw(st.booleans()):  # sizes
        oh, ow = draw(st.integers(1, 9)), draw(st.integers(1, 9))
        scales, by_sizes = [1.0, 1.0, oh / h, ow / w], True
    else:
        sh, sw = (float(np.float32(draw(st.sampled_from([0.5, 0.6, 0.75, 1.25, 1.5, 1.7, 2.5])))) for _ in "hw")
        oh, ow = max(1, int(np.floor(h * sh))), max(1, int(np.floor(w * sw)))
        if oh != int(np.floor(h * sh)) or ow != int(np.floor(w * sw)):
            oh, ow, sh, sw = h, w, 1.0, 1.0
        scales, by_sizes = [1.0, 1.0, sh, sw], False
        ctm = "half_pixel" if ctm == "tf_half_pixel_for_nn" else ctm  # not in the ONNX reference (deprecated)
    return dict(mode=mode, ctm=ctm, nm=nm, shape=(1, c, h, w), scales=scales, out=(1, c, oh, ow), by_sizes=by_sizes)


def _gen_graph(cs, xt, yt):
    from tigris.ops.resize import axis_tables, row_span
    rows, _ = axis_tables(cs["shape"][2], cs["out"][2], cs["scales"][2], cs["mode"], cs["ctm"], cs["nm"],
                          cs["by_sizes"])
    attrs = dict(_attrs(cs), by_sizes=cs["by_sizes"], row_src=row_span(rows))
    return graph1("Resize", [xt], [yt], attrs)


def _gen_onnx(cs):
    if cs["by_sizes"]:
        node = lambda i, o: [helper.make_node("Resize", [i[0], "", "", "sizes"], [o], mode=cs["mode"],  # noqa: E731
                                              coordinate_transformation_mode=cs["ctm"], nearest_mode=cs["nm"])]
        return node, [numpy_helper.from_array(np.array(cs["out"], np.int64), "sizes")]
    return _node(cs), _inits(cs)


def _fractional(cs):
    return not cs["by_sizes"] and any(i * s != o for i, s, o in zip(cs["shape"], cs["scales"], cs["out"]))


def _external(cs, m, feeds):
    """ONNX Runtime's result, or the ONNX reference's where a stated scale times the input length is fractional:
    ONNX Runtime then takes the floored output length as length_resized, the specification the unfloored one."""
    if _fractional(cs):
        from onnx.reference import ReferenceEvaluator
        return ReferenceEvaluator(m).run(None, feeds)[0]
    return ort_run(m, feeds)[0]


def _kind_need(g):
    from tigris.ops import kind_for
    kind, op = kind_for("Resize"), g.ops[0]
    return lambda r0, r1: [kind.rows_needed(op, r0, r1)]


@settings(database=None, max_examples=120, deadline=None)
@given(cs=general_case(), seed=st.integers(0, 2**16))
def test_general_float_resize(lib, cs, seed):
    rng = np.random.default_rng(seed)
    g = _gen_graph(cs, T("x", cs["shape"]), T("y", cs["out"]))
    low = lower(g, g.ops[0])
    x = rng.standard_normal(cs["shape"]).astype(np.float32)
    phys = phys_inputs(g, low, {"x": x})
    ref = run_op(ref_runner, g, low, phys)
    node, inits = _gen_onnx(cs)
    m = onnx_model(node(["x"], "y"), [vinfo("x", cs["shape"])], [vinfo("y", cs["out"])], inits, opset=13)
    assert_float_close(to_logical(g, "y", ref), _external(cs, m, {"x": x}))
    assert_float_close(run_op(c_runner(lib), g, low, phys), ref, 0.0)
    H = cs["out"][2]
    # banded: each band gets exactly the input rows the kind's row map names, and the bytes do not change
    assert_float_close(run_op(c_runner(lib), g, low, phys, split_rows(H, [1, H // 2 + 1]), _kind_need(g)), ref, 0.0)


@settings(database=None, max_examples=60, deadline=None)
@given(cs=general_case(), seed=st.integers(0, 2**16), s_in=st.floats(0.01, 0.5), ratio=st.sampled_from([1.0, 0.7]),
       zi=st.integers(-128, 127), zo=st.integers(-128, 127))
def test_general_int8_nearest_resize(lib, cs, seed, s_in, ratio, zi, zo):
    cs = dict(cs, mode="nearest")
    rng = np.random.default_rng(seed)
    s_in = float(np.float32(s_in))
    s_out = float(np.float32(s_in * ratio))
    g = _gen_graph(cs, T("x", cs["shape"], "int8", qp(s_in, zi)), T("y", cs["out"], "int8", qp(s_out, zo)))
    low = lower(g, g.ops[0])
    x = rand_q(rng, cs["shape"])
    phys = phys_inputs(g, low, {"x": x})
    ref = run_op(ref_runner, g, low, phys)
    H = cs["out"][2]
    assert np.array_equal(run_op(c_runner(lib), g, low, phys), ref)
    assert np.array_equal(run_op(c_runner(lib), g, low, phys, split_rows(H, [H // 2]), _kind_need(g)), ref)
    node, inits = _gen_onnx(cs)
    if _fractional(cs):  # the ONNX reference on the dequantized input, quantized as QuantizeLinear does
        fm = onnx_model(node(["x"], "y"), [vinfo("x", cs["shape"])], [vinfo("y", cs["out"])], inits, opset=13)
        yf = _external(cs, fm, {"x": ((x.astype(np.float32) - np.float32(zi)) * np.float32(s_in))})
        want = np.clip(np.rint(yf / np.float32(s_out)) + zo, -128, 127)
    else:
        m = qdq_model(node, [("x", cs["shape"], s_in, zi)], ("y", cs["out"], s_out, zo), inits, opset=13)
        want = ort_run(m, {"x": x})[0]
    assert max_lsb(to_logical(g, "y", ref), want) <= 1


# --- cubic, antialiased and tf_crop_and_resize resizes: many taps per output coordinate (pass 12 rule 3) ---

@st.composite
def tap_case(draw):
    mode = draw(st.sampled_from(["linear", "cubic", "nearest"]))
    ctm = draw(st.sampled_from(["half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel",
                                "half_pixel_symmetric", "tf_crop_and_resize"]))
    anti = mode != "nearest" and ctm != "tf_crop_and_resize" and draw(st.booleans())
    c, h, w = draw(st.integers(1, 3)), draw(st.integers(1, 9)), draw(st.integers(1, 9))
    oh, ow = draw(st.integers(1, 9)), draw(st.integers(1, 9))
    roi = [0.0, 0.0, draw(st.sampled_from([0.0, 0.2, 0.4])), draw(st.sampled_from([0.0, 0.3, -0.2])),
           1.0, 1.0, draw(st.sampled_from([1.0, 0.7, 1.3])), draw(st.sampled_from([1.0, 0.6, 0.9]))]
    roi = [float(np.float32(v)) for v in roi]  # as the float32 operand states them
    return dict(mode=mode, ctm=ctm, nm=draw(st.sampled_from(NMODES)), shape=(1, c, h, w), out=(1, c, oh, ow),
                scales=[1.0, 1.0, oh / h, ow / w], by_sizes=True, a=draw(st.sampled_from([-0.75, -0.5])),
                # exclude_outside only weighs interpolation taps (the ONNX reference's nearest divides by zero with it)
                excl=draw(st.sampled_from([0, 1])) if mode != "nearest" else 0, anti=int(anti), roi=roi if ctm == "tf_crop_and_resize" else None,
                ex=draw(st.sampled_from([0.0, 10.0])))


def _tap_graph(cs, xt, yt):
    from tigris.ops.resize import axis_tables, row_span
    roi = (0.0, 1.0) if cs["roi"] is None else (cs["roi"][2], cs["roi"][6])
    rows, _ = axis_tables(cs["shape"][2], cs["out"][2], cs["scales"][2], cs["mode"], cs["ctm"], cs["nm"], True,
                          cs["a"], bool(cs["excl"]), bool(cs["anti"]), roi)
    attrs = dict(_attrs(cs), by_sizes=True, row_src=row_span(rows), cubic_coeff_a=cs["a"], exclude_outside=cs["excl"],
                 antialias=cs["anti"], extrapolation_value=cs["ex"])
    if cs["roi"] is not None:
        attrs["roi_hw"] = cs["roi"]
    attrs["_extracted"] = True  # what pass 12 marks
    return graph1("Resize", [xt], [yt], attrs)


def _tap_onnx(cs):
    roi = "roi" if cs["roi"] is not None else ""
    inits = [numpy_helper.from_array(np.array(cs["out"], np.int64), "sizes")]
    if roi:
        inits.append(numpy_helper.from_array(np.array(cs["roi"], np.float32), "roi"))
    node = lambda i, o: [helper.make_node(  # noqa: E731
        "Resize", [i[0], roi, "", "sizes"], [o], mode=cs["mode"], coordinate_transformation_mode=cs["ctm"],
        nearest_mode=cs["nm"], cubic_coeff_a=cs["a"], exclude_outside=cs["excl"], antialias=cs["anti"],
        extrapolation_value=cs["ex"])]
    return node, inits


@settings(database=None, max_examples=150, deadline=None)
@given(cs=tap_case(), seed=st.integers(0, 2**16))
def test_tap_float_resize_matches_the_onnx_reference(lib, cs, seed):
    from onnx.reference import ReferenceEvaluator
    rng = np.random.default_rng(seed)
    g = _tap_graph(cs, T("x", cs["shape"]), T("y", cs["out"]))
    low = lower(g, g.ops[0])
    x = rng.standard_normal(cs["shape"]).astype(np.float32)
    phys = phys_inputs(g, low, {"x": x})
    ref = run_op(ref_runner, g, low, phys)
    node, inits = _tap_onnx(cs)
    m = onnx_model(node(["x"], "y"), [vinfo("x", cs["shape"])], [vinfo("y", cs["out"])], inits, opset=18)
    want = ReferenceEvaluator(m).run(None, {"x": x})[0]
    assert_float_close(to_logical(g, "y", ref), want)
    # ONNX Runtime takes source 0, not the specification's -0.5, for pytorch_half_pixel onto one output pixel
    one = cs["ctm"] == "pytorch_half_pixel" and 1 in cs["out"][2:]
    if cs["mode"] == "cubic" and not cs["anti"] and cs["ctm"] != "tf_crop_and_resize" and not one:
        assert_float_close(to_logical(g, "y", ref), ort_run(m, {"x": x})[0])
    assert_float_close(run_op(c_runner(lib), g, low, phys), ref, 0.0)
    H = cs["out"][2]
    assert_float_close(run_op(c_runner(lib), g, low, phys, split_rows(H, [1, H // 2 + 1]), _kind_need(g)), ref, 0.0)


def test_cubic_short_band_is_a_tile_error(lib):
    cs = dict(mode="cubic", ctm="half_pixel", nm="floor", shape=(1, 1, 8, 3), out=(1, 1, 16, 6),
              scales=[1.0, 1.0, 2.0, 2.0], by_sizes=True, a=-0.75, excl=0, anti=0, roi=None, ex=0.0)
    g = _tap_graph(cs, T("x", cs["shape"]), T("y", cs["out"]))
    low = lower(g, g.ops[0])
    phys = phys_inputs(g, low, {"x": np.ones(cs["shape"], np.float32)})
    with pytest.raises(RuntimeError, match=status_error("ERR_TILE")):
        # output rows 8..9 (sources 3.75, 4.25) read rows 2..6: a band of rows 3..6 misses row 2
        run_op(c_runner(lib), g, low, phys, [(8, 10)], lambda r0, r1: [(3, 7)])


@settings(database=None, max_examples=80, deadline=None)
@given(cs=tap_case(), seed=st.integers(0, 2**16), s_in=st.floats(0.01, 0.5), ratio=st.sampled_from([1.0, 0.7, 2.5]),
       zi=st.integers(-128, 127), zo=st.integers(-128, 127))
def test_int8_interpolating_resize_is_the_float_island(lib, cs, seed, s_in, ratio, zi, zo):
    """An int8 linear/cubic resize (tigris.ops.resize, onnx numerics) gives the bytes of DequantizeLinear -> float
    Resize -> QuantizeLinear (the kinds' references, which their C kernels match bit for bit), in C whole and in
    row bands, and ONNX Runtime's QDQ model within 1 LSB."""
    if cs["mode"] == "nearest" or cs["ctm"] == "tf_crop_and_resize":
        cs = dict(cs, mode="linear", ctm="half_pixel", roi=None)
    rng = np.random.default_rng(seed)
    s_in = float(np.float32(s_in))
    s_out = float(np.float32(s_in * ratio))
    shape, out = cs["shape"], cs["out"]
    g = _tap_graph(cs, T("x", shape, "int8", qp(s_in, zi)), T("y", out, "int8", qp(s_out, zo)))
    low = lower(g, g.ops[0])
    assert low.params["MODE"] == 1
    x = rand_q(rng, shape)
    phys = phys_inputs(g, low, {"x": x})
    ref = run_op(ref_runner, g, low, phys)
    # the island, kernel by kernel
    gd = graph1("DequantizeLinear", [T("x", shape, "int8", qp(s_in, zi))], [T("xf", shape)], {})
    xf = run_op(ref_runner, gd, lower(gd, gd.ops[0]), phys_inputs(gd, lower(gd, gd.ops[0]), {"x": x}))
    gf = _tap_graph(cs, T("xf", shape), T("yf", out))
    yf = run_op(ref_runner, gf, lower(gf, gf.ops[0]), {"xf": xf})
    gq = graph1("QuantizeLinear", [T("yf", out)], [T("y", out, "int8", qp(s_out, zo))], {})
    island = run_op(ref_runner, gq, lower(gq, gq.ops[0]), {"yf": yf})
    assert np.array_equal(ref, island)
    assert np.array_equal(run_op(c_runner(lib), g, low, phys), ref)
    H = out[2]
    assert np.array_equal(run_op(c_runner(lib), g, low, phys, split_rows(H, [1, H // 2 + 1]), _kind_need(g)), ref)
    # where ONNX Runtime follows the specification (as the float tests above take it): no antialias, no
    # exclude_outside in linear mode, no pytorch_half_pixel onto one pixel
    one = cs["ctm"] == "pytorch_half_pixel" and 1 in out[2:]
    if not cs["anti"] and not (cs["excl"] and cs["mode"] == "linear") and not one:
        node, inits = _tap_onnx(cs)
        m = qdq_model(node, [("x", shape, s_in, zi)], ("y", out, s_out, zo), inits, opset=18)
        assert max_lsb(to_logical(g, "y", ref), ort_run(m, {"x": x})[0]) <= 1
