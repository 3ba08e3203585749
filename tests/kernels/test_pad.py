"""Pad (constant mode) on every axis, positive and negative pads, float32 and int8, banded.

Tolerance: Pad moves bytes and writes one constant, so C == reference exactly and reference == ORT exactly for
float; int8 reference vs ORT (QDQ) within 1 LSB (in practice exact).
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import helper, numpy_helper

from harness import build_kernels
from ophelp import (T, c_runner, graph1, max_lsb, onnx_model, ort_run, phys_inputs, qdq_model, qp, rand_q,
                    ref_runner, run_op, split_rows, status_error, to_logical, vinfo)
from tigris.layout import tensor_view_dims
from tigris.ops import kind, lower


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return build_kernels(["pad.c"], tmp_path_factory.mktemp("pad"))


@st.composite
def case(draw):
    rank = draw(st.sampled_from([4, 4, 3, 2]))
    shape = tuple(draw(st.integers(1, 5)) for _ in range(rank))
    begins = [draw(st.integers(-(d - 1) if d > 1 else 0, 3)) for d in shape]
    ends = [draw(st.integers(-(d - 1 - max(0, -b)) if d - 1 - max(0, -b) > 0 else 0, 3))
            for d, b in zip(shape, begins)]
    out = tuple(d + b + e for d, b, e in zip(shape, begins, ends))
    value = draw(st.sampled_from([0.0, 1.5, -2.0]))
    return dict(shape=shape, pads=begins + ends, out=out, value=value)


def _node(cs):
    return lambda i, o: [helper.make_node("Pad", [i[0], "pads", "cval"], [o], mode="constant")]


def _inits(cs):
    return [numpy_helper.from_array(np.array(cs["pads"], np.int64), "pads"),
            numpy_helper.from_array(np.array(cs["value"], np.float32), "cval")]


def _need(low, g):
    H = tensor_view_dims(g.tensors["x"])[1]
    b = low.params["B1"]

    def need(r0, r1):
        a, z = max(r0 - b, 0), min(r1 - b, H)
        return [(a, z) if z > a else (0, 0)]

    return need


@settings(database=None, max_examples=60, deadline=None)
@given(cs=case(), seed=st.integers(0, 2**16))
def test_float_pad(lib, cs, seed):
    rng = np.random.default_rng(seed)
    g = graph1("Pad", [T("x", cs["shape"])], [T("y", cs["out"])], {"pads": cs["pads"], "value": cs["value"]})
    low = lower(g, g.ops[0])
    x = rng.standard_normal(cs["shape"]).astype(np.float32)
    phys = phys_inputs(g, low, {"x": x})
    ref = run_op(ref_runner, g, low, phys)
    (ort_y,) = ort_run(onnx_model(_node(cs)(["x"], "y"), [vinfo("x", cs["shape"])], [vinfo("y", cs["out"])],
                                  _inits(cs)), {"x": x})
    assert np.array_equal(to_logical(g, "y", ref), ort_y)
    H = tensor_view_dims(g.tensors["y"])[1]
    bands = split_rows(H, [1, H // 2 + 1, H - 1])
    assert np.array_equal(run_op(c_runner(lib), g, low, phys, bands, _need(low, g)), ref)
    assert np.array_equal(run_op(ref_runner, g, low, phys, bands, _need(low, g)), ref)


@settings(database=None, max_examples=40, deadline=None)
@given(cs=case(), seed=st.integers(0, 2**16), s=st.floats(0.01, 1.0), zp=st.integers(-128, 127))
def test_int8_pad(lib, cs, seed, s, zp):
    rng = np.random.default_rng(seed)
    s = float(np.float32(s))
    g = graph1("Pad", [T("x", cs["shape"], "int8", qp(s, zp))], [T("y", cs["out"], "int8", qp(s, zp))],
               {"pads": cs["pads"], "value": cs["value"]})
    low = lower(g, g.ops[0])
    x = rand_q(rng, cs["shape"])
    phys = phys_inputs(g, low, {"x": x})
    ref = run_op(ref_runner, g, low, phys)
    H = tensor_view_dims(g.tensors["y"])[1]
    assert np.array_equal(run_op(c_runner(lib), g, low, phys, split_rows(H, [H // 2]), _need(low, g)), ref)
    m = qdq_model(_node(cs), [("x", cs["shape"], s, zp)], ("y", cs["out"], s, zp), _inits(cs))
    (ort_y,) = ort_run(m, {"x": x})
    assert max_lsb(to_logical(g, "y", ref), ort_y) <= 1


def test_pad_short_band_is_a_tile_error(lib):
    g = graph1("Pad", [T("x", (1, 2, 4, 3))], [T("y", (1, 2, 6, 3))], {"pads": [0, 0, 1, 0, 0, 0, 1, 0]})
    low = lower(g, g.ops[0])
    phys = phys_inputs(g, low, {"x": np.ones((1, 2, 4, 3), np.float32)})
    with pytest.raises(RuntimeError, match=status_error("ERR_TILE")):
        run_op(c_runner(lib), g, low, phys, [(1, 4)], lambda r0, r1: [(1, 3)])  # needs input rows 0..2


@st.composite
def mode_case(draw):
    rank = draw(st.sampled_from([4, 4, 3, 2]))
    shape = tuple(draw(st.integers(1, 5)) for _ in range(rank))
    mode = draw(st.sampled_from(["reflect", "edge", "wrap"]))
    # ONNX Runtime takes reflect pads below the axis length, wrap pads up to it
    cap = (lambda d: d - 1) if mode == "reflect" else (lambda d: min(d, 3))
    pads = [draw(st.integers(0, cap(d))) for d in shape] + [draw(st.integers(0, cap(d))) for d in shape]
    if draw(st.booleans()):  # often leave the rows unpadded, so the Pad runs on row bands
        h = {4: 2, 3: 2, 2: 0}[rank]
        pads[h] = pads[h + rank] = 0
    out = tuple(d + pads[i] + pads[i + rank] for i, d in enumerate(shape))
    return dict(shape=shape, pads=pads, out=out, mode=mode, value=0.0)


@pytest.mark.parametrize("int8", [False, True])
@settings(database=None, max_examples=60, deadline=None)
@given(cs=mode_case(), seed=st.integers(0, 2**16))
def test_reflect_edge_wrap_pad(lib, cs, seed, int8):
    """Pad modes that copy input elements: exact against ONNX Runtime (float, and the QDQ model for int8), C equal to
    the reference, banded (a padded row axis reads the hull of the rows its mode maps the band to, and refuses a band
    one row short of it)."""
    rng = np.random.default_rng(seed)
    attrs = {"pads": cs["pads"], "value": 0.0, "mode": cs["mode"]}
    node = lambda i, o: [helper.make_node("Pad", [i[0], "pads"], [o], mode=cs["mode"])]  # noqa: E731
    inits = [numpy_helper.from_array(np.array(cs["pads"], np.int64), "pads")]
    if int8:
        g = graph1("Pad", [T("x", cs["shape"], "int8", qp(0.05, 3))], [T("y", cs["out"], "int8", qp(0.05, 3))], attrs)
        x = rand_q(rng, cs["shape"])
        (want,) = ort_run(qdq_model(node, [("x", cs["shape"], 0.05, 3)], ("y", cs["out"], 0.05, 3), inits, opset=19),
                          {"x": x})
    else:
        g = graph1("Pad", [T("x", cs["shape"])], [T("y", cs["out"])], attrs)
        x = rng.standard_normal(cs["shape"]).astype(np.float32)
        (want,) = ort_run(onnx_model(node(["x"], "y"), [vinfo("x", cs["shape"])], [vinfo("y", cs["out"])], inits,
                                     opset=19), {"x": x})
    low = lower(g, g.ops[0])
    phys = phys_inputs(g, low, {"x": x})
    ref = run_op(ref_runner, g, low, phys)
    assert np.array_equal(to_logical(g, "y", ref), want)
    assert np.array_equal(run_op(c_runner(lib), g, low, phys), ref)
    H = tensor_view_dims(g.tensors["y"])[1]
    bands = split_rows(H, [1, H // 2 + 1])
    if low.params["B1"] == 0 and low.params["E1"] == 0:
        for runner in (ref_runner, c_runner(lib)):
            assert np.array_equal(run_op(runner, g, low, phys, bands, lambda a, b: [(a, b)]), ref)
        assert kind("pad").mixes_rows(g, g.ops[0]) is None
    else:
        # a padded row axis: a band reads the hull of the rows the mode maps it to (the planner's row_src map)
        from tigris.ops.pad import MODES, source_index

        n_in = tensor_view_dims(g.tensors["x"])[1]

        def need(a, b):
            src = source_index(np.arange(a, b) - low.params["B1"], n_in, MODES[cs["mode"]])
            return [(int(src.min()), int(src.max()) + 1)]

        for runner in (ref_runner, c_runner(lib)):
            assert np.array_equal(run_op(runner, g, low, phys, bands, need), ref)
        short = [(a, b, need(a, b)[0]) for a, b in bands if need(a, b)[0][1] - need(a, b)[0][0] > 1]
        if short:  # one row short of the hull: a tile error, never a wrong row
            a, b, (lo, hi) = short[0]
            with pytest.raises(RuntimeError, match=status_error("ERR_TILE")):
                run_op(c_runner(lib), g, low, phys, [(a, b)], lambda a_, b_: [(lo, hi - 1)])
