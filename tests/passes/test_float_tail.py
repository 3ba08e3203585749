"""Float tail: an op ONNX Runtime's quantizer left in float after a DQ reads an explicit in-graph DequantizeLinear."""
import numpy as np
from onnx import helper

from passes._build import F, I8, load, model, run_pass, upto
from tigris.passes import normalize, unsupported_nodes

RNG = np.random.default_rng(0)


def _float_tail_model():
    """int8 conv (ORT QDQ style) -> DQ -> Tanh -> float output, and a PRelu with a float slope between DQ and Q: the
    two shapes ONNX Runtime's static quantizer leaves when it has no int8 form for an op."""
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "sx", "zx"], ["xq"], name="qx"),
        helper.make_node("DequantizeLinear", ["xq", "sx", "zx"], ["xd"], name="dqx"),
        helper.make_node("DequantizeLinear", ["wq", "sw", "zw"], ["w"], name="dqw"),
        helper.make_node("Conv", ["xd", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("QuantizeLinear", ["c", "sc", "zc"], ["cq"], name="qc"),
        helper.make_node("DequantizeLinear", ["cq", "sc", "zc"], ["cd"], name="dqc"),
        helper.make_node("PRelu", ["cd", "slope"], ["p"], name="prelu"),
        helper.make_node("QuantizeLinear", ["p", "sp", "zp"], ["pq"], name="qp"),
        helper.make_node("DequantizeLinear", ["pq", "sp", "zp"], ["pd"], name="dqp"),
        helper.make_node("Tanh", ["pd"], ["y"], name="tanh"),
    ]
    inits = {"sx": np.float32(0.03), "zx": np.int8(0), "wq": RNG.integers(-127, 128, (4, 3, 3, 3)).astype(np.int8),
             "sw": np.float32(0.01), "zw": np.int8(0), "sc": np.float32(0.08), "zc": np.int8(5),
             "slope": RNG.uniform(0.05, 0.3, (4, 1, 1)).astype(np.float32), "sp": np.float32(0.06),
             "zp": np.int8(20)}
    return model(nodes, [("x", F, [1, 3, 8, 8])], [("y", F, [1, 4, 8, 8])], inits)


def test_float_tail_gets_a_dequantize():
    """The Tanh reads a DQ of the int8 tensor; the int8 ops stay int8 (regression: the Tanh read the int8 tensor and
    the model was refused as mixing int8 and float). Idempotent."""
    r = run_pass(upto(load(_float_tail_model()), "float_tail"), "float_tail")
    assert r.rewritten == 1
    g = r.graph
    tanh = next(op for op in g.ops if op.op_type == "Tanh")
    dq = next(op for op in g.ops if tanh.inputs[0] in op.outputs)
    assert dq.op_type == "DequantizeLinear" and g.tensors[dq.inputs[0]].dtype == "int8"
    assert g.tensors[next(op for op in g.ops if op.op_type == "PRelu").inputs[0]].dtype == "int8"
    assert run_pass(g, "float_tail").rewritten == 0
    full, _ = normalize(load(_float_tail_model()), check=True)
    assert unsupported_nodes(full) == []


def test_float_product_before_quantized_relu_is_not_a_tail():
    """A float Conv output that a Relu -> Q quantizes (tf2onnx) is fused by activation fuse, never dequantized."""
    nodes = [helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["x"]),
             helper.make_node("DequantizeLinear", ["wq", "s", "z"], ["w"]),
             helper.make_node("Conv", ["x", "w"], ["c"]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("QuantizeLinear", ["r", "s", "z"], ["y"])]
    m = model(nodes, [("xq", I8, [1, 2, 3, 3])], [("y", I8, [1, 2, 3, 3])],
              {"s": np.float32(0.1), "z": np.int8(0), "wq": np.ones((2, 2, 1, 1), np.int8)})
    g, _ = normalize(load(m), check=True)
    assert [op.op_type for op in g.ops] == ["Conv"]


def test_float_tail_and_float_slope_prelu_run_on_the_c_runtime(tmp_path):
    """End to end with verify's criteria (docs/cli.md): int8 part bit-exact against the reference, the float Tanh
    within 1e-4 x max(1, max|ref|) of the reference, cosine >= 0.99 against ONNX Runtime; one stage and tiled."""
    from tigris import api

    p = tmp_path / "tail.onnx"
    p.write_bytes(_float_tail_model().SerializeToString())
    for budget in ("1M", 1200):
        r = api.verify(p, budget)
        assert r["pass"], r["outputs"]
        assert r["outputs"][0]["cosine"] >= 0.99


def _int8_bilinear():
    """ORT-style QDQ of a bilinear up-sampling: DQ -> Resize(linear) -> Q, between two int8 convs."""
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "sx", "zx"], ["xq"]),
        helper.make_node("DequantizeLinear", ["xq", "sx", "zx"], ["xd"]),
        helper.make_node("DequantizeLinear", ["wq", "sw", "zw"], ["w"]),
        helper.make_node("Conv", ["xd", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("QuantizeLinear", ["c", "sc", "zc"], ["cq"]),
        helper.make_node("DequantizeLinear", ["cq", "sc", "zc"], ["cd"]),
        helper.make_node("Resize", ["cd", "", "scales"], ["u"], name="up", mode="linear"),
        helper.make_node("QuantizeLinear", ["u", "sc", "zc"], ["uq"]),
        helper.make_node("DequantizeLinear", ["uq", "sc", "zc"], ["y"]),
    ]
    inits = {"sx": np.float32(0.03), "zx": np.int8(0), "wq": RNG.integers(-127, 128, (4, 3, 3, 3)).astype(np.int8),
             "sw": np.float32(0.01), "zw": np.int8(0), "sc": np.float32(0.05), "zc": np.int8(-7),
             "scales": np.float32([1, 1, 2, 2])}
    return model(nodes, [("x", F, [1, 3, 8, 8])], [("y", F, [1, 4, 16, 16])], inits)


def test_int8_linear_resize_runs_as_float_island(tmp_path, monkeypatch):
    """Rule 3: with the onnx numerics the int8 linear Resize runs on the int8 resize kernel, which computes the
    island's arithmetic itself (tigris.ops.resize); with ``INT8_INTERP = False`` (and under the tflm numerics) it runs
    as DQ -> float Resize -> Q (regression: refused as an int8 Resize that is not nearest). Both give the same bytes
    on the host runtime; verify's criteria: bit-exact against the reference, cosine >= 0.99 against ONNX Runtime; one
    stage and tiled."""
    from tigris import api
    from tigris.ops import resize

    p = tmp_path / "bilinear.onnx"
    p.write_bytes(_int8_bilinear().SerializeToString())
    outs = {}
    for interp in (True, False):
        monkeypatch.setattr(resize, "INT8_INTERP", interp)
        g, _ = normalize(load(_int8_bilinear()), check=True)
        assert unsupported_nodes(g) == []
        up = next(op for op in g.ops if op.op_type == "Resize")
        want = "int8" if interp else "float32"
        assert g.tensors[up.inputs[0]].dtype == want and g.tensors[up.outputs[0]].dtype == want
        small = int(api.analyze(p, 64).min_fast_budget * 1.3)
        for budget in ("1M", small):
            r = api.verify(p, budget)
            assert r["pass"] and r["outputs"][0]["reference_bit_exact"], r["outputs"]
        prep = api.prepare(p)
        outs[interp] = api.run_plan(api.compile_model(p, "1M", prepared=prep).plan_bytes,
                                    api.random_inputs(prep, 0)).outputs
    for name, y in outs[False].items():
        np.testing.assert_array_equal(outs[True][name], y)
