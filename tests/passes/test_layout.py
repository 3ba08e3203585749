"""The layout pass: layouts, aliases, Flatten->Gemm weight permutation, inserted Transposes."""
import numpy as np
from onnx import helper

from passes._build import F, assert_reference_matches_ort, assert_same_as_ort, load, model, run_pass
from tigris.passes import normalize
from tigris.layout import byte_order

RNG = np.random.default_rng(0)


def _full(m):
    g, _ = normalize(load(m), check=True)
    return g


def test_layouts_by_rank_and_gap_reshape_alias():
    w = RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"]), helper.make_node("GlobalAveragePool", ["c"], ["p"]),
             helper.make_node("Flatten", ["p"], ["y"])]
    m = model(nodes, [("x", F, [1, 3, 6, 6])], [("y", F, None)], {"w": w})
    g = _full(m)
    assert g.tensors["c"].layout == "nhwc" and g.tensors["y"].layout == "plain"
    flat = g.ops[-1]
    assert flat.op_type == "Flatten" and flat.attrs["alias"] and "nhwc_order" not in flat.attrs
    assert g.tensors["w"].layout == "plain"
    assert_same_as_ort(m, g, tol=1e-6)
    assert run_pass(g, "layout").rewritten == 0  # idempotent


def test_flatten_to_gemm_permutes_weight_columns():
    w = RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)
    fc = RNG.standard_normal((5, 4 * 4 * 4)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"]), helper.make_node("Flatten", ["c"], ["f"]),
             helper.make_node("Gemm", ["f", "fc"], ["y"], transB=1)]
    m = model(nodes, [("x", F, [1, 3, 6, 6])], [("y", F, None)], {"w": w, "fc": fc})
    g = _full(m)
    flat = next(op for op in g.ops if op.op_type == "Flatten")
    gemm = next(op for op in g.ops if op.op_type == "Gemm")
    assert flat.attrs["alias"] and flat.attrs["nhwc_order"]
    order = byte_order((1, 4, 4, 4), "nhwc")
    assert np.array_equal(g.weights[gemm.inputs[1]], fc[:, order])
    assert "Transpose" not in [op.op_type for op in g.ops]
    assert_same_as_ort(m, g, tol=1e-5)


def test_reshape_with_different_byte_order_gets_transposes():
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Reshape", ["r", "s"], ["q"]),
             helper.make_node("Sigmoid", ["q"], ["y"])]
    m = model(nodes, [("x", F, [1, 2, 3, 4])], [("y", F, None)], {"s": np.array([1, 4, 6], np.int64)})
    g = _full(m)
    types = [op.op_type for op in g.ops]
    assert types == ["Relu", "Transpose", "Reshape", "Transpose", "Sigmoid"]
    assert g.tensors["q"].layout == "nwc" and all(op.attrs.get("alias") for op in g.ops if op.op_type == "Reshape")
    assert_same_as_ort(m, g, tol=0.0)


def test_input_read_only_by_reshape_stays_plain():
    nodes = [helper.make_node("Reshape", ["x", "s"], ["q"]), helper.make_node("Relu", ["q"], ["y"])]
    m = model(nodes, [("x", F, [1, 5, 4, 1])], [("y", F, None)], {"s": np.array([1, 1, 5, 4], np.int64)})
    g = _full(m)
    assert g.tensors["x"].layout == "plain" and [op.op_type for op in g.ops] == ["Reshape", "Relu"]
    assert_same_as_ort(m, g, tol=0.0)


def test_reference_executor_agrees_with_ort():
    w = RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)
    fc = RNG.standard_normal((5, 4 * 4 * 4)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"]), helper.make_node("Flatten", ["c"], ["f"]),
             helper.make_node("Gemm", ["f", "fc"], ["y"], transB=1)]
    assert_reference_matches_ort(model(nodes, [("x", F, [1, 3, 6, 6])], [("y", F, None)], {"w": w, "fc": fc}))
