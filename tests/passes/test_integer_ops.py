"""Integer ops: MatMulInteger runs as the int8 matmul kind with an int32 accumulator output, bit-exact against
ONNX Runtime, with uint8 and int8 operands, a constant or activation B, and zero points."""
from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from passes._build import load, model, ort_run, run_pass, upto
from tigris import api

U8, I8, I32 = TensorProto.UINT8, TensorProto.INT8, TensorProto.INT32


def _model(dt: int, b_const: bool, za: int, zb: int, shape_a=(2, 3, 5), shape_b=(5, 4)):
    npdt = np.uint8 if dt == U8 else np.int8
    rng = np.random.default_rng(1)
    inits = {"za": np.array(za, npdt), "zb": np.array(zb, npdt)}
    inputs = [("a", dt, list(shape_a))]
    if b_const:
        info = np.iinfo(npdt)
        inits["b"] = rng.integers(info.min, info.max + 1, shape_b).astype(npdt)
    else:
        inputs.append(("b", dt, list(shape_b)))
    node = helper.make_node("MatMulInteger", ["a", "b", "za", "zb"], ["y"], name="mmi")
    out = list(np.broadcast_shapes(shape_a[:-2], shape_b[:-2])) + [shape_a[-2], shape_b[-1]]
    return model([node], inputs, [("y", I32, out)], inits, opset=13), npdt


@pytest.mark.parametrize("dt,b_const,za,zb", [(U8, True, 128, 3), (U8, False, 7, 250), (I8, True, -5, 0),
                                              (I8, False, 0, -128)])
def test_matmul_integer_is_exact(dt, b_const, za, zb):
    m, npdt = _model(dt, b_const, za, zb)
    r = run_pass(upto(load(m), "integer_ops"), "integer_ops")
    assert r.rewritten == 1 and r.graph.ops[0].op_type == "MatMul"
    info = np.iinfo(npdt)
    rng = np.random.default_rng(2)
    feeds = {"a": rng.integers(info.min, info.max + 1, (2, 3, 5)).astype(npdt)}
    if not b_const:
        feeds["b"] = rng.integers(info.min, info.max + 1, (5, 4)).astype(npdt)
    want = ort_run(m, feeds)["y"]
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "m.onnx"
        onnx.save(m, str(p))
        got = api.run_plan(api.compile_model(p, "4M").plan_bytes, feeds).outputs["y"]
    assert got.dtype == np.int32 and np.array_equal(got, want)


def test_declined_for_a_vector_zero_point():
    m, _ = _model(U8, True, 0, 0)
    m.graph.initializer[0].CopyFrom(onnx.numpy_helper.from_array(np.array([1, 2, 3], np.uint8), "za"))
    r = run_pass(upto(load(m), "integer_ops"), "integer_ops")
    assert r.rewritten == 0 and "several values" in r.declined[0].reason


def _conv_model(dt: int, zx: int, zw, pads=(0, 0, 0, 0), strides=(1, 1), w_scale=1):
    npdt = np.uint8 if dt == U8 else np.int8
    info = np.iinfo(npdt)
    rng = np.random.default_rng(3)
    w = rng.integers(info.min, info.max + 1, (3, 2, 3, 3)).astype(npdt) // w_scale
    inits = {"w": w.astype(npdt), "zx": np.array(zx, npdt), "zw": np.array(zw, npdt)}
    node = helper.make_node("ConvInteger", ["x", "w", "zx", "zw"], ["y"], pads=list(pads), strides=list(strides))
    return model([node], [("x", dt, [1, 2, 7, 6])], [("y", I32, None)], inits, opset=13), npdt


# per-channel weight zero points: ONNX Runtime refuses them; the conformance case test_convinteger_with_padding
# has them
@pytest.mark.parametrize("dt,zx,zw,pads,strides", [(U8, 131, 9, (1, 1, 1, 1), (1, 1)),
                                                  (I8, -3, -7, (0, 1, 2, 0), (2, 1))])
def test_conv_integer_is_exact(dt, zx, zw, pads, strides):
    m = onnx.shape_inference.infer_shapes(_conv_model(dt, zx, zw, pads, strides)[0])
    npdt = np.uint8 if dt == U8 else np.int8
    info = np.iinfo(npdt)
    feeds = {"x": np.random.default_rng(4).integers(info.min, info.max + 1, (1, 2, 7, 6)).astype(npdt)}
    want = ort_run(m, feeds)["y"]
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "m.onnx"
        onnx.save(m, str(p))
        got = api.run_plan(api.compile_model(p, "4M").plan_bytes, feeds).outputs["y"]
    assert got.dtype == np.int32 and np.array_equal(got, want)


def test_conv_integer_declined_when_float_would_not_be_exact():
    w = np.full((1, 64, 3, 3), 120, np.int8)
    node = helper.make_node("ConvInteger", ["x", "w"], ["y"])
    m = model([node], [("x", I8, [1, 64, 5, 5])], [("y", I32, [1, 1, 3, 3])], {"w": w}, opset=13)
    r = run_pass(upto(load(m), "integer_ops"), "integer_ops")
    assert r.rewritten == 0 and "not be exact" in r.declined[0].reason
