"""Property: random graphs with depthwise convs (kernels 3 and 5, strides 1 and 2, "same" and smaller pads, any
channel count) at random budgets plan with piecewise in-place pairs (lifetime rule 6; docs/memory-planning.md
"Window ops in place") that the checker accepts, within the budget; a plan never gets a larger fast peak than the
same graph planned with the rule off, and a whole-graph plan's timeline counts each pair once (its input's bytes and
the temporary at the op's step). The runtime side (bit-identical outputs, high-water mark equal to the plan's peak)
is tests/runtime/test_rt_dw_in_place.py."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from plan_graphs import G

from tigris.ir import DoesNotFitError
from tigris.plan import lifetime, plan_memory
from tigris.plan.check import check_plan
from tigris.plan.timeline import unscheduled_peak


@st.composite
def dw_graphs(draw):
    g = G(dtype=draw(st.sampled_from(["int8", "float32"])))
    h = draw(st.integers(6, 24))
    x = g.input("x", (1, draw(st.integers(1, 3)), h, draw(st.integers(4, 14))))
    prev = x
    for _ in range(draw(st.integers(1, 4))):
        c = draw(st.integers(1, 40))
        e = g.conv(prev, c, k=1)  # expand: the depthwise input, produced in the same unit
        if draw(st.booleans()):
            e = g.unary(e)
        k = draw(st.sampled_from([3, 5]))
        p = draw(st.integers(0, k // 2))
        if min(g.shape(e)[2:]) + 2 * p < k:
            prev = e
            continue
        d = g.conv(e, 0, k=k, s=draw(st.sampled_from([1, 2])), p=p, dw=True)
        prev = g.conv(d, draw(st.integers(1, 8)), k=1) if draw(st.booleans()) else d
    return g.graph([prev])


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph=dw_graphs(), frac=st.floats(0.05, 1.2), xip=st.booleans(), reuse=st.booleans())
def test_piecewise_plans_pass_the_checker(graph, frac, xip, reuse):
    budget = max(64, int(unscheduled_peak(graph) * frac))
    try:
        plan = plan_memory(graph, budget, xip=xip, halo_reuse=reuse)
    except DoesNotFitError:
        return
    assert check_plan(graph, plan) == []
    assert plan.fast_peak <= budget
    for u in plan.units:
        assert set(u.in_place_rows) <= set(u.in_place)
        assert not any(x in u.rolling or y in u.rolling for y, x in u.in_place.items())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph=dw_graphs(), xip=st.booleans())
def test_piecewise_never_raises_the_untiled_peak(graph, xip):
    with_pieces = plan_memory(graph, 1 << 30, xip=xip)
    peak = unscheduled_peak(graph)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(lifetime, "PIECEWISE", False)
        plain = plan_memory(graph, 1 << 30, xip=xip)
        plain_peak = unscheduled_peak(graph)
    assert check_plan(graph, with_pieces) == []
    assert with_pieces.fast_peak <= plain.fast_peak and peak <= plain_peak
    if with_pieces.units[0].in_place_rows:  # kept only where the arena drops
        assert with_pieces.fast_peak < plain.fast_peak


def test_tiled_units_pair_bands():
    """A chain of depthwise blocks at a budget that tiles it: some tiled unit runs a depthwise conv over its input."""
    g = G()
    x = g.input("x", (1, 1, 48, 40))
    e = g.conv(x, 24, k=1)
    d = g.conv(e, 0, k=3, s=1, dw=True)
    e2 = g.conv(d, 24, k=1)
    d2 = g.conv(e2, 0, k=5, s=2, dw=True)
    graph = g.graph([g.conv(d2, 4, k=1)])
    seen = False
    for frac in (0.6, 0.4, 0.25, 0.15):
        plan = plan_memory(graph, int(unscheduled_peak(graph) * frac), xip=True, halo_reuse=False)
        assert check_plan(graph, plan) == []
        seen |= any(u.tile_rows and u.in_place_rows for u in plan.units)
    assert seen
