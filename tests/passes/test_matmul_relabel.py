"""Pass 3, matrix product relabel."""
import numpy as np

from tigris.passes import normalize
from onnx import helper

from passes._build import F, I8, assert_reference_matches_ort, assert_same_as_ort, load, model, run_pass, upto

RNG = np.random.default_rng(0)


def test_matmul_becomes_gemm_with_transposed_weight():
    w = RNG.standard_normal((6, 4)).astype(np.float32)
    m = model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], [("x", F, [2, 6])], [("y", F, [2, 4])],
              {"w": w})
    r = run_pass(upto(load(m), "matmul_relabel"), "matmul_relabel")
    op = r.graph.ops[0]
    assert r.rewritten == 1 and op.op_type == "Gemm" and op.attrs == {"fused_activation": None}
    assert np.array_equal(r.graph.weights[op.inputs[1]], w.T)
    assert_same_as_ort(m, r.graph, tol=0.0)
    assert run_pass(r.graph, "matmul_relabel").rewritten == 0  # idempotent


def test_gemm_alpha_beta_and_bias_shape_folded():
    w = RNG.standard_normal((6, 4)).astype(np.float32)
    c = RNG.standard_normal((1, 4)).astype(np.float32)
    m = model([helper.make_node("Gemm", ["x", "w", "c"], ["y"], alpha=0.5, beta=2.0)], [("x", F, [1, 6])],
              [("y", F, [1, 4])], {"w": w, "c": c})
    g = run_pass(load(m), "matmul_relabel").graph
    op = g.ops[0]
    assert g.weights[op.inputs[1]].shape == (4, 6) and g.weights[op.inputs[2]].shape == (4,)
    assert_same_as_ort(m, g, tol=1e-6)


def test_per_channel_axis_moves_with_transpose():
    nodes = [helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["x"]),
             helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["w"], axis=1),
             helper.make_node("MatMul", ["x", "w"], ["y0"]),
             helper.make_node("QuantizeLinear", ["y0", "s", "z"], ["y"])]
    m = model(nodes, [("xq", I8, [1, 6])], [("y", I8, [1, 4])],
              {"s": np.float32(0.1), "z": np.int8(0), "wq": RNG.integers(-127, 128, (6, 4)).astype(np.int8),
               "ws": np.float32([0.01, 0.02, 0.03, 0.04]), "wz": np.zeros(4, np.int8)})
    g = run_pass(upto(load(m), "matmul_relabel"), "matmul_relabel").graph
    w = g.tensors[g.ops[0].inputs[1]]
    assert w.shape == (4, 6) and w.quant.axis == 0
    assert_same_as_ort(m, g, tol=0.0)


def test_declined_for_activation_times_activation():
    m = model([helper.make_node("MatMul", ["a", "b"], ["y"], name="mm")], [("a", F, [2, 3]), ("b", F, [3, 2])],
              [("y", F, [2, 2])])
    r = run_pass(load(m), "matmul_relabel")
    assert r.rewritten == 0 and r.declined[0].node == "mm" and "rule 4" in r.declined[0].reason


def test_noop():
    m = model([helper.make_node("Relu", ["x"], ["y"])], [("x", F, [1, 4])], [("y", F, [1, 4])])
    assert run_pass(load(m), "matmul_relabel").rewritten == 0


def test_reference_executor_agrees_with_ort():
    w = RNG.standard_normal((6, 4)).astype(np.float32)
    assert_reference_matches_ort(model([helper.make_node("MatMul", ["x", "w"], ["y"])], [("x", F, [1, 6])],
                                       [("y", F, [1, 4])], {"w": w}))


def test_rank3_matmul_becomes_reshape_gemm_reshape():
    w = RNG.standard_normal((6, 4)).astype(np.float32)
    m = model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], [("x", F, [2, 5, 6])], [("y", F, [2, 5, 4])],
              {"w": w})
    r = run_pass(upto(load(m), "matmul_relabel"), "matmul_relabel")
    assert r.rewritten == 1 and [op.op_type for op in r.graph.ops] == ["Reshape", "Gemm", "Reshape"]
    assert r.graph.tensors[r.graph.ops[1].inputs[0]].shape == (10, 6)
    assert_same_as_ort(m, r.graph, tol=1e-6)
    assert run_pass(r.graph, "matmul_relabel").rewritten == 0
    assert_reference_matches_ort(m)


def test_token_matmul_stays_strided():
    """Rule 6b: [1, T, K] x [K, OC] stays a MatMul (the strided kind reads the nwc bytes; no layout Transposes)."""
    w = RNG.standard_normal((6, 4)).astype(np.float32)
    m = model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], [("x", F, [1, 5, 6])], [("y", F, [1, 5, 4])],
              {"w": w})
    r = run_pass(upto(load(m), "matmul_relabel"), "matmul_relabel")
    assert r.rewritten == 0 and [op.op_type for op in r.graph.ops] == ["MatMul"]
    assert any("rule 6b" in d.reason for d in r.declined)
    g, _ = normalize(load(m), check=True)
    assert [op.op_type for op in g.ops] == ["MatMul"]
    assert_reference_matches_ort(m)
