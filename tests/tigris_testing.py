"""Helpers every test folder can import as `from tigris_testing import ...` (a unique module name: several folders
have a conftest.py, so `from conftest import` would be ambiguous). Tests that need ../shared (the real models) skip
with a clear reason when the folder is absent (a fresh clone without it); CI has it, so there they always run."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("TIGRIS_SHARED", REPO.parent / "shared"))
MODELS = SHARED / "models"
TEST_MODELS = REPO / "tests" / "models"  # small real models kept in the repo, with licence notes
EXAMPLES = REPO / "examples"


def shared_model(rel: str) -> Path:
    """Path of a model under ../shared/models, or skip the test with a clear reason."""
    p = MODELS / rel
    if not p.exists():
        pytest.skip(f"needs ../shared/models/{rel} (not present beside this clone)")
    return p


def require_shared_models() -> Path:
    if not MODELS.is_dir():
        pytest.skip("needs ../shared/models (not present beside this clone)")
    return MODELS


SHARED_FLOAT = [
    "mlperf_tiny/vww_mbv1_025_96_f32.onnx",
    "mlperf_tiny/resnet8_cifar_f32.onnx",
    "mlperf_tiny/ad_autoencoder_f32.onnx",
    "mlperf_tiny/kws_dscnn_f32.onnx",
    "onnx_zoo/mnist-8.onnx",
    "torchvision/mobilenet_v2_035_96_f32.onnx",
    "torchvision/efficientnet_lite0_128_f32.onnx",
]
SHARED_INT8 = [
    "mlperf_tiny/kws_dscnn_int8.onnx",
    "mlperf_tiny/vww_mbv1_025_96_int8.onnx",
    "mlperf_tiny/resnet8_cifar_int8.onnx",
    "mlperf_tiny/ad_autoencoder_int8.onnx",
    "mlperf_tiny/streaming_wakeword_int8.onnx",
    "tflm/person_detect_int8.onnx",
    "torchvision/mobilenet_v2_035_96_int8.onnx",
    "torchvision/efficientnet_lite0_128_int8.onnx",
]


def host_runtime():
    """The bundled runtime built for this machine (``tigris.host.build.runtime()``), or skip the test saying why it
    cannot be built here (no C compiler, no cffi)."""
    try:
        from tigris.host.build import runtime

        return runtime()
    except Exception as e:  # noqa: BLE001 - no compiler / runtime not buildable: say so and skip
        pytest.skip(f"host runtime_c not available: {type(e).__name__}: {e}")


def host_session():
    """``(Session, PlanError)`` of the host runtime, or skip the test as ``host_runtime`` does."""
    host_runtime()
    from tigris.host.session import PlanError, Session

    return Session, PlanError


def saved_model(tmp: Path, model, name: str, int8: bool) -> Path:
    """``model`` (an onnx.ModelProto) saved as ``tmp/<name>.onnx``; with ``int8`` that file quantized by ONNX Runtime
    (QDQ, int8 activations, per-channel int8 weights: tests/families builders.quantize) into ``tmp/<name>_int8.onnx``,
    whose path is returned."""
    import onnx

    fp = tmp / f"{name}.onnx"
    onnx.save(model, str(fp))
    if not int8:
        return fp
    qp = tmp / f"{name}_int8.onnx"
    _builders().quantize(fp, qp, "int8", True)
    return qp


def _builders():
    import sys

    fams = str(REPO / "tests" / "families")
    if fams not in sys.path:
        sys.path.insert(0, fams)
    import builders

    return builders


def family_model(tmp: Path, fam: str, int8: bool) -> Path:
    """tests/families model ``fam`` saved under ``tmp`` (seeded weights), quantized by ORT QDQ when ``int8``."""
    return saved_model(tmp, _builders().FAMILIES[fam](), fam, int8)


def compile_like_untiled(path: Path, prep, budget: int, float_tol: float = 1e-5):
    """Compile ``path`` with --xip at ``budget`` and run it on the host runtime against the untiled plan (int8 bit
    for bit, float within ``float_tol`` of the largest magnitude), with the fast high-water mark the plan's peak;
    (compiled, inputs, outputs)."""
    import numpy as np

    from tigris import api

    c = api.compile_model(path, budget, xip=True, prepared=prep)
    x = api.random_inputs(prep, 0)
    got = api.run_plan(c.plan_bytes, x)
    assert got.fast_peak == c.analysis.plan.fast_peak
    want = api.run_plan(api.compile_model(path, "16M", xip=True, prepared=prep).plan_bytes, x)
    for name, y in want.outputs.items():
        if y.dtype == np.float32:
            assert float(np.abs(got.outputs[name] - y).max()) <= float_tol * max(1.0, float(np.abs(y).max()))
        else:
            np.testing.assert_array_equal(got.outputs[name], y)
    return c, x, got.outputs


def matches_ort(path: Path, x, outputs, tol: float = 1e-4) -> None:
    """Every output within ``tol`` (relative to its largest magnitude) of ONNX Runtime's."""
    import numpy as np

    from tigris import api

    ref = api.run_onnxruntime(path, x)
    ref = ref if isinstance(ref, dict) else dict(zip(outputs, ref))
    for name, r in ref.items():
        r = np.asarray(r, np.float64)
        assert float(np.abs(outputs[name] - r).max()) <= tol * max(1.0, float(np.abs(r).max())), name
