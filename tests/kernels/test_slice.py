"""Slice (random starts, ends, negative steps) and constant-index Gather (random axis and indices) of rank-2..4
tensors: float32 C == reference and reference == ONNX Runtime; int8 C bit-exact against the reference and the
reference within 1 LSB of ONNX Runtime's QDQ evaluation (with and without requantization); row bands; bad params.
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
from tigris.ops import kind, lower
from tigris.ops._common import TileError
from tigris.passes.slice_normalize import resolve, slice_op


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return build_kernels(["slice.c"], tmp_path_factory.mktemp("slice"))


@st.composite
def slice_case(draw):
    rank = draw(st.integers(2, 4))
    shape = tuple(draw(st.integers(1, 7)) for _ in range(rank))
    axes = draw(st.lists(st.integers(-rank, rank - 1), min_size=1, max_size=rank, unique_by=lambda a: a % rank))
    starts, ends, steps = [], [], []
    for a in axes:
        d = shape[a % rank]
        step = draw(st.sampled_from([1, 1, 2, 3, -1, -2]))
        starts.append(draw(st.integers(-d - 2, d + 2)))
        ends.append(draw(st.integers(-d - 2, d + 2)))
        steps.append(step)
    res = resolve(shape, starts, ends, axes, steps)
    start, step, count = res
    if 0 in count:  # an empty slice is a zero-size tensor, which the runtime refuses; take the whole axis instead
        for i, a in enumerate(axes):
            if count[a % rank] == 0:
                starts[i], ends[i], steps[i] = 0, shape[a % rank], 1
        start, step, count = resolve(shape, starts, ends, axes, steps)
    return dict(shape=shape, axes=axes, starts=starts, ends=ends, steps=steps, start=start, step=step,
                out=tuple(count))


@st.composite
def gather_case(draw):
    rank = draw(st.integers(2, 4))
    shape = tuple(draw(st.integers(1, 7)) for _ in range(rank))
    axis = draw(st.integers(0, rank - 1))
    d = shape[axis]
    idx = draw(st.lists(st.integers(-d, d - 1), min_size=1, max_size=8))
    out = shape[:axis] + (len(idx),) + shape[axis + 1:]
    return dict(shape=shape, axis=axis, idx=idx, flat=[i % d for i in idx], out=out)


def _slice_graph(cs, dt="float32", q=(None, None)):
    g = graph1("Slice", [T("x", cs["shape"], dt, q[0])], [T("y", cs["out"], dt, q[1])])
    g.ops[0] = slice_op("op0", "x", "y", cs["start"], cs["step"], list(cs["out"]))
    return g


def _gather_graph(cs, dt="float32", q=(None, None)):
    return graph1("Gather", [T("x", cs["shape"], dt, q[0])], [T("y", cs["out"], dt, q[1])],
                  {"axis": cs["axis"], "indices": cs["flat"], "normalized": True})


def _slice_inits(cs):
    return [numpy_helper.from_array(np.array(cs[k], np.int64), k) for k in ("starts", "ends", "axes", "steps")]


def _slice_node(i, o):
    return [helper.make_node("Slice", [i[0], "starts", "ends", "axes", "steps"], [o])]


def _gather_node(cs):
    return lambda i, o: [helper.make_node("Gather", [i[0], "idx"], [o], axis=cs["axis"])]


@settings(database=None, max_examples=60, deadline=None)
@given(cs=slice_case(), seed=st.integers(0, 2**16))
def test_float_slice(lib, cs, seed):
    x = np.random.default_rng(seed).standard_normal(cs["shape"]).astype(np.float32)
    g = _slice_graph(cs)
    low = lower(g, g.ops[0])
    phys = phys_inputs(g, low, {"x": x})
    ref = run_op(ref_runner, g, low, phys)
    (ort_y,) = ort_run(onnx_model(_slice_node(["x"], "y"), [vinfo("x", cs["shape"])], [vinfo("y", cs["out"])],
                                  _slice_inits(cs)), {"x": x})
    assert np.array_equal(to_logical(g, "y", ref), ort_y)
    assert np.array_equal(run_op(c_runner(lib), g, low, phys), ref)


@settings(database=None, max_examples=60, deadline=None)
@given(cs=gather_case(), seed=st.integers(0, 2**16))
def test_float_gather(lib, cs, seed):
    x = np.random.default_rng(seed).standard_normal(cs["shape"]).astype(np.float32)
    g = _gather_graph(cs)
    low = lower(g, g.ops[0])
    phys = phys_inputs(g, low, {"x": x})
    ref = run_op(ref_runner, g, low, phys)
    inits = [numpy_helper.from_array(np.array(cs["idx"], np.int64), "idx")]
    (ort_y,) = ort_run(onnx_model(_gather_node(cs)(["x"], "y"), [vinfo("x", cs["shape"])],
                                  [vinfo("y", cs["out"])], inits), {"x": x})
    assert np.array_equal(to_logical(g, "y", ref), ort_y)
    assert np.array_equal(run_op(c_runner(lib), g, low, phys), ref)


@settings(database=None, max_examples=40, deadline=None)
@given(cs=slice_case(), gcs=gather_case(), seed=st.integers(0, 2**16), s_in=st.floats(0.005, 0.1),
       zi=st.integers(-128, 127), zo=st.integers(-128, 127), ratio=st.sampled_from([1.0, 0.7, 1.9]))
def test_int8_slice_and_gather(lib, cs, gcs, seed, s_in, zi, zo, ratio):
    rng = np.random.default_rng(seed)
    s_in = float(np.float32(s_in))
    s_out = float(np.float32(s_in * ratio))
    if ratio == 1.0:
        zo = zi  # the encoding Split and Gather keep: a byte copy
    q = (qp(s_in, zi), qp(s_out, zo))
    for g, c, node, inits in (
            (_slice_graph(cs, "int8", q), cs, _slice_node, _slice_inits(cs)),
            (_gather_graph(gcs, "int8", q), gcs, _gather_node(gcs),
             [numpy_helper.from_array(np.array(gcs["idx"], np.int64), "idx")])):
        low = lower(g, g.ops[0])
        x = rand_q(rng, c["shape"])
        phys = phys_inputs(g, low, {"x": x})
        ref = run_op(ref_runner, g, low, phys)
        assert np.array_equal(run_op(c_runner(lib), g, low, phys), ref)
        m = qdq_model(node, [("x", c["shape"], s_in, zi)], ("y", c["out"], s_out, zo), inits)
        (ort_y,) = ort_run(m, {"x": x})
        assert max_lsb(to_logical(g, "y", ref), ort_y) <= (0 if ratio == 1.0 else 1)


@pytest.mark.parametrize("start,step", [(0, 1), (3, 1), (1, 2), (2, 3)])
def test_row_bands(lib, start, step):
    """A slice of the rows (or of the channels) on output bands reading exactly the rows rows_needed names gives
    the untiled result; a band one row short is refused."""
    shape = (1, 5, 16, 3)
    n = len(range(start, 16, step))
    cs = dict(shape=shape, start=[0, 1, start, 0], step=[1, 2, step, 1], out=(1, 2, n, 3))
    g = _slice_graph(cs)
    low = lower(g, g.ops[0])
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    phys = phys_inputs(g, low, {"x": x})
    ref = run_op(ref_runner, g, low, phys)
    k = kind("slice")

    def need(a, b):
        return [k.rows_needed(g.ops[0], a, b)]

    bands = split_rows(n, [1, n // 2, n - 1])
    for runner in (ref_runner, c_runner(lib)):
        assert np.array_equal(run_op(runner, g, low, phys, bands, need), ref)

    def short(a, b):
        lo, hi = k.rows_needed(g.ops[0], a, b)
        return [(lo, hi - 1)]

    with pytest.raises(TileError):
        run_op(ref_runner, g, low, phys, [(0, n)], short)
    with pytest.raises(RuntimeError, match=status_error("ERR_TILE")):
        run_op(c_runner(lib), g, low, phys, [(0, n)], short)


def test_gather_rows_bands_and_unsorted_rows_untiled(lib):
    cs = dict(shape=(1, 2, 9, 4), axis=2, idx=[1, 2, 2, 5, 8], flat=[1, 2, 2, 5, 8], out=(1, 2, 5, 4))
    g = _gather_graph(cs)
    low = lower(g, g.ops[0])
    x = np.random.default_rng(2).standard_normal(cs["shape"]).astype(np.float32)
    phys = phys_inputs(g, low, {"x": x})
    ref = run_op(ref_runner, g, low, phys)
    k = kind("slice")
    got = run_op(c_runner(lib), g, low, phys, split_rows(5, [2, 3]), lambda a, b: [k.rows_needed(g.ops[0], a, b)])
    assert np.array_equal(got, ref)
    assert k.mixes_rows(g, g.ops[0]) is None
    un = _gather_graph(dict(cs, idx=[8, 1, 2, 2, 5], flat=[8, 1, 2, 2, 5]))
    assert "unsorted" in k.mixes_rows(un, un.ops[0])
    neg = _slice_graph(dict(shape=(1, 2, 9, 4), start=[0, 0, 8, 0], step=[1, 1, -2, 1], out=(1, 2, 5, 4)))
    assert "negative step" in k.mixes_rows(neg, neg.ops[0])


@pytest.mark.parametrize("param,value,err", [("STEP2", 0, "ERR_PARAM"), ("START3", 9, "ERR_PARAM"),
                                             ("START2", -1, "ERR_PARAM"), ("GAXIS", 4, "ERR_PARAM"),
                                             ("GAXIS", 2, "ERR_PARAM")])
def test_bad_params_are_refused(lib, param, value, err):
    cs = dict(shape=(1, 4, 6, 5), start=[0, 1, 0, 0], step=[1, 1, 2, 1], out=(1, 3, 3, 5))
    g = _slice_graph(cs)
    low = lower(g, g.ops[0])
    phys = phys_inputs(g, low, {"x": np.zeros(cs["shape"], np.float32)})
    low.params[param] = value
    with pytest.raises(RuntimeError, match=status_error(err)):
        run_op(c_runner(lib), g, low, phys)


def test_gather_index_out_of_range_is_refused(lib):
    cs = dict(shape=(1, 6, 2, 2), axis=1, idx=[0, 5, 3], flat=[0, 5, 3], out=(1, 3, 2, 2))
    g = _gather_graph(cs)
    low = lower(g, g.ops[0])
    phys = phys_inputs(g, low, {"x": np.zeros(cs["shape"], np.float32)})
    low.consts["IDX"] = np.array([0, 6, 3], np.int32)
    with pytest.raises(RuntimeError, match=status_error("ERR_PARAM")):
        run_op(c_runner(lib), g, low, phys)
    low.consts["IDX"] = np.array([0, 5], np.int32)
    with pytest.raises(RuntimeError, match=status_error("ERR_PARAM")):
        run_op(c_runner(lib), g, low, phys)
