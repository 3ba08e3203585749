"""DepthToSpace / SpaceToDepth, DCR and CRD, random block sizes and shapes: float32 C == reference == ONNX Runtime;
int8 C bit-exact against the reference and the reference within 1 LSB of ONNX Runtime's QDQ evaluation (exact when
the encoding is kept); row bands; bad params."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import helper

from harness import build_kernels
from ophelp import (T, c_runner, graph1, max_lsb, onnx_model, ort_run, phys_inputs, qdq_model, qp, rand_q,
                    ref_runner, run_op, split_rows, status_error, to_logical, vinfo)
from tigris.ops import kind, lower
from tigris.ops._common import TileError


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return build_kernels(["depthspace.c"], tmp_path_factory.mktemp("depthspace"))


@st.composite
def case(draw):
    op = draw(st.sampled_from(["DepthToSpace", "SpaceToDepth"]))
    b = draw(st.integers(1, 3))
    c, h, w = draw(st.integers(1, 4)), draw(st.integers(1, 4)), draw(st.integers(1, 4))
    deep, shallow = (1, c * b * b, h, w), (1, c, h * b, w * b)
    shape, out = (deep, shallow) if op == "DepthToSpace" else (shallow, deep)
    return dict(op=op, b=b, mode=draw(st.sampled_from(["DCR", "CRD"])), shape=shape, out=out)


def _graph(cs, dt="float32", q=(None, None)):
    return graph1(cs["op"], [T("x", cs["shape"], dt, q[0])], [T("y", cs["out"], dt, q[1])],
                  {"blocksize": cs["b"], "mode": cs["mode"]})


def _node(cs):
    # ONNX Runtime knows SpaceToDepth only without a mode (DCR); the CRD form is judged by onnx's reference evaluator
    if cs["op"] == "SpaceToDepth":
        return lambda i, o: [helper.make_node(cs["op"], [i[0]], [o], blocksize=cs["b"])]
    return lambda i, o: [helper.make_node(cs["op"], [i[0]], [o], blocksize=cs["b"], mode=cs["mode"])]


def _oracle(cs, model, feeds):
    if cs["op"] == "SpaceToDepth" and cs["mode"] == "CRD":
        from onnx.reference import ReferenceEvaluator

        for n in model.graph.node:
            if n.op_type == "SpaceToDepth":
                n.attribute.append(helper.make_attribute("mode", "CRD"))
        del model.opset_import[:]
        model.opset_import.append(helper.make_opsetid("", 24))
        return [np.asarray(v) for v in ReferenceEvaluator(model).run(None, feeds)]
    return ort_run(model, feeds)


@settings(database=None, max_examples=60, deadline=None)
@given(cs=case(), seed=st.integers(0, 2**16))
def test_float(lib, cs, seed):
    x = np.random.default_rng(seed).standard_normal(cs["shape"]).astype(np.float32)
    g = _graph(cs)
    low = lower(g, g.ops[0])
    phys = phys_inputs(g, low, {"x": x})
    ref = run_op(ref_runner, g, low, phys)
    (ort_y,) = _oracle(cs, onnx_model(_node(cs)(["x"], "y"), [vinfo("x", cs["shape"])], [vinfo("y", cs["out"])],
                                      opset=22), {"x": x})
    assert np.array_equal(to_logical(g, "y", ref), ort_y)
    assert np.array_equal(run_op(c_runner(lib), g, low, phys), ref)


@settings(database=None, max_examples=40, deadline=None)
@given(cs=case(), seed=st.integers(0, 2**16), s_in=st.floats(0.005, 0.1), zi=st.integers(-128, 127),
       zo=st.integers(-128, 127), ratio=st.sampled_from([1.0, 0.6, 1.7]))
def test_int8(lib, cs, seed, s_in, zi, zo, ratio):
    s_in = float(np.float32(s_in))
    s_out = float(np.float32(s_in * ratio))
    zo = zi if ratio == 1.0 else zo
    g = _graph(cs, "int8", (qp(s_in, zi), qp(s_out, zo)))
    low = lower(g, g.ops[0])
    x = rand_q(np.random.default_rng(seed), cs["shape"])
    phys = phys_inputs(g, low, {"x": x})
    ref = run_op(ref_runner, g, low, phys)
    assert np.array_equal(run_op(c_runner(lib), g, low, phys), ref)
    m = qdq_model(_node(cs), [("x", cs["shape"], s_in, zi)], ("y", cs["out"], s_out, zo), opset=22)
    (ort_y,) = _oracle(cs, m, {"x": x})
    assert max_lsb(to_logical(g, "y", ref), ort_y) <= (0 if ratio == 1.0 else 1)


@pytest.mark.parametrize("op", ["DepthToSpace", "SpaceToDepth"])
def test_bands(lib, op):
    b = 2
    deep, shallow = (1, 12, 5, 3), (1, 3, 10, 6)
    cs = dict(op=op, b=b, mode="DCR", shape=deep if op == "DepthToSpace" else shallow,
              out=shallow if op == "DepthToSpace" else deep)
    g = _graph(cs)
    low = lower(g, g.ops[0])
    phys = phys_inputs(g, low, {"x": np.random.default_rng(4).standard_normal(cs["shape"]).astype(np.float32)})
    ref = run_op(ref_runner, g, low, phys)
    k = kind("depthspace")
    h = cs["out"][2]
    need = lambda a, e: [k.rows_needed(g.ops[0], a, e)]  # noqa: E731
    for runner in (ref_runner, c_runner(lib)):
        assert np.array_equal(run_op(runner, g, low, phys, split_rows(h, [1, h // 2 + 1]), need), ref)
    short = lambda a, e: [(k.rows_needed(g.ops[0], a, e)[0], k.rows_needed(g.ops[0], a, e)[1] - 1)]  # noqa: E731
    with pytest.raises(TileError):
        run_op(ref_runner, g, low, phys, [(0, h)], short)
    with pytest.raises(RuntimeError, match=status_error("ERR_TILE")):
        run_op(c_runner(lib), g, low, phys, [(0, h)], short)


@pytest.mark.parametrize("param,value,err", [("BLOCK", 3, "ERR_SHAPE"), ("BLOCK", 0, "ERR_PARAM"),
                                             ("MODE", 2, "ERR_PARAM"), ("DIR", 1, "ERR_SHAPE")])
def test_bad_params(lib, param, value, err):
    cs = dict(op="DepthToSpace", b=2, mode="CRD", shape=(1, 8, 2, 3), out=(1, 2, 4, 6))
    g = _graph(cs)
    low = lower(g, g.ops[0])
    phys = phys_inputs(g, low, {"x": np.zeros(cs["shape"], np.float32)})
    low.params[param] = value
    with pytest.raises(RuntimeError, match=status_error(err)):
        run_op(c_runner(lib), g, low, phys)
