"""Stages 5-6 on hand-built graphs: greedy stage cuts, receptive field, halo, tile height, chains, offsets, errors."""
from __future__ import annotations

import pytest
from plan_graphs import G

from tigris.ir import DoesNotFitError
from tigris.plan import NoFit, min_fast_budget, plan, plan_memory
from tigris.plan.check import check_plan
from tigris.plan.lifetime import buffers
from tigris.plan.spatial import halo, input_rows, receptive_field, spec_tile_h, stage_tileable
from tigris.plan.temporal import Costs, greedy_stages, uses


def residual():
    """x[1,1,16,16] int8 (256 B, 16 B per row) -conv-> t0 -conv-> t1; t2 = t1 + x. Timeline (512, 768, 768)."""
    g = G()
    x = g.input("x", (1, 1, 16, 16))
    y = g.add(g.conv(g.conv(x, 1), 1), x)
    return g.graph([y])


def test_greedy_cuts_before_the_op_that_overflows():
    graph = residual()
    bufs = buffers(graph)
    costs = Costs(lambda i: 0, lambda i, r: 0, True)
    # [op0, op1]: x is only read by op0 here (op2's stage reloads it), so the peak is t0 + t1 = 512 <= 600.
    # Adding op2 keeps x live to step 2: 768 > 600, cut. [op2] alone reads t1 and x: 768, over budget (tiling).
    assert greedy_stages(graph, bufs, uses(bufs), costs, 600) == [range(0, 2), range(2, 3)]
    assert greedy_stages(graph, bufs, uses(bufs), costs, 768) == [range(0, 3)]


def test_single_over_budget_stage_is_tiled():
    graph = residual()
    plan = plan_memory(graph, 600, strategy="spec", xip=True)
    assert check_plan(graph, plan) == []
    assert [s.ops for s in plan.stages] == [[0, 1], [2]]
    add = plan.stages[1]
    # spec guess floor(600 * 16 / 768) - 0 = 12 rows: t1 + x + t2 bands = 3 x 192 = 576 <= 600; 13 rows = 624
    assert add.tiled and add.tile_h == 12 and add.tiles == 2 and add.halo == 0 and add.chain is None
    assert plan.units[1].tile_rows == [{"t2": (0, 12), "t1": (0, 12), "x": (0, 12)},
                                       {"t2": (12, 16), "t1": (12, 16), "x": (12, 16)}]
    # stage [op0, op1] has two spatial ops: not tileable, so no chain with the Add stage
    assert not plan.stages[0].tiled
    assert plan.slow.keys() == {"x", "t1", "t2"}


def three_convs():
    g = G()
    x = g.input("x", (1, 1, 16, 16))  # 256 B, 16 B per row
    return g.graph([g.conv(g.conv(g.conv(x, 1), 1), 1)])


def test_chain_of_three_stages_hand_computed():
    graph = three_convs()
    plan = plan_memory(graph, 500, strategy="spec", xip=True)
    assert check_plan(graph, plan) == []
    assert [s.ops for s in plan.stages] == [[0], [1], [2]]  # every op alone is 512 > 500
    assert len(plan.units) == 1 and all(s.chain == 0 for s in plan.stages)
    unit = plan.units[0]
    # Output tile height 13: tile 0 needs t2[0,13) <- t1[0,14) <- t0[0,15) <- x[0,16); the peak is at step 0,
    # x + t0 = (16 + 15) x 16 = 496 <= 500. Height 14 needs x 16 + t0 16 rows = 512.
    assert unit.tiles == 2
    assert unit.tile_rows[0] == {"t2": (0, 13), "t1": (0, 14), "t0": (0, 15), "x": (0, 16)}
    assert unit.tile_rows[1] == {"t2": (13, 16), "t1": (12, 16), "t0": (11, 16), "x": (10, 16)}
    assert unit.timeline_peak == 496 and unit.peak_bytes == 496  # arena reaches the timeline peak on a chain
    assert [s.tile_h for s in plan.stages] == [15, 14, 13]  # tile heights back-propagated per stage
    assert plan.home("x").arena == "slow" and plan.home("t2").arena == "slow"
    assert plan.reload_bytes == (16 + 6) * 16 and plan.spill_bytes == 256
    # halo recompute: t0 computes 15 + 5 = 20 rows of 16, t1 14 + 4 = 18: (4 + 2) rows x 16 px x 9 MACs
    assert plan.recompute_macs == (4 + 2) * 16 * 9


def test_tigris_strategy_tiles_across_the_residual():
    graph = residual()
    spec = plan_memory(graph, 600, strategy="spec", xip=True)
    plan = plan_memory(graph, 600, strategy="tigris", xip=True)
    assert check_plan(graph, plan) == []
    # one tiled unit for all three ops (x is reloaded per band, only t2 is spilled), reported as two chained stages
    assert len(plan.units) == 1 and [s.ops for s in plan.stages] == [[0], [1, 2]]
    assert {s.chain for s in plan.stages} == {0}
    # halo reuse (spatial rule 9): x carries the rows both tiles read, so each of its 16 rows of 16 B loads once
    assert plan.units[0].rolling and plan.recompute_macs == 0
    assert plan.reload_bytes == 16 * 16 and plan.spill_bytes == 256
    assert plan.reload_bytes + plan.spill_bytes < spec.reload_bytes + spec.spill_bytes == 1280
    # recomputing: tile 0 needs x[0,13) (hull of conv0's [0,12)+1 and the Add's rows), tile 1 x[9,16): 20 rows x 16 B
    rec = plan_memory(graph, 600, strategy="tigris", xip=True, halo_reuse=False)
    assert check_plan(graph, rec) == [] and not rec.units[0].rolling
    assert rec.reload_bytes == 20 * 16 and rec.spill_bytes == 256


def test_single_stage_plan_keeps_io_in_fast():
    graph = residual()
    plan = plan_memory(graph, 768, xip=True)
    assert check_plan(graph, plan) == []
    assert len(plan.units) == 1 and not plan.units[0].tile_rows
    assert plan.home("x").arena == "fast" and plan.slow == {}
    assert plan.fast_peak == 768 and plan.spill_bytes == plan.reload_bytes == 0


def test_receptive_field_and_halo():
    g = G()
    x = g.input("x", (1, 1, 32, 32))
    a = g.conv(x, 1, k=3, s=2)
    b = g.conv(a, 1, k=3, d=2)
    graph = g.graph([b])
    # reverse walk: dilated conv eff_k 5 -> RF 1 + 4*1 = 5 (cum stride 1); stride-2 3x3 -> 5 + 2*1 = 7
    assert receptive_field(graph, [0, 1]) == 7 and halo(graph, [0, 1]) == 6
    g2 = G()
    x2 = g2.input("x", (1, 1, 32, 32))
    graph2 = g2.graph([g2.conv(g2.conv(x2, 1, s=2), 1, s=2)])
    assert receptive_field(graph2, [0, 1]) == 1 + 2 * 1 + 2 * 2
    # ops side by side are no chain: eight stride-2 3x3 branches of x joined by Adds need 3 rows of x, not 2**8
    g3 = G()
    x3 = g3.input("x", (1, 1, 32, 32))
    y3 = g3.conv(x3, 1, s=2)
    for _ in range(7):
        y3 = g3.add(y3, g3.conv(x3, 1, s=2))
    graph3 = g3.graph([g3.conv(y3, 1, k=3, s=1)])
    ops3 = list(range(len(graph3.ops)))
    assert receptive_field(graph3, ops3) == 1 + 2 * 1 + 2  # the last conv's 3 rows, each 1 + 2 rows of x


def test_input_rows_of_windowed_ops():
    g = G()
    x = g.input("x", (1, 1, 9, 9))
    y = g.conv(x, 1, k=3, s=2, p=1)  # out rows 5
    graph = g.graph([y])
    op = graph.ops[0]
    assert input_rows(graph, op, "x", (2, 4)) == (3, 8)  # [2*2-1, 3*2-1+3)
    assert input_rows(graph, op, "x", (0, 1)) == (0, 2)  # clipped at the top
    assert input_rows(graph, op, "x", (4, 5)) == (7, 9)  # clipped at the bottom


def test_spec_tile_height_formula():
    assert spec_tile_h(600, 16, 768, 0) == 12
    assert spec_tile_h(600, 16, 768, 2) == 10
    assert spec_tile_h(10, 16, 768, 2) == 1  # never below one row
    assert spec_tile_h(10_000, 16, 768, 0) == 16  # never above H


def test_tileable_rule():
    g = G()
    x = g.input("x", (1, 2, 8, 8))
    a = g.conv(x, 2)
    b = g.conv(a, 2)
    c = g.gap(b)
    graph = g.graph([c])
    assert stage_tileable(graph, [0], ["t0"]) is None
    assert "2 spatial ops" in stage_tileable(graph, [0, 1], ["t1"])
    assert "structural" in stage_tileable(graph, [2], ["t2"])  # GAP needs its whole input (documented deviation)
    assert "2 outputs" in stage_tileable(graph, [0], ["t0", "x"])


def test_does_not_fit_names_stage_op_and_bytes():
    g = G()
    x = g.input("x", (1, 64, 4, 4))  # 1024 B
    y = g.gemm(g.flatten(g.gap(x)), 512)
    graph = g.graph([y])
    res = plan(graph, 256, accumulate_gap=False, xip=True)  # the GAP then needs its whole input
    assert res == NoFit(0, "op0", 1024 + 64, "untileable", 256, "GlobalAveragePool",
                       "op0: GlobalAveragePool is structural")
    with pytest.raises(DoesNotFitError) as ei:
        plan_memory(graph, 256, accumulate_gap=False, xip=True)
    err = ei.value
    assert err.nofit == res and str(err) == f"{res.message} (op0)"
    assert "stage 0" in str(err) and "GlobalAveragePool" in str(err) and "1088 bytes" in str(err)


def test_weight_prefix_counts_against_the_budget_when_not_xip():
    graph = residual()
    w = lambda i: 100  # noqa: E731 - 100 bytes per op
    plan = plan_memory(graph, 768 + 304, xip=False, weight_bytes_of=w)
    assert check_plan(graph, plan) == []
    unit = plan.units[0]
    assert unit.weight_bytes == 304  # align_up(3 * 100)
    assert min(p.offset for p in unit.fast.values()) >= 304
    assert plan.fast_peak == 768 + 304
    tight = plan_memory(graph, 768 + 303, xip=False, weight_bytes_of=w)  # no longer one stage
    assert len(tight.stages) > 1 and tight.fast_peak <= 768 + 303
    assert check_plan(graph, tight) == []


def test_scratch_is_placed_and_counted():
    graph = residual()
    plan = plan_memory(graph, 2048, scratch_bytes_of=lambda i, rows: 40 * rows if i == 1 else 0, xip=True)
    assert check_plan(graph, plan) == []
    unit = plan.units[0]
    assert unit.scratch[1].size == 640  # 40 B x 16 rows
    assert plan.fast_peak == 768 + 640  # op1's step: x + t0 + t1 + scratch


def test_min_fast_budget_is_tight():
    graph = residual()
    b = min_fast_budget(graph, xip=True)
    plan_memory(graph, b, xip=True)
    with pytest.raises(DoesNotFitError):
        plan_memory(graph, b - 16, xip=True)


def test_slow_budget_is_enforced():
    graph = three_convs()
    plan = plan_memory(graph, 500, xip=True)
    assert plan.slow_peak == 512  # x and t2 (256 B each) both live in slow memory
    assert check_plan(graph, plan_memory(graph, 500, slow_budget=512, xip=True)) == []
    with pytest.raises(DoesNotFitError, match="slow memory"):
        plan_memory(graph, 500, slow_budget=511, xip=True)


def test_alias_groups_are_planned_as_one_buffer():
    g = G()
    x = g.input("x", (1, 8, 4, 4))
    y = g.gemm(g.flatten(g.gap(g.conv(x, 8, k=1))), 4)
    graph = g.graph([y])
    plan = plan_memory(graph, 4096, xip=True)
    assert plan.alias_of == {"t2": "t1"}
    unit = plan.units[0]
    assert "t2" not in unit.fast and "t1" in unit.fast
    assert check_plan(graph, plan) == []


def test_accumulating_gap_is_the_default_and_hand_computed():
    g = G()
    x = g.input("x", (1, 1, 16, 16))  # 16 B per row
    t0 = g.conv(x, 4, k=1)  # 64 B per row, 1024 B
    y = g.gap(t0)  # 4 B, 16 aligned
    graph = g.graph([y])
    with pytest.raises(DoesNotFitError, match="GlobalAveragePool"):
        plan_memory(graph, 300, accumulate_gap=False, xip=True)  # without rule 7 GAP needs its whole input: 1024 + 16 B
    for strategy in ("spec", "tigris"):
        plan = plan_memory(graph, 300, strategy=strategy, xip=True)  # rule 7 is on by default
        assert check_plan(graph, plan) == []
        (unit,) = plan.units
        assert unit.accumulate == [1]
        # tiles cut the GAP's input: x + t0 bands + the persistent output + its int32 sums (int8 graph: 4 B x 4
        # channels) = 16*th + 64*th + 16 + 16 <= 300 -> th = 3
        assert unit.tiles == 6 and unit.tile_rows[1] == {"t0": (3, 6), "x": (3, 6), "t1": (0, 1)}
        assert unit.peak_bytes == unit.timeline_peak == 272
        assert unit.scratch[1].size == 16
        assert plan.spill_bytes == 6 * 4  # the accumulator row is written back after every tile


def test_softmax_over_channels_tiles_but_not_over_rows():
    """Rule 8: a Softmax over the channels of an NHWC tensor (per-pixel class scores) runs on row bands; over H it
    needs whole columns and stays structural. Regression: any Softmax was structural, so a segmentation head's
    smallest budget was the whole untiled model (13312 vs 2891 bytes on the families' softmax_c float model)."""
    from tigris.ir import Op

    g = G()
    x = g.input("x", (1, 2, 8, 8))
    a = g.conv(x, 4)
    graph = g.graph([a])
    for axis, tiles in ((1, True), (-3, True), (3, True), (2, False), (-2, False)):
        sm = Op("sm", "Softmax", (a,), ("y",), {"axis": axis})
        graph.tensors["y"] = graph.tensors[a].__class__("y", graph.tensors[a].shape, "int8", None, "nhwc")
        gg = graph.replace(ops=[*graph.ops, sm], outputs=["y"])
        why = stage_tileable(gg, [0, 1], ["y"])
        assert (why is None) == tiles, (axis, why)


def test_a_pointwise_conv_and_the_gap_it_feeds_tile_as_one_unit():
    """The DP's tiled range [1x1 conv, accumulating GAP] is two report stages (the GAP counts as spatial, as
    stage_tileable counts it). Regression: it was one stage of two spatial ops, which the unit planner refused as
    untileable, so the DP's partition was lost and one moving six times the bytes (or recomputing halos) was planned;
    MobileNetV2-1.0 144 int8 at 32K recomputed 15% of its MACs that way."""
    g = G()
    x = g.input("x", (1, 2, 24, 24))
    t = g.conv(g.conv(x, 4), 4)
    y = g.gap(g.conv(t, 32, k=1))  # 32 channels x 24 px = 768 B per row: the widest tensor by far
    graph = g.graph([y])
    for budget in (600, 900):
        p = plan_memory(graph, budget, xip=True, recompute_weight=1.5)
        assert check_plan(graph, p) == []
        last = p.units[-1]
        assert last.ops == [2, 3] and last.accumulate == [3] and last.tiles > 1
        assert [s.ops for s in p.stages][-2:] == [[2], [3]] and p.stages[-1].chain == p.stages[-2].chain is not None
        assert p.recompute_macs == 0 and p.spill_bytes + p.reload_bytes == 7296
        # (x loaded once, t1 spilled and reloaded once, the GAP's 32 B accumulator row spilled after each of 48 tiles; the plans
        # without the [1x1 conv, GAP] unit spilled and reloaded the 18 KiB 1x1 conv output, or recomputed halos)
