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
