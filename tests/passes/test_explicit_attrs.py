"""Extra pass: explicit Conv/pool attributes, auto_pad resolved."""
import numpy as np
from onnx import helper

from passes._build import F, assert_reference_matches_ort, assert_same_as_ort, load, model, run_pass


def _m(auto_pad="SAME_UPPER"):
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", auto_pad=auto_pad, strides=[2, 2]),
             helper.make_node("MaxPool", ["c"], ["y"], name="pool", kernel_shape=[2, 2], auto_pad="SAME_LOWER",
                              strides=[2, 2])]
    w = np.random.default_rng(0).standard_normal((4, 3, 3, 3)).astype(np.float32)
    return model(nodes, [("x", F, [1, 3, 9, 8])], [("y", F, None)], {"w": w})


def test_defaults_and_same_padding():
    m = _m()
    r = run_pass(load(m), "explicit_attrs")
    conv, pool = r.graph.ops
    assert r.rewritten == 2
    assert conv.attrs["kernel_shape"] == [3, 3] and conv.attrs["dilations"] == [1, 1] and conv.attrs["group"] == 1
    # H: out 5, total pad (5-1)*2+3-9 = 2 -> 1/1; W: out 4, total (4-1)*2+3-8 = 1 -> SAME_UPPER puts it at the end
    assert conv.attrs["pads"] == [1, 0, 1, 1] and "auto_pad" not in conv.attrs
    assert pool.attrs["ceil_mode"] == 0 and pool.attrs["dilations"] == [1, 1]
    assert_same_as_ort(m, r.graph, tol=0.0)


def test_idempotent_and_noop():
    g = run_pass(load(_m()), "explicit_attrs").graph
    assert run_pass(g, "explicit_attrs").rewritten == 0
    m = model([helper.make_node("Relu", ["x"], ["y"])], [("x", F, [1, 4])], [("y", F, [1, 4])])
    assert run_pass(load(m), "explicit_attrs").rewritten == 0


def test_valid_padding():
    g = run_pass(load(_m("VALID")), "explicit_attrs").graph
    assert g.ops[0].attrs["pads"] == [0, 0, 0, 0]


def test_reference_executor_agrees_with_ort():
    assert_reference_matches_ort(_m())
