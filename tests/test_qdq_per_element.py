"""Per-axis and blocked QuantizeLinear/DequantizeLinear at the model boundary (pass qdq_per_element, PER_ELEM of the
quantize/dequantize kinds): the C runtime equals ONNX Runtime exactly (integer codes; float32 products), whole and
cut into row bands, int8 and uint8; the loader refuses inconsistent per-element constants."""
from __future__ import annotations

import struct
import zlib

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tigris import api
from tigris.emit import format as F
from tigris.ops import KIND_IDS

_T = {"int8": TensorProto.INT8, "uint8": TensorProto.UINT8}


def _model(op: str, shape, dtype: str, axis: int, block: int, seed: int) -> tuple[onnx.ModelProto, dict]:
    rng = np.random.default_rng(seed)
    pshape = list(shape)
    pshape[axis] = -(-shape[axis] // block) if block else shape[axis]
    if not block:
        pshape = [shape[axis]]
    scale = rng.uniform(0.01, 0.2, pshape).astype(np.float32)
    lo, hi = (-128, 127) if dtype == "int8" else (0, 255)
    zp = rng.integers(lo, hi + 1, pshape).astype(np.int8 if dtype == "int8" else np.uint8)
    attrs = {"axis": axis}
    if block:
        attrs["block_size"] = block
    if op == "QuantizeLinear":
        x = (rng.standard_normal(shape) * 8).astype(np.float32)
        x.flat[::7] = np.round(x.flat[::7])  # some values land on exact halves of a step
        io = (helper.make_tensor_value_info("x", TensorProto.FLOAT, shape),
              helper.make_tensor_value_info("y", _T[dtype], shape))
    else:
        x = rng.integers(lo, hi + 1, shape).astype(zp.dtype)
        io = (helper.make_tensor_value_info("x", _T[dtype], shape),
              helper.make_tensor_value_info("y", TensorProto.FLOAT, shape))
    g = helper.make_graph([helper.make_node(op, ["x", "s", "z"], ["y"], **attrs)], "g", [io[0]], [io[1]],
                          [numpy_helper.from_array(scale, "s"), numpy_helper.from_array(zp, "z")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21 if block else 13)])
    m.ir_version = 10 if block else 8
    return m, {"x": x}


CASES = [("QuantizeLinear", (1, 4, 6, 5), "uint8", 1, 0), ("QuantizeLinear", (1, 4, 6, 5), "int8", 3, 0),
         ("DequantizeLinear", (1, 4, 6, 5), "uint8", 1, 0), ("DequantizeLinear", (1, 3, 8, 4), "int8", 2, 0),
         ("QuantizeLinear", (1, 5, 6, 4), "uint8", 1, 2), ("DequantizeLinear", (1, 6, 8, 3), "int8", 2, 3),
         ("QuantizeLinear", (3, 7), "int8", 1, 3), ("DequantizeLinear", (6, 4), "uint8", 0, 4)]


@pytest.mark.parametrize("op, shape, dtype, axis, block", CASES)
def test_per_element_boundary_qdq_matches_ort_exactly(tmp_path, op, shape, dtype, axis, block):
    import onnxruntime as ort

    m, feeds = _model(op, shape, dtype, axis, block, seed=len(shape) * 7 + axis + block)
    p = tmp_path / "m.onnx"
    onnx.save(m, str(p))
    (want,) = ort.InferenceSession(str(p), providers=["CPUExecutionProvider"]).run(None, feeds)
    prep = api.prepare(p)
    assert any(o.attrs.get("per_element") for o in prep.graph.ops)
    c = api.compile_model(p, "4M")
    got = api.run_plan(c.plan_bytes, feeds).outputs["y"]
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    if len(shape) == 4:  # a budget that cuts the op into row bands gives the same bytes
        need = api.analyze(p, 16, emit=False).min_fast_budget
        if need:
            banded = api.compile_model(p, need)
            np.testing.assert_array_equal(api.run_plan(banded.plan_bytes, feeds).outputs["y"], want)


def test_loader_refuses_a_short_per_element_constant(tmp_path):
    from tigris.host import Session
    from tigris.host.session import PlanError

    m, _ = _model("QuantizeLinear", (1, 4, 6, 5), "uint8", 1, 0, 3)
    p = tmp_path / "m.onnx"
    onnx.save(m, str(p))
    for xip in (False, True):
        data = bytearray(api.compile_model(p, "4M", xip=xip).plan_bytes)
        sec = F.SECTION.unpack(bytes(data), F.DIR_OFFSET + (int(F.SectionId.OPS) - 1) * F.SECTION.size)
        at = F.OP.offsets()
        for i in range(int(sec["size"]) // F.OP.size):
            off = int(sec["offset"]) + i * F.OP.size
            if struct.unpack_from("<I", data, off)[0] == KIND_IDS["quantize"]:
                clen = struct.unpack_from("<I", data, off + at["const_len"] + 4)[0]
                struct.pack_into("<I", data, off + at["const_len"] + 4, clen - 4)
        struct.pack_into("<I", data, 8, zlib.crc32(bytes(data[F.CRC_START:])))
        with pytest.raises(PlanError) as e:
            Session(bytes(data))
        assert e.value.name == "TGRS_ERR_SHAPE", (xip, e.value)
