"""Extra pass: asymmetric (uint8-restated) weights requantized symmetric."""
import numpy as np
from onnx import TensorProto, helper

from passes._build import F, assert_reference_matches_ort, assert_same_as_ort, load, model, run_pass, upto

RNG = np.random.default_rng(0)
U8 = TensorProto.UINT8


def _m():
    """ORT's old default: uint8 activations and uint8 weights with a zero point, int32 bias."""
    nodes = [helper.make_node("QuantizeLinear", ["x", "sx", "zx"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "sx", "zx"], ["xd"]),
             helper.make_node("DequantizeLinear", ["wq", "sw", "zw"], ["w"]),
             helper.make_node("DequantizeLinear", ["bq", "sb"], ["b"]),
             helper.make_node("Conv", ["xd", "w", "b"], ["c"], name="conv"),
             helper.make_node("QuantizeLinear", ["c", "sy", "zy"], ["cq"]),
             helper.make_node("DequantizeLinear", ["cq", "sy", "zy"], ["y"])]
    inits = {"sx": np.float32(0.02), "zx": np.uint8(128), "wq": RNG.integers(0, 256, (4, 3, 3, 3)).astype(np.uint8),
             "sw": np.float32(0.01), "zw": np.uint8(120), "bq": np.int32([50, -20, 0, 7]),
             "sb": np.float32(0.02 * 0.01), "sy": np.float32(0.05), "zy": np.uint8(128)}
    return model(nodes, [("x", F, [1, 3, 5, 5])], [("y", F, None)], inits)


def test_uint8_weight_becomes_symmetric_int8():
    m = _m()
    g = upto(load(m), "symmetric_weights")
    conv = next(op for op in g.ops if op.op_type == "Conv")
    assert g.tensors[conv.inputs[1]].quant.zero_point.tolist() == [-8]  # 120 - 128 after the uint8 restatement
    r = run_pass(g, "symmetric_weights")
    conv = next(op for op in r.graph.ops if op.op_type == "Conv")
    w = r.graph.tensors[conv.inputs[1]]
    assert r.rewritten == 1 and w.dtype == "int8" and not np.any(w.quant.zero_point) and w.quant.axis == 0
    assert r.graph.tensors[conv.inputs[2]].dtype == "int32"
    # requantization moves each weight by half a step; the output may move by a few output LSB (scale 0.05)
    assert_same_as_ort(m, r.graph, tol=3 * 0.05)
    assert run_pass(r.graph, "symmetric_weights").rewritten == 0


def test_symmetric_weights_untouched_and_float_noop():
    f = model([helper.make_node("Conv", ["x", "w"], ["y"])], [("x", F, [1, 3, 4, 4])], [("y", F, None)],
              {"w": np.ones((2, 3, 1, 1), np.float32)})
    assert run_pass(load(f), "symmetric_weights").rewritten == 0


def test_reference_executor_agrees_with_ort():
    try:
        assert_reference_matches_ort(_m(), tol=3 * 0.05)
    except AssertionError as e:
        raise AssertionError(f"requantized weights drifted too far: {e}") from e
