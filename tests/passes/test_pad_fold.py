"""Extra pass: Pad folded into the following Conv / AveragePool; other Pads lifted to attributes."""
import numpy as np
from onnx import helper

from passes._build import F, assert_reference_matches_ort, assert_same_as_ort, load, model, run_pass, upto

RNG = np.random.default_rng(0)


def _m(value=0.0, reader="Conv"):
    nodes = [helper.make_node("Pad", ["x", "pads", "v"], ["p"], name="pad")]
    inits = {"pads": np.array([0, 0, 1, 2, 0, 0, 1, 0], np.int64), "v": np.float32(value)}
    if reader == "Conv":
        nodes.append(helper.make_node("Conv", ["p", "w"], ["y"], name="conv", pads=[1, 1, 1, 1]))
        inits["w"] = RNG.standard_normal((2, 3, 3, 3)).astype(np.float32)
    else:
        nodes.append(helper.make_node(reader, ["p"], ["y"], name="pool", kernel_shape=[3, 3]))
    return model(nodes, [("x", F, [1, 3, 5, 5])], [("y", F, None)], inits)


def test_pad_into_conv():
    m = _m()
    r = run_pass(upto(load(m), "pad_fold"), "pad_fold")
    assert r.rewritten == 1 and [op.op_type for op in r.graph.ops] == ["Conv"]
    assert r.graph.ops[0].attrs["pads"] == [2, 3, 2, 1]
    assert_same_as_ort(m, r.graph, tol=1e-6)
    assert run_pass(r.graph, "pad_fold").rewritten == 0


def test_pad_into_average_pool_counts_pad():
    m = _m(reader="AveragePool")
    g = run_pass(upto(load(m), "pad_fold"), "pad_fold").graph
    assert g.ops[0].attrs["count_include_pad"] == 1
    assert_same_as_ort(m, g, tol=1e-6)


def test_declined_nonzero_value_and_maxpool_then_lifted():
    r = run_pass(upto(load(_m(value=1.0)), "pad_fold"), "pad_fold")
    assert r.rewritten == 0 and "rule 2" in r.declined[0].reason
    pad = r.graph.ops[0]
    assert pad.attrs["pads"] == [0, 0, 1, 2, 0, 0, 1, 0] and pad.attrs["value"] == 1.0
    r = run_pass(upto(load(_m(reader="MaxPool")), "pad_fold"), "pad_fold")
    assert r.rewritten == 0 and r.declined[0].node == "pad" and "MaxPool" in r.declined[0].reason


def test_noop():
    m = model([helper.make_node("Relu", ["x"], ["y"])], [("x", F, [1, 4])], [("y", F, [1, 4])])
    assert run_pass(load(m), "pad_fold").rewritten == 0


def test_reference_executor_agrees_with_ort():
    assert_reference_matches_ort(_m())
