"""Index outputs end to end (docs/format.md "Index outputs", "Row-counted outputs"): an ArgMax and a
NonMaxSuppression model compile to plans whose outputs are stored as int32 with the declared int64 kept, the NMS
output at its maximum size with the ROWS flag; ``api.run_plan`` returns exactly what ONNX Runtime returns
(``[num_selected, 3]`` int64, zero rows included), and both the C loader and the Python reader refuse an int64
declaration or a ROWS flag where the format does not allow one."""
from __future__ import annotations

import struct

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tigris import api
from tigris.emit import format as F
from tigris.emit.reader import PlanFormatError, read_plan
from tigris.emit.writer import seal
from tigris.host.build import runtime

CODES = {s.name: s.code for s in F.STATUS}


def _nms_model(thr: float) -> onnx.ModelProto:
    n = helper.make_node
    inits = [numpy_helper.from_array(np.array([4], np.int64), "m"),
             numpy_helper.from_array(np.array([0.4], np.float32), "iou"),
             numpy_helper.from_array(np.array([thr], np.float32), "thr")]
    g = helper.make_graph([n("Sigmoid", ["s"], ["ss"]), n("NonMaxSuppression", ["b", "ss", "m", "iou", "thr"], ["sel"])],
                          "nms", [helper.make_tensor_value_info("b", TensorProto.FLOAT, [1, 12, 4]),
                                  helper.make_tensor_value_info("s", TensorProto.FLOAT, [1, 2, 12])],
                          [helper.make_tensor_value_info("sel", TensorProto.INT64, [None, 3])], initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


def _feeds(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    c = rng.uniform(0, 4, (1, 12, 2)).astype(np.float32)
    return {"b": np.concatenate([c, c + rng.uniform(0.5, 2, (1, 12, 2)).astype(np.float32)], axis=2),
            "s": rng.standard_normal((1, 2, 12)).astype(np.float32)}


@pytest.mark.parametrize("thr", [0.3, 0.999])
def test_nms_plan_returns_the_selection_as_the_model_states_it(tmp_path, thr):
    p = tmp_path / "nms.onnx"
    onnx.save(_nms_model(thr), p)
    plan = api.compile_model(p, "64K").plan_bytes
    io = read_plan(plan).outputs[-1]
    assert (io.decl_dtype, io.dtype, io.rows, io.shape) == ("int64", "int32", True, (8, 3))
    for seed in range(4):
        feeds = _feeds(seed)
        got = api.run_plan(plan, feeds).outputs["sel"]
        (want,) = api.run_onnxruntime(p, feeds).values()
        assert got.dtype == np.int64 and got.shape == want.shape and np.array_equal(got, want), (got, want)
    if thr > 0.99:
        assert got.shape == (0, 3)  # nothing above the threshold: the valid count is 0


def test_argmax_plan_returns_int64(tmp_path):
    n = helper.make_node
    g = helper.make_graph([n("ArgMax", ["x"], ["y"], axis=1, keepdims=0)], "am",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 5, 3, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.INT64, [1, 3, 4])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    p = tmp_path / "am.onnx"
    onnx.save(m, p)
    plan = api.compile_model(p, "64K").plan_bytes
    io = read_plan(plan).outputs[-1]
    assert (io.decl_dtype, io.dtype, io.rows) == ("int64", "int32", False)
    x = np.random.default_rng(0).standard_normal((1, 5, 3, 4)).astype(np.float32)
    got = api.run_plan(plan, {"x": x}).outputs["y"]
    assert got.dtype == np.int64 and np.array_equal(got, np.argmax(x, axis=1))


def _c_load(data: bytes) -> int:
    rt = runtime()
    buf = rt.ffi.new("uint8_t[]", max(1, len(data)) + 16)
    shift = (-int(rt.ffi.cast("uintptr_t", buf))) % 16
    rt.ffi.memmove(buf + shift, data, len(data))
    return int(rt.lib.tgrs_load(rt.ffi.new("tgrs_plan *"), buf + shift, len(data)))


def _forge(data: bytes, index: int, field: str, value: int) -> bytes:
    off = struct.unpack_from("<4I", data, F.DIR_OFFSET + (int(F.SectionId.IO) - 1) * F.SECTION.size)[1]
    b = bytearray(data)
    struct.pack_into("<I", b, off + index * F.IO.size + F.IO.offsets()[field], value)
    return seal(b)


def test_loaders_refuse_int64_and_rows_where_the_format_forbids_them(tmp_path):
    p = tmp_path / "nms.onnx"
    onnx.save(_nms_model(0.3), p)
    plan = api.compile_model(p, "64K").plan_bytes
    assert _c_load(plan) == 0
    s64 = 6  # TGRS_DT_S64
    bad = [_forge(plan, 0, "decl_dtype", s64),  # an int64 input
           _forge(plan, 0, "flags", int(F.IoFlag.ROWS)),  # a row-counted input (float)
           _forge(plan, 2, "dtype", s64)]  # int64 stored
    for data in bad:
        assert _c_load(data) == CODES["ERR_IO"]
        with pytest.raises(PlanFormatError) as e:
            read_plan(data)
        assert e.value.status == "ERR_IO"
