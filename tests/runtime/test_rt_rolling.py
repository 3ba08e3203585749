"""Halo reuse (rolling units, unit flag ROLLING) on the C runtime: on random conv chains at random budgets, every plan
with a rolling unit passes the checker, gives the untiled plan's int8 output bit for bit (float within 1e-5 x
max(1, max|ref|)), recomputes no halo MAC in its rolling units, and the runtime's fast and slow high-water marks
equal the plan's peaks. Then the readers' refusals of malformed rolling units, each with its own code."""
from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tigris_testing import host_session
import _rt_plans as P
from tigris.emit import format as F
from tigris.emit import read_plan
from tigris.ir import DoesNotFitError
from tigris.plan.check import check_plan

FLOAT_TOL = P.FLOAT_TOL


@pytest.fixture(scope="module")
def session_cls():
    return host_session()


chain_graph = P.chain_graph
LAYER = P.chain_layers()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(layers=st.lists(LAYER, min_size=2, max_size=5), int8=st.booleans(), h=st.integers(12, 28),
       c=st.sampled_from([2, 4, 8]), frac=st.floats(0.05, 0.6), xip=st.booleans(), seed=st.integers(0, 9))
def test_rolling_plans_run_like_untiled(session_cls, layers, int8, h, c, frac, xip, seed):
    Session, _ = session_cls
    layers = [(kind, k, s, 1 if k == 1 else d) for kind, k, s, d in layers]
    g = chain_graph(layers, int8, h, c, seed)
    untiled, whole = P.compile_graph(g, 1 << 22, xip=xip)
    try:
        data, plan = P.compile_graph(g, max(256, int(whole.fast_peak * frac)), xip=xip)
    except DoesNotFitError:
        return
    assert check_plan(g, plan) == []
    for unit in plan.units:
        if unit.rolling:
            assert all(plan.stages[s].recompute_macs == 0 for s in unit.stages)
    x = P.random_input(g, seed)
    got = Session(data).run(x)
    want = Session(untiled).run(x).outputs["y"]
    if int8:
        np.testing.assert_array_equal(got.outputs["y"], want)
    else:
        assert float(np.abs(got.outputs["y"] - want).max()) <= FLOAT_TOL * max(1.0, float(np.abs(want).max()))
    assert (got.fast_peak, got.slow_peak) == (plan.fast_peak, plan.slow_peak)


def test_a_chain_rolls_and_loads_every_input_row_once(session_cls):
    """Three 3x3 convs at a budget that tiles them: the unit carries rows instead of recomputing them, reloads each
    input row once, and runs bit-exact; the recomputing plan of the same graph spends extra MACs. Both ways of
    carrying (in place, through a line buffer) run bit-exact too."""
    Session, _ = session_cls
    g = chain_graph([("conv", 3, 1, 1), ("dw", 3, 1, 1), ("conv", 3, 1, 1)], True, 24, 8, 0)
    untiled, _ = P.compile_graph(g, 1 << 20)
    data, plan = P.compile_graph(g, 6000)  # one tiled unit, 6 tiles (recomputing: 5 tiles)
    rec_data, rec = P.compile_graph(g, 6000, halo_reuse=False)
    assert [u.rolling for u in plan.units if u.tiles > 1] and plan.recompute_macs == 0 < rec.recompute_macs
    assert plan.reload_bytes == g.tensors["x"].nbytes < rec.reload_bytes
    assert read_plan(data).units[0].rolling and not read_plan(rec_data).units[0].rolling
    x = P.random_input(g, 3)
    want = Session(untiled).run(x).outputs["y"]
    # at 3500 B one unit carries in place (its band buffers live from tile to tile) and one also through a line
    # buffer
    both = P.compile_graph(g, 3500)
    units = [u for u in both[1].units if u.rolling]
    assert any(set(u.rolling) - set(u.carry) for u in units) and any(u.carry for u in units)
    for d, p in ((data, plan), (rec_data, rec), both):
        got = Session(d).run(x)
        np.testing.assert_array_equal(got.outputs["y"], want)
        assert (got.fast_peak, got.slow_peak) == (p.fast_peak, p.slow_peak)


def test_a_short_first_tile_lets_the_later_tiles_grow(session_cls, monkeypatch):
    """The first tile of a rolling unit computes one output row (it carries nothing, so its bands hold every op's
    halo stacked up) and the later ones tile_h rows: at the same budget the tiles are taller than with equal tiles,
    so there are fewer, and the plan still runs bit-exact with the runtime's high-water mark at the plan's peak.
    (Where equal tiles need no more tiles the planner keeps them.)"""
    from tigris.plan import spatial

    Session, _ = session_cls
    g = chain_graph([("conv", 3, 1, 1), ("dw", 3, 1, 1), ("dw", 3, 1, 1), ("conv", 3, 1, 1)], True, 24, 8, 0)
    untiled, _ = P.compile_graph(g, 1 << 20)
    x = P.random_input(g, 5)
    want = Session(untiled).run(x).outputs["y"]
    data, plan = P.compile_graph(g, 7000)
    monkeypatch.setattr(spatial, "FIRST_TILE_SHORT", False)
    _, equal = P.compile_graph(g, 7000)
    rolled = [u for u in plan.units if u.rolling]
    assert rolled and all(u.tiles > 1 for u in rolled)
    for u in rolled:
        first, *rest = [t[u.spill[0]][1] - t[u.spill[0]][0] for t in u.tile_rows]
        assert first == 1 and max(rest) > 1, (first, rest)
    assert sum(u.tiles for u in plan.units if u.rolling) < sum(u.tiles for u in equal.units if u.rolling)
    assert not check_plan(g, plan)
    got = Session(data).run(x)
    np.testing.assert_array_equal(got.outputs["y"], want)
    assert (got.fast_peak, got.slow_peak) == (plan.fast_peak, plan.slow_peak)


# --- refusals -------------------------------------------------------------------------------------------------------


def _rolling_base() -> bytes:
    g = chain_graph([("conv", 3, 1, 1), ("dw", 3, 1, 1), ("conv", 3, 1, 1)], True, 24, 8, 0)
    return P.compile_graph(g, 3500)[0]  # two rolling units: one carries in place, one also through a line buffer


def _carries(unit):
    """(tile t, placement j, rows c) for every placement that carries c > 0 rows into tile t."""
    for t in range(1, unit.tiles):
        for j in range(len(unit.placements)):
            (r0, n0), (r1, _n1) = unit.tile_rows[t - 1][j], unit.tile_rows[t][j]
            if n0 and r1 < r0 + n0:
                yield t, j, r0 + n0 - r1


def _mutants(base: bytes):
    pf = read_plan(base)
    k = [u.index for u in pf.units if u.rolling and any(off != F.NONE for off, _ in u.carry)][0]
    unit = pf.units[k]
    uoff = P.section_offset(base, F.SectionId.UNITS) + k * F.UNIT.size
    u = F.UNIT.unpack(base, uoff)
    t, j, c = next((t, j, c) for t, j, c in _carries(unit) if unit.carry[j][0] != F.NONE)  # one with a line buffer
    line = P.section_offset(base, F.SectionId.INDEX) + 4 * (int(u["carry_first"]) + 2 * j)
    off, size = struct.unpack_from("<2I", base, line)
    rb = pf.tensors[unit.placements[j].tensor].row_bytes
    yield "line buffer misaligned", P.set_field(base, line, off + 4), "ERR_ARENA_BOUNDS"
    yield "line buffer past the arena", P.set_field(base, line + 4, 1 << 30), "ERR_ARENA_BOUNDS"
    yield "line buffer of size 0", P.set_field(base, line + 4, 0), "ERR_ARENA_BOUNDS"
    yield "line buffer too small", P.set_field(base, line + 4, c * rb - 1), "ERR_TILE_ROWS"
    flags = uoff + F.UNIT.offsets()["flags"]
    yield "ROLLING untiled", P.set_field(base, flags, int(F.UnitFlag.ROLLING)), "ERR_UNIT"
    yield "list without ROLLING", P.set_field(base, flags, int(F.UnitFlag.TILED)), "ERR_UNIT"
    yield "list past INDEX", P.set_field(base, uoff + F.UNIT.offsets()["carry_first"], 1 << 20), "ERR_INDEX"
    rows = P.section_offset(base, F.SectionId.TILE_ROWS) + (int(u["rows_first"]) + t * len(unit.placements) + j) * 8
    # tile t's band keeps its start but ends a row before tile t - 1's did: it moves back while carrying
    yield "band ends earlier while carrying", P.set_field(base, rows + 4, c - 1), "ERR_TILE_ROWS"
    if unit.tile_rows[t - 1][j][0] > 0:
        yield "band starts earlier while carrying", P.set_field(base, rows, unit.tile_rows[t - 1][j][0] - 1), \
            "ERR_TILE_ROWS"


def test_readers_refuse_malformed_rolling_units(session_cls):
    Session, PlanError = session_cls
    base = _rolling_base()
    assert read_plan(base).units[0].rolling
    Session(base)
    assert P.assert_readers_refuse(Session, PlanError, _mutants(base)) >= 8


def _expansion_chain():
    """x (24x24x8 int8) -> conv 3x3 -> conv 1x1 to 48 channels -> dw 3x3/2 -> conv 1x1 to 8 -> y: an inverted-
    residual block whose 48-channel expansion the stride-2 depthwise conv reads with one row of overlap."""
    return chain_graph([("conv", 3, 1, 1), ("conv", 1, 1, 1, 48), ("dw", 3, 2, 1), ("conv", 1, 1, 1, 8)], True, 24, 8,
                       0)


def test_an_expansion_recomputes_its_overlap_row(session_cls):
    """Spatial rule 10: with the slow arena holding only x and y (y over x), one rolling unit carrying the
    expansion's overlap row does not fit 4,680 bytes; recomputing that row (the expand re-reads the 8-channel row
    its input carries instead) does. The unit says so (``recompute``, the line-buffer entry (NONE, NONE)), the
    checker proves it, and it runs like the untiled plan with the high-water marks at the plan's peaks."""
    from tigris.emit.reader import NEVER_CARRIES

    Session, _ = session_cls
    g = _expansion_chain()
    untiled, _ = P.compile_graph(g, 1 << 20)
    data, plan = P.compile_graph(g, 4680, slow=5248, xip=True)
    (unit,) = plan.units
    assert unit.recompute == ["t1"] and "t1" not in unit.rolling and unit.rolling and plan.recompute_macs > 0
    with pytest.raises(DoesNotFitError):
        P.compile_graph(g, 4680, slow=5248, xip=True, halo_reuse=False)  # recomputing every halo needs more
    assert check_plan(g, plan) == []
    pf = read_plan(data)
    j = [pf.tensors[p.tensor].name for p in pf.units[0].placements].index("t1")
    assert pf.units[0].carry[j] == NEVER_CARRIES and pf.to_memory_plan().units[0].recompute == ["t1"]
    x = P.random_input(g, 4)
    got = Session(data).run(x)
    np.testing.assert_array_equal(got.outputs["y"], Session(untiled).run(x).outputs["y"])
    assert (got.fast_peak, got.slow_peak) == (plan.fast_peak, plan.slow_peak)


def test_readers_refuse_a_reload_that_never_carries(session_cls):
    """A reloaded placement of a rolling unit loads only the rows after those it carries, so the line-buffer entry
    "never carries" (NONE, NONE) on it is refused by both readers (the OVERWRITE proof counts its reads so)."""
    Session, PlanError = session_cls
    base, _ = P.compile_graph(_expansion_chain(), 4680, slow=5248, xip=True)
    pf = read_plan(base)
    unit = pf.units[0]
    j = [pf.tensors[p.tensor].name for p in unit.placements].index("x")
    u = F.UNIT.unpack(base, P.section_offset(base, F.SectionId.UNITS))
    line = P.section_offset(base, F.SectionId.INDEX) + 4 * (int(u["carry_first"]) + 2 * j)
    bad = P.set_field(P.set_field(base, line, F.NONE), line + 4, F.NONE)
    assert P.assert_readers_refuse(Session, PlanError, [("reload never carries", bad, "ERR_ARENA_BOUNDS")]) == 1


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(wide=st.sampled_from([16, 24, 32]), c=st.sampled_from([1, 2, 3]), h=st.integers(16, 32),
       tail=st.lists(P.chain_layers(), max_size=2), seed=st.integers(0, 3))
def test_a_windowed_output_recomputes_its_overlap_rows(session_cls, wide, c, h, tail, seed):
    """Spatial rule 10, tier 2: a stem conv 3x3/2 making ``wide`` channels from a ``c``-channel input, then a block
    whose expansion recomputes its overlap (tier 1). At the one-row peak of the layout recomputing the stem output's
    overlap rows too (its narrow input carries them), the plan fits where tier 1 does not, passes the checker and
    runs bit-identical to the untiled plan with the high-water marks at the plan's peaks."""
    from tigris.plan import _costs
    from tigris.plan.chain import recompute_candidates, unit_bands
    from tigris.plan.lifetime import buffers

    Session, _ = session_cls
    layers = [("conv", 3, 2, 1, wide), ("dw", 3, 1, 1), ("conv", 1, 1, 1, 8), ("conv", 1, 1, 1, 48), ("dw", 3, 2, 1),
              ("conv", 1, 1, 1, 8)] + tail
    g = chain_graph(layers, True, h, c, seed)
    bufs, ops = buffers(g), range(len(g.ops))
    assert "t0" in recompute_candidates(g, bufs, ops, "y", 2) - recompute_candidates(g, bufs, ops, "y", 1)
    costs = _costs(g, True, None, None, True, 0.0, {}, True, recompute_expansions=True)
    two = unit_bands(g, bufs, costs, ops, "y", 1, False, True, partial=2)
    one = unit_bands(g, bufs, costs, ops, "y", 1, False, True, partial=1)
    assume(two is not None and "t0" in two.recompute and (one is None or one.peak > two.peak))
    untiled, _ = P.compile_graph(g, 1 << 20)
    data, plan = P.compile_graph(g, two.peak, slow=1 << 20, xip=True)
    assert plan.fast_peak <= two.peak and check_plan(g, plan) == []
    x = P.random_input(g, seed)
    got = Session(data).run(x)
    np.testing.assert_array_equal(got.outputs["y"], Session(untiled).run(x).outputs["y"])
    assert (got.fast_peak, got.slow_peak) == (plan.fast_peak, plan.slow_peak)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(wide=st.sampled_from([16, 24, 32]), c=st.sampled_from([1, 2, 3]), h=st.integers(16, 32),
       tail=st.lists(P.chain_layers(), max_size=2), seed=st.integers(0, 3), frac=st.floats(0.0, 1.0))
def test_carry_back_recomputes_only_what_the_budget_needs(session_cls, wide, c, h, tail, seed, frac):
    """Rule 10's carry back (``Costs.carry_back``): at a budget between the one-row peaks of tier 2 and of carrying
    everything, the layout still fits it, recomputes a subset of the buffers the layout without carry back
    recomputes and no more MACs; a plan whose units all carry back passes the checker and runs bit-identical to the untiled plan with the high-water marks at the plan's peaks."""
    from dataclasses import replace

    from tigris.plan import _costs
    from tigris.plan.chain import fit_tiles, unit_bands
    from tigris.plan.lifetime import buffers

    Session, _ = session_cls
    layers = [("conv", 3, 2, 1, wide), ("dw", 3, 1, 1), ("conv", 1, 1, 1, 8), ("conv", 1, 1, 1, 48), ("dw", 3, 2, 1),
              ("conv", 1, 1, 1, 8)] + tail
    g = chain_graph(layers, True, h, c, seed)
    bufs, ops = buffers(g), range(len(g.ops))
    costs = _costs(g, True, None, None, True, 0.0, {}, True, recompute_expansions=True)
    two = unit_bands(g, bufs, costs, ops, "y", 1, False, True, partial=2)
    full = unit_bands(g, bufs, costs, ops, "y", 1, False, True)
    assume(two is not None and full is not None and full.peak > two.peak)
    budget = two.peak + int(frac * (full.peak - 1 - two.peak)) // 16 * 16
    plain = fit_tiles(g, bufs, costs, ops, "y", budget)
    back = fit_tiles(g, bufs, replace(costs, carry_back=True), ops, "y", budget)
    assert plain is not None and back is not None and back.peak <= budget
    assert back.recompute <= plain.recompute and back.recompute_macs <= plain.recompute_macs
    import tigris.plan as TP

    made = TP._costs
    with pytest.MonkeyPatch.context() as mp:  # every unit of the plan carries back, not only under overwrite caps
        mp.setattr(TP, "_costs", lambda *a, **k: replace(made(*a, **k), carry_back=True))
        data, plan = P.compile_graph(g, budget, slow=1 << 20, xip=True)
    untiled, _ = P.compile_graph(g, 1 << 20)
    assert plan.fast_peak <= budget and check_plan(g, plan) == []
    x = P.random_input(g, seed)
    got = Session(data).run(x)
    np.testing.assert_array_equal(got.outputs["y"], Session(untiled).run(x).outputs["y"])
    assert (got.fast_peak, got.slow_peak) == (plan.fast_peak, plan.slow_peak)
