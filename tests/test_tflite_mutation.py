"""Corrupted ``.tflite`` files: random byte flips, truncations and bad offsets give a one-line exit-2 error (or, when
the damage happens to leave a valid model, a normal result), never a traceback, within bounded time and memory.

Flatbuffer offsets can point anywhere, so the reader bound-checks every vector and index before following it
(tigris/load/tflite/reader.py). The library level must raise only :class:`TigrisError`; the CLI then prints one line
and exits 2.
"""
from __future__ import annotations

import resource
import time

import numpy as np
import pytest

from tflite_build import ACT, Model

pytest.importorskip("tflite")

from tigris import api  # noqa: E402
from tigris.ir import TigrisError  # noqa: E402


def _model() -> bytes:
    rng = np.random.default_rng(5)
    m = Model()
    x = m.tensor("x", (1, 6, 6, 2), "int8", scale=[0.05], zero_point=[1])
    w = m.tensor("w", (4, 3, 3, 2), "int8", data=rng.integers(-127, 128, (4, 3, 3, 2)), scale=[0.01] * 4,
                 zero_point=[0] * 4)
    b = m.tensor("b", (4,), "int32", data=rng.integers(-99, 99, 4), scale=[0.0005] * 4, zero_point=[0] * 4)
    c = m.tensor("c", (1, 3, 3, 4), "int8", scale=[0.04], zero_point=[-128])
    p = m.tensor("p", (1, 1, 1, 4), "int8", scale=[0.04], zero_point=[-128])
    fw = m.tensor("fw", (3, 4), "int8", data=rng.integers(-127, 128, (3, 4)), scale=[0.02], zero_point=[0])
    fb = m.tensor("fb", (3,), "int32", data=rng.integers(-99, 99, 3), scale=[0.0008], zero_point=[0])
    y = m.tensor("y", (1, 3), "int8", scale=[0.1], zero_point=[0])
    m.op("CONV_2D", [x, w, b], [c], "Conv2DOptions", Padding=0, StrideH=2, StrideW=2,
         FusedActivationFunction=ACT["relu"])
    m.op("AVERAGE_POOL_2D", [c], [p], "Pool2DOptions", Padding=1, StrideH=1, StrideW=1, FilterHeight=3,
         FilterWidth=3)
    m.op("FULLY_CONNECTED", [p, fw, fb], [y], "FullyConnectedOptions")
    m.inputs, m.outputs = [x], [y]
    return m.bytes()


def _try(tmp_path, data: bytes, k: int) -> str:
    """'ok' when the bytes still compile, 'error' on a TigrisError; anything else fails the test."""
    p = tmp_path / f"mut{k}.tflite"
    p.write_bytes(data)
    t0 = time.monotonic()
    try:
        api.compile_model(p, "64K")
        out = "ok"
    except TigrisError as e:
        msg = str(e)
        assert "\n" not in msg, msg
        out = "error"
    assert time.monotonic() - t0 < 20, f"mutant {k} took {time.monotonic() - t0:.1f} s"
    return out


def test_original_compiles(tmp_path):
    assert _try(tmp_path, _model(), 0) == "ok"


def test_truncations(tmp_path):
    data = _model()
    for k, n in enumerate(range(0, len(data), 7)):
        # the builder writes back to front: a cut can only spare a model whose every table lies before it
        _try(tmp_path, data[:n], k)
    for k, n in enumerate((0, 3, 4, 7, 8, 12, 16, 40, len(data) // 3, len(data) // 2)):
        assert _try(tmp_path, data[:n], k) == "error"


def test_random_byte_flips(tmp_path):
    data = _model()
    rng = np.random.default_rng(11)
    limit = resource.getrlimit(resource.RLIMIT_AS)
    outcomes = {"ok": 0, "error": 0}
    try:
        # bounded memory: a corrupted size must not make the importer allocate gigabytes
        resource.setrlimit(resource.RLIMIT_AS, (max(limit[0], 0) if limit[0] > 0 else 6 << 30, limit[1]))
        for k in range(300):
            b = bytearray(data)
            for _ in range(int(rng.integers(1, 4))):
                b[int(rng.integers(0, len(b)))] = int(rng.integers(0, 256))
            outcomes[_try(tmp_path, bytes(b), k)] += 1
    finally:
        resource.setrlimit(resource.RLIMIT_AS, limit)
    assert outcomes["error"] > 0 and sum(outcomes.values()) == 300


def test_bad_offsets(tmp_path):
    data = _model()
    cases = []
    for pos in range(0, min(len(data), 400), 4):  # every 32-bit word of the tables and vtables at the front
        for val in (0xFFFFFFF0, 0x7FFFFFFF, len(data) + 8, 0):
            b = bytearray(data)
            b[pos:pos + 4] = int(val).to_bytes(4, "little")
            cases.append(bytes(b))
    for k, c in enumerate(cases):
        _try(tmp_path, c, k)


def test_cli_prints_one_line(tmp_path):
    from click.testing import CliRunner

    from tigris.cli import main

    p = tmp_path / "bad.tflite"
    data = _model()
    p.write_bytes(data[:len(data) // 2])
    r = CliRunner().invoke(main, ["analyze", str(p), "--fast", "64K"])
    assert r.exit_code == 2
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and "bad.tflite" in lines[0] and "Traceback" not in r.output


@pytest.mark.shared
def test_real_model_mutants(tmp_path):
    from tigris_testing import MODELS

    src = MODELS / "tflite" / "kws_dscnn_int8.tflite"
    if not src.is_file():
        pytest.skip("needs ../shared/models/tflite (not present beside this clone)")
    data = src.read_bytes()
    rng = np.random.default_rng(23)
    for k in range(40):
        b = bytearray(data)
        # flip bytes in the tables (the first and last 4 KiB hold the subgraph, tensors, operators and vtables)
        region = int(rng.integers(0, 2))
        pos = int(rng.integers(0, 4096)) if region == 0 else len(b) - 1 - int(rng.integers(0, 4096))
        b[pos] ^= 1 << int(rng.integers(0, 8))
        _try(tmp_path, bytes(b), k)
    for k, n in enumerate((100, len(data) // 2, len(data) - 100)):
        assert _try(tmp_path, data[:n], 100 + k) == "error"
