"""Extra pass: HardSigmoid/HardSwish recognition."""
import numpy as np
from onnx import helper

from passes._build import F, assert_reference_matches_ort, assert_same_as_ort, load, model, run_pass, upto


def _hswish_mobilenetv3():
    """x * Clip(x + 3, 0, 6) / 6 as torch exported it before HardSwish existed."""
    nodes = [helper.make_node("Add", ["x", "three"], ["a"]),
             helper.make_node("Clip", ["a", "zero", "six"], ["c"]),
             helper.make_node("Mul", ["x", "c"], ["m"]),
             helper.make_node("Div", ["m", "six"], ["y"], name="div")]
    return model(nodes, [("x", F, [1, 2, 4, 4])], [("y", F, [1, 2, 4, 4])],
                 {"three": np.float32(3), "zero": np.float32(0), "six": np.float32(6)})


def test_x_times_relu6_x_plus_3_over_6():
    m = _hswish_mobilenetv3()
    g = upto(load(m), "hard_activations")
    r = run_pass(g, "hard_activations")
    assert r.rewritten == 1 and [op.op_type for op in r.graph.ops] == ["HardSwish"]
    assert r.graph.ops[0].inputs == ("x",) and r.graph.ops[0].outputs == ("y",)
    assert_same_as_ort(m, r.graph, tol=1e-6)
    assert run_pass(r.graph, "hard_activations").rewritten == 0


def test_hardsigmoid_pattern_then_hardswish():
    nodes = [helper.make_node("Add", ["x", "three"], ["a"]), helper.make_node("Clip", ["a", "zero", "six"], ["c"]),
             helper.make_node("Div", ["c", "six"], ["h"]), helper.make_node("Mul", ["h", "x"], ["y"])]
    m = model(nodes, [("x", F, [1, 8])], [("y", F, [1, 8])],
              {"three": np.float32(3), "zero": np.float32(0), "six": np.float32(6)})
    g = run_pass(upto(load(m), "hard_activations"), "hard_activations").graph
    assert [op.op_type for op in g.ops] == ["HardSwish"]
    assert_same_as_ort(m, g, tol=1e-6)


def test_declined_when_intermediate_is_shared():
    nodes = [helper.make_node("Add", ["x", "three"], ["a"]), helper.make_node("Clip", ["a", "zero", "six"], ["c"]),
             helper.make_node("Div", ["c", "six"], ["h"]), helper.make_node("Mul", ["h", "x"], ["y"]),
             helper.make_node("Relu", ["a"], ["z"])]
    m = model(nodes, [("x", F, [1, 8])], [("y", F, [1, 8]), ("z", F, [1, 8])],
              {"three": np.float32(3), "zero": np.float32(0), "six": np.float32(6)})
    g = run_pass(upto(load(m), "hard_activations"), "hard_activations").graph
    assert "HardSwish" not in [op.op_type for op in g.ops]


def test_hardsigmoid_gets_explicit_defaults():
    m = model([helper.make_node("HardSigmoid", ["x"], ["y"])], [("x", F, [1, 8])], [("y", F, [1, 8])])
    r = run_pass(load(m), "hard_activations")
    assert r.graph.ops[0].attrs == {"alpha": 0.2, "beta": 0.5}
    assert run_pass(r.graph, "hard_activations").rewritten == 0


def test_reference_executor_agrees_with_ort():
    assert_reference_matches_ort(_hswish_mobilenetv3())
