"""The non-conv ops through the whole pipeline: a small float model of pools, concat, resize, activations, add/sub/mul,
pad, transpose, reshape and softmax, and its int8 QDQ twin made by ONNX Runtime's static quantizer, compiled and run
on the host C runtime by ``tigris verify`` (one stage at a large budget; staged, and tiled for float, at a small one).

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


def qdq_model(float_path, out_path) -> None:
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    class Reader(CalibrationDataReader):
        def __init__(self):
            rng = np.random.default_rng(1)
            self.data = iter([{"x": rng.standard_normal((1, 3, 16, 16)).astype(np.float32)} for _ in range(4)])

        def get_next(self):
            return next(self.data, None)

    quantize_static(str(float_path), str(out_path), Reader(), quant_format=QuantFormat.QDQ,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("ops_pipeline")
    f = d / "ops_f32.onnx"
    onnx.save(float_model(), f)
    q = d / "ops_int8.onnx"
    qdq_model(f, q)
    return {"f32": f, "int8": q}


@pytest.mark.parametrize("which,budget,tiled", [("f32", "512K", False), ("f32", "12K", True),
                                                ("int8", "512K", False), ("int8", "8K", False)])
def test_verify_passes(models, which, budget, tiled):
    res = api.verify(models[which], fast=api.parse_size(budget), seed=3)
    assert res["pass"], res["outputs"]
    if tiled:
        assert res["plan"]["tiling"]["tiles"] > 0  # the small budget really tiles some of these ops
