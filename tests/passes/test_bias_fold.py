"""Pass 5, constant bias fold."""
import numpy as np
from onnx import helper

from passes._build import F, I8, assert_reference_matches_ort, assert_same_as_ort, load, model, run_pass, upto

RNG = np.random.default_rng(0)


def _dense(bias_int32=True, float_out=False):
    """TFLite style: int8 MatMul, then Add of an int32 DequantizeLinear bias, then Q."""
    nodes = [helper.make_node("DequantizeLinear", ["xq", "sx", "zx"], ["x"]),
             helper.make_node("DequantizeLinear", ["wq", "sw", "zw"], ["w"]),
             helper.make_node("MatMul", ["x", "w"], ["mm"], name="mm")]
    inits = {"sx": np.float32(0.05), "zx": np.int8(-3), "wq": RNG.integers(-127, 128, (8, 3)).astype(np.int8),
             "sw": np.float32(0.02), "zw": np.int8(0)}
    if bias_int32:
        nodes.append(helper.make_node("DequantizeLinear", ["bq", "sb", "zb"], ["b"]))
        inits.update(bq=np.int32([100, -50, 7]), sb=np.float32(0.05 * 0.02), zb=np.int32(0))
    else:
        inits["b"] = np.float32([0.1, -0.2, 0.3])
    if float_out:  # ORT style: the product is quantized, dequantized, then a float Add writes the float output
        nodes += [helper.make_node("QuantizeLinear", ["mm", "sy", "zy"], ["mq"]),
                  helper.make_node("DequantizeLinear", ["mq", "sy", "zy"], ["md"]),
                  helper.make_node("Add", ["md", "b"], ["y"], name="add")]
        outs = [("y", F, [1, 3])]
    else:
        nodes += [helper.make_node("Add", ["mm", "b"], ["s"], name="add"),
                  helper.make_node("QuantizeLinear", ["s", "sy", "zy"], ["y"])]
        outs = [("y", I8, [1, 3])]
    inits.update(sy=np.float32(0.1), zy=np.int8(4))
    return model(nodes, [("xq", I8, [1, 8])], outs, inits)


def test_int32_bias_becomes_gemm_bias():
    m = _dense()
    r = run_pass(upto(load(m), "bias_fold"), "bias_fold")
    g = r.graph
    assert r.rewritten == 1 and [op.op_type for op in g.ops] == ["Gemm"]
    b = g.tensors[g.ops[0].inputs[2]]
    assert b.dtype == "int32" and np.array_equal(g.weights[b.name], [100, -50, 7])
    assert_same_as_ort(m, g, tol=0.0)
    assert run_pass(g, "bias_fold").rewritten == 0


def test_float_add_after_dequantized_product():
    m = _dense(bias_int32=False, float_out=True)
    g = run_pass(upto(load(m), "bias_fold"), "bias_fold").graph
    assert [op.op_type for op in g.ops] == ["Gemm", "DequantizeLinear"]
    # the bias is rounded to the accumulator scale 0.001: the float output moves by at most half a step of it
    assert_same_as_ort(m, g, tol=0.1)


def test_float_graph_left_alone():
    m = model([helper.make_node("MatMul", ["x", "w"], ["mm"]), helper.make_node("Add", ["mm", "b"], ["y"])],
              [("x", F, [1, 4])], [("y", F, [1, 2])],
              {"w": np.ones((4, 2), np.float32), "b": np.float32([1, 2])})
    r = run_pass(upto(load(m), "bias_fold"), "bias_fold")
    assert r.rewritten == 0 and r.declined == ()


def test_declined_when_constant_varies_spatially():
    nodes = [helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["x"]),
             helper.make_node("DequantizeLinear", ["wq", "s", "z"], ["w"]),
             helper.make_node("Conv", ["x", "w"], ["c"]),
             helper.make_node("Add", ["c", "k"], ["a"], name="add"),
             helper.make_node("QuantizeLinear", ["a", "s", "z"], ["y"])]
    m = model(nodes, [("xq", I8, [1, 2, 2, 2])], [("y", I8, [1, 2, 2, 2])],
              {"s": np.float32(0.1), "z": np.int8(0), "wq": np.ones((2, 2, 1, 1), np.int8),
               "k": RNG.standard_normal((1, 2, 2, 2)).astype(np.float32)})
    r = run_pass(upto(load(m), "bias_fold"), "bias_fold")
    assert r.rewritten == 0 and r.declined[0].node == "add" and "rule 2" in r.declined[0].reason


def test_reference_executor_agrees_with_ort():
    assert_reference_matches_ort(_dense(), lsb=1)


def test_token_matmul_takes_its_bias(tmp_path):
    """ORT QDQ int8 of a [1, T, K] x [K, OC] MatMul + bias Add (a transformer's dense layer): the MatMul stays strided
    (matmul_relabel rule 6b) and the Add folds into its C input per output column; the reference agrees with ONNX
    Runtime within 1 LSB of the output scale."""
    import onnx

    from tigris.passes import normalize
    from tigris_testing import saved_model

    rng = np.random.default_rng(3)
    m = model([helper.make_node("MatMul", ["x", "w"], ["t"]), helper.make_node("Add", ["t", "b"], ["y"])],
              [("x", F, [1, 5, 6])], [("y", F, [1, 5, 4])],
              {"w": rng.standard_normal((6, 4)).astype(np.float32), "b": rng.standard_normal(4).astype(np.float32)},
              opset=13)
    q = onnx.load(str(saved_model(tmp_path, m, "d", True)))
    g, _ = normalize(load(q), check=True)
    (mm,) = [op for op in g.ops if op.op_type == "MatMul"]
    assert len(mm.inputs) == 3 and not any(op.op_type == "Add" for op in g.ops)
    assert_reference_matches_ort(q, tol=0.02)
