"""The non-conv ops through the whole pipeline: a small float model of pools, concat, resize, activations, add/sub/mul,
pad, transpose, reshape and softmax, its int8 QDQ twins (one by ONNX Runtime's static quantizer, one by
:func:`hand_qdq`), and a chain of every activation kind, compiled and run on the host C runtime by ``tigris verify``
(one stage at a large budget; staged or tiled at a small one).

Tolerances are verify's own (docs/cli.md): float within 1e-4 x max(1, max|ref|) of ONNX Runtime, int8 bit-exact
against the reference executor and within the stage-2 tolerance of ONNX Runtime. Writes only to tmp dirs.
"""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tigris import api


def float_model() -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales"),
        numpy_helper.from_array((rng.standard_normal((6, 1, 1)) * 0.5 + 1).astype(np.float32), "chan_scale"),
        numpy_helper.from_array(np.array(1.5, np.float32), "gain"),
        numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "pads"),
        numpy_helper.from_array(np.array(0.0, np.float32), "pad_value"),
        numpy_helper.from_array(np.array([1, -1], np.int64), "flat"),
    ]
    n = helper.make_node
    nodes = [
        n("Mul", ["x", "gain"], ["x0"]),  # a quantized op first, so the quantizer quantizes the pools' input too
        n("MaxPool", ["x0"], ["a"], kernel_shape=[2, 2], strides=[2, 2]),
        n("AveragePool", ["x0"], ["b"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        n("Concat", ["a", "b"], ["c"], axis=1),                                 # [1, 6, 8, 8]
        n("Resize", ["c", "", "scales"], ["d"], mode="nearest"),                # [1, 6, 16, 16]
        n("Mul", ["d", "chan_scale"], ["e"]),
        n("Tanh", ["d"], ["d2"]),
        n("Add", ["e", "d2"], ["f"]),
        n("Sub", ["f", "e"], ["f2"]),
        n("Sigmoid", ["f2"], ["g"]),
        n("Pad", ["g", "pads", "pad_value"], ["p"]),                            # [1, 6, 18, 18]
        n("MaxPool", ["p"], ["p2"], kernel_shape=[3, 3], strides=[1, 1]),       # [1, 6, 16, 16]
        n("Transpose", ["p2"], ["t"], perm=[0, 2, 3, 1]),                        # [1, 16, 16, 6]
        n("Reshape", ["t", "flat"], ["r"]),                                     # [1, 1536]
        n("Softmax", ["r"], ["y"], axis=1),
        n("GlobalAveragePool", ["f2"], ["gap"]),
        n("Flatten", ["gap"], ["z"]),
    ]
    g = helper.make_graph(nodes, "ops", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1536]),
                           helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 6])], initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


def qdq_model(float_path, out_path, shape=(1, 3, 16, 16)) -> None:
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    class Reader(CalibrationDataReader):
        def __init__(self):
            rng = np.random.default_rng(1)
            self.data = iter([{"x": rng.standard_normal(shape).astype(np.float32)} for _ in range(4)])

        def get_next(self):
            return next(self.data, None)

    quantize_static(str(float_path), str(out_path), Reader(), quant_format=QuantFormat.QDQ,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)


def hand_qdq(m: onnx.ModelProto, calib: np.ndarray,
             keep_float=("lo", "hi", "scales", "pad_value")) -> onnx.ModelProto:
    """Insert QuantizeLinear/DequantizeLinear after the input and after every node output (int8, asymmetric, ranges
    from one float run), and store float initializers as int8 behind a DequantizeLinear (symmetric per tensor).

    ONNX Runtime's static quantizer leaves some ops float (HardSwish, PRelu, Sub...), which makes a mixed model the
    runtime refuses; this states every op in int8, the way a QDQ exporter for those ops would."""
    import onnxruntime as ort

    g = m.graph
    acts = [g.input[0].name] + [o for nd in g.node for o in nd.output]
    probe = onnx.ModelProto()
    probe.CopyFrom(m)
    have = {o.name for o in probe.graph.output}
    for a in acts:
        if a not in have:
            probe.graph.output.append(onnx.ValueInfoProto(name=a))
    sess = ort.InferenceSession(probe.SerializeToString(), providers=["CPUExecutionProvider"])
    vals = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, {g.input[0].name: calib})))
    inits, nodes = [], []
    for t in g.initializer:
        arr = numpy_helper.to_array(t)
        if t.name in keep_float or arr.dtype != np.float32:
            inits.append(t)
            continue
        s = float(max(np.abs(arr).max(), 1e-6) / 127)
        q = np.clip(np.rint(arr / s), -127, 127).astype(np.int8)
        inits += [numpy_helper.from_array(q, t.name + "_q"),
                  numpy_helper.from_array(np.array(s, np.float32), t.name + "_qs"),
                  numpy_helper.from_array(np.array(0, np.int8), t.name + "_qz")]
        nodes.append(helper.make_node("DequantizeLinear", [t.name + "_q", t.name + "_qs", t.name + "_qz"], [t.name]))

    def qdq(name):
        v = vals[name]
        lo, hi = min(float(v.min()), 0.0), max(float(v.max()), 0.0)
        s = max(hi - lo, 1e-6) / 255.0
        zp = int(np.clip(round(-128 - lo / s), -128, 127))
        inits.extend([numpy_helper.from_array(np.array(s, np.float32), name + "_s"),
                      numpy_helper.from_array(np.array(zp, np.int8), name + "_z")])
        return [helper.make_node("QuantizeLinear", [name, name + "_s", name + "_z"], [name + "_q8"]),
                helper.make_node("DequantizeLinear", [name + "_q8", name + "_s", name + "_z"], [name + "_dq"])]

    xin = g.input[0].name
    nodes += qdq(xin)
    produced = {o for n2 in g.node for o in n2.output}
    for nd in g.node:
        ins = [i + "_dq" if (i == xin or i in produced) else i for i in nd.input]
        attrs = {a.name: helper.get_attribute_value(a) for a in nd.attribute}
        nodes.append(helper.make_node(nd.op_type, ins, list(nd.output), name=nd.name, **attrs))
        for o in nd.output:
            nodes += qdq(o)
    final = []
    for o in g.output:
        nodes.append(helper.make_node("Identity", [o.name + "_dq"], [o.name + "_out"]))
        dims = [d.dim_value for d in o.type.tensor_type.shape.dim]
        final.append(helper.make_tensor_value_info(o.name + "_out", TensorProto.FLOAT, dims))
    gg = helper.make_graph(nodes, g.name + "_qdq", list(g.input), final, initializer=inits)
    mm = helper.make_model(gg, opset_imports=list(m.opset_import))
    mm.ir_version = m.ir_version
    return mm


def activations_model() -> onnx.ModelProto:
    """Every activation kind, PRelu and a Sub of two activations, chained (ONNX Runtime's quantizer leaves several of
    these float, so the int8 twin is made by :func:`hand_qdq`)."""
    rng = np.random.default_rng(0)
    n = helper.make_node
    inits = [numpy_helper.from_array(np.array(1.5, np.float32), "gain"),
             numpy_helper.from_array((rng.standard_normal((4, 1, 1)) * 0.3).astype(np.float32), "slope"),
             numpy_helper.from_array(np.array(-1.0, np.float32), "lo"),
             numpy_helper.from_array(np.array(2.0, np.float32), "hi")]
    nodes = [n("Mul", ["x", "gain"], ["x0"]), n("LeakyRelu", ["x0"], ["a"], alpha=0.1),
             n("HardSigmoid", ["a"], ["b"], alpha=0.3, beta=0.4), n("Sub", ["b", "a"], ["c"]),
             n("HardSwish", ["c"], ["d"]), n("PRelu", ["d", "slope"], ["e"]), n("Clip", ["e", "lo", "hi"], ["f"]),
             n("Relu", ["f"], ["g"]), n("Tanh", ["g"], ["y"])]
    g = helper.make_graph(nodes, "acts", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 6, 5])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 6, 5])], initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
    m.ir_version = 8
    return m


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("ops_pipeline")
    f = d / "ops_f32.onnx"
    onnx.save(float_model(), f)
    q = d / "ops_int8.onnx"
    qdq_model(f, q)
    calib = np.random.default_rng(2).standard_normal((1, 3, 16, 16)).astype(np.float32) * 2
    onnx.save(hand_qdq(float_model(), calib), d / "ops_hand.onnx")
    onnx.save(activations_model(), d / "acts_f32.onnx")
    calib = np.random.default_rng(2).standard_normal((1, 4, 6, 5)).astype(np.float32) * 2
    onnx.save(hand_qdq(activations_model(), calib), d / "acts_int8.onnx")
    return {"f32": f, "int8": q, "hand": d / "ops_hand.onnx", "acts_f32": d / "acts_f32.onnx",
            "acts_int8": d / "acts_int8.onnx"}


@pytest.mark.parametrize("which,budget,tiled", [("f32", "512K", False), ("f32", "12K", True),
                                                ("int8", "512K", False), ("int8", "8K", False),
                                                ("hand", "512K", False), ("hand", "8K", False),
                                                ("acts_f32", "256K", False), ("acts_int8", "256K", False),
                                                ("acts_f32", "512", True), ("acts_int8", "2K", True)])
def test_verify_passes(models, which, budget, tiled):
    res = api.verify(models[which], fast=api.parse_size(budget), seed=3)
    assert res["pass"], res["outputs"]
    if tiled:
        assert res["plan"]["tiling"]["tiles"] > 0  # the small budget really tiles some of these ops
