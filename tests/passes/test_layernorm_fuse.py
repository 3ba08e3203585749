"""LayerNorm fuse: the decomposed layer norm becomes one LayerNormalization, and the compiled plan of the decomposed
model matches ONNX Runtime running the decomposed model; Mean / InvStdDev outputs become ops of their own."""
from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper

from passes._build import F, assert_same_as_ort, load, model, ort_run, run_pass, upto
from tigris import api

RNG = np.random.default_rng(0)
SHAPE = [1, 5, 8]


def _decomposed(square="pow", norm="div", gamma=True, beta=True, opset=13, axes=(-1,), eps=1e-5, leak=False):
    ax = list(axes)

    def rmean(i, o):
        if opset >= 18:
            return helper.make_node("ReduceMean", [i, "axes"], [o], keepdims=1)
        return helper.make_node("ReduceMean", [i], [o], axes=ax, keepdims=1)

    nodes = [rmean("x", "m"), helper.make_node("Sub", ["x", "m"], ["d"])]
    nodes.append(helper.make_node("Pow", ["d", "two"], ["sq"]) if square == "pow" else
                 helper.make_node("Mul", ["d", "d"], ["sq"]))
    nodes += [rmean("sq", "v"), helper.make_node("Add", ["eps", "v"], ["ve"]), helper.make_node("Sqrt", ["ve"], ["r"])]
    if norm == "div":
        nodes.append(helper.make_node("Div", ["d", "r"], ["n"]))
    else:
        nodes += [helper.make_node("Reciprocal", ["r"], ["ri"]), helper.make_node("Mul", ["ri", "d"], ["n"])]
    last = "n"
    inits = {"two": np.float32(2.0), "eps": np.float32(eps)}
    norm_shape = SHAPE[len(SHAPE) + min(ax):]
    if gamma:
        inits["g"] = RNG.uniform(0.5, 1.5, norm_shape).astype(np.float32)
        nodes.append(helper.make_node("Mul", [last, "g"], ["ng"]))
        last = "ng"
    if beta:
        inits["b"] = RNG.standard_normal(norm_shape).astype(np.float32)
        nodes.append(helper.make_node("Add", ["b", last], ["nb"]))
        last = "nb"
    nodes.append(helper.make_node("Relu", [last], ["y"]))
    outs = [("y", F, SHAPE)]
    if leak:
        outs.append(("d", F, SHAPE))
    if opset >= 18:
        inits["axes"] = np.array(ax, np.int64)
    return model(nodes, [("x", F, SHAPE)], outs, inits, opset=opset)


def _compile_and_compare(m: onnx.ModelProto, tol: float = 1e-4) -> None:
    x = (RNG.standard_normal(SHAPE) * 3 + 1).astype(np.float32)
    want = ort_run(m, {"x": x})
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "m.onnx"
        onnx.save(m, str(p))
        compiled = api.compile_model(p, "4M")
        got = api.run_plan(compiled.plan_bytes, {"x": x}).outputs
    for name, w in want.items():
        err = float(np.abs(np.asarray(got[name]) - w).max())
        assert err <= tol * max(1.0, float(np.abs(w).max())), (name, err)


@pytest.mark.parametrize("square,norm,gamma,beta,opset,axes", [
    ("pow", "div", True, True, 13, (-1,)),
    ("mul", "recip", True, True, 18, (-1,)),
    ("pow", "div", False, True, 13, (-1,)),
    ("pow", "recip", True, False, 18, (-2, -1)),
    ("mul", "div", False, False, 13, (2,)),
])
def test_decomposed_layer_norm_is_fused(square, norm, gamma, beta, opset, axes):
    m = _decomposed(square, norm, gamma, beta, opset, axes)
    g = upto(load(m), "layernorm_fuse")
    r = run_pass(g, "layernorm_fuse")
    assert r.rewritten == 1
    lns = [o for o in r.graph.ops if o.op_type == "LayerNormalization"]
    assert len(lns) == 1 and lns[0].attrs["axis"] == min(a % len(SHAPE) for a in axes)
    assert not any(o.op_type in ("ReduceMean", "Sqrt", "Div", "Reciprocal") for o in r.graph.ops)
    assert_same_as_ort(m, r.graph, tol=1e-4)
    assert run_pass(r.graph, "layernorm_fuse").rewritten == 0  # idempotent
    _compile_and_compare(m)


def test_declined_when_an_intermediate_is_read_elsewhere():
    m = _decomposed(leak=True)
    r = run_pass(upto(load(m), "layernorm_fuse"), "layernorm_fuse")
    assert r.rewritten == 0 and any("graph output" in d.reason for d in r.declined)
    _compile_and_compare(m)


def test_not_a_layer_norm_over_leading_axes():
    m = _decomposed(axes=(1,))
    r = run_pass(upto(load(m), "layernorm_fuse"), "layernorm_fuse")
    assert r.rewritten == 0


def test_mean_and_inv_std_dev_outputs_are_split_off():
    w = RNG.uniform(0.5, 1.5, [8]).astype(np.float32)
    node = helper.make_node("LayerNormalization", ["x", "w"], ["y", "mean", "inv"], axis=-1, epsilon=1e-3)
    m = model([node], [("x", F, SHAPE)], [("y", F, SHAPE), ("mean", F, [1, 5, 1]), ("inv", F, [1, 5, 1])],
              {"w": w}, opset=17)
    r = run_pass(upto(load(m), "layernorm_fuse"), "layernorm_fuse")
    lns = [o for o in r.graph.ops if o.op_type == "LayerNormalization"]
    assert r.rewritten == 1 and len(lns) == 1 and lns[0].outputs == ("y",)
    assert [o.op_type for o in r.graph.ops].count("Reciprocal") == 1
    _compile_and_compare(m)
