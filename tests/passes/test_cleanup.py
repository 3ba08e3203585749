"""Extra pass: Identity/Dropout removal and reshape merging."""
import numpy as np
from onnx import helper

from passes._build import F, assert_reference_matches_ort, assert_same_as_ort, load, model, run_pass, upto


def test_identity_and_dropout_removed():
    nodes = [helper.make_node("Identity", ["x"], ["a"], name="I"),
             helper.make_node("Relu", ["a"], ["b"], name="R"),
             helper.make_node("Dropout", ["b"], ["c"], name="D"),
             helper.make_node("Sigmoid", ["c"], ["y"], name="S")]
    m = model(nodes, [("x", F, [1, 4])], [("y", F, [1, 4])])
    r = run_pass(upto(load(m), "cleanup"), "cleanup")
    assert r.rewritten == 2
    assert [op.op_type for op in r.graph.ops] == ["Relu", "Sigmoid"]
    assert r.graph.ops[0].inputs == ("x",)
    assert_same_as_ort(m, r.graph, tol=0.0)
    assert run_pass(r.graph, "cleanup").rewritten == 0  # idempotent


def test_identity_writing_graph_output_renames_producer():
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="R"), helper.make_node("Identity", ["a"], ["y"], name="I")]
    m = model(nodes, [("x", F, [1, 4])], [("y", F, [1, 4])])
    r = run_pass(load(m), "cleanup")
    assert [(op.name, op.outputs) for op in r.graph.ops] == [("R", ("y",))]
    assert_same_as_ort(m, r.graph, tol=0.0)


def test_identity_joining_input_to_output_becomes_a_copy(tmp_path):
    """Rule 4: nothing to bypass into (both names are the interface), so it becomes a Reshape, which copies."""
    m = model([helper.make_node("Identity", ["x"], ["y"], name="I")], [("x", F, [1, 4])], [("y", F, [1, 4])])
    r = run_pass(load(m), "cleanup")
    assert r.rewritten == 1 and [op.op_type for op in r.graph.ops] == ["Reshape"]
    assert_same_as_ort(m, r.graph, tol=0.0)
    p = tmp_path / "identity.onnx"
    p.write_bytes(m.SerializeToString())
    from tigris import api

    assert api.verify(p, "64K")["pass"]


def test_back_to_back_reshapes_merge():
    nodes = [helper.make_node("Relu", ["x"], ["a"]),
             helper.make_node("Reshape", ["a", "s1"], ["b"], name="R1"),
             helper.make_node("Flatten", ["b"], ["c"], name="R2", axis=1),
             helper.make_node("Relu", ["c"], ["y"])]
    m = model(nodes, [("x", F, [1, 2, 3, 4])], [("y", F, [1, 24])], {"s1": np.array([1, 6, 4], np.int64)})
    r = run_pass(load(m), "cleanup")
    assert r.rewritten == 1
    assert [op.op_type for op in r.graph.ops] == ["Relu", "Reshape", "Relu"]
    assert_same_as_ort(m, r.graph, tol=0.0)


def test_noop():
    m = model([helper.make_node("Relu", ["x"], ["y"])], [("x", F, [1, 4])], [("y", F, [1, 4])])
    assert run_pass(load(m), "cleanup").rewritten == 0


def test_reference_executor_agrees_with_ort():
    nodes = [helper.make_node("Identity", ["x"], ["a"]), helper.make_node("Relu", ["a"], ["b"]),
             helper.make_node("Dropout", ["b"], ["y"])]
    assert_reference_matches_ort(model(nodes, [("x", F, [1, 4])], [("y", F, [1, 4])]))


def test_same_shape_reshape_is_removed():
    nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Reshape", ["a", "s"], ["b"], name="same"),
             helper.make_node("Sigmoid", ["b"], ["y"])]
    m = model(nodes, [("x", F, [1, 4, 1, 1])], [("y", F, None)], {"s": np.array([1, 4, 1, 1], np.int64)})
    r = run_pass(load(m), "cleanup")
    assert r.rewritten == 1 and [op.op_type for op in r.graph.ops] == ["Relu", "Sigmoid"]
    assert_same_as_ort(m, r.graph, tol=0.0)
