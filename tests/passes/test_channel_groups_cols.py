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

from tigris_testing import saved_model

from .test_channel_groups import _dw_model


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
    path = saved_model(tmp_path, _dw_model(24, 9, 3, 1, 1, seed=5), "m", int8)
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
    rows = min_fast_budget(g, **{**kw, "col_tiles": False})
    assert budget < rows
    # the planner's own smallest plan (below the row floor), and forced grids of 2 and 5 column tiles at the floor
    for plan_kw, at in (({}, budget), ({"force_cols": 2}, rows), ({"force_cols": 5}, rows)):
        p, run = _run(split, at, x, **plan_kw)
        cut = {i for u in p.units if u.tile_cols for i in u.ops}
        assert cut & slices and p.fast_peak <= at
        for name, y in want.items():
            if int8:
                assert run.outputs[name].tobytes() == y.tobytes()
            else:
                np.testing.assert_array_equal(run.outputs[name], y)


def test_slice_along_w_is_not_column_local(tmp_path: Path):
    from dataclasses import replace

    path = saved_model(tmp_path, _dw_model(8, 6, 3, 1, 1, seed=2), "m", False)
    prep = api.prepare(path)
    (dw,) = [op for op in prep.graph.ops if op.op_type == "DepthwiseConv"]
    g = split_op(prep.graph, dw.name, 2)
    sl = next(op for op in g.ops if op.op_type == "Slice")
    starts = list(sl.attrs["starts"])
    starts[3] = 1
    assert "along W" in kind_for("Slice").col_local(g, replace(sl, attrs={**sl.attrs, "starts": tuple(starts)}))


def _pool_dw_model(cin: int, c: int, h: int, w: int):
    """x [1, cin, h, w] -> MaxPool 3x3 s1 -> 1x1 conv to c + HardSwish -> 3x3 depthwise -> Relu -> 1x1 conv to 6.
    On row tiles the joining Concat's two rows of every channel bound it (whatever the groups), with column tiles
    alone the depthwise conv's window of one output pixel (9 pixels of every channel): only channel groups planned
    with column tiles reach the joining Concat's one pixel."""
    import onnx

    from .test_channel_groups import builders, fam_seg

    g = builders._new(3)
    m = g.op("MaxPool", ["x"], kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1])
    e = g.op("HardSwish", [g.conv(m, cin, c, 1)])
    d = g.conv(e, c, c, 3, 1, pad=1, group=c)
    y = g.conv(g.op("Relu", [d]), c, 6, 1)
    return fam_seg.finish_typed(g, "pool_dw", [1, cin, h, w], [(y, onnx.TensorProto.FLOAT, [1, 6, h, w])],
                                opset=14)


@pytest.mark.parametrize("int8", [False, True], ids=["f32", "int8"])
def test_groups_with_column_tiles_lower_the_minimum(tmp_path: Path, int8: bool):
    """analyze's minimum with groups planned with column tiles is below both the minimum with groups on row tiles
    and the one with column tiles alone; the op that sets it is named with its group count (JSON and text); the
    plan at it compiles, is proven, and runs on the host runtime like the untiled plan (int8: its bytes, float:
    equal) with the high-water mark its peak; 16 bytes less does not fit; at the column-tile minimum nothing is
    split."""
    from dataclasses import replace

    from tigris.report import render_analysis

    path = saved_model(tmp_path, _pool_dw_model(8, 64, 12, 16), "m", int8)
    prep = api.prepare(path)

    def advice(p: api.Prepared) -> dict:
        return api.analyze(path, 16, xip=True, prepared=p, emit=False, tradeoff=False, groups_advice=True).json

    rows = advice(replace(prep, col_tiles=False))["min_fast_budget_bytes"]  # groups on row tiles only
    j = advice(prep)
    cols, m = j["min_fast_budget_without_groups_bytes"], j["min_fast_budget_bytes"]
    assert m < min(rows, cols), (rows, cols, m)
    (dw,) = [op.name for op in prep.graph.ops if op.op_type == "DepthwiseConv"]
    lim = j["limiting_op"]
    assert lim["need_bytes"] == m and lim["op"] in {op.name for op in prep.graph.ops}
    if not int8:  # the float plan is set by the depthwise conv's joining Concat, the int8 one by the last conv
        assert lim["op"] == dw and lim["op_type"] == "DepthwiseConv" and lim["groups"] >= 2
        assert lim["group_op"] == {"name": f"{dw}/wgroupcat", "op_type": "Concat"}
        assert f"in {lim['groups']} channel groups: {dw}/wgroupcat (Concat)" in render_analysis(j)
    else:
        assert lim["op"] != dw and "groups" not in lim
    assert not api.analyze(path, m - 16, xip=True, prepared=prep, emit=False, tradeoff=False).fits
    c = api.compile_model(path, m, xip=True, prepared=prep)
    a = c.analysis
    assert a.fits and [g["op"] for g in a.json["weight_groups"]] == [dw]
    assert any(u.tile_cols for u in a.plan.units) and check_plan(a.prepared.graph, a.plan) == []
    x = api.random_inputs(prep, 0)
    got = api.run_plan(c.plan_bytes, x)
    assert got.fast_peak == a.plan.fast_peak <= m
    want = api.run_plan(api.compile_model(path, "4M", xip=True, prepared=prep).plan_bytes, x)
    for name, y in want.outputs.items():
        assert got.outputs[name].tobytes() == y.tobytes()
    at_cols = api.analyze(path, cols, xip=True, prepared=prep, emit=False, tradeoff=False)
    assert at_cols.fits and at_cols.json["weight_groups"] == []
