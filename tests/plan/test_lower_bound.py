"""The per-op lower bound the minimum-budget search starts from (tigris.plan.fast_lower_bound) is a real lower bound:
no plan fits a budget below it, on random DAGs and on every shared model. The search returns the bound without
probing below it, and a plan below it skips the DP partition (``PRUNE_BELOW_BOUND``), so this is the test that both
shortcuts are sound (it plans with the pruning switched off); it also checks the search against a plain bisection,
and that a pruned plan fails exactly as the unpruned one does."""
from __future__ import annotations

from contextlib import contextmanager

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_property import dags

import tigris.plan
from tigris import api
from tigris.plan import fast_lower_bound, fits, min_fast_budget, plan
from tigris.plan.types import align_up
from tigris_testing import require_shared_models


def _bisect(graph, **kw) -> int:
    """The search without the bound: the smallest multiple of 16 that fits, assuming fitting is monotone."""
    lo, hi = 0, align_up(1 << 24, 16)
    assert fits(graph, hi, **kw)
    while hi - lo > 16:
        mid = (lo + hi) // 2 // 16 * 16
        lo, hi = (lo, mid) if fits(graph, mid, **kw) else (mid, hi)
    return hi


@contextmanager
def unpruned():
    """Plans with the below-the-bound shortcut off: the full search at every budget."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(tigris.plan, "PRUNE_BELOW_BOUND", False)
        yield


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph=dags(), xip=st.booleans(), acc=st.booleans())
def test_nothing_fits_below_the_bound(graph, xip, acc):
    bound = fast_lower_bound(graph, xip=xip, accumulate_gap=acc)
    below = align_up(bound, 16) - 16
    assert below < bound
    if below > 0:
        with unpruned():
            assert not fits(graph, below, xip=xip, accumulate_gap=acc)
            full = plan(graph, below, xip=xip, accumulate_gap=acc)
        assert plan(graph, below, xip=xip, accumulate_gap=acc) == full  # the pruned plan's NoFit is the same
    assert min_fast_budget(graph, xip=xip, accumulate_gap=acc) == _bisect(graph, xip=xip, accumulate_gap=acc)


@pytest.mark.parametrize("xip", [False, True])
def test_shared_models_bound_is_sound(xip):
    models = sorted(require_shared_models().rglob("*.onnx"))
    assert models
    for path in models:
        prep = api.prepare(path)
        kw = api._plan_kwargs(prep, xip)
        bound = align_up(fast_lower_bound(prep.graph, **kw), 16)
        with unpruned():
            assert not fits(prep.graph, bound - 16, **kw), path.name
        assert api._min_fast(prep, None, xip) >= bound, path.name


@pytest.mark.parametrize("xip", [False, True])
def test_pruned_reports_are_unchanged(xip):
    """What `analyze` reports for a budget that does not fit (the reason, the minimum budgets with and without XIP,
    the limiting op) is the same with the below-the-bound shortcut as with the full search at every probe."""
    for path in sorted(require_shared_models().rglob("*.onnx")):
        prep = api.prepare(path)
        m = api._min_fast(prep, None, xip)
        a = api.analyze(path, m // 2 // 16 * 16, xip=xip, emit=False, prepared=prep)
        with unpruned():
            b = api.analyze(path, m // 2 // 16 * 16, xip=xip, emit=False, prepared=api.prepare(path))
        # without XIP, half the minimum may fit with output-channel weight groups (api._split_weights); the
        # report must be the same either way
        assert a.json == b.json and (not a.fits or a.json["weight_groups"]), path.name
