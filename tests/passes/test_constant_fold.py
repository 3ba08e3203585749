"""Pass 1, constant op fold."""
import numpy as np
from onnx import helper, numpy_helper

from passes._build import F, assert_reference_matches_ort, assert_same_as_ort, load, model, run_pass


def _m(out_const=False):
    nodes = [helper.make_node("Constant", [], ["k"], value=numpy_helper.from_array(np.float32([[2.0, 3.0]]), "k"),
                              name="C"),
             helper.make_node("Mul", ["x", "k"], ["y"], name="M")]
    outs = [("y", F, [1, 2])] + ([("k", F, [1, 2])] if out_const else [])
    return model(nodes, [("x", F, [1, 2])], outs)


def test_constant_becomes_weight():
    m = _m()
    g = load(m)
    r = run_pass(g, "constant_fold")
    assert r.rewritten == 1
    assert [op.op_type for op in r.graph.ops] == ["Mul"]
    assert np.array_equal(r.graph.weights["k"], [[2.0, 3.0]])
    assert_same_as_ort(m, r.graph, tol=0.0)


def test_declined_when_constant_is_graph_output():
    r = run_pass(load(_m(out_const=True)), "constant_fold")
    assert r.rewritten == 0
    assert [d.node for d in r.declined] == ["C"] and "rule 2" in r.declined[0].reason


def test_noop_and_idempotent():
    g = run_pass(load(_m()), "constant_fold").graph
    again = run_pass(g, "constant_fold")
    assert again.rewritten == 0 and again.declined == ()
    plain = load(model([helper.make_node("Relu", ["x"], ["y"])], [("x", F, [1, 2])], [("y", F, [1, 2])]))
    assert run_pass(plain, "constant_fold").rewritten == 0


def test_reference_executor_agrees_with_ort():
    assert_reference_matches_ort(_m())
