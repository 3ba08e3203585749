"""Concat const: constants concatenated around activations (a class token) become Pad + Add, exactly."""
from __future__ import annotations

import numpy as np
from onnx import helper

from passes._build import F, assert_reference_matches_ort, assert_same_as_ort, load, model, run_pass, upto

RNG = np.random.default_rng(0)


def _model(order, axis=1):
    consts = {"c0": RNG.standard_normal((1, 1, 8)).astype(np.float32),
              "c1": RNG.standard_normal((1, 2, 8)).astype(np.float32)}
    ins = [n if n != "x" else "xr" for n in order]
    nodes = [helper.make_node("Relu", ["x"], ["xr"]), helper.make_node("Concat", ins, ["y"], axis=axis, name="cat")]
    total = 5 + sum(consts[n].shape[1] for n in order if n in consts)
    return model(nodes, [("x", F, [1, 5, 8])], [("y", F, [1, total, 8])], consts)


def test_class_token_in_front_becomes_pad_and_add():
    m = _model(["c0", "x"])
    r = run_pass(upto(load(m), "concat_const"), "concat_const")
    assert r.rewritten == 1
    types = [o.op_type for o in r.graph.ops]
    assert "Concat" not in types and types[-2:] == ["Pad", "Add"]
    assert_same_as_ort(m, r.graph, tol=0.0)
    assert_reference_matches_ort(m, tol=0.0)


def test_constants_on_both_sides_negative_axis():
    m = _model(["c1", "x", "c0"], axis=-2)
    r = run_pass(upto(load(m), "concat_const"), "concat_const")
    assert r.rewritten == 1
    assert_same_as_ort(m, r.graph, tol=0.0)


def test_constant_between_activations_is_left_alone():
    consts = {"c0": RNG.standard_normal((1, 1, 8)).astype(np.float32)}
    nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Sigmoid", ["x"], ["b"]),
             helper.make_node("Concat", ["a", "c0", "b"], ["y"], axis=1)]
    m = model(nodes, [("x", F, [1, 5, 8])], [("y", F, [1, 11, 8])], consts)
    assert run_pass(upto(load(m), "concat_const"), "concat_const").rewritten == 0
