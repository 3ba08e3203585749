"""float16 models (onnxconverter-common's output: float16 weights and activations, Cast at the edges) load, compute
in float32 on their float16 weights, and verify against ONNX Runtime's float16 execution at the float16 tolerance."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from tigris import api
from tigris.load.float16 import float16_to_float32, has_float16

sys.path.insert(0, str(Path(__file__).parent / "families"))
import builders  # noqa: E402

from onnxconverter_common import float16  # noqa: E402  (a test dependency)


def _fp16(m: onnx.ModelProto, keep_io: bool = True) -> onnx.ModelProto:
    return float16.convert_float_to_float16(m, keep_io_types=keep_io)


@pytest.mark.parametrize("family", ["mbv3_small", "mbv2", "tiny_unet", "effnet_lite", "det_head", "lcnet"])
def test_float16_family_verifies(tmp_path, family):
    p = tmp_path / "m16.onnx"
    onnx.save(_fp16(builders.FAMILIES[family]()), str(p))
    prep = api.prepare(p)
    assert prep.graph.precision == "float16"
    assert all(t.dtype != "float16" for t in prep.graph.tensors.values())
    r = api.verify(p, "4M", samples=3)
    assert r["pass"], r["outputs"]


def test_widened_model_is_the_float32_model_with_float16_weights(tmp_path):
    """Exactness of the rewrite: the plan of the float16 model computes exactly what the float32 model computes
    with its weights rounded to float16 (same kernels, same numbers), bit for bit."""
    m32 = builders.FAMILIES["tiny_unet"]()
    m16 = _fp16(m32)
    rounded = onnx.ModelProto()
    rounded.CopyFrom(m32)
    for t in rounded.graph.initializer:
        if t.data_type == onnx.TensorProto.FLOAT:
            t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float16).astype(np.float32), t.name))
    p16, p32 = tmp_path / "a.onnx", tmp_path / "b.onnx"
    onnx.save(m16, str(p16))
    onnx.save(rounded, str(p32))
    x = {"x": np.random.default_rng(3).standard_normal(builders.input_shape(m32)).astype(np.float32)}
    a = api.run_plan(api.compile_model(p16, "4M").plan_bytes, x).outputs
    b = api.run_plan(api.compile_model(p32, "4M").plan_bytes, x).outputs
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])


def test_rewrite_leaves_no_float16_and_keeps_float32_models():
    m32 = builders.FAMILIES["mbv2"]()
    assert not has_float16(m32) and float16_to_float32(m32) is m32
    w = float16_to_float32(_fp16(m32))
    assert not has_float16(w)
    assert not any(n.op_type == "Cast" for n in w.graph.node)


def test_float16_interface_is_a_one_line_error(tmp_path):
    p = tmp_path / "io16.onnx"
    onnx.save(_fp16(builders.FAMILIES["mbv2"](), keep_io=False), str(p))
    r = subprocess.run([sys.executable, "-c", "from tigris.cli import main; main()", "analyze", str(p), "-m", "256K"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "float16" in lines[0] and "x" in lines[0] and "Traceback" not in r.stderr
