"""Pass 12, Resize scale extract."""
import numpy as np
from onnx import helper

from passes._build import F, assert_same_as_ort, load, model, run_pass, upto, assert_reference_matches_ort


def test_resize_scales_to_attributes():
    m = model([helper.make_node("Resize", ["x", "", "sc"], ["y"], mode="nearest", name="rs")],
              [("x", F, [1, 2, 3, 4])], [("y", F, None)], {"sc": np.float32([1, 1, 2, 3])}, opset=13)
    r = run_pass(upto(load(m), "resize_scales"), "resize_scales")
    op = r.graph.ops[0]
    assert r.rewritten == 1 and op.attrs["scales"] == [1, 1, 2, 3]
    assert op.attrs["coordinate_transformation_mode"] == "half_pixel" and op.attrs["mode"] == "nearest"
    assert run_pass(r.graph, "resize_scales").rewritten == 0
    g = run_pass(r.graph, "strip_operands").graph
    assert g.ops[0].inputs == ("x",)
    assert_same_as_ort(m, g, tol=0.0)


def test_upsample_opset9_is_asymmetric_resize():
    m = model([helper.make_node("Upsample", ["x", "sc"], ["y"], mode="nearest")], [("x", F, [1, 2, 3, 4])],
              [("y", F, None)], {"sc": np.float32([1, 1, 2, 2])}, opset=9)
    op = run_pass(load(m), "resize_scales").graph.ops[0]
    assert op.op_type == "Resize" and op.attrs["coordinate_transformation_mode"] == "asymmetric"


def test_sizes_resize_keeps_float_ratios_and_row_map():
    # 3x3 -> 5x5 by sizes (EfficientDet-Lite's BiFPN): the scales are the size ratios, row_src the rows each output
    # row reads (half_pixel, round_prefer_floor: 0 0 1 2 2).
    m = model([helper.make_node("Resize", ["x", "", "", "sz"], ["y"], name="rs")], [("x", F, [1, 2, 3, 3])],
              [("y", F, None)], {"sz": np.array([1, 2, 5, 5], np.int64)}, opset=13)
    r = run_pass(load(m), "resize_scales")
    op = r.graph.ops[0]
    assert r.rewritten == 1 and op.attrs["scales"] == [1.0, 1.0, 5 / 3, 5 / 3] and op.attrs["by_sizes"]
    assert op.attrs["row_src"] == [0, 0, 0, 0, 1, 1, 2, 2, 2, 2]
    g = run_pass(r.graph, "strip_operands").graph
    assert g.ops[0].inputs == ("x",)
    assert_same_as_ort(m, g, tol=0.0)


def test_declined_cubic():
    m = model([helper.make_node("Resize", ["x", "", "sc"], ["y"], mode="cubic", name="rs")], [("x", F, [1, 2, 4, 4])],
              [("y", F, None)], {"sc": np.float32([1, 1, 2, 2])}, opset=13)
    r = run_pass(load(m), "resize_scales")
    assert r.rewritten == 0 and r.declined[0].node == "rs" and "cubic" in r.declined[0].reason


def test_reference_executor_agrees_with_ort():
    m = model([helper.make_node("Resize", ["x", "", "sc"], ["y"], mode="nearest")], [("x", F, [1, 2, 3, 4])],
              [("y", F, None)], {"sc": np.float32([1, 1, 2, 2])}, opset=13)
    assert_reference_matches_ort(m)
