"""Extra pass: leading NHWC input Transpose."""
import numpy as np
from onnx import helper

from passes._build import F, assert_reference_matches_ort, assert_same_as_ort, load, model, run_pass, upto


def _m(perm, extra=False):
    w = np.random.default_rng(0).standard_normal((4, 3, 3, 3)).astype(np.float32)
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=perm), helper.make_node("Conv", ["t", "w"], ["y"])]
    outs = [("y", F, None)]
    if extra:
        nodes.append(helper.make_node("Relu", ["x"], ["z"]))
        outs.append(("z", F, None))
    return model(nodes, [("x", F, [1, 6, 5, 3])], outs, {"w": w})


def test_nhwc_input_transpose_removed():
    m = _m([0, 3, 1, 2])
    r = run_pass(upto(load(m), "input_transpose"), "input_transpose")
    g = r.graph
    assert r.rewritten == 1 and [op.op_type for op in g.ops] == ["Conv"]
    assert g.tensors["x"].shape == (1, 3, 6, 5) and g.tensors["x"].layout == "nhwc"
    assert g.boundary["x"].shape == (1, 6, 5, 3)
    assert_same_as_ort(m, g, tol=0.0)
    assert run_pass(g, "input_transpose").rewritten == 0


def test_other_perm_or_shared_input_left_alone():
    assert run_pass(upto(load(_m([0, 3, 2, 1])), "input_transpose"), "input_transpose").rewritten == 0
    assert run_pass(upto(load(_m([0, 3, 1, 2], extra=True)), "input_transpose"), "input_transpose").rewritten == 0


def test_reference_executor_agrees_with_ort():
    assert_reference_matches_ort(_m([0, 3, 1, 2]))


def test_float_input_quantized_then_transposed():
    """Float NHWC interface of an int8 model: the Q moves in front of the Transpose (QDQ rule 2b), which then goes."""
    from passes._build import I8  # noqa: F401  (documents the int8 intermediate)

    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[0, 3, 1, 2]),
             helper.make_node("QuantizeLinear", ["t", "s", "z"], ["tq"]),
             helper.make_node("DequantizeLinear", ["tq", "s", "z"], ["td"]),
             helper.make_node("DequantizeLinear", ["wq", "sw", "zw"], ["w"], axis=0),
             helper.make_node("Conv", ["td", "w"], ["c"]),
             helper.make_node("QuantizeLinear", ["c", "sy", "zy"], ["cq"]),
             helper.make_node("DequantizeLinear", ["cq", "sy", "zy"], ["y"])]
    inits = {"s": np.float32(0.05), "z": np.int8(1), "wq": np.random.default_rng(2).integers(-127, 128, (4, 3, 3, 3))
             .astype(np.int8), "sw": np.full(4, 0.01, np.float32), "zw": np.zeros(4, np.int8),
             "sy": np.float32(0.1), "zy": np.int8(0)}
    m = model(nodes, [("x", F, [1, 6, 5, 3])], [("y", F, None)], inits)
    from tigris.passes import normalize

    g, _ = normalize(load(m), check=True)
    assert [op.op_type for op in g.ops] == ["QuantizeLinear", "Conv", "DequantizeLinear"]
    assert g.tensors["x"].shape == (1, 3, 6, 5) and g.tensors["x"].layout == "nhwc"
    assert g.boundary["x"].shape == (1, 6, 5, 3)
    assert_same_as_ort(m, g, tol=0.0)
    assert_reference_matches_ort(m, tol=0.1 + 1e-6)  # float output of an int8 model: 1 output LSB (scale 0.1)


def _normalized_nhwc():
    """A TF export normalizing its NHWC input before transposing: (x - mean) / std -> Relu -> Transpose -> Conv."""
    w = np.random.default_rng(1).standard_normal((4, 3, 3, 3)).astype(np.float32)
    nodes = [helper.make_node("Sub", ["x", "mean"], ["s"]), helper.make_node("Div", ["s", "std"], ["d"]),
             helper.make_node("Relu", ["d"], ["r"]),
             helper.make_node("Transpose", ["r"], ["t"], perm=[0, 3, 1, 2]),
             helper.make_node("Conv", ["t", "w"], ["y"])]
    inits = {"w": w, "mean": np.float32([0.5, 0.4, 0.3]), "std": np.float32([0.2, 0.25, 0.3]).reshape(1, 1, 1, 3)}
    return model(nodes, [("x", F, [1, 6, 5, 3])], [("y", F, None)], inits)


def test_transpose_moves_before_elementwise_head():
    """Rule 5: the Transpose moves in front of the elementwise head (constants transposed) and then goes, so the
    head and the conv tile (regression: the Transpose stayed structural and the smallest budget was the whole
    model). Same numbers as ONNX Runtime within 1e-5 (float: only the constants' positions changed)."""
    m = _normalized_nhwc()
    r = run_pass(upto(load(m), "input_transpose"), "input_transpose")
    g = r.graph
    assert "Transpose" not in [op.op_type for op in g.ops]
    assert g.tensors["x"].shape == (1, 3, 6, 5) and g.tensors["x"].layout == "nhwc"
    assert_same_as_ort(m, g, tol=1e-5)
    assert_reference_matches_ort(m)
