"""Extra pass: Sub/Div by a constant."""
import numpy as np
from onnx import helper

from passes._build import F, assert_same_as_ort, load, model, run_pass, assert_reference_matches_ort


def test_sub_and_div_by_constant():
    nodes = [helper.make_node("Sub", ["x", "m"], ["a"], name="sub"), helper.make_node("Div", ["a", "s"], ["y"])]
    m = model(nodes, [("x", F, [1, 3, 2, 2])], [("y", F, [1, 3, 2, 2])],
              {"m": np.float32([0.5, 0.4, 0.3]).reshape(1, 3, 1, 1), "s": np.float32([2, 4, 8]).reshape(1, 3, 1, 1)})
    r = run_pass(load(m), "sub_div_const")
    assert r.rewritten == 2 and [op.op_type for op in r.graph.ops] == ["Add", "Mul"]
    assert_same_as_ort(m, r.graph, tol=1e-6)  # 1/c is exact for powers of two; x + (-c) is exact
    assert run_pass(r.graph, "sub_div_const").rewritten == 0


def test_declined_division_by_zero_and_noop_for_constant_first():
    m = model([helper.make_node("Div", ["x", "z"], ["y"], name="div")], [("x", F, [1, 2])], [("y", F, [1, 2])],
              {"z": np.float32([1, 0])})
    r = run_pass(load(m), "sub_div_const")
    assert r.rewritten == 0 and "rule 2" in r.declined[0].reason
    m = model([helper.make_node("Sub", ["c", "x"], ["y"])], [("x", F, [1, 2])], [("y", F, [1, 2])],
              {"c": np.float32([1, 2])})
    assert run_pass(load(m), "sub_div_const").rewritten == 0


def test_reference_executor_agrees_with_ort():
    nodes = [helper.make_node("Sub", ["x", "m"], ["a"]), helper.make_node("Div", ["a", "s"], ["y"])]
    assert_reference_matches_ort(model(nodes, [("x", F, [1, 3, 2, 2])], [("y", F, [1, 3, 2, 2])],
                                       {"m": np.float32([0.5, 0.4, 0.3]).reshape(1, 3, 1, 1),
                                        "s": np.float32([3, 5, 7]).reshape(1, 3, 1, 1)}))
