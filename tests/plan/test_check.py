"""The checker rejects broken plans: each test breaks one property of a valid plan and expects that violation."""
from __future__ import annotations

import copy
from dataclasses import replace

import pytest
from plan_graphs import G

from tigris.plan import plan_memory
from tigris.plan.check import check_plan
from tigris.plan.types import Placement


def chain_plan():
    g = G()
    x = g.input("x", (1, 1, 16, 16))
    graph = g.graph([g.conv(g.conv(g.conv(x, 1), 1), 1)])
    plan = plan_memory(graph, 500, strategy="spec", xip=True)
    assert check_plan(graph, plan) == []
    return graph, plan


def two_unit_plan():
    g = G()
    x = g.input("x", (1, 8, 4, 4))
    y = g.gemm(g.flatten(g.gap(g.conv(x, 8, k=1))), 4)
    graph = g.graph([y])
    plan = plan_memory(graph, 200, xip=True)  # x + t0 = 256 B: the conv is tiled on its own, then GAP/Flatten/Gemm
    assert len(plan.units) > 1 and check_plan(graph, plan) == []
    return graph, plan


def test_overlapping_live_buffers_are_caught():
    graph, plan = chain_plan()
    bad = copy.deepcopy(plan)
    unit = bad.units[0]
    unit.fast["t0"] = replace(unit.fast["t0"], offset=unit.fast["x"].offset)  # x and t0 are live at step 0
    assert any("live together" in e for e in check_plan(graph, bad))


def test_misaligned_and_over_budget_placements_are_caught():
    graph, plan = chain_plan()
    bad = copy.deepcopy(plan)
    bad.units[0].fast["t2"] = Placement("fast", 8, bad.units[0].fast["t2"].size)
    assert any("misaligned" in e for e in check_plan(graph, bad))
    bad.units[0].fast["t2"] = Placement("fast", 496, 64)
    assert any("over budget" in e for e in check_plan(graph, bad))


def test_tile_coverage_and_bands_are_checked():
    graph, plan = chain_plan()
    bad = copy.deepcopy(plan)
    bad.units[0].tile_rows[1]["t2"] = (14, 16)  # row 13 of the output is never computed
    assert any("do not continue" in e for e in check_plan(graph, bad))
    bad = copy.deepcopy(plan)
    bad.units[0].tile_rows[1]["t1"] = (13, 16)  # conv op2 needs t1 rows 12..16 for output rows 13..16
    assert any("needs rows (12, 16) of t1" in e for e in check_plan(graph, bad))


def test_missing_reload_spill_and_slow_placement_are_caught():
    graph, plan = two_unit_plan()
    bad = copy.deepcopy(plan)
    last = bad.units[-1]
    dropped = last.reload.pop()
    assert any(f"{dropped} is read but neither produced nor reloaded" in e for e in check_plan(graph, bad))
    bad = copy.deepcopy(plan)
    first = bad.units[0]
    spilled = first.spill.pop()
    errs = check_plan(graph, bad)
    assert any(f"{spilled} is needed later but not spilled" in e for e in errs)
    assert any(f"{spilled} is reloaded before any unit spilled it" in e for e in errs)
    bad = copy.deepcopy(plan)
    del bad.slow[spilled]
    assert any("has no slow placement" in e for e in check_plan(graph, bad))


def test_every_written_plan_is_proven(monkeypatch, tmp_path):
    """analyze (hence compile and verify) runs the proof on the plan it writes and refuses one that fails it."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper

    from tigris import api
    from tigris.ir import TigrisError
    from tigris.plan import check

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 8, 8])
    w = helper.make_tensor("w", TensorProto.FLOAT, [2, 2, 3, 3], np.ones(36, np.float32))
    conv = helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1], kernel_shape=[3, 3])
    model = helper.make_model(helper.make_graph([conv], "g", [x], [y], [w]), opset_imports=[helper.make_opsetid("", 13)])
    path = tmp_path / "conv.onnx"
    onnx.save(model, path)
    calls = []
    real = check.check_plan
    monkeypatch.setattr(check, "check_plan", lambda g, p: calls.append(p) or real(g, p))
    assert api.compile_model(path, "64K", xip=True).plan_bytes and len(calls) == 1
    monkeypatch.setattr(check, "check_plan", lambda g, p: ["unit 0: t0 and t1 are live together"])
    with pytest.raises(TigrisError, match="fails its proof.*live together"):
        api.compile_model(path, "64K", xip=True)


def test_an_op_run_before_its_producer_is_caught():
    """Units may run the ops in any topological order (the planner's memory-aware order), never a consumer before
    the op that produces its input; an op run twice or never is caught too."""
    g = G()
    x = g.input("x", (1, 2, 8, 8))
    a, b = g.gap(g.conv(x, 4, k=1)), g.gap(g.conv(x, 4, k=1))
    graph = g.graph([a, b])
    plan = plan_memory(graph, 4096, xip=True)
    assert len(plan.units) == 1 and check_plan(graph, plan) == []
    swapped = copy.deepcopy(plan)
    swapped.units[0].ops = [2, 0, 3, 1]  # another topological order: no order violation (its offsets may clash)
    assert not any("runs before" in e or "exactly once" in e for e in check_plan(graph, swapped))
    bad = copy.deepcopy(plan)
    bad.units[0].ops = [1, 0, 2, 3]  # op1 (the GAP) reads op0's output before op0 runs
    assert any("runs before t0 is produced" in e for e in check_plan(graph, bad))
    bad.units[0].ops = [0, 1, 2, 2]
    assert any("exactly once" in e for e in check_plan(graph, bad))


def rolling_plan():
    g = G()
    x = g.input("x", (1, 1, 16, 16))
    graph = g.graph([g.conv(g.conv(g.conv(x, 1), 1), 1)])
    plan = plan_memory(graph, 500, xip=True)  # the tigris strategy carries halos (spatial rule 9)
    unit = plan.units[0]
    assert unit.rolling and unit.carry and check_plan(graph, plan) == []
    return graph, plan


def test_rolling_units_are_proven():
    graph, plan = rolling_plan()
    name = sorted(plan.units[0].carry)[0]  # a buffer carrying through its line buffer
    # undeclared: the runtime would carry rows the planner did not keep a line buffer for
    bad = copy.deepcopy(plan)
    bad.units[0].rolling = bad.units[0].rolling[1:]
    assert any("carry rows from tile to tile but the unit declares" in e for e in check_plan(graph, bad))
    # a line buffer too small for the rows it carries, or over another buffer live at some step
    bad = copy.deepcopy(plan)
    p = bad.units[0].carry[name]
    bad.units[0].carry[name] = replace(p, size=p.size - 16)
    assert any(f"{name} carries" in e for e in check_plan(graph, bad))
    bad = copy.deepcopy(plan)
    other = next(n for n in bad.units[0].fast if n != name)
    bad.units[0].carry[name] = replace(p, offset=bad.units[0].fast[other].offset)
    assert any("live together" in e for e in check_plan(graph, bad))
    # a buffer carrying in place (no line buffer) must stay alive: here another buffer takes its space meanwhile
    bad = copy.deepcopy(plan)
    del bad.units[0].carry[name]
    assert any("live together" in e for e in check_plan(graph, bad))
    # a band that moves back while it carries
    bad = copy.deepcopy(plan)
    rows = bad.units[0].tile_rows
    t = next(t for t in range(1, len(rows)) if rows[t][name][0] < rows[t - 1][name][1])
    rows[t][name] = (rows[t][name][0], rows[t - 1][name][1] - 1)
    assert any("moves back" in e for e in check_plan(graph, bad))
    # an op whose fresh rows need input rows its band does not hold
    bad = copy.deepcopy(plan)
    rows = bad.units[0].tile_rows
    rows[1]["x"] = (rows[1]["x"][0], rows[1]["x"][1] - 1)
    assert any("needs rows" in e or "moves back" in e for e in check_plan(graph, bad))
