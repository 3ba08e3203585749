"""The checker rejects broken plans: each test breaks one property of a valid plan and expects that violation."""
from __future__ import annotations

import copy
from dataclasses import replace

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
