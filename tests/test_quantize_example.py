"""examples/quantize_static.py, the recipe docs/cli.md gives for an int8 QDQ model: run as a user runs it on the
example MNIST model, calibrated on its stored test sample (and noisy copies of it); the result must be a QDQ int8
model that tigris verifies (bit-exact against the NumPy reference) and that still classifies the sample as the float
model's stored output does."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from tigris import api

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "examples" / "quantize_static.py"
MNIST = REPO / "examples" / "mnist-8.onnx"
SET = REPO / "tests" / "models" / "mnist-8_data" / "test_data_set_0"


def _pb(path: Path) -> np.ndarray:
    t = onnx.TensorProto()
    t.ParseFromString(path.read_bytes())
    return numpy_helper.to_array(t)


def _run_script(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True, timeout=600)


def test_quantize_static_example_gives_a_verified_int8_model(tmp_path):

    x = _pb(SET / "input_0.pb")
    expected = _pb(SET / "output_0.pb")
    rng = np.random.default_rng(0)
    calib = np.concatenate([x] + [x + rng.normal(0, 8, x.shape).astype(np.float32) for _ in range(7)])
    npz = tmp_path / "calib.npz"
    np.savez(npz, Input3=calib)
    out = tmp_path / "mnist_int8.onnx"
    r = _run_script(MNIST, out, "--data", npz)
    assert r.returncode == 0, r.stderr[-3000:]
    assert out.is_file() and "wrote" in r.stdout

    m = onnx.load(str(out))
    ops = {n.op_type for n in m.graph.node}
    assert {"QuantizeLinear", "DequantizeLinear"} <= ops
    int8_weights = [i for i in m.graph.initializer if i.data_type == onnx.TensorProto.INT8 and len(i.dims) == 4]
    assert int8_weights, "no int8 convolution weights"

    res = api.verify(out, "32K", data=npz)
    assert res["pass"], res["outputs"]
    assert res["outputs"][0]["reference_bit_exact"]
    # still the float model's answer on the sample it was calibrated with
    q = api.run_onnxruntime(out, {"Input3": x})["Plus214_Output_0"]
    assert int(np.argmax(q)) == int(np.argmax(expected))


def _small_cnn(path: Path) -> None:
    """A float CNN as current exporters write it (opset 13, bias inside Conv and Gemm)."""
    from onnx import TensorProto, helper

    rng = np.random.default_rng(1)

    def init(name, *shape):
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.3).astype(np.float32), name)

    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("GlobalAveragePool", ["r2"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Gemm", ["f", "w3", "b3"], ["y"], transB=1),
    ]
    graph = helper.make_graph(
        nodes, "small_cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])],
        [init("w1", 8, 3, 3, 3), init("b1", 8), init("w2", 16, 8, 3, 3), init("b2", 16), init("w3", 5, 16),
         init("b3", 5)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))


def test_per_channel_on_a_current_export(tmp_path):
    src, out = tmp_path / "cnn.onnx", tmp_path / "cnn_int8.onnx"
    _small_cnn(src)
    npz = tmp_path / "calib.npz"
    np.savez(npz, x=np.random.default_rng(2).standard_normal((8, 3, 16, 16)).astype(np.float32))
    r = _run_script(src, out, "--data", npz, "--per-channel")
    assert r.returncode == 0, r.stderr[-3000:]
    m = onnx.load(str(out))
    scales = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer if i.name.endswith("_scale")}
    assert any(v.size == 16 for v in scales.values()), "no per-channel weight scale for the 16-channel conv"
    res = api.verify(out, "16K", data=npz)
    assert res["pass"] and res["outputs"][0]["reference_bit_exact"], res["outputs"]
    # close to the float model it came from
    x = np.load(npz)["x"][:1]
    f, q = api.run_onnxruntime(src, {"x": x})["y"], api.run_onnxruntime(out, {"x": x})["y"]
    assert api.compare(q, f, integer=False)["cosine"] > 0.98


def test_bad_calibration_data_is_one_line_exit_2(tmp_path):
    npz = tmp_path / "calib.npz"
    np.savez(npz, wrong_name=np.zeros((2, 1, 28, 28), np.float32))
    r = _run_script(MNIST, tmp_path / "q.onnx", "--data", npz)
    assert r.returncode == 2 and r.stderr.startswith("error: ") and "Input3" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not (tmp_path / "q.onnx").exists()
