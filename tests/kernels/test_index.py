"""ArgMax/ArgMin, TopK and NonMaxSuppression kernels (tigris/ops/index.py, runtime_c/src/kernels/index.c): the C
kernel equals the NumPy reference bit for bit, and the reference equals ONNX Runtime (indices exactly, values
exactly: they are copies) on randomized shapes, axes and layouts; int8 inputs compare codes; bad parameters make the
load-time check fail."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import helper, numpy_helper

from harness import build_kernels
from ophelp import (T, c_runner, graph1, onnx_model, ort_run, phys_inputs, qp, ref_runner, run_op, status_error,
                    to_logical, vinfo)
from tigris.ops import lower


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return build_kernels(["index.c"], tmp_path_factory.mktemp("index"))


def _values(rng, shape, ties: bool, int8: bool):
    if int8:
        return rng.integers(-5 if ties else -128, 5 if ties else 128, size=shape).astype(np.int8)
    if ties:
        return rng.integers(-3, 3, size=shape).astype(np.float32)
    return rng.standard_normal(shape).astype(np.float32)


@st.composite
def arg_case(draw):
    rank = draw(st.integers(1, 4))
    shape = tuple(draw(st.integers(1, 5)) for _ in range(rank))
    return dict(shape=shape, axis=draw(st.integers(-rank, rank - 1)), keep=draw(st.integers(0, 1)),
                last=draw(st.integers(0, 1)), op=draw(st.sampled_from(["ArgMax", "ArgMin"])), ties=draw(st.booleans()),
                int8=draw(st.booleans()))


@settings(database=None, max_examples=120, deadline=None)
@given(cs=arg_case(), seed=st.integers(0, 2**16))
def test_argmax_matches_ort(lib, cs, seed):
    rng = np.random.default_rng(seed)
    shape, ax = cs["shape"], cs["axis"] % len(cs["shape"])
    out = tuple(1 if i == ax else d for i, d in enumerate(shape)) if cs["keep"] else \
        tuple(d for i, d in enumerate(shape) if i != ax)
    out = out or (1,)
    x = _values(rng, shape, cs["ties"], cs["int8"])
    xt = T("x", shape, "int8", qp(0.05, 3)) if cs["int8"] else T("x", shape)
    g = graph1(cs["op"], [xt], [T("y", out, "int32")], {"axis": cs["axis"], "keepdims": cs["keep"],
                                                        "select_last_index": cs["last"]})
    low = lower(g, g.ops[0])
    phys = phys_inputs(g, low, {"x": x})
    ref = run_op(ref_runner, g, low, phys)
    assert np.array_equal(run_op(c_runner(lib), g, low, phys), ref)
    node = helper.make_node(cs["op"], ["x"], ["y"], axis=cs["axis"], keepdims=cs["keep"],
                            select_last_index=cs["last"])
    onnx_out = out if (cs["keep"] or len(shape) > 1) else ()
    m = onnx_model([node], [vinfo("x", shape)], [vinfo("y", onnx_out, "int64")], opset=13)
    (want,) = ort_run(m, {"x": x.astype(np.float32)})
    assert np.array_equal(to_logical(g, "y", ref).reshape(want.shape), want)


@st.composite
def topk_case(draw):
    rank = draw(st.integers(1, 4))
    shape = tuple(draw(st.integers(1, 6)) for _ in range(rank))
    axis = draw(st.integers(-rank, rank - 1))
    k = draw(st.integers(1, shape[axis % rank]))
    return dict(shape=shape, axis=axis, k=k, largest=draw(st.integers(0, 1)), ties=draw(st.booleans()),
                int8=draw(st.booleans()))


@settings(database=None, max_examples=120, deadline=None)
@given(cs=topk_case(), seed=st.integers(0, 2**16))
def test_topk_matches_ort(lib, cs, seed):
    rng = np.random.default_rng(seed)
    shape, ax = cs["shape"], cs["axis"] % len(cs["shape"])
    out = tuple(cs["k"] if i == ax else d for i, d in enumerate(shape))
    x = _values(rng, shape, cs["ties"], cs["int8"])
    q = qp(0.05, 3) if cs["int8"] else None
    dt = "int8" if cs["int8"] else "float32"
    attrs = {"k": cs["k"], "axis": cs["axis"], "largest": cs["largest"], "sorted": 1}
    node = helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=cs["axis"], largest=cs["largest"], sorted=1)
    m = onnx_model([node], [vinfo("x", shape)], [vinfo("v", out), vinfo("i", out, "int64")],
                   [numpy_helper.from_array(np.array([cs["k"]], np.int64), "k")], opset=11)
    want_v, want_i = ort_run(m, {"x": x.astype(np.float32)})
    for which, name, odt, oq, want in (("TopKValues", "v", dt, q, want_v), ("TopKIndices", "i", "int32", None,
                                                                           want_i)):
        g = graph1(which, [T("x", shape, dt, q)], [T(name, out, odt, oq)], attrs)
        low = lower(g, g.ops[0])
        phys = phys_inputs(g, low, {"x": x})
        ref = run_op(ref_runner, g, low, phys)
        assert np.array_equal(run_op(c_runner(lib), g, low, phys), ref)
        got = to_logical(g, name, ref)
        assert np.array_equal(got.astype(want.dtype), want), (which, got, want)


def _boxes(rng, b, n, center):
    c = rng.uniform(0, 10, size=(b, n, 2)).astype(np.float32)
    wh = rng.uniform(0.5, 4, size=(b, n, 2)).astype(np.float32)
    if center:
        return np.concatenate([c, wh], axis=2)
    p0, p1 = c - wh / 2, c + wh / 2
    if rng.random() < 0.5:  # corners in either order
        p0, p1 = p1, p0
    return np.concatenate([p0[..., ::-1], p1[..., ::-1]], axis=2)  # [y1, x1, y2, x2]


@st.composite
def nms_case(draw):
    return dict(b=draw(st.integers(1, 2)), c=draw(st.integers(1, 3)), n=draw(st.integers(1, 12)),
                m=draw(st.integers(1, 6)), iou=draw(st.sampled_from([0.0, 0.3, 0.5, 0.7])),
                thr=draw(st.sampled_from([None, 0.2, 0.6])), center=draw(st.integers(0, 1)), ties=draw(st.booleans()))


def _nms_graph(cs, rows):
    attrs = {"max_per_class": cs["m"], "iou_threshold": cs["iou"], "score_threshold": cs["thr"],
             "center_point_box": cs["center"]}
    return graph1("NonMaxSuppression", [T("boxes", (cs["b"], cs["n"], 4)), T("scores", (cs["b"], cs["c"], cs["n"]))],
                  [T("sel", (rows, 3), "int32")], attrs)


@settings(database=None, max_examples=120, deadline=None)
@given(cs=nms_case(), seed=st.integers(0, 2**16))
def test_nms_matches_ort(lib, cs, seed):
    from tigris.ir import valid_rows
    rng = np.random.default_rng(seed)
    boxes = _boxes(rng, cs["b"], cs["n"], cs["center"])
    scores = rng.random((cs["b"], cs["c"], cs["n"])).astype(np.float32)
    if cs["ties"]:
        scores = np.round(scores * 3) / 3
    rows = cs["b"] * cs["c"] * min(cs["m"], cs["n"])
    g = _nms_graph(cs, rows)
    low = lower(g, g.ops[0])
    phys = phys_inputs(g, low, {"boxes": boxes, "scores": scores})
    ref = run_op(ref_runner, g, low, phys)
    assert np.array_equal(run_op(c_runner(lib), g, low, phys), ref)
    inits = [numpy_helper.from_array(np.array([cs["m"]], np.int64), "m"),
             numpy_helper.from_array(np.array([cs["iou"]], np.float32), "iou")]
    ins = ["boxes", "scores", "m", "iou"]
    if cs["thr"] is not None:
        inits.append(numpy_helper.from_array(np.array([cs["thr"]], np.float32), "thr"))
        ins.append("thr")
    node = helper.make_node("NonMaxSuppression", ins, ["sel"], center_point_box=cs["center"])
    m = onnx_model([node], [vinfo("boxes", boxes.shape), vinfo("scores", scores.shape)],
                   [vinfo("sel", (None, 3), "int64")], inits, opset=11)
    (want,) = ort_run(m, {"boxes": boxes, "scores": scores})
    got = to_logical(g, "sel", ref)
    assert np.array_equal(got[:valid_rows(got)], want), (got, want)
    assert np.all(got[valid_rows(got):] == -1)


def test_bad_parameters_fail_the_check(lib):
    g = graph1("ArgMax", [T("x", (2, 3))], [T("y", (2, 1), "int32")], {"axis": 1, "keepdims": 1})
    low = lower(g, g.ops[0])
    phys = phys_inputs(g, low, {"x": np.zeros((2, 3), np.float32)})
    for key, val, err in (("AXIS", 7, "ERR_PARAM"), ("D3", 4, "ERR_SHAPE"), ("OS2", 5, "ERR_SHAPE"),
                          ("MIN", 2, "ERR_PARAM")):
        bad = type(low)(**{**low.__dict__, "params": {**low.params, key: val}})
        with pytest.raises(RuntimeError, match=status_error(err)):
            run_op(c_runner(lib), g, bad, phys)
    cs = dict(b=1, c=2, n=4, m=2, iou=0.5, thr=None, center=0)
    g = _nms_graph(cs, 4)
    low = lower(g, g.ops[0])
    phys = phys_inputs(g, low, {"boxes": np.zeros((1, 4, 4), np.float32), "scores": np.zeros((1, 2, 4), np.float32)})
    for key, val, err in (("MAXPC", 3, "ERR_SHAPE"), ("BS1", 9, "ERR_SHAPE"), ("CENTER", 2, "ERR_PARAM")):
        bad = type(low)(**{**low.__dict__, "params": {**low.params, key: val}})
        with pytest.raises(RuntimeError, match=status_error(err)):
            run_op(c_runner(lib), g, bad, phys)
