"""Channel groups planned with column tiles (docs/memory-planning.md "Channel groups", "Column tiles").

* A channel Slice (the input Slice of a depthwise conv's channel group) is per pixel along W, so it runs in a
  column-split unit: the split graph of a depthwise conv planned at its smallest budget with column tiles has COLS
  units holding the Slices, is proven by the checker and runs on the host runtime like the untiled plan (int8: the
  same bytes; float: equal), the runtime's high-water mark the plan's peak; a Slice along W is not column-local.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tigris import api
from tigris.emit import emit_plan
from tigris.ops import kind_for, lower
from tigris.passes.weight_split import split_op
from tigris.plan import min_fast_budget, plan_memory
from tigris.plan.check import check_plan

from .test_channel_groups import _dw_model, _paths


def _split(prep: api.Prepared, name: str, groups: int) -> api.Prepared:
    g = split_op(prep.graph, name, groups)
    return api.Prepared(g, prep.reports, [lower(g, op) for op in g.ops])


def _run(prep: api.Prepared, budget: int, x: dict, **plan_kw):
    kw = api._plan_kwargs(prep, True)
    kw.pop("recompute_weight")
    p = plan_memory(prep.graph, budget, None, **{**kw, **plan_kw})
    assert check_plan(prep.graph, p) == []
    run = api.run_plan(emit_plan(prep.graph, p, prep.lowered, xip=True), x)
    assert run.fast_peak == p.fast_peak
    return p, run


@pytest.mark.parametrize("int8", [False, True], ids=["f32", "int8"])
def test_channel_slices_run_on_column_bands(tmp_path: Path, int8: bool):
    path = _paths(tmp_path, _dw_model(24, 9, 3, 1, 1, seed=5), int8)
    prep = api.prepare(path)
    (dw,) = [op for op in prep.graph.ops if op.op_type == "DepthwiseConv"]
    split = _split(prep, dw.name, 3)
    g = split.graph
    slices = {i for i, op in enumerate(g.ops) if op.op_type == "Slice"}
    assert len(slices) == 3 and all(kind_for("Slice").col_local(g, g.ops[i]) is None for i in slices)
    x = {"x": np.random.default_rng(1).standard_normal((1, 4, 9, 9)).astype(np.float32)}
    want = api.run_plan(api.analyze(path, "1M", xip=True, prepared=prep, tradeoff=False).plan_bytes, x).outputs
    kw = api._plan_kwargs(split, True)
    kw.pop("recompute_weight")
    budget = min_fast_budget(g, **kw)
    # (the joining Concat holds two rows of every channel, so the planner needs no column tiles for the Slices
    # here: forced grids of 2 and 5 column tiles put them in column-split units)
    for n in (2, 5):
        p, run = _run(split, budget, x, force_cols=n)
        cut = {i for u in p.units if u.tile_cols for i in u.ops}
        assert cut & slices and p.fast_peak <= budget
        for name, y in want.items():
            if int8:
                assert run.outputs[name].tobytes() == y.tobytes()
            else:
                np.testing.assert_array_equal(run.outputs[name], y)


def test_slice_along_w_is_not_column_local(tmp_path: Path):
    from dataclasses import replace

    path = _paths(tmp_path, _dw_model(8, 6, 3, 1, 1, seed=2), False)
    prep = api.prepare(path)
    (dw,) = [op for op in prep.graph.ops if op.op_type == "DepthwiseConv"]
    g = split_op(prep.graph, dw.name, 2)
    sl = next(op for op in g.ops if op.op_type == "Slice")
    starts = list(sl.attrs["starts"])
    starts[3] = 1
    assert "along W" in kind_for("Slice").col_local(g, replace(sl, attrs={**sl.attrs, "starts": tuple(starts)}))
