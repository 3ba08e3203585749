"""Pass 7, DepthwiseConv relabel."""
import numpy as np
from onnx import helper

from passes._build import F, assert_reference_matches_ort, assert_same_as_ort, load, model, run_pass, upto


def _m(c, group, oc=None):
    oc = oc or c
    w = np.random.default_rng(0).standard_normal((oc, c // group, 3, 3)).astype(np.float32)
    return model([helper.make_node("Conv", ["x", "w"], ["y"], group=group, pads=[1, 1, 1, 1])],
                 [("x", F, [1, c, 5, 5])], [("y", F, None)], {"w": w})


def test_group_equals_channels():
    m = _m(4, 4, oc=8)  # channel multiplier 2
    r = run_pass(upto(load(m), "depthwise_relabel"), "depthwise_relabel")
    assert r.rewritten == 1 and r.graph.ops[0].op_type == "DepthwiseConv"
    assert_same_as_ort(m, r.graph, tol=0.0)
    assert run_pass(r.graph, "depthwise_relabel").rewritten == 0


def test_grouped_and_single_channel_stay_conv():
    for m in (_m(4, 2), _m(1, 1, oc=4)):
        r = run_pass(upto(load(m), "depthwise_relabel"), "depthwise_relabel")
        assert r.rewritten == 0 and r.graph.ops[0].op_type == "Conv"


def test_reference_executor_agrees_with_ort():
    assert_reference_matches_ort(_m(4, 4, oc=8))
