"""The plans a planner rule's before/after benches compare (bench/plan_views.py, bench/plan_in_place.py): with a
module flag of the planner set one way, the untiled plan and the smallest fitting fast budget of a model, each plan
proven by the offset checker."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tigris.plan import min_fast_budget, plan
from tigris.plan.check import check_plan

UNTILED = 1 << 30  # a fast budget every model's single untiled unit fits


@dataclass
class RulePlans:
    prep: object
    whole: object | None  # the untiled (single-unit) plan, or None when even that does not plan
    least: int | None  # the smallest fitting fast budget (min_fast_budget, --xip, default options)
    at_least: object | None  # the plan at ``least``

    @property
    def untiled_arena(self) -> int | None:
        return self.whole.fast_peak if self.whole is not None else None


def rule_plans(path: Path, module, flag: str, value: bool) -> RulePlans:
    """Prepare and plan ``path`` with ``module.<flag>`` set to ``value`` (restored to True, the default, after)."""
    from tigris import api

    setattr(module, flag, value)
    try:
        prep = api.prepare(path)  # a fresh memo: band layouts depend on the rule
        kw = api._plan_kwargs(prep, True)
        res = plan(prep.graph, UNTILED, 0, **kw)
        whole = res.plan if hasattr(res, "plan") else None
        if whole is not None:
            assert check_plan(prep.graph, whole) == [], path
        least = min_fast_budget(prep.graph, **kw)
        got = None
        if least is not None:
            got = plan(prep.graph, least, **kw).plan
            assert check_plan(prep.graph, got) == [], path
        return RulePlans(prep, whole, least, got)
    finally:
        setattr(module, flag, True)
