"""The shared TFLite originals (MLPerf Tiny, TFLM person detection) compiled from the ``.tflite`` directly.

Each model compiles at 256K (plain, ``--xip``, ``-c lz4``) and at the tiling budget 32K with ``--xip``; every plan runs on the
C runtime and its outputs are bit-exact with the NumPy reference, the tiled plans bit-exact with the untiled one, and
the runtime's high-water marks equal the compiler's peaks. Against TFLite Micro and the TFLite interpreter (reference
kernels) the int8 outputs stay within the measured ``MAX_LSB[model]`` on 20 seeded inputs, with the default numerics
of a TFLite model (``tflm``) and with ``--numerics onnx`` (docs/tflite.md gives the figures).
"""
from __future__ import annotations

import numpy as np
import pytest

from tigris_testing import MODELS

pytest.importorskip("tflite")
pytest.importorskip("ai_edge_litert")

from tigris import api  # noqa: E402
from tigris.reference import run_reference  # noqa: E402
from tigris.reference.tflite_run import run_litert, run_tflm  # noqa: E402

pytestmark = pytest.mark.shared
TFLITE = MODELS / "tflite"

# max |ours - reference| in LSB over seeds 0..19, as (TFLite interpreter's reference kernels, TFLite Micro), for
# --numerics tflm (the default for .tflite: bit-exact with TFLM) and --numerics onnx. TFLite's reference
# FULLY_CONNECTED rounds once where TFLM rounds twice (ad_autoencoder's 3 LSB against the interpreter).
MAX_LSB = {
    "ad_autoencoder_int8": {"tflm": (3, 0), "onnx": (0, 3)},
    "kws_dscnn_int8": {"tflm": (0, 0), "onnx": (5, 5)},
    "person_detect_int8": {"tflm": (0, 0), "onnx": (2, 2)},
    "resnet8_cifar_int8": {"tflm": (0, 0), "onnx": (51, 51)},
    "streaming_wakeword_int8": {"tflm": (0, 0), "onnx": (0, 0)},
    "vww_mbv1_025_96_int8": {"tflm": (0, 0), "onnx": (1, 1)},
}
SEEDS = range(20)


@pytest.fixture(scope="module")
def prepared():
    if not TFLITE.is_dir():
        pytest.skip("needs ../shared/models/tflite (not present beside this clone)")
    return {}


def _prep(cache, name):
    if name not in cache:
        cache[name] = api.prepare(TFLITE / f"{name}.tflite")
    return cache[name]


@pytest.mark.parametrize("name", sorted(MAX_LSB))
def test_plans_run_and_agree(prepared, name):
    path = TFLITE / f"{name}.tflite"
    prep = _prep(prepared, name)
    assert prep.graph.source == "tflite"
    base = api.compile_model(path, "256K", prepared=prep)
    xs = [api.random_inputs(prep, seed) for seed in range(3)]
    wants = [api.run_plan(base.plan_bytes, x) for x in xs]
    for x, want in zip(xs, wants):
        ref = run_reference(prep.graph, x, prep.lowered)
        for n in prep.graph.outputs:
            assert np.array_equal(want.outputs[n], ref[n]), f"{name}: C runtime differs from the reference"
    tiled_any = False
    # 32K is a tiling budget only with --xip (copying the weights into SRAM needs more than 32K on most models)
    for fast, kw in (("256K", {"xip": True}), ("256K", {"compression": "lz4"}), ("32K", {"xip": True})):
        c = api.compile_model(path, fast, prepared=prep, **kw)
        plan = c.analysis.plan
        tiled_any |= any(s.tiled for s in plan.stages)
        for x, want in zip(xs, wants):
            res = api.run_plan(c.plan_bytes, x)
            assert res.fast_peak == plan.fast_peak, f"{name} {fast} {kw}: runtime fast high-water differs"
            assert res.fast_peak <= api.parse_size(fast)
            for n in prep.graph.outputs:
                assert np.array_equal(res.outputs[n], want.outputs[n]), f"{name} {fast} {kw}: differs from 256K"
    if name in ("vww_mbv1_025_96_int8", "person_detect_int8", "resnet8_cifar_int8"):
        assert tiled_any, f"{name}: 32K should need tiling"


@pytest.mark.parametrize("numerics", ["tflm", "onnx"])
@pytest.mark.parametrize("name", sorted(MAX_LSB))
def test_against_tflite_interpreters(prepared, name, numerics):
    path = TFLITE / f"{name}.tflite"
    prep = _prep(prepared, name) if numerics == "tflm" else api.prepare(path, numerics=numerics)
    assert prep.graph.numerics == numerics
    c = api.compile_model(path, "256K", prepared=prep)
    worst = [0, 0]
    for seed in SEEDS:
        x = api.random_inputs(prep, seed)
        got = api.run_plan(c.plan_bytes, x).outputs
        refs = (run_litert(path, x), run_tflm(path, x))
        for n in prep.graph.outputs:
            g = np.asarray(got[n]).astype(np.int64)
            for k, r in enumerate(refs):
                worst[k] = max(worst[k], int(np.abs(g - np.asarray(r[n]).astype(np.int64).reshape(g.shape)).max()))
    bound = MAX_LSB[name][numerics]
    assert worst[0] <= bound[0] and worst[1] <= bound[1], f"{name}: max LSB (TFLite, TFLM) = {tuple(worst)}"


TWINS = {"kws_dscnn_int8": "mlperf_tiny", "vww_mbv1_025_96_int8": "mlperf_tiny", "resnet8_cifar_int8": "mlperf_tiny",
         "ad_autoencoder_int8": "mlperf_tiny", "streaming_wakeword_int8": "mlperf_tiny", "person_detect_int8": "tflm"}


@pytest.mark.parametrize("name", sorted(TWINS))
def test_plan_as_lean_as_the_onnx_twin(prepared, name):
    # the importer's layout mapping adds no data movement: the same fast and slow peaks as the converted ONNX model
    onnx_path = MODELS / TWINS[name] / f"{name}.onnx"
    a = api.analyze(TFLITE / f"{name}.tflite", "32K", xip=True, prepared=_prep(prepared, name))
    b = api.analyze(onnx_path, "32K", xip=True)
    assert a.fits and b.fits
    assert a.json["fast"]["peak_bytes"] <= b.json["fast"]["peak_bytes"]
    assert a.json["slow"]["peak_bytes"] <= b.json["slow"]["peak_bytes"]
    assert len(a.prepared.graph.ops) <= len(b.prepared.graph.ops)


def test_verify_command_uses_tflite(prepared, tmp_path):
    from click.testing import CliRunner

    from tigris.cli import main

    r = CliRunner().invoke(main, ["verify", str(TFLITE / "kws_dscnn_int8.tflite"), "--fast", "32K", "--json"])
    assert r.exit_code == 0, r.output
    import json

    d = json.loads(r.output[r.output.index("{"):])
    assert d["against"] == "tflite" and d["pass"]
    assert d["outputs"][0]["reference_bit_exact"] and d["outputs"][0]["tflm"] is not None
    r = CliRunner().invoke(main, ["compile", str(TFLITE / "kws_dscnn_int8.tflite"), "--fast", "32K", "--xip",
                                  "-o", str(tmp_path / "k.tgrs")])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(main, ["inspect", str(tmp_path / "k.tgrs"), "--json"])
    assert r.exit_code == 0
    r = CliRunner().invoke(main, ["run", str(TFLITE / "kws_dscnn_int8.tflite"), "--output", str(tmp_path / "o.npz")])
    assert r.exit_code == 2 and "TFLite model, not a plan" in r.output
