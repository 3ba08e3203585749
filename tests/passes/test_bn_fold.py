"""Pass 4, BatchNorm fold (float and int8 weights)."""
import numpy as np
from onnx import helper

from passes._build import F, I8, assert_reference_matches_ort, assert_same_as_ort, load, model, run_pass, upto

RNG = np.random.default_rng(0)


def _bn_inits(c):
    return {"g": RNG.uniform(0.5, 1.5, c).astype(np.float32), "be": RNG.standard_normal(c).astype(np.float32),
            "mu": RNG.standard_normal(c).astype(np.float32), "var": RNG.uniform(0.5, 2, c).astype(np.float32)}


def test_float_fold():
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv"),
             helper.make_node("BatchNormalization", ["c", "g", "be", "mu", "var"], ["y"], name="bn")]
    inits = {"w": RNG.standard_normal((4, 3, 3, 3)).astype(np.float32), "b": RNG.standard_normal(4).astype(np.float32),
             **_bn_inits(4)}
    m = model(nodes, [("x", F, [1, 3, 6, 6])], [("y", F, [1, 4, 4, 4])], inits)
    r = run_pass(upto(load(m), "bn_fold"), "bn_fold")
    assert r.rewritten == 1 and [op.op_type for op in r.graph.ops] == ["Conv"]
    assert r.graph.ops[0].outputs == ("y",)
    assert_same_as_ort(m, r.graph, tol=1e-5)
    assert run_pass(r.graph, "bn_fold").rewritten == 0


def test_int8_weights_refold_and_requantize():
    nodes = [helper.make_node("DequantizeLinear", ["xq", "sx", "zx"], ["x"]),
             helper.make_node("DequantizeLinear", ["wq", "sw", "zw"], ["w"], axis=0),
             helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
             helper.make_node("BatchNormalization", ["c", "g", "be", "mu", "var"], ["bnout"], name="bn"),
             helper.make_node("QuantizeLinear", ["bnout", "sy", "zy"], ["y"])]
    inits = {"sx": np.float32(0.05), "zx": np.int8(0), "wq": RNG.integers(-127, 128, (4, 3, 1, 1)).astype(np.int8),
             "sw": np.float32([0.01, 0.02, 0.03, 0.04]), "zw": np.zeros(4, np.int8), "sy": np.float32(0.2),
             "zy": np.int8(0), **_bn_inits(4)}
    m = model(nodes, [("xq", I8, [1, 3, 4, 4])], [("y", I8, [1, 4, 4, 4])], inits)
    r = run_pass(upto(load(m), "bn_fold"), "bn_fold")
    g = r.graph
    assert r.rewritten == 1 and [op.op_type for op in g.ops] == ["Conv"]
    w, b = g.tensors[g.ops[0].inputs[1]], g.tensors[g.ops[0].inputs[2]]
    assert w.dtype == "int8" and w.quant.axis == 0 and b.dtype == "int32"
    assert np.abs(g.weights[w.name]).max() == 127  # symmetric per-channel requantization uses the full range
    # requantizing the weight costs at most a rounding step: 1 LSB of the int8 output
    assert_same_as_ort(m, g, tol=1.0 / 128)


def test_standalone_bn_becomes_mul_add():
    m = model([helper.make_node("BatchNormalization", ["x", "g", "be", "mu", "var"], ["y"], name="bn")],
              [("x", F, [1, 4, 3, 3])], [("y", F, [1, 4, 3, 3])], _bn_inits(4))
    r = run_pass(load(m), "bn_fold")
    assert [op.op_type for op in r.graph.ops] == ["Mul", "Add"]
    assert_same_as_ort(m, r.graph, tol=1e-6)


def test_declined_with_runtime_parameters():
    m = model([helper.make_node("BatchNormalization", ["x", "g", "be", "mu", "var"], ["y"], name="bn")],
              [("x", F, [1, 4, 3, 3]), ("g", F, [4])], [("y", F, [1, 4, 3, 3])],
              {k: v for k, v in _bn_inits(4).items() if k != "g"})
    r = run_pass(load(m), "bn_fold")
    assert r.rewritten == 0 and r.declined[0].node == "bn" and "rule 1" in r.declined[0].reason


def test_noop():
    m = model([helper.make_node("Relu", ["x"], ["y"])], [("x", F, [1, 4])], [("y", F, [1, 4])])
    assert run_pass(load(m), "bn_fold").rewritten == 0


def test_reference_executor_agrees_with_ort():
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"]),
             helper.make_node("BatchNormalization", ["c", "g", "be", "mu", "var"], ["y"])]
    inits = {"w": RNG.standard_normal((4, 3, 3, 3)).astype(np.float32), **_bn_inits(4)}
    assert_reference_matches_ort(model(nodes, [("x", F, [1, 3, 6, 6])], [("y", F, [1, 4, 4, 4])], inits))


def test_quantized_bn_parameters_are_dequantized():
    """ONNX Runtime's QDQ quantizer stores an unfolded BatchNorm's gamma as int8 and beta as an int32 "bias", each
    behind a DequantizeLinear: the fold must use their real values (regression: it used the raw codes, cosine 0.88 on
    a ResNet stem). Tolerance: 1 LSB of the int8 output (the weight requantization rounds once)."""
    c = 4
    p = _bn_inits(c)
    sg = np.float32(np.abs(p["g"]).max() / 127)
    sbe = np.float32(0.05 * sg)
    nodes = [helper.make_node("DequantizeLinear", ["xq", "sx", "zx"], ["x"]),
             helper.make_node("DequantizeLinear", ["wq", "sw", "zw"], ["w"], axis=0),
             helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
             helper.make_node("DequantizeLinear", ["gq", "sg", "zg"], ["g"]),
             helper.make_node("DequantizeLinear", ["beq", "sbe", "zbe"], ["be"]),
             helper.make_node("BatchNormalization", ["c", "g", "be", "mu", "var"], ["bnout"], name="bn"),
             helper.make_node("QuantizeLinear", ["bnout", "sy", "zy"], ["y"])]
    inits = {"sx": np.float32(0.05), "zx": np.int8(0), "wq": RNG.integers(-127, 128, (c, 3, 1, 1)).astype(np.int8),
             "sw": np.float32([0.01, 0.02, 0.03, 0.04]), "zw": np.zeros(c, np.int8), "sy": np.float32(0.2),
             "zy": np.int8(0), "gq": np.rint(p["g"] / sg).astype(np.int8), "sg": sg, "zg": np.int8(0),
             "beq": np.rint(p["be"] / sbe).astype(np.int32), "sbe": sbe, "zbe": np.int32(0),
             "mu": p["mu"], "var": p["var"]}
    m = model(nodes, [("xq", I8, [1, 3, 4, 4])], [("y", I8, [1, c, 4, 4])], inits)
    r = run_pass(upto(load(m), "bn_fold"), "bn_fold")
    assert r.rewritten == 1 and [op.op_type for op in r.graph.ops] == ["Conv"]
    assert_same_as_ort(m, r.graph, tol=1.0 / 128)


def test_gemm_then_bn_folds():
    """A dense layer's BatchNorm (autoencoders) folds into the Gemm like a Conv's (regression: an int8 one was left
    as a BatchNormalization without a kernel). Float within 1e-5 of ONNX Runtime; int8 within 1 LSB."""
    nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["c"], transB=1),
             helper.make_node("BatchNormalization", ["c", "g", "be", "mu", "var"], ["y"], name="bn")]
    inits = {"w": RNG.standard_normal((4, 6)).astype(np.float32), "b": RNG.standard_normal(4).astype(np.float32),
             **_bn_inits(4)}
    m = model(nodes, [("x", F, [1, 6])], [("y", F, [1, 4])], inits)
    r = run_pass(upto(load(m), "bn_fold"), "bn_fold")
    assert r.rewritten == 1 and [op.op_type for op in r.graph.ops] == ["Gemm"]
    assert_same_as_ort(m, r.graph, tol=1e-5)

    qnodes = [helper.make_node("DequantizeLinear", ["xq", "sx", "zx"], ["x"]),
              helper.make_node("DequantizeLinear", ["wq", "sw", "zw"], ["w"], axis=0),
              helper.make_node("Gemm", ["x", "w"], ["c"], transB=1),
              helper.make_node("BatchNormalization", ["c", "g", "be", "mu", "var"], ["bnout"], name="bn"),
              helper.make_node("QuantizeLinear", ["bnout", "sy", "zy"], ["y"])]
    qinits = {"sx": np.float32(0.05), "zx": np.int8(0), "wq": RNG.integers(-127, 128, (4, 6)).astype(np.int8),
              "sw": np.float32([0.01, 0.02, 0.03, 0.04]), "zw": np.zeros(4, np.int8), "sy": np.float32(0.2),
              "zy": np.int8(0), **_bn_inits(4)}
    qm = model(qnodes, [("xq", I8, [1, 6])], [("y", I8, [1, 4])], qinits)
    qr = run_pass(upto(load(qm), "bn_fold"), "bn_fold")
    assert [op.op_type for op in qr.graph.ops] == ["Gemm"]
    assert_same_as_ort(qm, qr.graph, tol=1.0 / 128)
