"""Expansion groups (tigris.passes.weight_split.split_expansion) with recomputed overlaps (spatial rule 10): an
inverted-residual block's 1x1 expansion and the depthwise conv it feeds run as channel groups, each depthwise group
reading its expand group directly, so a rolling unit holds one group's expanded rows at a time and recomputes each
group's overlap row from the block input it carries. On the host runtime both the untiled split graph and its tiled
plan give the unsplit graph's int8 output bit for bit, with the high-water marks at the plan's peaks."""
from __future__ import annotations

import numpy as np
import pytest

import _rt_plans as P
from tigris.ir import TigrisError
from tigris.passes.weight_split import expansion_of, split_expansion
from tigris.plan.check import check_plan
from tigris.plan.types import NoFit
from tigris_testing import host_session


def _block():
    """x (24x24x8 int8) -> conv 3x3 -> conv 1x1 to 48 -> dw 3x3/2 -> conv 1x1 to 8 -> y."""
    return P.chain_graph([("conv", 3, 1, 1), ("conv", 1, 1, 1, 48), ("dw", 3, 2, 1), ("conv", 1, 1, 1, 8)], True, 24,
                         8, 0)


def test_expansion_groups_run_like_the_unsplit_block():
    Session, _ = host_session()
    g = _block()
    assert expansion_of(g, "op1") == "op2" and expansion_of(g, "op0") is None and expansion_of(g, "op3") is None
    with pytest.raises(TigrisError):
        split_expansion(g, "op0", 2)
    s = split_expansion(g, "op1", 5)  # 48 channels in 5 groups: uneven
    types = [o.op_type for o in s.ops]
    assert types.count("Slice") == 0 and types.count("DepthwiseConv") == 5 and "t1" not in s.tensors
    assert types.count("Conv") == 2 + 5 and "Concat" in types
    want_data, _ = P.compile_graph(g, 1 << 20)
    x = P.random_input(g, 7)
    want = Session(want_data).run(x).outputs["y"]
    untiled, _ = P.compile_graph(s, 1 << 20)
    np.testing.assert_array_equal(Session(untiled).run(x).outputs["y"], want)
    # with the slow arena holding x and y only: one rolling unit, every group's expansion recomputed; the unsplit
    # block needs 4,672 bytes there (test_rt_rolling), the groups half
    data, plan = P.compile_graph(s, 2320, slow=5248, xip=True)
    (unit,) = plan.units
    assert sorted(unit.recompute) == sorted(f"t1/wgroup{k}" for k in range(5)) and plan.fast_peak <= 2320
    assert check_plan(s, plan) == []
    got = Session(data).run(x)
    np.testing.assert_array_equal(got.outputs["y"], want)
    assert (got.fast_peak, got.slow_peak) == (plan.fast_peak, plan.slow_peak)


def test_analyze_one_region_plans_expansion_groups_where_the_block_does_not_fit():
    """``analyze`` with one region and a slow budget: where the plain graph does not fit, the memory-heavy expansion
    (here the 48-channel one, the largest activation) runs as expansion groups, the note says so, and the plan
    written runs like the unsplit graph within the region, with the high-water marks at its peaks."""
    from tigris import api
    from tigris.ops import lower
    from tigris.plan import plan, sram_bytes

    Session, _ = host_session()
    g = _block()
    prep = api.Prepared(g, [], [lower(g, op) for op in g.ops], one_region=True)
    kw = {**api._plan_kwargs(prep, True, 1.0), "one_region": True}
    assert isinstance(plan(g, 3200, 6912, **kw), NoFit)  # the plain block needs 8,016 bytes as one region here
    a = api.analyze("block", 3200, 6912, xip=True, prepared=prep, one_region=True)
    assert a.fits and any("expansion groups" in n for n in a.notes)
    s = a.prepared.graph
    assert sum(o.op_type == "DepthwiseConv" for o in s.ops) == api.EXPANSION_GROUPS and "t1" not in s.tensors
    assert check_plan(s, a.plan) == [] and sram_bytes(a.plan) <= 6912
    x = P.random_input(g, 2)
    want = Session(P.compile_graph(g, 1 << 20)[0]).run(x).outputs["y"]
    got = Session(a.plan_bytes).run(x)
    np.testing.assert_array_equal(got.outputs["y"], want)
    assert (got.fast_peak, got.slow_peak) == (a.plan.fast_peak, a.plan.slow_peak)


def test_analyze_one_region_keeps_the_cheapest_expansion_split():
    """Two blocks whose expansions are a half and a quarter of the largest activation: ``EXPANSION_SHARES`` gives two
    split graphs (the first block's expansion alone, both). At a region where the plain graph does not fit and both
    do, the first block alone recomputes twice the MACs of both split; ``analyze`` keeps the plan of least cost (the
    second), proven and bit-identical to the unsplit graph, with the high-water marks at its peaks."""
    from tigris import api
    from tigris.ops import lower
    from tigris.plan import plan, sram_bytes

    Session, _ = host_session()
    g = P.chain_graph([("conv", 3, 1, 1), ("conv", 1, 1, 1, 48), ("dw", 3, 2, 1), ("conv", 1, 1, 1, 8),
                       ("conv", 1, 1, 1, 48), ("dw", 3, 1, 1), ("conv", 1, 1, 1, 8)], True, 24, 8, 0)
    prep = api.Prepared(g, [], [lower(g, op) for op in g.ops], one_region=True)
    fast, region, weight = 2800, 7200, api.objective_weight(prep, "latency", "generic", None, None)
    assert isinstance(plan(g, fast, region, **{**api._plan_kwargs(prep, True, weight), "one_region": True}), NoFit)
    splits = [api._expansion_split(prep, share) for share in api.EXPANSION_SHARES]
    assert [sum(o.op_type == "DepthwiseConv" for o in s.graph.ops) for s in splits] == [8 + 1, 8 + 8]
    each = [api._plan(s, fast, region, True, weight) for s in splits]
    assert not any(isinstance(r, NoFit) for r in each)
    assert each[0].plan.recompute_macs > each[1].plan.recompute_macs
    a = api.analyze("blocks", fast, region, xip=True, prepared=prep, one_region=True)
    assert a.fits and any("expansion groups" in n for n in a.notes)
    assert [o.name for o in a.prepared.graph.ops] == [o.name for o in splits[1].graph.ops]
    assert a.plan.recompute_macs == each[1].plan.recompute_macs and sram_bytes(a.plan) <= region
    assert check_plan(a.prepared.graph, a.plan) == []
    x = P.random_input(g, 4)
    want = Session(P.compile_graph(g, 1 << 20)[0]).run(x).outputs["y"]
    got = Session(a.plan_bytes).run(x)
    np.testing.assert_array_equal(got.outputs["y"], want)
    assert (got.fast_peak, got.slow_peak) == (a.plan.fast_peak, a.plan.slow_peak)
