"""Single operators under ``--numerics tflm`` against TensorFlow Lite Micro itself: each case is a one-op ``.tflite``
(hand-built flatbuffer) run by TFLM's Python interpreter, and the same op as an IR graph lowered with numerics tflm,
run by the NumPy reference and the C kernel. int8 results must be identical (0 LSB) for MEAN (GlobalAveragePool),
LOGISTIC and TANH (over every input code), AVERAGE_POOL_2D (even windows, SAME padding), ADD, SUB, MUL and SOFTMAX.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: tflite_build
from harness import build_kernels  # noqa: E402
from ophelp import T, c_runner, graph1, phys_inputs, qp, ref_runner, run_op  # noqa: E402
from tigris.ops import lower  # noqa: E402

runtime = pytest.importorskip("tflite_micro.python.tflite_micro.runtime",
                              reason="needs the tflite-micro package (pip install --pre tflite-micro)")
tflite_build = pytest.importorskip("tflite_build", reason="needs the tflite package (a runtime dependency)")

KERNELS = ["pool.c", "gap_accum.c", "unary.c", "binary.c", "softmax.c"]


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return build_kernels(KERNELS, tmp_path_factory.mktemp("tflm_ops"))


def _tflm(model, inputs: list[np.ndarray]) -> np.ndarray:
    ip = runtime.Interpreter.from_bytes(model.bytes())
    for i, x in enumerate(inputs):
        ip.set_input(x, i)
    ip.invoke()
    return ip.get_output(0)


def _ours(lib, g, logical: dict[str, np.ndarray]) -> np.ndarray:
    """The op of ``g`` (numerics tflm): reference and C kernel must agree; returns the physical (NHWC) output."""
    g.numerics = "tflm"
    low = lower(g, g.ops[0])
    phys = phys_inputs(g, low, logical)
    ref = run_op(ref_runner, g, low, phys)
    np.testing.assert_array_equal(run_op(c_runner(lib), g, low, phys), ref)
    return ref


def _nchw(x_nhwc: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x_nhwc.transpose(0, 3, 1, 2))


@pytest.mark.parametrize("seed", range(12))
def test_mean_over_height_and_width(lib, seed):
    rng = np.random.default_rng(seed)
    h, w, c = int(rng.integers(1, 17)), int(rng.integers(1, 17)), int(rng.integers(1, 9))
    si = float(np.float32(rng.uniform(0.01, 0.2)))
    zi = int(rng.integers(-128, 128))
    same = seed % 3 == 0
    so = si if same else float(np.float32(si * rng.uniform(0.3, 3.0)))
    zo = zi if same else int(rng.integers(-128, 128))
    m = tflite_build.Model()
    a = m.tensor("x", (1, h, w, c), "int8", scale=si, zero_point=zi)
    ax = m.tensor("axis", (2,), "int32", data=np.array([1, 2], np.int32))
    b = m.tensor("y", (1, 1, 1, c), "int8", scale=so, zero_point=zo)
    m.op("MEAN", [a, ax], [b], "ReducerOptions", KeepDims=True)
    m.inputs, m.outputs = [a], [b]
    g = graph1("GlobalAveragePool", [T("x", (1, c, h, w), "int8", qp(si, zi))], [T("y", (1, c, 1, 1), "int8",
                                                                                    qp(so, zo))])
    for s in range(3):
        x = rng.integers(-128, 128, size=(1, h, w, c), dtype=np.int8)
        want = _tflm(m, [x]).reshape(-1)
        np.testing.assert_array_equal(_ours(lib, g, {"x": _nchw(x)}).reshape(-1), want)


@pytest.mark.parametrize("op_type, builtin, s_out, z_out", [("Sigmoid", "LOGISTIC", 1 / 256, -128),
                                                            ("Tanh", "TANH", 1 / 128, 0)])
@pytest.mark.parametrize("s_in", [0.003, 0.0078125, 0.02, 0.0371, 0.1, 0.25])
@pytest.mark.parametrize("z_in", [-128, -3, 0, 40, 127])
def test_logistic_and_tanh_every_code(lib, op_type, builtin, s_out, z_out, s_in, z_in):
    s_in = float(np.float32(s_in))
    m = tflite_build.Model()
    a = m.tensor("x", (1, 1, 16, 16), "int8", scale=s_in, zero_point=z_in)
    b = m.tensor("y", (1, 1, 16, 16), "int8", scale=s_out, zero_point=z_out)
    m.op(builtin, [a], [b])
    m.inputs, m.outputs = [a], [b]
    x = np.arange(-128, 128, dtype=np.int8).reshape(1, 1, 16, 16)  # every code once
    g = graph1(op_type, [T("x", (1, 16, 1, 16), "int8", qp(s_in, z_in))],
               [T("y", (1, 16, 1, 16), "int8", qp(s_out, z_out))])
    want = _tflm(m, [x]).reshape(-1)
    np.testing.assert_array_equal(_ours(lib, g, {"x": _nchw(x)}).reshape(-1), want)


@pytest.mark.parametrize("k, s, same", [((2, 2), (2, 2), False), ((4, 4), (4, 4), False), ((3, 3), (1, 1), True),
                                        ((2, 3), (1, 2), True), ((4, 2), (2, 2), True)])
def test_average_pool(lib, k, s, same):
    rng = np.random.default_rng(sum(k) * 7 + s[0])
    h, w, c = 9, 8, 5
    q = (0.05, int(rng.integers(-128, 128)))
    oh = -(-h // s[0]) if same else (h - k[0]) // s[0] + 1
    ow = -(-w // s[1]) if same else (w - k[1]) // s[1] + 1
    m = tflite_build.Model()
    a = m.tensor("x", (1, h, w, c), "int8", scale=q[0], zero_point=q[1])
    b = m.tensor("y", (1, oh, ow, c), "int8", scale=q[0], zero_point=q[1])
    m.op("AVERAGE_POOL_2D", [a], [b], "Pool2DOptions", Padding=0 if same else 1, StrideH=s[0], StrideW=s[1],
         FilterHeight=k[0], FilterWidth=k[1])
    m.inputs, m.outputs = [a], [b]
    pads = [0, 0, 0, 0]
    if same:  # TFLite SAME: total padding max((o - 1) * s + k - n, 0), the smaller half first
        ph = max((oh - 1) * s[0] + k[0] - h, 0)
        pw = max((ow - 1) * s[1] + k[1] - w, 0)
        pads = [ph // 2, pw // 2, ph - ph // 2, pw - pw // 2]
    g = graph1("AveragePool", [T("x", (1, c, h, w), "int8", qp(*q))], [T("y", (1, c, oh, ow), "int8", qp(*q))],
               dict(kernel_shape=list(k), strides=list(s), dilations=[1, 1], pads=pads, ceil_mode=0,
                    count_include_pad=0))
    for seed in range(3):
        x = rng.integers(-128, 128, size=(1, h, w, c), dtype=np.int8)
        np.testing.assert_array_equal(_ours(lib, g, {"x": _nchw(x)}).reshape(-1), _tflm(m, [x]).reshape(-1))


@pytest.mark.parametrize("op_type, builtin", [("Add", "ADD"), ("Sub", "SUB"), ("Mul", "MUL")])
@pytest.mark.parametrize("seed", range(6))
def test_binary(lib, op_type, builtin, seed):
    rng = np.random.default_rng(seed)
    shape = (1, 4, 5, 6)
    sa, sb = (float(np.float32(rng.uniform(0.01, 0.3))) for _ in range(2))
    so = float(np.float32((sa * sb * 40 if op_type == "Mul" else sa + sb) * rng.uniform(0.5, 2.0)))
    za, zb, zo = (int(rng.integers(-128, 128)) for _ in range(3))
    m = tflite_build.Model()
    a = m.tensor("a", shape, "int8", scale=sa, zero_point=za)
    b = m.tensor("b", shape, "int8", scale=sb, zero_point=zb)
    y = m.tensor("y", shape, "int8", scale=so, zero_point=zo)
    m.op(builtin, [a, b], [y], f"{builtin.capitalize()}Options")
    m.inputs, m.outputs = [a, b], [y]
    lshape = (1, shape[3], shape[1], shape[2])
    g = graph1(op_type, [T("a", lshape, "int8", qp(sa, za)), T("b", lshape, "int8", qp(sb, zb))],
               [T("y", lshape, "int8", qp(so, zo))])
    for s in range(3):
        xa = rng.integers(-128, 128, size=shape, dtype=np.int8)
        xb = rng.integers(-128, 128, size=shape, dtype=np.int8)
        got = _ours(lib, g, {"a": _nchw(xa), "b": _nchw(xb)}).reshape(-1)
        np.testing.assert_array_equal(got, _tflm(m, [xa, xb]).reshape(-1))


# (1000 classes abort TFLM's own interpreter build; our kernel's line limit is 4095, tested against C == reference in
# test_softmax.py)
@pytest.mark.parametrize("n", [2, 10, 100, 300])
@pytest.mark.parametrize("s_in", [0.01, 0.0625, 0.2, 0.7])
def test_softmax(lib, n, s_in):
    rng = np.random.default_rng(n)
    s_in = float(np.float32(s_in))
    zi = int(rng.integers(-128, 128))
    m = tflite_build.Model()
    a = m.tensor("x", (1, n), "int8", scale=s_in, zero_point=zi)
    b = m.tensor("y", (1, n), "int8", scale=1 / 256, zero_point=-128)
    m.op("SOFTMAX", [a], [b], "SoftmaxOptions", Beta=1.0)
    m.inputs, m.outputs = [a], [b]
    g = graph1("Softmax", [T("x", (1, n), "int8", qp(s_in, zi))], [T("y", (1, n), "int8", qp(1 / 256, -128))],
               {"axis": 1})
    for s in range(4):
        x = rng.integers(-128, 128, size=(1, n), dtype=np.int8)
        if s == 3:
            # many equal maxima: large sums (TFLM itself aborts from 512 of them: its divide exponent passes 31)
            x[0, : min(n // 2, 500)] = 127
        np.testing.assert_array_equal(_ours(lib, g, {"x": x}).reshape(-1), _tflm(m, [x]).reshape(-1))
