"""Whole-model checks of a general Resize: EfficientDet-Lite's BiFPN up-sampling 3x3 -> 5x5 with ``sizes`` built from
a Concat of shapes (constant after shape folding), and a 12x12 -> 20x20 variant tight enough to run in row bands.

api.verify judges float32 against ONNX Runtime (1e-4) and int8 bit-exact against the reference and within 1 LSB of
ONNX Runtime's run of the model as written.
"""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from test_ops_pipeline import hand_qdq
from tigris import api


def resize_model(hw: int, out: int, c: int, mode: str, shape_chain: bool) -> onnx.ModelProto:
    n = helper.make_node
    inits = [numpy_helper.from_array(np.array(1.5, np.float32), "gain"),
             numpy_helper.from_array(np.array([out, out], np.int64), "hw"),
             numpy_helper.from_array(np.array([0], np.int64), "s0"),
             numpy_helper.from_array(np.array([2], np.int64), "s2"),
             numpy_helper.from_array(np.array([1, c, out, out], np.int64), "sizes_c")]
    nodes = [n("Mul", ["x", "gain"], ["a"])]
    if shape_chain:
        nodes += [n("Shape", ["a"], ["sh"]), n("Slice", ["sh", "s0", "s2"], ["nc"]),
                  n("Concat", ["nc", "hw"], ["sizes"], axis=0)]
    sizes = "sizes" if shape_chain else "sizes_c"
    nodes += [n("Resize", ["a", "", "", sizes], ["r"], mode=mode, nearest_mode="round_prefer_floor",
                coordinate_transformation_mode="asymmetric" if mode == "nearest" else "half_pixel"),
              n("Sigmoid", ["r"], ["y"])]
    g = helper.make_graph(nodes, "resize", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, hw, hw])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c, out, out])],
                          initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
@pytest.mark.parametrize("hw,out,c,budget,tiled", [(3, 5, 4, "64K", False), (12, 20, 16, "20K", True)])
def test_float_sizes_resize_verifies(tmp_path, mode, hw, out, c, budget, tiled):
    p = tmp_path / "m.onnx"
    onnx.save(resize_model(hw, out, c, mode, shape_chain=True), p)
    res = api.verify(p, fast=api.parse_size(budget), samples=3, seed=1)
    assert res["pass"], res["outputs"]
    if tiled:
        assert res["plan"]["tiling"]["tiles"] > 0


@pytest.mark.parametrize("mode", ["nearest", "cubic"])
@pytest.mark.parametrize("hw,out,c,budget,tiled", [(3, 5, 4, "64K", False), (12, 20, 16, "6K", True)])
def test_int8_qdq_sizes_resize_verifies(tmp_path, hw, out, c, budget, tiled, mode):
    # a cubic int8 resize runs in float between a dequantize and a quantize, as the QDQ model states it
    calib = np.random.default_rng(2).standard_normal((1, c, hw, hw)).astype(np.float32) * 2
    p = tmp_path / "m.onnx"
    onnx.save(hand_qdq(resize_model(hw, out, c, mode, shape_chain=False), calib), p)
    res = api.verify(p, fast=api.parse_size(budget), samples=3, seed=1)
    assert res["pass"], res["outputs"]
    if tiled:
        assert res["plan"]["tiling"]["tiles"] > 0
