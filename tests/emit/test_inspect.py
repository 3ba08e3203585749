"""``tigris inspect``: the plan summary states what was written, the ONNX summary what the model holds, both are
JSON-serializable, and unreadable inputs are one-line TigrisErrors."""
from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import _emit_handbuilt as H
from tigris import api
from tigris.emit import emit_plan, inspect_onnx, inspect_plan
from tigris.ir import TigrisError


def test_plan_summary_states_the_plan(tmp_path) -> None:
    g, lowered = H.graph(int8=True)
    plan = H.two_unit_tiled_plan(lowered)
    data = emit_plan(g, plan, lowered, xip=False, compression="lz4")
    info = inspect_plan(data)
    json.dumps(info)  # JSON-ready as it is
    assert info["kind"] == "plan" and info["model"] == "handbuilt"
    assert info["header"]["version"] == 2 and info["header"]["file_size"] == len(data)
    assert info["header"]["compression"] == "lz4" and info["header"]["xip"] is False
    (inp,) = info["interface"]["inputs"]
    assert (inp["name"], inp["shape"], inp["dtype"], inp["stored_dtype"], inp["layout"]) == (
        "x", [1, 4, 8, 8], "uint8", "int8", "nhwc"
    )
    assert inp["quant"]["zero_point"] == 125 and inp["stored_quant"]["zero_point"] == -3
    assert info["memory"]["fast_arena_bytes"] == plan.fast_peak
    assert info["memory"]["slow_arena_bytes"] == plan.slow_peak
    assert info["memory"]["spill_bytes"] == plan.spill_bytes and info["memory"]["recompute_macs"] == 1234
    assert [s["tiled"] for s in info["stages"]] == [True, False]
    assert info["stages"][0]["tiles"] == 2 and info["stages"][0]["tile_h"] == 2
    assert info["units"][0]["tile_rows"][1] == {"x": [3, 8], "c1": [4, 8], "p1": [2, 4]}
    assert info["ops"]["by_kind"] == {"conv": 1, "gap": 1, "maxpool": 1}
    want_conv = sum(c.nbytes for c in lowered[0].consts.values())
    assert info["weights"]["by_op_type"]["conv"] == want_conv
    assert info["quantization"]["quantized_tensors"] == 5
    assert info["weights"]["compression_ratio"] == pytest.approx(
        info["weights"]["raw_bytes"] / info["weights"]["stored_bytes"], rel=1e-3
    )  # rounded to 4 decimals in the summary

    # api.inspect picks the plan reader by magic.
    p = tmp_path / "m.tgrs"
    p.write_bytes(data)
    assert api.inspect(p) == info


def test_plan_summary_refuses_a_corrupted_plan() -> None:
    g, lowered = H.graph()
    data = bytearray(emit_plan(g, H.single_unit_plan(lowered), lowered, xip=False))
    data[100] ^= 0xFF
    with pytest.raises(TigrisError, match="CRC"):
        inspect_plan(bytes(data))


def _tiny_onnx(path) -> None:
    w = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "w")
    b = numpy_helper.from_array(np.zeros((4,), np.float32), "b")
    q = numpy_helper.from_array(np.ones((10,), np.int8), "q")
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("Relu", ["r"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4, 8, 8])],
        [w, b, q],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))


def test_onnx_summary(tmp_path) -> None:
    p = tmp_path / "tiny.onnx"
    _tiny_onnx(p)
    info = inspect_onnx(p)
    json.dumps(info)
    assert info["kind"] == "onnx"
    assert info["inputs"] == [{"name": "x", "shape": ["batch", 3, 8, 8], "dtype": "float32"}]
    assert info["outputs"][0]["name"] == "y"
    assert info["op_histogram"] == {"Conv": 1, "Relu": 2} and info["operators"] == 3
    assert info["weights"]["tensors"] == 3
    assert info["weights"]["parameters"] == 4 * 3 * 3 * 3 + 4 + 10
    assert info["weights"]["bytes"] == (4 * 27 + 4) * 4 + 10
    assert info["weights"]["bytes_by_dtype"] == {"float32": (4 * 27 + 4) * 4, "int8": 10}
    assert info["opsets"] == {"ai.onnx": 13}
    full = api.inspect(p)
    # the library call adds the per-layer view (stages 1-2 and lowering) to the file summary
    layers = full.pop("layers")
    assert full == info
    assert layers[0]["kernel"] == "conv" and layers[0]["macs"] == 6912


def test_onnx_summary_refuses_garbage(tmp_path) -> None:
    p = tmp_path / "bad.onnx"
    p.write_bytes(b"\x00not a model\xff" * 10)
    with pytest.raises(TigrisError, match="cannot read ONNX model"):
        inspect_onnx(p)
