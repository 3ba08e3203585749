"""Pass 10, ReduceMean to GlobalAveragePool."""
import numpy as np
from onnx import helper

from passes._build import F, assert_same_as_ort, load, model, run_pass, assert_reference_matches_ort


def test_keepdims_and_not():
    for keep in (1, 0):
        m = model([helper.make_node("ReduceMean", ["x"], ["y"], axes=[-1, -2], keepdims=keep)],
                  [("x", F, [1, 3, 4, 5])], [("y", F, None)], opset=13)
        r = run_pass(load(m), "reducemean_gap")
        assert r.rewritten == 1
        assert [op.op_type for op in r.graph.ops] == (["GlobalAveragePool"] if keep else
                                                      ["GlobalAveragePool", "Reshape"])
        assert_same_as_ort(m, r.graph, tol=1e-6)
        assert run_pass(r.graph, "reducemean_gap").rewritten == 0


def test_axes_operand_opset18_and_declined_channel_mean():
    m = model([helper.make_node("ReduceMean", ["x", "ax"], ["y"])], [("x", F, [1, 3, 4, 5])], [("y", F, None)],
              {"ax": np.array([2, 3], np.int64)}, opset=18)
    assert run_pass(load(m), "reducemean_gap").rewritten == 1
    m = model([helper.make_node("ReduceMean", ["x"], ["y"], axes=[1], name="rm")], [("x", F, [1, 3, 4, 5])],
              [("y", F, None)], opset=13)
    r = run_pass(load(m), "reducemean_gap")
    assert r.rewritten == 0 and r.declined[0].node == "rm"


def test_reference_executor_agrees_with_ort():
    for keep in (1, 0):
        assert_reference_matches_ort(model([helper.make_node("ReduceMean", ["x"], ["y"], axes=[2, 3], keepdims=keep)],
                                           [("x", F, [1, 3, 4, 5])], [("y", F, None)], opset=13))
