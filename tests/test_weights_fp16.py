"""Float16 weights (``compile --weights fp16``, the default for float16 models): the float weights of conv, dwconv,
fc and convtranspose, and a constant operand of matmul, are stored in the plan as IEEE halves (half the flash) and widened exactly to float32 by the kernels, into
their scratch, whether the plan is XIP or not. verify judges such a plan against ONNX Runtime on the model as given
at the float16 tolerance and reports the accuracy cost; the loader refuses inconsistent half-weight records."""
from __future__ import annotations

import json
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tigris import api
from tigris.emit import format as F
from tigris.ops import KIND_IDS, kind

sys.path.insert(0, str(Path(__file__).parent / "families"))
import builders  # noqa: E402

# conv (regular, grouped, 1x1 direct), dwconv and fc are all in these; "deconv" (below) has grouped and 1x1-input
# ConvTransposes between convs
FAMILIES = ("mbv2", "mlp", "dscnn1d", "tiny_unet", "deconv", "const_matmul")
HALF_KINDS = ("conv", "dwconv", "fc", "convtranspose", "matmul")


def deconv(hw: int = 24) -> onnx.ModelProto:
    """Conv -> grouped stride-2 ConvTranspose (pads, output padding, bias, Relu) -> ConvTranspose without bias
    (stride 1, dilation 2) -> Conv: float weights of both kinds, on a map large enough to tile."""
    rng = np.random.default_rng(16)

    def w(*shape):
        return numpy_helper.from_array((rng.standard_normal(shape) * np.sqrt(2.0 / np.prod(shape[1:]))).astype(np.float32),
                                       f"w{len(inits)}")

    inits: list = []
    nodes = []
    inits.append(w(8, 4, 3, 3))
    inits.append(numpy_helper.from_array((rng.standard_normal(8) * 0.1).astype(np.float32), "b0"))
    nodes.append(helper.make_node("Conv", ["x", "w0", "b0"], ["c0"], pads=[1, 1, 1, 1]))
    nodes.append(helper.make_node("Relu", ["c0"], ["r0"]))
    inits.append(w(8, 6, 3, 3))
    inits.append(numpy_helper.from_array((rng.standard_normal(12) * 0.1).astype(np.float32), "b1"))
    nodes.append(helper.make_node("ConvTranspose", ["r0", "w2", "b1"], ["t0"], kernel_shape=[3, 3], strides=[2, 2],
                                  pads=[1, 1, 1, 1], output_padding=[1, 1], group=2))
    nodes.append(helper.make_node("Relu", ["t0"], ["r1"]))
    inits.append(w(12, 5, 2, 2))
    nodes.append(helper.make_node("ConvTranspose", ["r1", "w4"], ["t1"], kernel_shape=[2, 2], dilations=[2, 2]))
    inits.append(w(3, 5, 1, 1))
    nodes.append(helper.make_node("Conv", ["t1", "w5"], ["y"]))
    oh = 2 * hw + 2
    return helper.make_model(helper.make_graph(
        nodes, "deconv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, hw, hw])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, oh, oh])], inits),
        opset_imports=[helper.make_opsetid("", 17)])


def const_matmul() -> onnx.ModelProto:
    """Products the fc kind does not take, so the matmul kind runs them with a constant operand: a constant A
    (``W[40, 24] @ x``, broadcast over the batch) and a batched constant B (``t @ V[2, 16, 12]``)."""
    rng = np.random.default_rng(61)
    a = numpy_helper.from_array((rng.standard_normal((40, 24)) * 0.2).astype(np.float32), "wa")
    b = numpy_helper.from_array((rng.standard_normal((2, 16, 12)) * 0.25).astype(np.float32), "wb")
    return helper.make_model(helper.make_graph(
        [helper.make_node("MatMul", ["wa", "x"], ["t"]), helper.make_node("MatMul", ["t", "wb"], ["y"])], "mm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 24, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 40, 12])], [a, b]),
        opset_imports=[helper.make_opsetid("", 17)])


def _model(family: str) -> onnx.ModelProto:
    return {"deconv": deconv, "const_matmul": const_matmul}.get(family, builders.FAMILIES.get(family))()


def _wf16(k) -> int:
    """The slot of a kind's float16-weight flag (matmul spells its params in capitals)."""
    return k.PARAMS.index("WF16" if "WF16" in k.PARAMS else "wf16")


def _save(m: onnx.ModelProto, d: Path, name: str = "m.onnx") -> Path:
    p = d / name
    onnx.save(m, str(p))
    return p


def _sec(data: bytes, sid: F.SectionId) -> int:
    return int(F.SECTION.unpack(data, F.DIR_OFFSET + (int(sid) - 1) * F.SECTION.size)["offset"])


def _ops(data: bytes) -> list[tuple[int, dict]]:
    """(byte offset, record) of every OP record."""
    base = _sec(data, F.SectionId.OPS)
    n = int(F.SECTION.unpack(data, F.DIR_OFFSET + (int(F.SectionId.OPS) - 1) * F.SECTION.size)["size"]) // F.OP.size
    return [(base + i * F.OP.size, F.OP.unpack(data, base + i * F.OP.size)) for i in range(n)]


def _recrc(blob: bytearray) -> bytes:
    struct.pack_into("<I", blob, 8, zlib.crc32(bytes(blob[F.CRC_START:])))
    return bytes(blob)


def _mac_ops(data: bytes) -> list[tuple[int, dict, str]]:
    names = {v: k for k, v in KIND_IDS.items()}
    return [(off, r, names[int(r["kind"])]) for off, r in _ops(data) if names.get(int(r["kind"])) in HALF_KINDS]


@pytest.mark.parametrize("family", FAMILIES)
def test_fp16_weights_halve_the_weights_and_verify(tmp_path, family):
    p = _save(_model(family), tmp_path)
    c32 = api.compile_model(p, "4M")
    c16 = api.compile_model(p, "4M", weights="fp16")
    macs = _mac_ops(c16.plan_bytes)
    assert macs
    if family in ("deconv", "const_matmul"):
        assert [kn for _, _, kn in macs].count("convtranspose" if family == "deconv" else "matmul") == 2
    for off, rec, kname in macs:
        k = kind(kname)
        assert rec["params"][_wf16(k)] == 1, (kname, rec)
    for off, rec, kname in _mac_ops(c32.plan_bytes):
        assert rec["params"][_wf16(kind(kname))] == 0
    # the weight blobs shrink by half (the other constants do not change)
    w16 = sum(int(r["const_len"][0]) for _, r, _ in macs)
    w32 = sum(int(r["const_len"][0]) for _, r, _ in _mac_ops(c32.plan_bytes))
    assert w16 * 2 == w32
    assert len(c16.plan_bytes) < len(c32.plan_bytes)
    assert api.compile_model(p, "4M", weights="fp16").plan_bytes == c16.plan_bytes  # deterministic
    for xip in (False, True):
        r = api.verify(p, "4M", weights="fp16", xip=xip, samples=2)
        assert r["pass"], r["outputs"]
        assert r["weights"]["dtype"] == "float16"
        cost = r["weights"]["accuracy_cost"]
        assert set(cost) == {o["name"] for o in r["outputs"]}
        for o in r["outputs"]:
            # C computes with exactly the widened halves: the NumPy reference, which reads the same halves, agrees
            # to the float tolerance; the cost against ONNX Runtime's float32 model is what the halves cost
            assert o["reference"]["max_abs_err"] <= 1e-4 * max(1.0, o["max_abs_err"] + 1.0)
            assert 0 < cost[o["name"]]["rel_err"] <= api.FP16_RTOL


@pytest.mark.parametrize("family, op", [("tiny_unet", "conv"), ("deconv", "ConvTranspose")])
def test_fp16_weights_tile_like_untiled(tmp_path, family, op):
    m = _model(family)
    p = _save(m, tmp_path)
    big = api.compile_model(p, "4M", weights="fp16")
    small_budget = big.analysis.json["fast"]["peak_bytes"] * 2 // 3
    tiled = api.compile_model(p, small_budget, weights="fp16")
    assert any(st["tiled"] and st["tiles"] > 1 and op in " ".join(st["op_names"])
               for st in tiled.analysis.json["stages"]), tiled.analysis.json["stages"]
    x = {"x": np.random.default_rng(5).standard_normal(builders.input_shape(m)).astype(np.float32)}
    a = api.run_plan(big.plan_bytes, x)
    b = api.run_plan(tiled.plan_bytes, x)
    assert b.fast_peak <= small_budget  # the widened weights count in the budget, which holds
    for k in a.outputs:
        np.testing.assert_allclose(b.outputs[k], a.outputs[k], rtol=0, atol=1e-5 * max(1.0, float(np.abs(a.outputs[k]).max())))
    r = api.verify(p, small_budget, weights="fp16", samples=1)
    assert r["pass"], r["outputs"]


def test_every_finite_half_widens_exactly(tmp_path):
    """A dense layer x[1, 1] @ W[1, N] whose weights are every finite float16 value: with x = 1 the outputs are the
    widened weights, which must be exactly the halves' float32 values (subnormals, both zeros and the extremes)."""
    bits = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    halves = bits.view(np.float16)
    w = halves[np.isfinite(halves)].astype(np.float32).reshape(1, -1)
    m = helper.make_model(helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, w.shape[1]])],
        [numpy_helper.from_array(w, "w")]), opset_imports=[helper.make_opsetid("", 17)])
    p = _save(m, tmp_path)
    for xip in (False, True):
        c = api.compile_model(p, "4M", weights="fp16", xip=xip)
        y = api.run_plan(c.plan_bytes, {"x": np.ones((1, 1), np.float32)}).outputs["y"]
        np.testing.assert_array_equal(y, w)


def test_weight_beyond_the_float16_range_is_a_clean_error(tmp_path):
    m = builders.FAMILIES["mlp"]()
    for t in m.graph.initializer:
        if len(t.dims) == 2:
            a = numpy_helper.to_array(t).copy()
            a.flat[0] = 1e6
            t.CopyFrom(numpy_helper.from_array(a, t.name))
            break
    p = _save(m, tmp_path)
    out = tmp_path / "m.tgrs"
    r = subprocess.run([sys.executable, "-m", "tigris.cli", "compile", str(p), "-m", "4M", "--weights", "fp16",
                        "-o", str(out)], capture_output=True, text=True)
    assert r.returncode == 2, r.stderr
    assert "float16 range" in r.stderr and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not out.exists()
    assert api.compile_model(p, "4M").plan_bytes  # float32 weights still compile


@pytest.mark.parametrize("family, target", [("mlp", "fc"), ("deconv", "convtranspose"), ("const_matmul", "matmul")])
@pytest.mark.parametrize("edit, status", [("wf16=2", "TGRS_ERR_PARAM"), ("odd", "TGRS_ERR_PARAM"),
                                          ("scratch", "TGRS_ERR_SCRATCH"), ("wf16=0", None)])
def test_loader_checks_half_weight_records(tmp_path, family, target, edit, status):
    from tigris.host import Session
    from tigris.host.session import PlanError

    p = _save(_model(family), tmp_path)
    for xip in (False, True):
        data = bytearray(api.compile_model(p, "4M", weights="fp16", xip=xip).plan_bytes)
        off, rec, kname = [m for m in _mac_ops(bytes(data)) if m[2] == target][0]
        k = kind(kname)
        at = F.OP.offsets()
        poff = off + at["params"]
        wi = _wf16(k)
        if edit == "wf16=2":
            struct.pack_into("<i", data, poff + 4 * wi, 2)
        elif edit == "wf16=0":  # the halves read as floats: half as many bytes as the op needs
            struct.pack_into("<i", data, poff + 4 * wi, 0)
            status = "TGRS_ERR_SHAPE"
        elif edit == "odd":
            struct.pack_into("<I", data, off + at["const_len"], int(rec["const_len"][0]) - 1)
        else:
            struct.pack_into("<I", data, off + at["scratch_size"], int(rec["scratch_size"]) - 16)
        with pytest.raises(PlanError) as e:
            Session(_recrc(data))
        assert e.value.name == status, (xip, e.value)


def test_float16_model_stores_half_weights_by_default(tmp_path):
    from onnxconverter_common import float16

    m16 = float16.convert_float_to_float16(builders.FAMILIES["mbv2"](), keep_io_types=True)
    p = _save(m16, tmp_path)
    c_default = api.compile_model(p, "4M")
    c32 = api.compile_model(p, "4M", weights="fp32")
    assert all(r["params"][_wf16(kind(kn))] == 1 for _, r, kn in _mac_ops(c_default.plan_bytes))
    assert all(r["params"][_wf16(kind(kn))] == 0 for _, r, kn in _mac_ops(c32.plan_bytes))
    assert len(c_default.plan_bytes) < len(c32.plan_bytes)
    x = {"x": np.random.default_rng(1).standard_normal(builders.input_shape(builders.FAMILIES["mbv2"]())).astype(np.float32)}
    a = api.run_plan(c_default.plan_bytes, x).outputs
    b = api.run_plan(c32.plan_bytes, x).outputs
    for k in a:  # the halves widen exactly: the same float32 numbers as the float32-stored plan
        np.testing.assert_array_equal(a[k], b[k])


def test_cli_compile_and_verify_weights_fp16(tmp_path):
    p = _save(builders.FAMILIES["mbv2"](), tmp_path)
    out = tmp_path / "m.tgrs"
    r = subprocess.run([sys.executable, "-m", "tigris.cli", "compile", str(p), "-m", "4M", "--weights", "fp16",
                        "-o", str(out), "-q"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert out.read_bytes() == api.compile_model(p, "4M", weights="fp16").plan_bytes
    r = subprocess.run([sys.executable, "-m", "tigris.cli", "verify", str(p), "-m", "4M", "--weights", "fp16",
                        "--json"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    assert j["weights"]["dtype"] == "float16" and j["weights"]["accuracy_cost"]
    r = subprocess.run([sys.executable, "-m", "tigris.cli", "verify", str(p), "-m", "4M", "--weights", "fp16"],
                       capture_output=True, text=True)
    assert r.returncode == 0 and "float16 weights: output" in r.stdout, r.stdout + r.stderr
