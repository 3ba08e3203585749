"""Column tiles (tigris.plan.cols): the kinds' W questions, the grid of bands, the fallback below the row floor, the
lower bound with column tiles, and the checker's proof of column-split units (on hand-made and random graphs)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from plan_graphs import G
from test_lower_bound import unpruned
from test_property import dags

from tigris.ir import Op
from tigris.ops import kind_for
from tigris.plan import Fit, NoFit, fast_lower_bound, fits, min_fast_budget, plan
from tigris.plan.check import check_plan
from tigris.plan.cols import col_splits, plan_col_bands
from tigris.plan.lifetime import buffers
from tigris.plan.timeline import unscheduled_peak
from tigris.plan.types import align_up


def _block(dtype: str = "int8", c: int = 8, h: int = 16, w: int = 16):
    """conv 1x1 -> relu -> depthwise 3x3 -> conv 1x1: an inverted-residual block without its residual add."""
    g = G(dtype=dtype)
    x = g.input("x", (1, c, h, w))
    y = g.conv(x, 4 * c, k=1)
    y = g.unary(y)
    y = g.conv(y, 0, k=3, dw=True)
    return g.graph([g.conv(y, c, k=1)])


def _row_floor(graph, **kw) -> int:
    return min_fast_budget(graph, col_tiles=False, **kw)


def test_kinds_answer_the_column_questions():
    g = G()
    x = g.input("x", (1, 4, 8, 10))
    c = g.conv(x, 6, k=3, s=2)
    d = g.conv(x, 0, k=5, d=2, dw=True)
    p = g.pool(x, k=2, s=2)
    r = g.unary(x)
    a = g.add(x, r)
    gap = g.gap(x)
    graph = g.graph([c, d, p, a, gap])
    ops = {op.outputs[0]: op for op in graph.ops}
    k = lambda t: kind_for(ops[t].op_type)  # noqa: E731
    assert k(c).col_window(ops[c]) == (3, 2, 1, 1) and k(c).cols_needed(ops[c], 2, 4) == (3, 8)
    assert k(d).col_window(ops[d]) == (5, 1, 2, 4) and k(d).cols_needed(ops[d], 0, 1) == (-4, 5)
    assert k(p).col_window(ops[p]) == (2, 2, 1, 0)
    for t in (c, d, p, r, a):
        assert k(t).col_local(graph, ops[t]) is None, t
    assert k(r).col_window(ops[r]) is None and k(r).cols_needed(ops[r], 3, 5) == (3, 5)
    assert k(gap).col_local(graph, ops[gap]) is not None
    # a per-pixel op whose constant operand varies along W is not column-local; one per channel is
    for shape, local in (((4, 1, 1), True), ((1, 1, 10), False), ((10,), False)):
        graph.weights["k"] = np.ones(shape, np.int8)
        op = Op("m", "Mul", (x, "k"), (r,), {"fused_activation": None})
        assert (kind_for("Mul").col_local(graph, op) is None) == local, shape


def test_column_bands_are_the_widest_first():
    assert col_splits(10, 3) == [(0, 4), (4, 7), (7, 10)]
    assert col_splits(8, 8) == [(k, k + 1) for k in range(8)]


def test_grid_of_a_depthwise_conv():
    """Output columns [0, 4) and [4, 8) of a 3x3 pad-1 depthwise conv read input columns [0, 5) and [3, 8); a band
    buffer holds rows x cols pixels densely."""
    g = G()
    x = g.input("x", (1, 3, 6, 8))
    y = g.conv(x, 0, k=3, dw=True)
    graph = g.graph([y])
    lay = plan_col_bands(graph, buffers(graph), [0], y, 2, 2)
    assert lay is not None and len(lay.tile_rows) == 6
    assert [c[y] for c in lay.tile_cols[:2]] == [(0, 4), (4, 8)]
    assert [c[x] for c in lay.tile_cols[:2]] == [(0, 5), (3, 8)]
    assert [r[x] for r in lay.tile_rows[::2]] == [(0, 3), (1, 5), (3, 6)]
    assert lay.band_bytes == {y: align_up(2 * 4 * 3), x: align_up(4 * 5 * 3)}
    # every input pixel is loaded by each tile whose band holds it; rows and columns overlap once each
    assert lay.pixels[x] == (3 + 4 + 3) * (5 + 5)


def test_column_tiles_fit_below_the_row_floor():
    graph = _block()
    floor = _row_floor(graph, xip=True)
    budget = floor // 2 // 16 * 16
    assert isinstance(plan(graph, budget, xip=True, col_tiles=False), NoFit)
    res = plan(graph, budget, xip=True, col_tiles=True)
    assert isinstance(res, Fit), res
    assert check_plan(graph, res.plan) == []
    assert res.plan.fast_peak <= budget
    cols = [u for u in res.plan.units if u.tile_cols]
    assert cols and all(len(u.tile_cols) == u.tiles == len(u.tile_rows) for u in cols)
    # the fewest column tiles: one fewer does not fit at the same tile height
    assert min_fast_budget(graph, xip=True, col_tiles=True) <= budget


def test_plans_that_fit_without_column_tiles_do_not_change():
    graph = _block("float32")
    for budget in (_row_floor(graph, xip=False), unscheduled_peak(graph) // 2, unscheduled_peak(graph)):
        assert plan(graph, budget, col_tiles=True) == plan(graph, budget, col_tiles=False)


def test_forced_column_tiles():
    """The tests' knob: every tiled unit that can be column-split runs exactly that many column tiles."""
    graph = _block(w=12)
    budget = unscheduled_peak(graph) // 2
    res = plan(graph, budget, xip=True, col_tiles=True, force_cols=3)
    assert isinstance(res, Fit)
    assert check_plan(graph, res.plan) == []
    tiled = [u for u in res.plan.units if u.tile_rows]
    assert tiled and all(u.tile_cols for u in tiled)
    for u in tiled:
        out = u.spill[0]
        assert sorted({c[out] for c in u.tile_cols}) == [(0, 4), (4, 8), (8, 12)]


def test_checker_proves_column_split_units():
    graph = _block()
    res = plan(graph, unscheduled_peak(graph) // 2, xip=True, col_tiles=True, force_cols=2)
    p = res.plan
    k = next(k for k, u in enumerate(p.units) if u.tile_cols)
    u = p.units[k]
    inner = next(n for n in u.fast if n not in u.reload and n not in u.spill)

    def broken(**changes):
        units = list(p.units)
        units[k] = replace(u, **changes)
        return check_plan(graph, replace(p, units=units))

    assert check_plan(graph, p) == []
    cols = [dict(c) for c in u.tile_cols]
    lo, hi = cols[0][inner]
    cols[0][inner] = (lo, hi - 1)  # one column short of what its consumer needs
    assert any("needs columns" in e or "need rows" in e for e in broken(tile_cols=cols))
    out = u.spill[0]
    cols = [dict(c) for c in u.tile_cols]
    cols[1][out] = (cols[1][out][0] + 1, cols[1][out][1])  # a gap in the output's columns
    assert any("do not continue" in e for e in broken(tile_cols=cols))
    small = dict(u.fast)
    small[inner] = replace(small[inner], size=16)
    assert any("does not fit its buffer" in e for e in broken(fast=small))
    assert any("carries or runs" in e for e in broken(rolling=[inner]))
    assert any("column bands for" in e for e in broken(tile_cols=u.tile_cols[:-1]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph=dags(), frac=st.floats(0.02, 0.6), xip=st.booleans(), n=st.sampled_from([0, 0, 2, 3]))
def test_random_column_split_plans_pass_the_checker(graph, frac, xip, n):
    """Random DAGs at random budgets with column tiles (the fallback, or forced to n column tiles): every plan
    accepted passes the checker within the budget, and a plan that fits without column tiles is the same with them."""
    budget = max(64, int(unscheduled_peak(graph) * frac))
    res = plan(graph, budget, xip=xip, col_tiles=True, force_cols=n)
    if isinstance(res, NoFit):
        return
    assert check_plan(graph, res.plan) == []
    assert res.plan.fast_peak <= budget
    for u in res.plan.units:
        if u.tile_cols and n and not u.accumulate:  # an accumulating GAP's output is one pixel in every tile
            assert len({c[u.spill[0]] for c in u.tile_cols}) == n
    if not n:
        without = plan(graph, budget, xip=xip, col_tiles=False)
        if isinstance(without, Fit):
            assert res == without


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph=dags(), xip=st.booleans())
def test_nothing_fits_below_the_column_bound(graph, xip):
    """The per-op bound with column tiles (one row by one output column of an op alone) is a real lower bound, and
    the budget search with column tiles returns what a plain search does."""
    bound = fast_lower_bound(graph, xip=xip, col_tiles=True)
    assert bound <= fast_lower_bound(graph, xip=xip, col_tiles=False)
    below = align_up(bound, 16) - 16
    if below > 0:
        with unpruned():
            assert not fits(graph, below, xip=xip, col_tiles=True)
    m = min_fast_budget(graph, xip=xip, col_tiles=True)
    assert m is not None and fits(graph, m, xip=xip, col_tiles=True)
    assert m <= min_fast_budget(graph, xip=xip, col_tiles=False)


def test_every_column_local_kind_has_a_runtime_column_class():
    """A kind the planner may put in a column-split unit is one the loader accepts there: windowed kinds (they answer
    col_window) are COLS "window", per-pixel ones "pixel"; a kind that never answers col_local None may be neither."""
    from tigris.ops import KINDS, kind
    from tigris.ops.base import OpKind

    local = 0
    for name, _, _ in KINDS:
        k = kind(name)
        if type(k).col_local is OpKind.col_local:
            continue
        local += 1
        windowed = type(k).col_window is not OpKind.col_window
        assert k.COLS == ("window" if windowed else "pixel"), name
    assert local >= 8


def test_accumulating_gap_may_end_a_column_split_unit(monkeypatch):
    """Rule 6 (tigris.plan.cols.COLS_ACCUM, on: the runtime accumulates over a grid): the grid cuts the GAP's input,
    the GAP's output is one pixel in every tile and lives across them; the checker proves such plans. Without rule 6
    the GAP's whole input rows bound the budget."""
    import tigris.plan.cols as cols

    g = G()
    x = g.input("x", (1, 8, 6, 6))
    y = g.conv(x, 64, k=1)
    graph = g.graph([g.gap(y)])
    monkeypatch.setattr(cols, "COLS_ACCUM", False)
    base = fast_lower_bound(graph, xip=True, layouts={})
    assert isinstance(plan(graph, base - 16, xip=True, layouts={}), NoFit)
    monkeypatch.setattr(cols, "COLS_ACCUM", True)
    bound = fast_lower_bound(graph, xip=True)
    assert bound < base
    res = plan(graph, unscheduled_peak(graph) // 3, xip=True, force_cols=3)
    assert isinstance(res, Fit)
    u = next(u for u in res.plan.units if u.tile_cols)
    out = u.spill[0]
    assert u.accumulate == [u.ops[-1]] and {(r[out], c[out]) for r, c in zip(u.tile_rows, u.tile_cols)} == {
        ((0, 1), (0, 1))}
    assert check_plan(graph, res.plan) == []
    m = min_fast_budget(graph, xip=True)
    assert m < base
    low = plan(graph, m, xip=True)
    assert isinstance(low, Fit) and check_plan(graph, low.plan) == []
    with unpruned():
        assert not fits(graph, align_up(bound, 16) - 16, xip=True)
    # a broken accumulator band is caught
    p = res.plan
    k = p.units.index(u)
    bad = [dict(c) for c in u.tile_cols]
    bad[0][out] = (0, 0)
    units = list(p.units)
    units[k] = replace(u, tile_cols=bad)
    assert any("accumulator" in e for e in check_plan(graph, replace(p, units=units)))
