"""The whole path on the small real models kept in tests/models, so a fresh clone without ../shared still exercises
load -> normalize -> plan (with stages, tiles and spills) -> emit -> C runtime -> compare."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tigris import api
from tigris.reference import run_reference

MODELS = Path(__file__).resolve().parent / "models"


@pytest.mark.parametrize(
    "name,budgets",
    [
        ("mnist-8.onnx", ["64K", "8K"]),
        ("resnet8_cifar_f32.onnx", ["256K", "48K"]),
        ("resnet8_cifar_int8.onnx", ["64K", "16K"]),
        ("kws_dscnn_int8.onnx", ["64K", "12K"]),
    ],
)
def test_local_model_end_to_end(name, budgets):
    path = MODELS / name
    prep = api.prepare(path)
    quantized = any(t.dtype == "int8" for t in prep.graph.tensors.values())
    inputs = api.random_inputs(prep, seed=3)
    ort_out = api.run_onnxruntime(path, inputs)
    ref_out = run_reference(prep.graph, inputs, prep.lowered)
    staged = False
    for budget in budgets:
        c = api.compile_model(path, budget, xip=True, prepared=prep)
        staged = staged or len(c.analysis.plan.stages) > 1
        res = api.run_plan(c.plan_bytes, inputs)
        assert res.fast_peak == c.analysis.plan.fast_peak <= api.parse_size(budget)
        for out in prep.graph.outputs:
            g, o, r = res.outputs[out], ort_out[out], ref_out[out]
            if quantized:
                np.testing.assert_array_equal(g, r)  # bit-exact against the reference
                assert np.abs(g.astype(np.int64) - o.astype(np.int64)).max() <= 1  # 1 LSB of ONNX Runtime
            else:
                tol = 1e-5 * max(1.0, float(np.abs(o).max()))
                assert np.abs(g.astype(np.float64) - o).max() <= tol
    assert staged, f"{name}: the small budget should force more than one stage"
