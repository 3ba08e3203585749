"""The split attempt's work when a model does not fit (docs/memory-planning.md "Weights that do not fit"): how many
split graphs a non-fitting analyze plans and bounds, and how many operator-order searches it runs, against a fitting
analyze of the same model. Counts of planner calls, not timings (bench/analyze_cost.py has the CPU seconds), so a
change that makes the search plan every round again, or search the order of every split graph, fails here."""
from __future__ import annotations

import logging

import pytest

from tigris import api
from tigris import plan as planner


def _split(graph, ops: int) -> bool:
    """Whether ``graph`` is a split graph of a model of ``ops`` ops (not one group's own graph, which the group
    sizing bounds: ``api.group_need``)."""
    return len(graph.ops) > ops and any("weight_group" in op.attrs for op in graph.ops)


def _counts(monkeypatch, path, budget: int, xip: bool) -> tuple[bool, dict[str, int]]:
    """Whether analyze fits ``budget``, and its calls of the planner: plans and op bounds of split graphs, order
    searches of any graph."""
    c = {"split_plans": 0, "split_bounds": 0, "orders": 0}
    ops = len(api.prepare(path).graph.ops)
    plan, bounds, order, over = planner.plan, planner.op_lower_bounds, planner.search_order, planner.ops_over

    def counted_plan(g, *a, **k):
        c["split_plans"] += _split(g, ops)
        return plan(g, *a, **k)

    def counted_bounds(g, *a, **k):
        c["split_bounds"] += _split(g, ops)
        return bounds(g, *a, **k)

    def counted_over(g, *a, **k):  # a split round's bounds (on demand: the ops over the budget)
        c["split_bounds"] += _split(g, ops)
        return over(g, *a, **k)

    def counted_order(g, *a, **k):
        c["orders"] += 1
        return order(g, *a, **k)

    monkeypatch.setattr(planner, "plan", counted_plan)
    monkeypatch.setattr(planner, "op_lower_bounds", counted_bounds)
    monkeypatch.setattr(planner, "ops_over", counted_over)
    monkeypatch.setattr(planner, "search_order", counted_order)
    logging.getLogger().setLevel(logging.ERROR)
    try:
        a = api.analyze(path, budget, xip=xip, emit=False, tradeoff=False)
    finally:
        monkeypatch.undo()
    return a.fits, c


# (model, budget that does not fit, one that does, split graphs the refusal may plan and bound; without XIP), at
# bench/analyze_cost.py's non-fitting budgets
CASES = [
    # a projection conv's groups stay over the budget in the split graph's bounds whatever count the rounds left
    # reach (its input row does not shrink with its output channels): one split graph is bounded, none planned
    # (there were 8 of 1,384-1,428 ops)
    # (measured 2 bounds with joins in place and float input-channel groups on main); since int8 ops may split by
    # input channels too (ConvAcc groups, whose input row does shrink), the rounds may not stop at the first bound:
    # 9 split graphs were bounded, still none planned; the rounds now stop once a group over the budget cannot
    # reach the output-channel limit where input-channel groups begin within the rounds left: 2 bounds; the
    # input-channel attempt now reuses the split graph (and its bounds) of the attempt before it: 1
    ("torchvision/efficientnet_lite0_128_int8.onnx", 6672, 555360, 0, 1),
    # the same stop for float K groups: one split graph is bounded (there were 8, 23.7 s of a 29 s refusal)
    ("torchvision/efficientnet_lite0_128_f32.onnx", 12880, 262144, 0, 1),
    # a 1x1 conv whose one-panel weight group does not fit beside its input row: the attempt ends before any group
    # size is searched or any split graph built (there were 2 split graphs and 133 group bounds); since float ops
    # may also split by input channels (K groups, a last resort) that attempt plans 2 split graphs and 4 bounds
    # (11 before the rounds stopped where the K-group limit is out of reach)
    ("mlperf_tiny/vww_mbv1_025_96_f32.onnx", 8288, 262144, 2, 4),
]


@pytest.mark.shared
@pytest.mark.parametrize("name,nofit,fit,split_plans,split_bounds", CASES, ids=[c[0].split("/")[1] for c in CASES])
def test_a_refusal_plans_few_split_graphs(monkeypatch, name, nofit, fit, split_plans, split_bounds):
    from tigris_testing import shared_model

    path = shared_model(name)
    fits, fitting = _counts(monkeypatch, path, fit, False)
    assert fits
    fits, refused = _counts(monkeypatch, path, nofit, False)
    assert not fits
    # the order is searched on the model's own graph only (memoized across the minimum search's probes), as in
    # the fitting run: never on a split graph that does not fit
    assert refused["orders"] <= fitting["orders"]
    assert refused["split_plans"] <= split_plans
    assert refused["split_bounds"] <= split_bounds
