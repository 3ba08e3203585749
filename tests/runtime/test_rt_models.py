"""The runtime on real models (../shared/models): every weight mode at budgets that force several units, spills and
tiles, against the NumPy reference executor (int8 bit-exact; float within 1e-5 x max(1, max|ref|)), and the
runtime's fast/slow high-water marks equal to the compiler's peaks. A small, fast subset: the full sweep over every
model is `tigris verify`'s job (tests/test_end_to_end.py)."""
from __future__ import annotations

import numpy as np
import pytest

import _rt_plans as P
from tigris import api
from tigris.host import Session
from tigris.ir import DoesNotFitError
from tigris.reference import run_reference

FLOAT_TOL = 1e-5  # x max(1, max|ref|), against the reference executor
MODELS = [
    ("mlperf_tiny/resnet8_cifar_int8.onnx", ["128K", "64K"]),  # 64K: three units, one tiled
    ("mlperf_tiny/vww_mbv1_025_96_int8.onnx", ["128K"]),  # three units with spills and reloads
    ("mlperf_tiny/kws_dscnn_f32.onnx", ["64K"]),  # float with a slow arena
    ("mlperf_tiny/ad_autoencoder_int8.onnx", ["128K"]),
    ("onnx_zoo/mnist-8.onnx", ["64K"]),
]
MODES = [(False, "none"), (True, "none"), (False, "lz4")]


@pytest.mark.parametrize("rel,budgets", MODELS, ids=[m.split("/")[-1] for m, _ in MODELS])
def test_model_runs_match_reference_and_plan_peaks(rel: str, budgets: list[str]) -> None:
    path = P.shared_model(rel)
    prep = api.prepare(path)
    inputs = api.random_inputs(prep, seed=1)
    ref = run_reference(prep.graph, inputs, prep.lowered)
    ran = 0
    for fast in budgets:
        for xip, comp in MODES:
            try:
                c = api.compile_model(path, fast, xip=xip, compression=comp, prepared=prep)
            except DoesNotFitError:
                continue
            res = Session(c.plan_bytes).run(inputs)
            for name, r in ref.items():
                got = res.outputs[name]
                assert got.shape == r.shape and got.dtype == r.dtype, name
                if np.issubdtype(r.dtype, np.integer):
                    np.testing.assert_array_equal(got, r, err_msg=f"{rel} {fast} xip={xip} {comp}")
                else:
                    tol = FLOAT_TOL * max(1.0, float(np.abs(r).max()))
                    assert float(np.abs(got - r).max()) <= tol, (rel, fast, xip, comp)
            plan = c.analysis.plan
            assert (res.fast_peak, res.slow_peak) == (plan.fast_peak, plan.slow_peak), (rel, fast, xip, comp)
            ran += 1
    assert ran >= 2, f"{rel}: fewer than two configurations fit"
