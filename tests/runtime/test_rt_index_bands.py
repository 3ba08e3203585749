"""Index and normalizing ops below their row floor, on the host runtime (docs/memory-planning.md "Column tiles",
"Ops that set the row floor"): each family model is compiled by ``tigris.api.compile_model`` at its smallest budget
today, at most 0.8x the smallest budget the planner found with the op's earlier rule (row tiles only), and gives the
untiled plan's output (int8 bit for bit; float within 1e-5 x max(1, max|ref|)) with the runtime's fast high-water
mark equal to the plan's peak; the float model agrees with ONNX Runtime.

* An ArgMax over the channels of an image whose keepdims-0 output is a graph output keeps the axis (pass index_ops
  rule 2b): its output is stored ``{N, H, W, 1}``, so it runs per pixel on row bands and column tiles instead of
  transposing the whole image into a rank-3 ``nwc`` tensor (``index_ops.KEEP_PIXELS = False``: the earlier rule).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tigris import api
from tigris.ops import index as index_kind
from tigris.passes import index_ops
from tigris.plan import min_fast_budget
from tigris_testing import compile_like_untiled, family_model, host_runtime, matches_ort

FLOAT_TOL = 1e-5


@pytest.fixture(scope="module")
def session():
    host_runtime()


def _floor(path: Path, monkeypatch, flags: dict) -> int:
    """The smallest budget with row tiles only and the given earlier rules (prepared again: the passes read them)."""
    with monkeypatch.context() as m:
        for (mod, name), v in flags.items():
            m.setattr(mod, name, v)
        prep = api.prepare(path)
        return min_fast_budget(prep.graph, **{**api._plan_kwargs(prep, True), "col_tiles": False})


@pytest.mark.parametrize("int8", [False, True], ids=["f32", "int8"])
def test_channel_argmax_runs_per_pixel_on_bands(session, tmp_path, monkeypatch, int8):
    path = family_model(tmp_path, "seg_argmax", int8)
    before = _floor(path, monkeypatch, {(index_ops, "KEEP_PIXELS"): False})
    prep = api.prepare(path)
    arg = [op for op in prep.graph.ops if op.op_type == "ArgMax"]
    assert arg and prep.graph.tensors[arg[0].outputs[0]].shape == (1, 1, 32, 32)
    budget = min_fast_budget(prep.graph, **api._plan_kwargs(prep, True))
    assert budget <= 0.8 * before, (budget, before)
    c, x, outputs = compile_like_untiled(path, prep, budget, FLOAT_TOL)
    plan = c.analysis.plan
    i = prep.graph.ops.index(arg[0])
    assert any(len(u.tile_rows) > 1 and i in u.ops for u in plan.units)
    assert outputs[prep.graph.outputs[0]].shape == (1, 32, 32)
    if not int8:  # int8 logits tie where ORT's rounding differs by one code: the untiled plan is the reference
        matches_ort(path, x, outputs, 0.0)


@pytest.mark.parametrize("int8", [False, True], ids=["f32", "int8"])
def test_channel_argmax_in_column_split_units(session, tmp_path, int8):
    """Forced into grids of 3 column tiles (``plan(force_cols=3)``), the ArgMax runs on band-wide views: the checker
    proves the plan and the host runtime gives the NumPy reference's indices and the untiled plan's bytes, with its
    high-water mark at the plan's peak."""
    import _rt_plans as P
    from tigris.host.session import Session
    from tigris.plan.check import check_plan
    from tigris.reference import run_reference

    prep = api.prepare(family_model(tmp_path, "seg_argmax", int8))
    g = prep.graph
    i = next(k for k, op in enumerate(g.ops) if op.op_type == "ArgMax")
    untiled, _ = P.compile_graph(g, 1 << 20, xip=True)
    data, plan = P.compile_graph(g, 1024 if int8 else 4096, xip=True, force_cols=3)
    assert any(u.tile_cols and i in u.ops for u in plan.units)
    assert check_plan(g, plan) == []
    y = g.outputs[0]
    for seed in (0, 1):
        x = P.random_input(g, seed)
        res = Session(data).run(x)
        np.testing.assert_array_equal(res.outputs[y], run_reference(g, x)[y])
        np.testing.assert_array_equal(res.outputs[y], Session(untiled).run(x).outputs[y])
        assert res.fast_peak == plan.fast_peak


def test_int8_nms_reads_its_int8_boxes_and_scores(session, tmp_path, monkeypatch):
    """A quantized detector's NonMaxSuppression reads the int8 boxes and scores as the dequantize kernel's values
    itself (``NonMaxSuppression.dequantizes_inputs``, pass float_tail rule 1; ``index.INT8_INPUTS = False``: the
    earlier rule), so no float copy of either is needed:
    family ssd_nms int8 fits in at most 0.8x of the budget with the DequantizeLinears, and at that budget selects
    the same boxes as the untiled plan and as the plan through the DequantizeLinears (float NonMaxSuppression)."""
    path = family_model(tmp_path, "ssd_nms", True)
    with monkeypatch.context() as m:
        m.setattr(index_kind, "INT8_INPUTS", False)
        before = _floor(path, m, {})
        old = api.prepare(path)
        assert any(op.op_type == "DequantizeLinear" for op in old.graph.ops)
        via_dq = api.compile_model(path, "1M", xip=True, prepared=old).plan_bytes
    prep = api.prepare(path)
    nms = next(op for op in prep.graph.ops if op.op_type == "NonMaxSuppression")
    assert all(prep.graph.tensors[i].dtype == "int8" for i in nms.inputs)
    budget = min_fast_budget(prep.graph, **api._plan_kwargs(prep, True))
    assert budget <= 0.8 * before, (budget, before)
    c, x, outputs = compile_like_untiled(path, prep, budget, FLOAT_TOL)
    (name,) = outputs
    assert len(outputs[name]) > 0  # boxes are selected: the comparison is not of empty outputs
    np.testing.assert_array_equal(outputs[name], api.run_plan(via_dq, x).outputs[name])


def test_float_nms_runs_class_by_class(session, tmp_path, monkeypatch):
    """A float detector's NonMaxSuppression runs as one op per class (pass index_ops rule 4b), each holding the
    boxes, its class's scores and the rows so far instead of every class's scores: family ssd_nms f32 fits in at
    most 0.8x of the one op's budget; at that budget its output is the untiled plan's and the one op's plan's bit for
    bit, and ONNX Runtime's; the untiled plan runs a class op in place over the rows of the one before."""
    path = family_model(tmp_path, "ssd_nms", False)
    with monkeypatch.context() as m:
        m.setattr(index_ops, "PER_CLASS", False)
        before = _floor(path, m, {})
        one = api.compile_model(path, "1M", xip=True, prepared=api.prepare(path)).plan_bytes
    prep = api.prepare(path)
    nms = [op for op in prep.graph.ops if op.op_type == "NonMaxSuppression"]
    assert [op.attrs["class0"] for op in nms] == [0, 1, 2] and len(nms[1].inputs) == 3
    budget = min_fast_budget(prep.graph, **api._plan_kwargs(prep, True))
    assert budget <= 0.8 * before, (budget, before)
    c, x, outputs = compile_like_untiled(path, prep, budget, FLOAT_TOL)
    (name,) = outputs
    assert len(outputs[name]) > 0
    np.testing.assert_array_equal(outputs[name], api.run_plan(one, x).outputs[name])
    matches_ort(path, x, outputs, 0.0)
    untiled = api.compile_model(path, "1M", xip=True, prepared=prep).analysis.plan
    assert any(u.in_place.get(nms[1].outputs[0]) == nms[0].outputs[0] for u in untiled.units)
