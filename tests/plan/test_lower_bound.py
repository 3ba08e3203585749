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


def _pair_bound(graph, **kw) -> int:
    """The least, over the plans without and with views, of the largest per-op bound that also counts what an
    in-place pair costs (``_op_bound(pairs=True)``, the figure the planner's prune reads for the op it failed at)."""
    from tigris.plan import _bound_modes, _op_bound

    return min(max(_op_bound(graph, bufs, u, costs, i, pairs=True) for i in range(len(graph.ops)))
               for bufs, u, costs in _bound_modes(graph, **kw))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph=dags(), xip=st.booleans(), acc=st.booleans())
def test_nothing_fits_below_the_pair_bound(graph, xip, acc):
    """The pair bound is a lower bound too (no plan fits below it: the prune that reads it is sound), never below
    the per-op bound, and a plan the prune cuts short fails exactly as the full one does."""
    pair = _pair_bound(graph, xip=xip, accumulate_gap=acc)
    assert pair >= fast_lower_bound(graph, xip=xip, accumulate_gap=acc)
    below = align_up(pair, 16) - 16
    if below > 0:
        with unpruned():
            assert not fits(graph, below, xip=xip, accumulate_gap=acc)
            full = plan(graph, below, xip=xip, accumulate_gap=acc)
        assert plan(graph, below, xip=xip, accumulate_gap=acc) == full


@pytest.mark.parametrize("xip", [False, True])
def test_shared_models_pair_bound_is_sound(xip):
    for path in sorted(require_shared_models().rglob("*.onnx")):
        prep = api.prepare(path)
        kw = api._plan_kwargs(prep, xip)
        below = align_up(_pair_bound(prep.graph, **kw), 16) - 16
        with unpruned():
            assert not fits(prep.graph, below, **kw), path.name


def test_pair_prune_fires_and_changes_no_report():
    """At 8288 B without XIP, vww_mbv1_025_96_f32's largest conv runs as 64 input-channel groups, whose partial-sum
    Adds can take a partial's home only beside that partial's weights: the op the spec's partition fails at is
    over in every unit, so the DP is skipped; the report is the one of the full search at every probe."""
    path = require_shared_models() / "mlperf_tiny" / "vww_mbv1_025_96_f32.onnx"
    fired = []
    real = tigris.plan._over_in_every_unit
    with pytest.MonkeyPatch.context() as m:
        m.setattr(tigris.plan, "_over_in_every_unit", lambda *a: fired.append(real(*a)) or fired[-1])
        a = api.analyze(path, 8288, emit=False)
    with unpruned():
        b = api.analyze(path, 8288, emit=False)
    assert any(fired) and a.json == b.json and not a.fits
