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


def test_cubic_to_attributes_with_row_map():
    m = model([helper.make_node("Resize", ["x", "", "sc"], ["y"], mode="cubic", name="rs", cubic_coeff_a=-0.5,
                                exclude_outside=1)], [("x", F, [1, 2, 4, 4])],
              [("y", F, None)], {"sc": np.float32([1, 1, 2, 2])}, opset=13)
    r = run_pass(load(m), "resize_scales")
    op = r.graph.ops[0]
    assert r.rewritten == 1 and op.attrs["mode"] == "cubic" and op.attrs["cubic_coeff_a"] == -0.5
    assert op.attrs["exclude_outside"] == 1 and len(op.attrs["row_src"]) == 16
    # output row 0 (source -0.25) reads rows -2..1 clamped to 0..1
    assert op.attrs["row_src"][:2] == [0, 1]
    g = run_pass(r.graph, "strip_operands").graph
    assert_same_as_ort(m, g, tol=1e-5)


def test_tf_crop_and_resize_roi_becomes_an_attribute():
    m = model([helper.make_node("Resize", ["x", "roi", "", "sz"], ["y"], mode="linear", name="rs",
                                coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=10.0,
                                axes=[3, 2])], [("x", F, [1, 1, 4, 4])], [("y", F, None)],
              {"roi": np.float32([0.4, 0.6, 1.2, 0.8]), "sz": np.array([3, 3], np.int64)}, opset=18)
    r = run_pass(load(m), "resize_scales")
    op = r.graph.ops[0]
    assert r.rewritten == 1 and op.attrs["roi_hw"] == [0, 0, np.float32(0.6), np.float32(0.4), 1, 1,
                                                       np.float32(0.8), np.float32(1.2)]
    assert op.attrs["extrapolation_value"] == 10.0


def test_declined_crop_of_channels():
    m = model([helper.make_node("Resize", ["x", "roi", "", "sz"], ["y"], mode="linear", name="rs",
                                coordinate_transformation_mode="tf_crop_and_resize")], [("x", F, [1, 3, 4, 4])],
              [("y", F, None)], {"roi": np.float32([0, 0.2, 0, 0, 1, 0.9, 1, 1]),
                                 "sz": np.array([1, 3, 3, 3], np.int64)}, opset=13)
    r = run_pass(load(m), "resize_scales")
    assert r.rewritten == 0 and r.declined[0].node == "rs" and "crops axis 1" in r.declined[0].reason


def test_reference_executor_agrees_with_ort():
    m = model([helper.make_node("Resize", ["x", "", "sc"], ["y"], mode="nearest")], [("x", F, [1, 2, 3, 4])],
              [("y", F, None)], {"sc": np.float32([1, 1, 2, 2])}, opset=13)
    assert_reference_matches_ort(m)
