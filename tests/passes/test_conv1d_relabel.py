"""Pass 8, Conv1D relabel."""
import numpy as np
from onnx import helper

from passes._build import F, assert_same_as_ort, load, model, run_pass, upto, assert_reference_matches_ort


def test_rank3_conv_becomes_conv1d():
    w = np.random.default_rng(0).standard_normal((4, 2, 3)).astype(np.float32)
    m = model([helper.make_node("Conv", ["x", "w"], ["y"], group=1, dilations=[2], pads=[2, 2])],
              [("x", F, [1, 2, 10])], [("y", F, None)], {"w": w})
    r = run_pass(upto(load(m), "conv1d_relabel"), "conv1d_relabel")
    op = r.graph.ops[0]
    assert r.rewritten == 1 and op.op_type == "Conv1D"
    assert op.attrs["kernel_shape"] == [3] and op.attrs["pads"] == [2, 2] and op.attrs["dilations"] == [2]
    assert_same_as_ort(m, r.graph, tol=0.0)
    assert run_pass(r.graph, "conv1d_relabel").rewritten == 0


def test_kx1_2d_conv_is_not_relabeled():
    w = np.ones((4, 2, 3, 1), np.float32)
    m = model([helper.make_node("Conv", ["x", "w"], ["y"])], [("x", F, [1, 2, 10, 1])], [("y", F, None)], {"w": w})
    assert run_pass(upto(load(m), "conv1d_relabel"), "conv1d_relabel").rewritten == 0


def test_reference_executor_agrees_with_ort():
    w = np.random.default_rng(1).standard_normal((4, 2, 3)).astype(np.float32)
    assert_reference_matches_ort(model([helper.make_node("Conv", ["x", "w"], ["y"], dilations=[2], pads=[2, 2])],
                                       [("x", F, [1, 2, 10])], [("y", F, None)], {"w": w}))
