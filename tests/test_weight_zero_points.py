"""Exact uint8 weight zero points: a uint8 QDQ model whose Conv, depthwise Conv and Gemm weights are uint8 with
non-zero zero points (157, 204, per-channel ones) compiles without any weight re-rounding. The C runtime equals the
NumPy reference bit for bit (untiled and tiled), and both are within 1 LSB of ONNX Runtime run on the model as
written (ORT evaluates the same integers in float; every intermediate activation is requantized the same way).

The weights span the whole uint8 range, so ``q - zp`` leaves int8 and the kernels' exact zero-point path (param
``wzp``) runs; a second model whose weights stay within ``zp +- 127`` is restated symmetric exactly instead.
"""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from tigris import api
from tigris.host import Session
from tigris.reference import run_reference

U8 = TensorProto.UINT8


def _model(seed: int, narrow: bool) -> onnx.ModelProto:
    """x (uint8 1x3x24x24) -> Conv 3x3 pad 1 (uint8 weight, zp 157) -> Relu -> depthwise 3x3 stride 2 (per-channel
    uint8 zero points) -> Flatten -> Gemm (uint8 weight, zp 204) -> y (uint8)."""
    rng = np.random.default_rng(seed)

    def wq(shape, zp):
        if narrow:  # within zp +- 127: an exact int8 restatement exists
            lo = np.maximum(0, np.asarray(zp, np.int64) - 127)
            hi = np.minimum(255, np.asarray(zp, np.int64) + 127)
            return rng.integers(lo, hi + 1, size=shape).astype(np.uint8)
        return rng.integers(0, 256, size=shape).astype(np.uint8)

    c1, c2, k = 3, 6, 6 * 12 * 12
    zp_dw = np.array([10, 250, 128, 90, 200, 3], np.uint8)
    inits = {
        "sx": np.float32(0.03), "zx": np.uint8(120),
        "w1": wq((c2, c1, 3, 3), 157), "s1": np.float32(0.004), "z1": np.uint8(157),
        "b1": rng.integers(-3000, 3000, c2).astype(np.int32), "sb1": np.float32(0.03 * 0.004),
        "sa": np.float32(0.05), "za": np.uint8(3),
        "w2": wq((c2, 1, 3, 3), zp_dw[:, None, None, None]),
        "s2": rng.uniform(0.003, 0.01, c2).astype(np.float32), "z2": zp_dw,
        "sb": np.float32(0.07), "zb": np.uint8(131),
        "w3": wq((k, 4), 204), "s3": np.float32(0.002), "z3": np.uint8(204),
        "b3": rng.integers(-2000, 2000, 4).astype(np.int32), "sb3": np.float32(0.07 * 0.002),
        "sy": np.float32(0.1), "zy": np.uint8(100),
    }
    inits["sb2"] = (np.float32(0.05) * inits["s2"]).astype(np.float32)
    inits["b2"] = rng.integers(-2000, 2000, c2).astype(np.int32)
    n = helper.make_node
    nodes = [
        n("DequantizeLinear", ["x", "sx", "zx"], ["xd"]),
        n("DequantizeLinear", ["w1", "s1", "z1"], ["w1d"]),
        n("DequantizeLinear", ["b1", "sb1"], ["b1d"]),
        n("Conv", ["xd", "w1d", "b1d"], ["c1"], pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
        n("Relu", ["c1"], ["r1"]),
        n("QuantizeLinear", ["r1", "sa", "za"], ["a"]),
        n("DequantizeLinear", ["a", "sa", "za"], ["ad"]),
        n("DequantizeLinear", ["w2", "s2", "z2"], ["w2d"], axis=0),
        n("DequantizeLinear", ["b2", "sb2"], ["b2d"], axis=0),
        n("Conv", ["ad", "w2d", "b2d"], ["c2"], group=c2, strides=[2, 2], pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
        n("QuantizeLinear", ["c2", "sb", "zb"], ["b"]),
        n("Flatten", ["b"], ["bf"]),
        n("DequantizeLinear", ["bf", "sb", "zb"], ["f"]),
        n("DequantizeLinear", ["w3", "s3", "z3"], ["w3d"]),
        n("DequantizeLinear", ["b3", "sb3"], ["b3d"]),
        n("Gemm", ["f", "w3d", "b3d"], ["g"]),
        n("QuantizeLinear", ["g", "sy", "zy"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "wzp", [helper.make_tensor_value_info("x", U8, [1, c1, 24, 24])],
        [helper.make_tensor_value_info("y", U8, [1, 4])],
        [numpy_helper.from_array(np.asarray(v), k_) for k_, v in inits.items()])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def _ops_with_wzp(prep) -> int:
    return sum(1 for low in prep.lowered if low.params.get("wzp"))


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("narrow", [False, True])
def test_uint8_weight_zero_points_are_exact(tmp_path, seed, narrow):
    path = tmp_path / "wzp.onnx"
    onnx.save(_model(seed, narrow), path)
    prep = api.prepare(path)
    # wide weights: all three MAC ops carry their zero points; narrow ones are restated exactly (no wzp left)
    assert _ops_with_wzp(prep) == (0 if narrow else 3)
    whole = Session(api.compile_model(path, "256K", prepared=prep).plan_bytes)
    tiled_plan = api.compile_model(path, "5K", prepared=prep)
    assert tiled_plan.analysis.json["tiling"]["tiled_stages"] > 0
    tiled = Session(tiled_plan.plan_bytes)
    sess = ort.InferenceSession(path.read_bytes(), providers=["CPUExecutionProvider"])
    worst = 0
    for s in range(8):
        x = np.random.default_rng(100 + s).integers(0, 256, size=(1, 3, 24, 24), dtype=np.uint8)
        got = np.asarray(whole.run({"x": x}).outputs["y"])
        np.testing.assert_array_equal(np.asarray(tiled.run({"x": x}).outputs["y"]), got)
        np.testing.assert_array_equal(run_reference(prep.graph, {"x": x}, prep.lowered)["y"], got)
        (ref,) = sess.run(None, {"x": x})
        worst = max(worst, int(np.abs(got.astype(np.int32) - ref.astype(np.int32)).max()))
    assert worst <= 1, f"{worst} LSB from ONNX Runtime"


def test_fine_output_scale_shows_no_weight_rounding(tmp_path):
    """One uint8 Conv (weights 0..255 around zero point 157) with an output step fine enough that re-rounding the
    weights to symmetric int8 shows: that old rewrite was 3 LSB off ONNX Runtime here; carried exactly, the C
    runtime is within one LSB (ORT's float evaluation of the same integers)."""
    rng = np.random.default_rng(0)
    inits = {"sx": np.float32(0.03), "zx": np.uint8(120), "w1": rng.integers(0, 256, (8, 4, 3, 3)).astype(np.uint8),
             "s1": np.float32(0.004), "z1": np.uint8(157), "b1": rng.integers(-3000, 3000, 8).astype(np.int32),
             "sb1": np.float32(0.03 * 0.004), "sy": np.float32(0.02), "zy": np.uint8(128)}
    n = helper.make_node
    nodes = [n("DequantizeLinear", ["x", "sx", "zx"], ["xd"]), n("DequantizeLinear", ["w1", "s1", "z1"], ["w1d"]),
             n("DequantizeLinear", ["b1", "sb1"], ["b1d"]),
             n("Conv", ["xd", "w1d", "b1d"], ["c1"], pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
             n("QuantizeLinear", ["c1", "sy", "zy"], ["y"])]
    g = helper.make_graph(nodes, "c", [helper.make_tensor_value_info("x", U8, [1, 4, 8, 8])],
                          [helper.make_tensor_value_info("y", U8, [1, 8, 8, 8])],
                          [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    path = tmp_path / "conv.onnx"
    onnx.save(m, path)
    prep = api.prepare(path)
    assert _ops_with_wzp(prep) == 1
    session = Session(api.compile_model(path, "256K", prepared=prep).plan_bytes)
    sess = ort.InferenceSession(path.read_bytes(), providers=["CPUExecutionProvider"])
    for k in range(5):
        x = np.random.default_rng(k).integers(0, 256, size=(1, 4, 8, 8), dtype=np.uint8)
        got = np.asarray(session.run({"x": x}).outputs["y"]).astype(np.int32)
        np.testing.assert_array_equal(run_reference(prep.graph, {"x": x}, prep.lowered)["y"], got)
        (ref,) = sess.run(None, {"x": x})
        assert int(np.abs(got - ref.astype(np.int32)).max()) <= 1
