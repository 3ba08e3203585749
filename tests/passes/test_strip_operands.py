"""Pass 13, metadata operand strip."""
import numpy as np
from onnx import helper

from passes._build import F, assert_same_as_ort, load, model, run_pass, upto, assert_reference_matches_ort


def test_reshape_squeeze_clip_pad_operands_dropped():
    nodes = [helper.make_node("Reshape", ["x", "shp"], ["a"]),
             helper.make_node("Unsqueeze", ["a", "ax"], ["b"]),
             helper.make_node("Squeeze", ["b", "ax"], ["c"]),
             helper.make_node("Clip", ["c", "lo", "hi"], ["d"]),
             helper.make_node("Pad", ["d", "pads", "v"], ["y"])]
    m = model(nodes, [("x", F, [1, 12])], [("y", F, None)],
              {"shp": np.array([1, 3, 4], np.int64), "ax": np.array([0], np.int64), "lo": np.float32(-1),
               "hi": np.float32(0.5), "pads": np.array([0, 0, 1, 0, 0, 2], np.int64), "v": np.float32(0.25)})
    g = upto(load(m), "strip_operands")
    r = run_pass(g, "strip_operands")
    assert r.rewritten >= 3 - 1  # the cleanup pass already merged Reshape->Unsqueeze->Squeeze into one Reshape
    assert all(len(op.inputs) == 1 for op in r.graph.ops)
    assert_same_as_ort(m, r.graph, tol=0.0)
    assert run_pass(r.graph, "strip_operands").rewritten == 0


def test_declined_runtime_bound_stays():
    m = model([helper.make_node("Clip", ["x", "lo"], ["y"], name="clip")], [("x", F, [1, 8]), ("lo", F, [])],
              [("y", F, [1, 8])])
    r = run_pass(upto(load(m), "strip_operands"), "strip_operands")
    assert r.rewritten == 0 and r.declined[0].node == "clip" and "rule 7" in r.declined[0].reason
    assert r.graph.ops[0].inputs == ("x", "lo")


def test_reference_executor_agrees_with_ort():
    nodes = [helper.make_node("Reshape", ["x", "shp"], ["a"]), helper.make_node("Clip", ["a", "lo", "hi"], ["y"])]
    assert_reference_matches_ort(model(nodes, [("x", F, [1, 12])], [("y", F, None)],
                                       {"shp": np.array([1, 3, 4], np.int64), "lo": np.float32(-1),
                                        "hi": np.float32(0.5)}))
