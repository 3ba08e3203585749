"""Joins in place on the host runtime (lifetime rule 8; docs/memory-planning.md "Joins in place"): a classifier
head whose GlobalAveragePool does not fit runs as channel groups of its 1x1 conv, each pooling its own channels,
and each joining Concat takes the home of the vector joined so far, so concat.c leaves that prefix where it is and
copies the next group's channels only.

Oracles: the same split graph planned with the rule off (``tigris.plan.lifetime.PREFIX``), whose outputs must be
identical (a join copies bytes) and whose minimum is higher; ONNX Runtime (float within its tolerance, int8 within
a few output steps of its own rounding); the plan checker; the runtime's fast high-water mark (equal to the plan's
peak)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from tigris import api
from tigris.plan import lifetime
from tigris.plan.check import check_plan

from passes.test_channel_tails import _head_model
from tigris_testing import saved_model


def _model(tmp_path: Path, c: int, h: int, int8: bool) -> Path:
    """x [1, 4, h, h] -> 3x3 conv to 12 + Relu -> 1x1 conv to ``c`` -> GlobalAveragePool -> Flatten -> Gemm to 10."""
    return saved_model(tmp_path, _head_model(c, h, None, "GlobalAveragePool", seed=c + h), "head", int8)


def _minimum(path: Path, prep=None) -> int:
    a = api.analyze(path, "128", xip=True, tradeoff=False, emit=False, groups_advice=True, prepared=prep)
    assert not a.fits
    return a.json["min_fast_budget_bytes"]


@pytest.mark.parametrize("int8", [False, True], ids=["f32", "int8"])
def test_head_joined_in_place_runs_like_the_plain_join(tmp_path, monkeypatch, int8):
    try:
        from tigris.host.build import runtime

        runtime()
    except Exception as e:  # noqa: BLE001 - no compiler: say so and skip
        pytest.skip(f"host runtime_c not available: {type(e).__name__}: {e}")
    h = 4
    path = _model(tmp_path, 192, h, int8)
    m = _minimum(path)
    c = api.compile_model(path, m, xip=True)
    g, plan = c.analysis.prepared.graph, c.analysis.plan
    assert check_plan(g, plan) == []
    joins = [(y, x) for u in plan.units for y, x in u.in_place.items()
             if next(op for op in g.ops if op.outputs[0] == y).op_type == "Concat"]
    assert joins, "no join in place at the minimum"
    x = {"x": np.random.default_rng(3).standard_normal((1, 4, h, h)).astype(np.float32)}
    run = api.run_plan(c.plan_bytes, x)
    assert run.fast_peak == plan.fast_peak <= m
    # the same split graph with every join into a buffer of its own
    with monkeypatch.context() as mp:
        mp.setattr(lifetime, "PREFIX", False)
        split = api.Prepared(g, c.analysis.prepared.reports, c.analysis.prepared.lowered)
        plain = api.analyze(path, "1M", xip=True, prepared=split, tradeoff=False)
        assert not any(u.in_place for u in plain.plan.units)
        assert _minimum(path) > m  # without the rule the pooled vector is held twice at the last join
    ref = api.run_plan(plain.plan_bytes, x)
    (name,) = run.outputs
    assert run.outputs[name].tobytes() == ref.outputs[name].tobytes()
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, x)[0]
    tol = 1e-4 * max(1.0, float(np.abs(want).max()))
    if int8:  # a few output LSBs of ORT's own rounding, as tigris verify allows
        tol = max(tol, 3 * float(np.max(np.abs(np.diff(np.unique(want))))))
    assert np.max(np.abs(run.outputs[name] - want)) <= tol


def _rows_model(tmp_path: Path) -> Path:
    """A detector's box outputs: two levels (conv 3x3 to 8 channels on 8x8, and stride 2 on 4x4) each reshaped to
    [1, 8, cells] and joined along the cells, the rows of the rank-3 tensors (as yolov8n's heads)."""
    import builders
    import fam_seg
    import onnx

    g = builders._new(7)
    f = g.op("Relu", [g.conv("x", 4, 8, 3)])
    levels = []
    for stride, cells in ((1, 64), (2, 16)):
        t = g.conv(f, 8, 8, 3, stride)
        levels.append(g.op("Reshape", [t, g.const(np.array([1, 8, cells], np.int64), "shape")]))
    y = g.op("Concat", levels, axis=2)
    m = fam_seg.finish_typed(g, "rows", [1, 4, 8, 8], [(y, onnx.TensorProto.FLOAT, [1, 8, 80])], opset=14)
    return saved_model(tmp_path, m, "rows", False)


def test_row_join_over_a_reshaped_level_runs_like_the_plain_join(tmp_path, monkeypatch):
    """A Concat along the rows of rank-3 tensors (many rows) whose first input is a Reshape alias of its level's conv
    output takes that conv output's home: the minimum drops below the plain join's (the output and all its inputs
    at once), and the output is the plain join's bit for bit. (Float: ONNX Runtime's quantizer gives this Concat
    another encoding than its inputs, so the int8 join requantizes and keeps its own buffer; yolov8n int8, whose
    levels are channel Concats sharing the join's encoding, joins in place, the --cols bench.)"""
    try:
        from tigris.host.build import runtime

        runtime()
    except Exception as e:  # noqa: BLE001 - no compiler: say so and skip
        pytest.skip(f"host runtime_c not available: {type(e).__name__}: {e}")
    path = _rows_model(tmp_path)
    prep = api.prepare(path)
    m = _minimum(path, prep)
    c = api.compile_model(path, m, xip=True, prepared=prep)
    g, plan = prep.graph, c.analysis.plan
    assert check_plan(g, plan) == []
    (cat,) = [op for op in g.ops if op.op_type == "Concat"]
    joins = [(y, x) for u in plan.units for y, x in u.in_place.items() if y == cat.outputs[0]]
    assert joins and joins[0][1] != cat.inputs[0], "no join over the reshaped level at the minimum"
    assert plan.alias_of[cat.inputs[0]] == joins[0][1]
    x = {"x": np.random.default_rng(5).standard_normal((1, 4, 8, 8)).astype(np.float32)}
    run = api.run_plan(c.plan_bytes, x)
    assert run.fast_peak == plan.fast_peak <= m
    with monkeypatch.context() as mp:
        mp.setattr(lifetime, "PREFIX", False)
        assert _minimum(path) > m
        plain = api.analyze(path, "1M", xip=True, tradeoff=False)
    ref = api.run_plan(plain.plan_bytes, x)
    (name,) = run.outputs
    assert run.outputs[name].tobytes() == ref.outputs[name].tobytes()
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, x)[0]
    assert np.max(np.abs(run.outputs[name] - want)) <= 1e-4 * max(1.0, float(np.abs(want).max()))
