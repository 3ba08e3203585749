"""Extra pass: asymmetric (uint8-restated) weights restated symmetric where exact, otherwise kept as they are."""
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


def test_uint8_weight_outside_int8_keeps_its_zero_point():
    """Weights spanning 0..255 around zero point 120 cannot be restated in int8: the pass keeps them (the kernels
    subtract the zero point exactly) and the graph still equals ORT exactly."""
    m = _m()
    g = upto(load(m), "symmetric_weights")
    conv = next(op for op in g.ops if op.op_type == "Conv")
    assert g.tensors[conv.inputs[1]].quant.zero_point.tolist() == [-8]  # 120 - 128 after the uint8 restatement
    r = run_pass(g, "symmetric_weights")
    assert r.rewritten == 0 and any("exceeds int8" in d.reason for d in r.declined)
    assert r.graph.tensors[conv.inputs[1]].quant.zero_point.tolist() == [-8]
    assert_same_as_ort(m, r.graph, tol=0.0)


def test_uint8_weight_inside_int8_is_restated_exactly():
    """Weights within zp +- 127 become q - zp with zero point 0 and the same scale: the same numbers."""
    m = _m()
    g = upto(load(m), "symmetric_weights")
    conv = next(op for op in g.ops if op.op_type == "Conv")
    w = RNG.integers(-120, 127, size=g.weights[conv.inputs[1]].shape).astype(np.int8)  # w - (-8) <= 127 - 8 + 8
    g.weights[conv.inputs[1]] = np.clip(w, -128, 119).astype(np.int8)
    r = run_pass(g, "symmetric_weights")
    conv2 = next(op for op in r.graph.ops if op.op_type == "Conv")
    wt = r.graph.tensors[conv2.inputs[1]]
    assert r.rewritten == 1 and not np.any(wt.quant.zero_point)
    np.testing.assert_array_equal(r.graph.weights[conv2.inputs[1]].astype(np.int64),
                                  g.weights[conv.inputs[1]].astype(np.int64) + 8)
    assert np.array_equal(wt.quant.scale, g.tensors[conv.inputs[1]].quant.scale)
    assert run_pass(r.graph, "symmetric_weights").rewritten == 0


def test_symmetric_weights_untouched_and_float_noop():
    f = model([helper.make_node("Conv", ["x", "w"], ["y"])], [("x", F, [1, 3, 4, 4])], [("y", F, None)],
              {"w": np.ones((2, 3, 1, 1), np.float32)})
    assert run_pass(load(f), "symmetric_weights").rewritten == 0


def test_reference_executor_agrees_with_ort():
    # exact weight zero points: only ORT's float evaluation of the same integers differs (at most one output step)
    assert_reference_matches_ort(_m(), tol=1.01 * 0.05)
