"""ReduceMean / ReduceSum / ReduceMax / ReduceL2 over random axes of rank-2..4 tensors, keepdims 0 and 1.

Tolerances: float reference vs ORT and C vs reference within 1e-5 x max(1, max|ref|) (sums in different orders);
int8 C vs reference bit-exact, reference vs ORT's QDQ evaluation within 1 LSB.
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
from tigris.ops import lower

OPS = ["ReduceMean", "ReduceSum", "ReduceMax", "ReduceL2"]


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return build_kernels(["reduce.c"], tmp_path_factory.mktemp("reduce"))


@st.composite
def case(draw):
    rank = draw(st.integers(2, 4))
    shape = tuple(draw(st.integers(1, 6)) for _ in range(rank))
    axes = sorted(draw(st.sets(st.integers(0, rank - 1), min_size=1, max_size=rank)))
    keep = draw(st.booleans())
    out = tuple(1 if i in axes else d for i, d in enumerate(shape)) if keep else \
        tuple(d for i, d in enumerate(shape) if i not in axes)
    if not out:
        keep, out = True, tuple(1 for _ in shape)
    neg = draw(st.booleans())  # negative axes as ONNX allows
    stated = [a - rank if neg else a for a in axes]
    return dict(shape=shape, axes=axes, stated=stated, keep=keep, out=out)


def _node(op, cs):
    return lambda i, o: [helper.make_node(op, [i[0], "axes"], [o], keepdims=int(cs["keep"]))]


def _graph(op, cs, int8=False, q=None):
    dt = "int8" if int8 else "float32"
    qi, qo = q or (None, None)
    return graph1(op, [T("x", cs["shape"], dt, qi)], [T("y", cs["out"], dt, qo)],
                  {"axes": cs["stated"], "keepdims": int(cs["keep"])})


@pytest.mark.parametrize("op", OPS)
@settings(database=None, max_examples=30, deadline=None)
@given(cs=case(), seed=st.integers(0, 2**16))
def test_float_reduce(lib, op, cs, seed):
    rng = np.random.default_rng(seed)
    g = _graph(op, cs)
    low = lower(g, g.ops[0])
    x = (rng.standard_normal(cs["shape"]) * 3).astype(np.float32)
    phys = phys_inputs(g, low, {"x": x})
    ref = run_op(ref_runner, g, low, phys)
    inits = [numpy_helper.from_array(np.array(cs["stated"], np.int64), "axes")]
    (ort_y,) = ort_run(onnx_model(_node(op, cs)(["x"], "y"), [vinfo("x", cs["shape"])], [vinfo("y", cs["out"])],
                                  inits, opset=18), {"x": x})
    assert_float_close(to_logical(g, "y", ref), ort_y)
    assert_float_close(run_op(c_runner(lib), g, low, phys), ref)


@pytest.mark.parametrize("op", OPS)
@settings(database=None, max_examples=30, deadline=None)
@given(cs=case(), seed=st.integers(0, 2**16), s_in=st.floats(0.005, 0.1), zi=st.integers(-128, 127),
       zo=st.integers(-128, 127), ro=st.floats(0.3, 3.0))
def test_int8_reduce(lib, op, cs, seed, s_in, zi, zo, ro):
    rng = np.random.default_rng(seed)
    s_in = float(np.float32(s_in))
    n = int(np.prod([cs["shape"][a] for a in cs["axes"]]))
    s_out = float(np.float32(s_in * ro * {"ReduceMean": 1.0, "ReduceSum": n, "ReduceMax": 1.0,
                                         "ReduceL2": np.sqrt(n)}[op]))
    g = _graph(op, cs, True, (qp(s_in, zi), qp(s_out, zo)))
    low = lower(g, g.ops[0])
    x = rand_q(rng, cs["shape"])
    phys = phys_inputs(g, low, {"x": x})
    ref = run_op(ref_runner, g, low, phys)
    assert np.array_equal(run_op(c_runner(lib), g, low, phys), ref)
    inits = [numpy_helper.from_array(np.array(cs["stated"], np.int64), "axes")]
    m = qdq_model(_node(op, cs), [("x", cs["shape"], s_in, zi)], ("y", cs["out"], s_out, zo), inits, opset=18)
    (ort_y,) = ort_run(m, {"x": x})
    assert max_lsb(to_logical(g, "y", ref), ort_y) <= 1


def test_reduce_rejects_a_bad_count(lib):
    cs = dict(shape=(1, 3, 4, 5), axes=[1, 2], stated=[1, 2], keep=True, out=(1, 1, 1, 5))
    g = _graph("ReduceMean", cs)
    low = lower(g, g.ops[0])
    phys = phys_inputs(g, low, {"x": np.zeros(cs["shape"], np.float32)})
    low.params["COUNT"] += 1
    with pytest.raises(RuntimeError, match=status_error("ERR_SHAPE")):
        run_op(c_runner(lib), g, low, phys)
