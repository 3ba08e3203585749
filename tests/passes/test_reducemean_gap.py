"""Pass 10, ReduceMean to GlobalAveragePool."""
import numpy as np
from onnx import helper

from passes._build import F, assert_same_as_ort, load, model, run_pass, upto, assert_reference_matches_ort


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


def test_global_max_pool_becomes_whole_image_max_pool(tmp_path):
    """Rule 5 (regression: GlobalMaxPool had no kernel and was refused). Float within verify's 1e-4 x max(1, max|ref|)
    of ONNX Runtime, on the C runtime."""
    from tigris import api

    w = np.random.default_rng(0).standard_normal((4, 3, 3, 3)).astype(np.float32)
    m = model([helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
               helper.make_node("GlobalMaxPool", ["c"], ["y"])],
              [("x", F, [1, 3, 6, 5])], [("y", F, [1, 4, 1, 1])], {"w": w})
    g = run_pass(upto(load(m), "reducemean_gap"), "reducemean_gap").graph
    mp = next(op for op in g.ops if op.op_type == "MaxPool")
    assert list(mp.attrs["kernel_shape"]) == [6, 5]
    assert_same_as_ort(m, g, tol=1e-6)
    p = tmp_path / "gmp.onnx"
    p.write_bytes(m.SerializeToString())
    assert api.verify(p, "1M")["pass"]
