"""Pass 16, activation fuse (quantization-aware)."""
import numpy as np
from onnx import helper

from passes._build import F, I8, assert_reference_matches_ort, assert_same_as_ort, load, model, run_pass, upto

RNG = np.random.default_rng(0)


def test_float_conv_relu_and_add_relu6():
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"]), helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Add", ["r", "x"], ["a"]), helper.make_node("Clip", ["a", "lo", "hi"], ["y"])]
    m = model(nodes, [("x", F, [1, 3, 4, 4])], [("y", F, None)],
              {"w": RNG.standard_normal((3, 3, 1, 1)).astype(np.float32), "lo": np.float32(0), "hi": np.float32(6)})
    r = run_pass(upto(load(m), "activation_fuse"), "activation_fuse")
    g = r.graph
    assert r.rewritten == 2 and [op.op_type for op in g.ops] == ["Conv", "Add"]
    assert g.ops[0].attrs["fused_activation"] == "relu" and g.ops[1].attrs["fused_activation"] == "relu6"
    assert g.ops[1].outputs == ("y",)
    assert_same_as_ort(m, g, tol=0.0)
    assert run_pass(g, "activation_fuse").rewritten == 0


def _int8(own_scale: bool):
    nodes = [helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["x"]),
             helper.make_node("DequantizeLinear", ["wq", "sw", "z"], ["w"]),
             helper.make_node("Conv", ["x", "w"], ["c"], name="conv")]
    if own_scale:
        nodes += [helper.make_node("QuantizeLinear", ["c", "s2", "z"], ["cq"]),
                  helper.make_node("DequantizeLinear", ["cq", "s2", "z"], ["cd"])]
    nodes += [helper.make_node("Relu", ["cd" if own_scale else "c"], ["r"], name="relu"),
              helper.make_node("QuantizeLinear", ["r", "s", "zr"], ["y"])]
    return model(nodes, [("xq", I8, [1, 3, 4, 4])], [("y", I8, None)],
                 {"s": np.float32(0.05), "z": np.int8(0), "zr": np.int8(-128), "s2": np.float32(0.07),
                  "sw": np.float32(0.01), "wq": RNG.integers(-127, 128, (2, 3, 1, 1)).astype(np.int8)})


def test_int8_unquantized_intermediate_fuses():
    m = _int8(own_scale=False)
    g = run_pass(upto(load(m), "activation_fuse"), "activation_fuse").graph
    assert [op.op_type for op in g.ops] == ["Conv"] and g.ops[0].attrs["fused_activation"] == "relu"
    assert g.tensors[g.ops[0].outputs[0]].quant.zero_point.tolist() == [-128]
    assert_same_as_ort(m, g, tol=0.0)


def test_int8_intermediate_with_own_scale_declined():
    r = run_pass(upto(load(_int8(own_scale=True)), "activation_fuse"), "activation_fuse")
    assert r.rewritten == 0 and r.declined[0].node == "relu" and "rule 3" in r.declined[0].reason


def test_reference_executor_agrees_with_ort():
    assert_reference_matches_ort(_int8(own_scale=False), lsb=1)
