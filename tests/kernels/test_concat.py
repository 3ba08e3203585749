"""Concat along every axis (N, C, H, W; rank-2 and rank-3 tensors), 1-4 inputs, int8 with differing scales.

Tolerances: float is a copy, so C == reference == ORT exactly (checked with tolerance 0); int8 C vs reference
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
from tigris.layout import tensor_view_dims
from tigris.ops import lower

PASS14 = {4: {0: 0, 1: 3, 2: 1, 3: 2}, 3: {0: 0, 1: 2, 2: 1}}  # what pass 14 writes as "axis"


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return build_kernels(["concat.c"], tmp_path_factory.mktemp("concat"))


@st.composite
def case(draw):
    rank = draw(st.sampled_from([4, 4, 3, 2]))
    base = [draw(st.integers(1, 4)) if i == 0 else draw(st.integers(1, 6)) for i in range(rank)]
    axis = draw(st.integers(0, rank - 1))
    k = draw(st.integers(1, 4))
    sizes = [draw(st.integers(1, 5)) for _ in range(k)]
    shapes = [tuple(s if i == axis else base[i] for i in range(rank)) for s in sizes]
    out = tuple(sum(sizes) if i == axis else base[i] for i in range(rank))
    with_logical = draw(st.booleans())
    return dict(rank=rank, axis=axis, shapes=shapes, out=out, with_logical=with_logical)


def _attrs(cs):
    phys = PASS14.get(cs["rank"], {}).get(cs["axis"], cs["axis"])
    a = {"axis": phys, "axis_physical": True}
    if cs["with_logical"]:
        a["logical_axis"] = cs["axis"]
    return a


def _need(g, low, axis_view):
    """Input rows per output band: along H each input supplies its part; otherwise the band itself."""

    def need(r0, r1):
        res, off = [], 0
        for n in low.inputs:
            h = tensor_view_dims(g.tensors[n])[1]
            if axis_view == 1:
                a, b = max(r0, off) - off, min(r1, off + h) - off
                res.append((a, b) if b > a else (0, 0))
                off += h
            else:
                res.append((r0, r1))
        return res

    return need


def _node(axis, k):
    return lambda i, o: [helper.make_node("Concat", i, [o], axis=axis)]


@settings(database=None, max_examples=60, deadline=None)
@given(cs=case(), seed=st.integers(0, 2**16))
def test_float_concat(lib, cs, seed):
    rng = np.random.default_rng(seed)
    names = [f"x{i}" for i in range(len(cs["shapes"]))]
    g = graph1("Concat", [T(n, s) for n, s in zip(names, cs["shapes"])], [T("y", cs["out"])], _attrs(cs))
    low = lower(g, g.ops[0])
    data = {n: rng.standard_normal(s).astype(np.float32) for n, s in zip(names, cs["shapes"])}
    phys = phys_inputs(g, low, data)
    ref = run_op(ref_runner, g, low, phys)
    (ort_y,) = ort_run(onnx_model(_node(cs["axis"], len(names))(names, "y"),
                                  [vinfo(n, s) for n, s in zip(names, cs["shapes"])], [vinfo("y", cs["out"])]), data)
    assert_float_close(to_logical(g, "y", ref), ort_y, 0.0)
    assert_float_close(run_op(c_runner(lib), g, low, phys), ref, 0.0)
    H = tensor_view_dims(g.tensors["y"])[1]
    bands = split_rows(H, [1, H // 2 + 1])
    got = run_op(c_runner(lib), g, low, phys, bands, _need(g, low, low.params["AXIS"]))
    assert_float_close(got, ref, 0.0)


@settings(database=None, max_examples=60, deadline=None)
@given(cs=case(), seed=st.integers(0, 2**16), scales=st.lists(st.floats(0.002, 0.5), min_size=5, max_size=5),
       zps=st.lists(st.integers(-128, 127), min_size=5, max_size=5), same=st.booleans())
def test_int8_concat(lib, cs, seed, scales, zps, same):
    rng = np.random.default_rng(seed)
    k = len(cs["shapes"])
    scales = [float(np.float32(s)) for s in scales]
    if same:  # the common case: every input shares the output's encoding (a byte copy)
        scales, zps = [scales[0]] * 5, [zps[0]] * 5
    names = [f"x{i}" for i in range(k)]
    g = graph1("Concat", [T(n, s, "int8", qp(scales[i], zps[i])) for i, (n, s) in enumerate(zip(names, cs["shapes"]))],
               [T("y", cs["out"], "int8", qp(scales[4], zps[4]))], _attrs(cs))
    low = lower(g, g.ops[0])
    data = {n: rand_q(rng, s) for n, s in zip(names, cs["shapes"])}
    phys = phys_inputs(g, low, data)
    ref = run_op(ref_runner, g, low, phys)
    H = tensor_view_dims(g.tensors["y"])[1]
    bands = split_rows(H, [H // 2])
    assert np.array_equal(run_op(c_runner(lib), g, low, phys, bands, _need(g, low, low.params["AXIS"])), ref)
    specs = [(n, s, scales[i], zps[i]) for i, (n, s) in enumerate(zip(names, cs["shapes"]))]
    m = qdq_model(_node(cs["axis"], k), specs, ("y", cs["out"], scales[4], zps[4]))
    (ort_y,) = ort_run(m, data)
    assert max_lsb(to_logical(g, "y", ref), ort_y) <= 1
    if same:
        assert np.array_equal(to_logical(g, "y", ref), ort_y)


def test_concat_short_band_is_a_tile_error(lib):
    g = graph1("Concat", [T("a", (1, 2, 4, 3)), T("b", (1, 1, 4, 3))], [T("y", (1, 3, 4, 3))],
               {"axis": 3, "axis_physical": True, "logical_axis": 1})
    low = lower(g, g.ops[0])
    phys = phys_inputs(g, low, {"a": np.ones((1, 2, 4, 3), np.float32), "b": np.ones((1, 1, 4, 3), np.float32)})
    with pytest.raises(RuntimeError, match=status_error("ERR_TILE")):
        run_op(c_runner(lib), g, low, phys, [(1, 3)], lambda r0, r1: [(r0, r1), (r0, r1 - 1)])


def test_int8_requantized_ties_round_half_to_even_like_ort(lib):
    # Input a has half the output scale, so (q - zi) / 2 lands on halves for odd codes;
    # ORT's QuantizeLinear rounds them to even, and so do we: identical to ORT (0 LSB).
    shapes = [(1, 3, 4, 5), (1, 2, 4, 5)]
    g = graph1("Concat", [T("a", shapes[0], "int8", qp(0.125, 3)), T("b", shapes[1], "int8", qp(0.5, -1))],
               [T("y", (1, 5, 4, 5), "int8", qp(0.25, 0))], {"axis": 3, "axis_physical": True, "logical_axis": 1})
    low = lower(g, g.ops[0])
    rng = np.random.default_rng(2)
    data = {"a": rand_q(rng, shapes[0]), "b": rand_q(rng, shapes[1])}
    phys = phys_inputs(g, low, data)
    ref = run_op(ref_runner, g, low, phys)
    assert np.array_equal(run_op(c_runner(lib), g, low, phys), ref)
    m = qdq_model(_node(1, 2), [("a", shapes[0], 0.125, 3), ("b", shapes[1], 0.5, -1)], ("y", (1, 5, 4, 5), 0.25, 0))
    (ort_y,) = ort_run(m, data)
    assert np.array_equal(to_logical(g, "y", ref), ort_y)
