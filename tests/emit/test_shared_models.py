"""Writer -> reader on every shared model through the real pipeline (load, normalize, lower, plan): lossless round
trip, identical SHA-256 for two compiles, and LZ4 shrinking float weights. Models the op library cannot run yet skip
with the unsupported node named, so the skip reason says exactly what is missing."""
from __future__ import annotations

import hashlib

import pytest

from _emit_compare import assert_lossless
from tigris.emit import emit_plan
from tigris.emit.weights import lz4_bound
from tigris.ir import UnsupportedModelError

from tigris_testing import SHARED_FLOAT, SHARED_INT8, shared_model  # noqa: E402
MODELS = SHARED_FLOAT + SHARED_INT8


def _prepare(rel: str):
    from tigris import api

    path = shared_model(rel)
    try:
        return api, path, api.prepare(path)
    except UnsupportedModelError as e:
        pytest.skip(f"op library cannot run {rel} yet: {e}")


def _fitting(api, prep, tier: str, xip: bool):
    """A memory plan from the real planner (the one ``tigris compile`` uses). "resident": 8M, one unit holding
    everything. "partitioned": half the unscheduled peak, doubled until a plan exists, so stages, spills and (where
    the model allows) tiles and chains are exercised."""
    from tigris.plan import unscheduled_peak

    if tier == "resident":
        budgets = [8 << 20]
    else:
        half = max(16 << 10, unscheduled_peak(prep.graph) // 2 // 1024 * 1024)
        budgets = [half << k for k in range(6)]
    from tigris.plan import Fit

    for fast in budgets:
        res = api._plan(prep, fast, None, xip)
        if isinstance(res, Fit):
            return res.plan
    pytest.skip(f"{prep.graph.name} fits none of the {tier} budgets {budgets}")


@pytest.mark.shared
@pytest.mark.parametrize("tier", ["resident", "partitioned"])
@pytest.mark.parametrize("rel", MODELS)
def test_round_trip_every_variant(rel: str, tier: str) -> None:
    api, path, prep = _prepare(rel)
    plans = {}
    for xip, compression in ((False, "none"), (False, "lz4"), (True, "none")):
        if xip not in plans:
            plans[xip] = _fitting(api, prep, tier, xip)
        plan = plans[xip]
        data = emit_plan(prep.graph, plan, prep.lowered, xip=xip, compression=compression)
        pf = assert_lossless(prep.graph, plan, prep.lowered, data, xip, compression)
        if xip:
            assert pf.max_prefix == 0 and all(u.weight_bytes == 0 for u in pf.units)
        if compression == "lz4":
            # Every block decodes to its unit's prefix image (checked by the reader) and stays within LZ4's
            # worst-case bound. Trained float32 weights barely compress with plain LZ4 (docs/format.md has figures).
            for u in pf.units:
                assert u.wblob_size <= lz4_bound(u.wraw_size)


@pytest.mark.shared
@pytest.mark.parametrize("rel", ["onnx_zoo/mnist-8.onnx", "mlperf_tiny/kws_dscnn_int8.onnx",
                                 "mlperf_tiny/ad_autoencoder_f32.onnx"])
def test_two_compiles_identical_sha256(rel: str) -> None:
    from tigris import api

    digests = set()
    for _ in range(2):
        _api, path, prep = _prepare(rel)  # a fresh load each time: no state shared between the two compiles
        plan = _fitting(api, prep, "partitioned", False)
        digests.add(hashlib.sha256(emit_plan(prep.graph, plan, prep.lowered, xip=False, compression="lz4")).hexdigest())
    assert len(digests) == 1


@pytest.mark.shared
def test_emit_lowers_by_itself_when_not_given_lowered_ops() -> None:
    """emit_plan(graph, plan) lowers every op itself; the bytes equal those from the pipeline's own lowering."""
    from tigris import api

    _api, _path, prep = _prepare("mlperf_tiny/kws_dscnn_int8.onnx")
    plan = _fitting(api, prep, "partitioned", False)
    assert emit_plan(prep.graph, plan, xip=False) == emit_plan(prep.graph, plan, prep.lowered, xip=False)
