"""Extra pass: weight-only quantization folded to float weights."""
import numpy as np
from onnx import helper

from passes._build import F, assert_reference_matches_ort, assert_same_as_ort, load, model, run_pass, upto


def _m(with_q=False):
    wq = np.random.default_rng(0).integers(-127, 128, (4, 3, 1, 1)).astype(np.int8)
    nodes = [helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["w"], name="dq", axis=0),
             helper.make_node("Conv", ["x", "w"], ["y"], name="conv")]
    inits = {"wq": wq, "ws": np.float32([0.1, 0.2, 0.3, 0.4]), "wz": np.zeros(4, np.int8)}
    if with_q:
        nodes = [helper.make_node("QuantizeLinear", ["x0", "s", "z"], ["xq"]),
                 helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["x"])] + nodes
        inits.update(s=np.float32(0.05), z=np.int8(0))
    return model(nodes, [("x0" if with_q else "x", F, [1, 3, 4, 4])], [("y", F, None)], inits)


def test_weights_become_float():
    m = _m()
    r = run_pass(upto(load(m), "weight_only_quant"), "weight_only_quant")
    assert r.rewritten == 1
    assert [op.op_type for op in r.graph.ops] == ["Conv"]
    w = r.graph.weights["w"]
    assert w.dtype == np.float32 and r.graph.tensors["w"].quant is None
    from onnx import numpy_helper
    wq = numpy_helper.to_array(m.graph.initializer[0]).astype(np.float32)
    assert np.array_equal(w, wq * np.float32([0.1, 0.2, 0.3, 0.4]).reshape(4, 1, 1, 1))
    assert_same_as_ort(m, r.graph, tol=0.0)
    assert run_pass(r.graph, "weight_only_quant").rewritten == 0


def test_not_applied_to_int8_models():
    r = run_pass(upto(load(_m(with_q=True)), "weight_only_quant"), "weight_only_quant")
    assert r.rewritten == 0


def test_declined_with_runtime_scale():
    nodes = [helper.make_node("DequantizeLinear", ["wq", "s"], ["w"], name="dq"),
             helper.make_node("Mul", ["x", "w"], ["y"])]
    m = model(nodes, [("x", F, [1, 4]), ("s", F, [])], [("y", F, None)], {"wq": np.int8([1, 2, 3, 4])})
    r = run_pass(load(m), "weight_only_quant")
    assert r.rewritten == 0 and r.declined[0].node == "dq" and "rule 3" in r.declined[0].reason


def test_reference_executor_agrees_with_ort():
    assert_reference_matches_ort(_m())
