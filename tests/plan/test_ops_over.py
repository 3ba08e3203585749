"""``tigris.plan.ops_over`` answers what filtering ``op_lower_bounds`` does (the ops over a budget, with their
bounds) while building less, and the split attempt's shortcuts built on it (bounding only the ops that can change
a round's outcome, ending a round at a group that stays over, sharing split graphs and their plans between
analyze's attempts) leave the report of a non-fitting ``analyze`` unchanged."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_property import dags

from tigris import api
from tigris.plan import op_lower_bounds, ops_over
from tigris_testing import require_shared_models


def _same_as_filtering(graph, **kw) -> None:
    bounds = op_lower_bounds(graph, **kw)
    # every bound and its neighbours: the budgets where an op turns from over to within
    budgets = sorted({0, *bounds, *(b - 1 for b in bounds), *(b + 1 for b in bounds)})
    for budget in budgets:
        over = ops_over(graph, budget, **kw)
        # asked out of order and twice: the answer is per op, memoized
        for i in [*reversed(range(len(graph.ops))), *range(len(graph.ops))]:
            assert over(i) == (bounds[i] if bounds[i] > budget else None), (budget, i)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph=dags(), xip=st.booleans(), acc=st.booleans(), cols=st.booleans())
def test_ops_over_is_the_filtered_bounds(graph, xip, acc, cols):
    _same_as_filtering(graph, xip=xip, accumulate_gap=acc, col_tiles=cols)


@pytest.mark.parametrize("name", ["mlperf_tiny/kws_dscnn_f32", "mlperf_tiny/vww_mbv1_025_96_int8"])
def test_ops_over_on_shared_models(name):
    prep = api.prepare(require_shared_models() / f"{name}.onnx")
    for xip in (False, True):
        for cols in (False, True):
            _same_as_filtering(prep.graph, **{**api._plan_kwargs(prep, xip), "col_tiles": cols})


# the non-fitting rows of bench/analyze_cost.py where the split attempts' shortcuts cut the most
@pytest.mark.parametrize("name,budget", [("torchvision/efficientnet_lite0_128_int8", 6672),
                                         ("torchvision/efficientnet_lite0_128_f32", 12880)])
def test_split_shortcuts_change_no_report(monkeypatch, name, budget):
    path = require_shared_models() / f"{name}.onnx"
    fast = api.analyze(path, budget, emit=False).json
    monkeypatch.setattr(api, "CHEAP_PROBES", False)  # every op of every split graph bounded, every round run
    slow = api.analyze(path, budget, emit=False).json
    assert not fast["fits"] and fast == slow
