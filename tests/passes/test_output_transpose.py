"""Pass 15, output transpose trim."""
import numpy as np
from onnx import helper

from passes._build import F, assert_reference_matches_ort, assert_same_as_ort, load, model, run_pass, upto


def _m(perm):
    w = np.random.default_rng(0).standard_normal((4, 3, 1, 1)).astype(np.float32)
    return model([helper.make_node("Conv", ["x", "w"], ["c"]), helper.make_node("Transpose", ["c"], ["y"], perm=perm,
                                                                                 name="tr")],
                 [("x", F, [1, 3, 5, 6])], [("y", F, None)], {"w": w})


def test_channels_last_output_transpose_removed():
    m = _m([0, 2, 3, 1])
    r = run_pass(upto(load(m), "output_transpose"), "output_transpose")
    g = r.graph
    assert r.rewritten == 1 and [op.op_type for op in g.ops] == ["Conv"]
    assert g.tensors["y"].shape == (1, 4, 5, 6) and g.tensors["y"].layout == "nhwc"
    assert g.boundary["y"].shape == (1, 5, 6, 4)
    assert any("Transpose" in n for n in g.notes)
    assert_same_as_ort(m, g, tol=0.0)
    assert run_pass(g, "output_transpose").rewritten == 0


def test_other_permutation_declined():
    r = run_pass(upto(load(_m([0, 1, 3, 2])), "output_transpose"), "output_transpose")
    assert r.rewritten == 0 and r.declined[0].node == "tr" and "rule 3" in r.declined[0].reason


def test_reference_executor_agrees_with_ort():
    assert_reference_matches_ort(_m([0, 2, 3, 1]))
