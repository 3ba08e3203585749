"""Helpers the analyze report uses to present a plan, or to explain why there is none.

* :func:`stage_table` - one row per stage with the fields of the JSON contract's ``stages`` list.
* :func:`plan_summary` - the totals of the report (tiling, traffic, recompute, arena vs timeline peak).
* :func:`diagnose` - plan at a budget; when nothing fits, which stage and op overflow by how many bytes, and the
  smallest fast budget at which the model would fit (found by search).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tigris.ir import AnalyzedGraph
from tigris.plan.spatial import op_macs
from tigris.plan.types import MemoryPlan


def stage_table(plan: MemoryPlan, graph: AnalyzedGraph | None = None) -> list[dict[str, Any]]:
    """Rows: index, ops (count), op_names (when the graph is given), peak_bytes, inputs, outputs, tiled, tile_h,
    tiles, col_tiles (column tiles per row band of a tiled stage: 1 unless its unit is column-split; None untiled),
    halo, chain."""
    cols: dict[int, int] = {}
    for u in plan.units:
        if u.tile_cols and u.spill:
            n = len({c[u.spill[0]] for c in u.tile_cols if u.spill[0] in c})
            cols.update((s, n) for s in u.stages)
    rows = []
    for s in plan.stages:
        row: dict[str, Any] = {
            "index": s.index,
            "ops": len(s.ops),
            "peak_bytes": s.peak_bytes,
            "inputs": list(s.inputs),
            "outputs": list(s.outputs),
            "tiled": s.tiled,
            "tile_h": s.tile_h if s.tiled else None,
            "tiles": s.tiles,
            "col_tiles": cols.get(s.index, 1) if s.tiled else None,
            "halo": s.halo,
            "chain": s.chain,
        }
        if graph is not None:
            row["op_names"] = [graph.ops[i].name for i in s.ops]
        rows.append(row)
    return rows


def plan_summary(plan: MemoryPlan, graph: AnalyzedGraph) -> dict[str, Any]:
    macs = sum(op_macs(graph, op) for op in graph.ops)
    timeline = max(u.timeline_peak for u in plan.units)
    return {
        "stages": len(plan.stages),
        "units": len(plan.units),
        "tiled_stages": sum(1 for s in plan.stages if s.tiled),
        "tiles": sum(u.tiles for u in plan.units if u.tile_rows),
        "chains": len({s.chain for s in plan.stages if s.chain is not None}),
        "unscheduled_peak_bytes": plan.unscheduled_peak,
        "fast_peak_bytes": plan.fast_peak,
        "timeline_peak_bytes": timeline,
        "arena_over_timeline": plan.fast_peak / timeline if timeline else 1.0,
        "slow_peak_bytes": plan.slow_peak,
        "spill_bytes": plan.spill_bytes,
        "reload_bytes": plan.reload_bytes,
        "recompute_macs": plan.recompute_macs,
        "recompute_share": plan.recompute_macs / macs if macs else 0.0,
    }


@dataclass
class Diagnosis:
    fits: bool
    plan: MemoryPlan | None
    stage: int | None = None  # the stage that does not fit
    op: str | None = None  # the op at that stage's peak
    op_type: str | None = None
    need_bytes: int | None = None  # fast bytes that op's stage needs at its best tiling
    budget: int = 0
    min_fast_budget: int | None = None  # smallest budget that fits (None: none found)
    message: str = ""


def diagnose(graph: AnalyzedGraph, fast_budget: int, search: bool = True, **plan_kw: Any) -> Diagnosis:
    """Plan ``graph`` at ``fast_budget``; on failure say where and by how much, and search the smallest fitting
    budget (``plan_kw`` are passed to ``plan_memory``: slow_budget, xip, weight_bytes_of, scratch_bytes_of, ...)."""
    from tigris.plan import NoFit, min_fast_budget, plan

    res = plan(graph, fast_budget, **plan_kw)
    if not isinstance(res, NoFit):
        return Diagnosis(True, res.plan, budget=fast_budget, message="fits")
    d = Diagnosis(False, None, res.stage, res.op, res.op_type, res.need_bytes, fast_budget, message=res.message)
    if search:
        d.min_fast_budget = min_fast_budget(graph, **plan_kw)
    return d
