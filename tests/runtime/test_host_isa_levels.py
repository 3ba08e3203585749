"""The host build's ISA levels (tigris/host/build.py: generic, avx2, avxvnni, avx512) run the repository's models alike.

Each level compiles runtime_c with its own flags and target.h picks other kernels (docs/runtime.md "ISA level"), so
the same plan runs here on the generic build and on every vector level the CPU has: int8 outputs must be the same
bytes, float outputs within 1e-5 x max(1, max|out|) of the generic build's (the AVX2 float kernels round each fused
multiply-add once). Levels the CPU lacks are not run (the generic one always is).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tigris import api
from tigris.host import Session
from tigris.host.build import ISA_FLAGS, _cpu_has_avx2, _cpu_has_avx512, _cpu_has_avxvnni, host_isa
from tigris.ir import TigrisError

MODELS = Path(__file__).resolve().parents[1] / "models"
CASES = ["kws_dscnn_int8.onnx", "resnet8_cifar_int8.onnx", "resnet8_cifar_f32.onnx", "mnist-8.onnx"]


def _levels() -> list[str]:
    out = []
    if _cpu_has_avx2():
        out.append("avx2")
    if _cpu_has_avxvnni():
        out.append("avxvnni")
    if _cpu_has_avx512():
        out.append("avx512")
    return out


def test_host_isa_is_a_known_level():
    assert host_isa() in ISA_FLAGS


@pytest.mark.parametrize("name", CASES)
def test_levels_agree(name):
    path = MODELS / name
    prep = api.prepare(path)
    inputs = api.random_inputs(prep, seed=3)
    plan = api.compile_model(path, "64M", prepared=prep).plan_bytes
    ref = Session(plan, isa="generic").run(inputs).outputs
    levels = _levels()
    if not levels:
        pytest.skip("this CPU has no AVX2: only the generic level runs")
    for isa in levels:
        got = Session(plan, isa=isa).run(inputs).outputs
        for key, want in ref.items():
            if want.dtype == np.float32:
                tol = 1e-5 * max(1.0, float(np.abs(want).max(initial=0.0)))
                assert float(np.abs(got[key] - want).max(initial=0.0)) <= tol, f"{isa}: {key}"
            else:
                np.testing.assert_array_equal(got[key], want, err_msg=f"{isa}: {key}")


def test_unknown_level_is_refused(monkeypatch):
    monkeypatch.setenv("TIGRIS_HOST_ISA", "avx9000")
    with pytest.raises(TigrisError, match="TIGRIS_HOST_ISA"):
        host_isa()


# The shared int8 models whose layers take every host vector path (VNNI conv with K % 4 tails and border blocks,
# depthwise channel groups with shifts near one half, int8 add, quantize): each level's bytes must equal the generic
# build's and the NumPy reference's.
SHARED_INT8 = ["tflm/person_detect_int8.onnx", "mlperf_tiny/vww_mbv1_025_96_int8.onnx",
               "torchvision/mobilenet_v2_035_96_int8.onnx"]


@pytest.mark.parametrize("rel", SHARED_INT8)
def test_levels_match_the_reference_on_shared_int8_models(shared_models, rel):
    from tigris.reference import run_reference

    path = shared_models / rel
    prep = api.prepare(path)
    inputs = api.random_inputs(prep, seed=5)
    plan = api.compile_model(path, "64M", xip=True, prepared=prep).plan_bytes
    ref = run_reference(prep.graph, inputs, prep.lowered)
    for isa in ["generic"] + _levels():
        got = Session(plan, isa=isa).run(inputs).outputs
        for out in prep.graph.outputs:
            np.testing.assert_array_equal(got[out], ref[out], err_msg=f"{isa}: {out}")
