"""The layernorm kind: LayerNormalization over the trailing axes of rank-1..4 tensors (layouts by rank, so nwc/nhwc
tensors normalize over strided axes), with and without B, any epsilon, float32 and int8.

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
from tigris.ops import lower, unsupported_reason


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return build_kernels(["layernorm.c"], tmp_path_factory.mktemp("layernorm"))


@st.composite
def case(draw):
    rank = draw(st.integers(1, 4))
    shape = tuple(draw(st.integers(1, 6)) for _ in range(rank))
    axis = draw(st.integers(-rank, rank - 1))
    norm = shape[axis % rank:]
    gshape = norm[draw(st.integers(0, len(norm) - 1)):]  # Scale may broadcast over the leading normalized axes
    return dict(shape=shape, axis=axis, gshape=gshape, bias=draw(st.booleans()),
                eps=draw(st.sampled_from([1e-5, 1e-3, 0.1])))


def _consts(rng, cs):
    g = rng.uniform(0.5, 1.5, cs["gshape"]).astype(np.float32)
    b = rng.standard_normal(cs["gshape"]).astype(np.float32) if cs["bias"] else None
    return g, b


def _graph(cs, g, b, dt="float32", q=(None, None)):
    ins = [T("x", cs["shape"], dt, q[0]), T("g", g.shape, data=g)] + ([T("b", b.shape, data=b)] if b is not None
                                                                      else [])
    return graph1("LayerNormalization", ins, [T("y", cs["shape"], dt, q[1])],
                  {"axis": cs["axis"], "epsilon": cs["eps"]})


def _node(cs, b):
    return lambda i, o: [helper.make_node("LayerNormalization", [i[0], "g"] + (["b"] if b is not None else []), [o],
                                          axis=cs["axis"], epsilon=cs["eps"])]


def _inits(g, b):
    return [numpy_helper.from_array(g, "g")] + ([numpy_helper.from_array(b, "b")] if b is not None else [])


@settings(database=None, max_examples=40, deadline=None)
@given(cs=case(), seed=st.integers(0, 2**16))
def test_float_layernorm(lib, cs, seed):
    rng = np.random.default_rng(seed)
    gam, bet = _consts(rng, cs)
    g = _graph(cs, gam, bet)
    low = lower(g, g.ops[0])
    x = (rng.standard_normal(cs["shape"]) * 2 + 1).astype(np.float32)
    phys = phys_inputs(g, low, {"x": x})
    ref = run_op(ref_runner, g, low, phys)
    (ort_y,) = ort_run(onnx_model(_node(cs, bet)(["x"], "y"), [vinfo("x", cs["shape"])], [vinfo("y", cs["shape"])],
                                  _inits(gam, bet)), {"x": x})
    assert_float_close(to_logical(g, "y", ref), ort_y, 1e-4)
    assert_float_close(run_op(c_runner(lib), g, low, phys), ref, 1e-4)


@settings(database=None, max_examples=40, deadline=None)
@given(cs=case(), seed=st.integers(0, 2**16), s_in=st.floats(0.005, 0.2), zi=st.integers(-100, 100),
       s_out=st.floats(0.01, 0.1), zo=st.integers(-20, 20))
def test_int8_layernorm(lib, cs, seed, s_in, zi, s_out, zo):
    rng = np.random.default_rng(seed)
    s_in, s_out = float(np.float32(s_in)), float(np.float32(s_out))
    gam, bet = _consts(rng, cs)
    g = _graph(cs, gam, bet, "int8", (qp(s_in, zi), qp(s_out, zo)))
    low = lower(g, g.ops[0])
    x = rand_q(rng, cs["shape"])
    phys = phys_inputs(g, low, {"x": x})
    ref = run_op(ref_runner, g, low, phys)
    assert np.array_equal(run_op(c_runner(lib), g, low, phys), ref)
    m = qdq_model(_node(cs, bet), [("x", cs["shape"], s_in, zi)], ("y", cs["shape"], s_out, zo), _inits(gam, bet))
    (ort_y,) = ort_run(m, {"x": x})
    assert max_lsb(to_logical(g, "y", ref), ort_y) <= 1


@pytest.mark.parametrize("param,delta,err", [("D1", 1, "ERR_SHAPE"), ("AXIS", 4, "ERR_PARAM"),
                                              ("S2", -1000, "ERR_PARAM"), ("S3", 100, "ERR_SHAPE")])
def test_bad_params_are_refused(lib, param, delta, err):
    cs = dict(shape=(1, 4, 6), axis=-1, gshape=(6,), bias=True, eps=1e-5)
    gam, bet = _consts(np.random.default_rng(0), cs)
    g = _graph(cs, gam, bet)
    low = lower(g, g.ops[0])
    phys = phys_inputs(g, low, {"x": np.zeros(cs["shape"], np.float32)})
    low.params[param] += delta
    with pytest.raises(RuntimeError, match=status_error(err)):
        run_op(c_runner(lib), g, low, phys)


def test_unsupported_reasons():
    cs = dict(shape=(2, 4, 6), axis=-1, gshape=(6,), bias=False, eps=1e-5)
    g = _graph(cs, np.ones(5, np.float32), None)
    assert "does not broadcast" in unsupported_reason(g, g.ops[0])
    ins = [T("x", (2, 6)), T("g", (6,))]
    g = graph1("LayerNormalization", ins, [T("y", (2, 6))], {"axis": -1})
    assert "not a constant" in unsupported_reason(g, g.ops[0])
