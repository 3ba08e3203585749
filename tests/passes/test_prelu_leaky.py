"""Extra pass: PRelu/LeakyRelu."""
import numpy as np
from onnx import helper

from passes._build import F, assert_same_as_ort, load, model, run_pass, assert_reference_matches_ort


def test_uniform_prelu_becomes_leakyrelu():
    m = model([helper.make_node("PRelu", ["x", "s"], ["y"])], [("x", F, [1, 3, 2, 2])], [("y", F, [1, 3, 2, 2])],
              {"s": np.full((3, 1, 1), 0.25, np.float32)})
    r = run_pass(load(m), "prelu_leaky")
    assert r.rewritten == 1 and r.graph.ops[0].op_type == "LeakyRelu" and r.graph.ops[0].attrs == {"alpha": 0.25}
    assert_same_as_ort(m, r.graph, tol=0.0)
    assert run_pass(r.graph, "prelu_leaky").rewritten == 0


def test_per_channel_prelu_reshaped_and_leaky_defaults():
    m = model([helper.make_node("PRelu", ["x", "s"], ["a"]), helper.make_node("LeakyRelu", ["a"], ["b"]),
               helper.make_node("LeakyRelu", ["b"], ["y"], alpha=0.0)],
              [("x", F, [1, 3, 2, 2])], [("y", F, [1, 3, 2, 2])],
              {"s": np.float32([0.1, 0.2, 0.3]).reshape(1, 3, 1, 1)})
    g = run_pass(load(m), "prelu_leaky").graph
    assert [op.op_type for op in g.ops] == ["PRelu", "LeakyRelu", "Relu"]
    assert g.weights[g.ops[0].inputs[1]].shape == (3, 1, 1) and g.ops[1].attrs == {"alpha": 0.01}
    assert_same_as_ort(m, g, tol=0.0)


def test_declined_runtime_slope():
    m = model([helper.make_node("PRelu", ["x", "s"], ["y"], name="p")], [("x", F, [1, 3]), ("s", F, [1, 3])],
              [("y", F, [1, 3])])
    r = run_pass(load(m), "prelu_leaky")
    assert r.rewritten == 0 and r.declined[0].node == "p"


def test_reference_executor_agrees_with_ort():
    m = model([helper.make_node("PRelu", ["x", "s"], ["a"]), helper.make_node("LeakyRelu", ["a"], ["y"])],
              [("x", F, [1, 3, 2, 2])], [("y", F, [1, 3, 2, 2])],
              {"s": np.float32([0.1, 0.2, 0.3]).reshape(3, 1, 1)})
    assert_reference_matches_ort(m)
