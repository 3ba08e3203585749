"""Synthetic graphs of any length for the planning-time table of ``bench/plan_quality.py --scaling``.

* ``relu_chain(n)``: ``n`` Relu ops on a ``[1, 8]`` float tensor, one after another (the longest possible dependency
  chain with the smallest tensors: what stresses the partition search, not the arena).
* ``mobilenet_blocks(k)``: ``k`` inverted-residual blocks on ``[1, 16, 16, 16]`` (1x1 expand to 48 channels,
  Relu, 3x3 depthwise, Relu, 1x1 project, residual Add): 6 ops per block, tileable convs and skip connections, like
  the repeated body of a MobileNetV2.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def _model(nodes, inputs, outputs, inits=()) -> onnx.ModelProto:
    g = helper.make_graph(nodes, "scaling", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def relu_chain(n: int) -> onnx.ModelProto:
    nodes, prev = [], "x"
    for i in range(n):
        out = "y" if i == n - 1 else f"t{i}"
        nodes.append(helper.make_node("Relu", [prev], [out], name=f"relu{i}"))
        prev = out
    io = [helper.make_tensor_value_info(t, TensorProto.FLOAT, [1, 8]) for t in ("x", "y")]
    return _model(nodes, io[:1], io[1:])


def mobilenet_blocks(k: int, c: int = 16, hw: int = 16, expand: int = 3) -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    e = c * expand
    nodes, inits, prev = [], [], "x"
    for b in range(k):
        w1 = numpy_helper.from_array((rng.standard_normal((e, c, 1, 1)) * 0.1).astype(np.float32), f"b{b}_w1")
        wd = numpy_helper.from_array((rng.standard_normal((e, 1, 3, 3)) * 0.1).astype(np.float32), f"b{b}_wd")
        w2 = numpy_helper.from_array((rng.standard_normal((c, e, 1, 1)) * 0.1).astype(np.float32), f"b{b}_w2")
        inits += [w1, wd, w2]
        out = "y" if b == k - 1 else f"b{b}_out"
        nodes += [
            helper.make_node("Conv", [prev, w1.name], [f"b{b}_e"], name=f"b{b}_expand", kernel_shape=[1, 1]),
            helper.make_node("Relu", [f"b{b}_e"], [f"b{b}_er"], name=f"b{b}_relu1"),
            helper.make_node("Conv", [f"b{b}_er", wd.name], [f"b{b}_d"], name=f"b{b}_dw", kernel_shape=[3, 3],
                             pads=[1, 1, 1, 1], group=e),
            helper.make_node("Relu", [f"b{b}_d"], [f"b{b}_dr"], name=f"b{b}_relu2"),
            helper.make_node("Conv", [f"b{b}_dr", w2.name], [f"b{b}_p"], name=f"b{b}_project", kernel_shape=[1, 1]),
            helper.make_node("Add", [f"b{b}_p", prev], [out], name=f"b{b}_add"),
        ]
        prev = out
    io = [helper.make_tensor_value_info(t, TensorProto.FLOAT, [1, c, hw, hw]) for t in ("x", "y")]
    return _model(nodes, io[:1], io[1:], inits)
