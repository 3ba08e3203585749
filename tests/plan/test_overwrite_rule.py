"""The streaming-overwrite rule (tigris.plan.overwrite) against a byte-level simulation of a unit's slow traffic, and
the checker's proof of the planner's overwrites on random graphs at random budgets (rule 6)."""
from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_property import dags

import tigris.plan as planner
from tigris.ir import DoesNotFitError
from tigris.plan import plan_memory, unscheduled_peak
from tigris.plan.check import check_plan
from tigris.plan.overwrite import overwrite_ok, read_bands
from tigris.plan.types import Placement


def _simulate(reads, writes, x_off, x_row, y_off, y_row) -> bool:
    """Run the tiles on a byte map: each tile reads its rows of x (every byte must still be x's), then writes its
    rows of y. True when no read finds a byte of y."""
    owner: dict[int, str] = {}
    for t, ((r0, r1), (w0, w1)) in enumerate(zip(reads, writes)):
        if any(owner.get(b) == "y" for b in range(x_off + r0 * x_row, x_off + r1 * x_row)):
            return False
        for b in range(y_off + w0 * y_row, y_off + w1 * y_row):
            owner[b] = "y"
    return True


BANDS = st.lists(st.tuples(st.integers(0, 12), st.integers(0, 4)), min_size=1, max_size=8)


@settings(max_examples=300, deadline=None)
@given(xb=BANDS, yb=BANDS, x_row=st.integers(1, 6), y_row=st.integers(1, 6), y_off=st.integers(0, 40),
       rolling=st.booleans())
def test_the_rule_never_admits_a_corrupting_schedule(xb, yb, x_row, y_row, y_off, rolling):
    n = min(len(xb), len(yb))
    bands = [(a, a + k) for a, k in xb[:n]]
    writes = [(a, a + k) for a, k in yb[:n]]
    reads = read_bands(bands, rolling)
    if overwrite_ok(reads, writes, 0, x_row, y_off, y_row) is None:
        assert _simulate(reads, writes, 0, x_row, y_off, y_row)


def test_rows_streamed_top_to_bottom_fit_behind_the_read_front():
    # 8 tiles: x read two rows a tile (a rolling 3-row window), y written one row a tile at half x's row bytes
    bands = [(max(0, 2 * t - 1), min(16, 2 * t + 2)) for t in range(8)]
    reads = read_bands(bands, rolling=True)
    assert reads[1] == (2, 4) and reads[0] == (0, 2)
    writes = [(t, t + 1) for t in range(8)]
    assert overwrite_ok(reads, writes, 0, 8, 0, 8) is None
    assert overwrite_ok(reads, writes, 0, 8, 0, 24) == 0  # rows three times as wide: tile 0 reaches rows tile 1 reads
    assert overwrite_ok(reads, writes, 0, 8, 64, 8) == 0  # y started at x's tail: tile 0 hits what others read


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph=dags(), frac=st.floats(0.1, 0.9), xip=st.booleans())
def test_planned_overwrites_are_proven(graph, frac, xip):
    budget = max(64, int(unscheduled_peak(graph) * frac))
    try:
        p = plan_memory(graph, budget, xip=xip)
    except DoesNotFitError:
        return
    assert check_plan(graph, p) == []
    planner.OVERWRITE = False
    try:
        base = plan_memory(graph, budget, xip=xip)
    finally:
        planner.OVERWRITE = True
    assert p.slow_peak <= base.slow_peak
    for k, unit in enumerate(p.units):
        for y, x in unit.overwrite.items():
            # the checker refuses the same pair once the output's home moves past the input's end into bytes the
            # input still holds in another unit's view, or once the pair is declared where the input outlives it
            bad = replace(p, units=[replace(u, overwrite={y: y}) if j == k else u for j, u in enumerate(p.units)])
            assert any("over" in e for e in check_plan(graph, bad))


def test_the_checker_refuses_an_unsafe_overwrite():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime"))
    import _rt_plans as P

    g = P.overwrite_chain()
    p = plan_memory(g, 1024, xip=True)
    assert p.units[0].overwrite == {"t1": "x"}
    assert check_plan(g, p) == []
    x, t1 = p.slow["x"], p.slow["t1"]
    moved = replace(p, slow={**p.slow, "t1": Placement("slow", x.end - t1.size, t1.size)})
    assert any("t1 over x: tile 0 writes bytes a later tile still reads" in e for e in check_plan(g, moved))
    # undeclared, the same overlap is an ordinary collision of two live homes
    undeclared = replace(p, units=[replace(p.units[0], overwrite={})] + p.units[1:])
    assert any("slow:" in e and "live together" in e for e in check_plan(g, undeclared))
