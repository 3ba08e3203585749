"""Stages 3-6: from a normalized graph and a fast-memory budget to a static :class:`MemoryPlan`.

The driver, in the order a reader meets the spec:

1. ``lifetime.buffers``: alias groups become single buffers; constants are excluded (stage 3).
2. ``temporal.greedy_stages``: the spec's greedy forward pass over the stage timeline (stages 4-5).
3. ``chain.form_chains``: consecutive tileable stages that may share a tile loop become one unit (stage 6, chains).
   Steps 2-3 are the ``spec`` strategy; the default ``tigris`` strategy also plans the partition of
   ``search.dp_units`` (unit boundaries that minimize slow-memory traffic plus priced halo recompute) and keeps the
   cheaper of the two plans.
4. Every unit is planned: an untiled stage keeps whole tensors; a stage over budget, or a chain, is tiled along H at
   the largest tile height that fits (``chain.fit_tiles`` on ``spatial.plan_bands``).
5. ``arena.assign_offsets`` places every buffer of every unit in the fast arena (after the weight prefix when not
   XIP) and every tensor crossing units in the slow arena; ``check.check_plan`` can prove the result.

:func:`plan` returns a typed result: :class:`~tigris.plan.types.Fit` with the plan, or
:class:`~tigris.plan.types.NoFit` naming the stage, the op, the bytes it needs and the rule that gave up.
:func:`plan_memory` is the same for callers that want the plan or :class:`~tigris.ir.DoesNotFitError` (exit 1),
whose ``nofit`` is that NoFit.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

from tigris.ir import AnalyzedGraph, DoesNotFitError
from tigris.plan.arena import Block, assign_offsets
from tigris.plan.chain import StageInfo, col_scope, fit_tiles, form_chains, spec_guess, unit_bands, unit_col_bands
from tigris.plan import cols as cols_module
from tigris.plan.cols import band_scratch, grid_source, max_cols, pixel_bytes, width
from tigris.plan.order import reorder, search_order
from tigris.plan.lifetime import Buffers, alias_roots, buffers, home_of, is_alias, lifetimes, tensor_rows, view_groups
from tigris.plan.spatial import (
    MAX_TILES, TiledLayout, fresh_rows, halo, min_tile_h, op_macs, plan_bands, row_bytes, stage_tileable, tiling_axis,
    untileable_reason,
)
from tigris.plan.temporal import (
    Costs, Uses, greedy_stages, grow_stage, range_budget, stage_io, stage_timeline, stage_weight_bytes, uses,
)
from tigris.plan.timeline import sweep, unscheduled_peak
from tigris.plan.types import ALIGN, COL_TILES_DEFAULT, XIP_DEFAULT, ExecUnit, Fit, MemoryPlan, NoFit, Placement, PlanResult, StagePlan, align_up

__all__ = [
    "plan",
    "plan_memory",
    "Fit",
    "NoFit",
    "min_fast_budget",
    "min_sram_only_budget",
    "SramOnly",
    "DEFAULT_RECOMPUTE_WEIGHT",
    "unscheduled_peak",
    "is_alias",
    "MemoryPlan",
    "DoesNotFitError",
]

STRATEGIES = ("spec", "tigris")
OP_ORDERS = ("spec", "search")
# SRAM-only plans (a bounded slow budget, or least_sram): one more DP prices recompute at this fraction of the
# weight, so a plan that keeps a long head unit in the region instead of cutting a boundary competes
SRAM_RECOMPUTE_DISCOUNT = 64
# The price of one recomputed halo MAC in bytes of slow traffic when the caller names none: recompute-aware, so a
# partition whose units roll (spatial rule 9) wins over one that recomputes to save a few boundaries. The generic
# target's latency estimate prices a MAC at 1.3-1.6 bytes on the shared models (0.3-2.4 over the targets);
# tigris.api's latency objective passes its own figure, its traffic objective 0.
DEFAULT_RECOMPUTE_WEIGHT = 1.0
# Below fast_lower_bound no plan fits, so when the spec's partition fails there a plan skips the DP and returns the
# spec's NoFit at once (the DP is most of a probe's cost). Tests switch it off to check the bound independently.
PRUNE_BELOW_BOUND = True


def default_weight_bytes(graph: AnalyzedGraph) -> Callable[[int], int]:
    """Bytes of an op's constant inputs: what a non-XIP unit must hold in its fast prefix."""

    def f(i: int) -> int:
        return sum(int(graph.weights[n].nbytes) for n in dict.fromkeys(graph.ops[i].inputs) if n and n in graph.weights)

    return f


def _no_scratch(i: int, rows: int) -> int:
    return 0


Planned = tuple[list[ExecUnit], list[StagePlan]]


def _no_fit(graph: AnalyzedGraph, stage: int, op: int, need: int, budget: int, cause, detail: str = "") -> NoFit:
    o = graph.ops[op]
    return NoFit(stage, o.name, need, cause, budget, o.op_type, detail)


def _stage_infos(graph: AnalyzedGraph, bufs: Buffers, u: Uses, costs: Costs, ranges: list[range]) -> list[StageInfo]:
    infos = []
    for r in ranges:
        ins, outs = stage_io(bufs, u, r.start, r.stop)
        tl = stage_timeline(graph, bufs, u, costs, r.start, r.stop)
        why = stage_tileable(graph, r, outs, costs.accumulate_gap)
        infos.append(StageInfo(r, ins, outs, tl.peak, tl.peak_step, why, halo(graph, r)))
    return infos


def _untiled_unit(graph: AnalyzedGraph, bufs: Buffers, costs: Costs, info: StageInfo, resident: bool) -> ExecUnit:
    """One whole stage; ``resident`` means the plan is a single unit, so graph inputs/outputs live in fast memory."""
    ops = info.ops
    lives = lifetimes(bufs, ops, info.inputs, info.outputs)
    wb = stage_weight_bytes(costs, ops)
    blocks, home = _blocks(lives)
    temps, piece_rows = _piece_temps(graph, ops, lives)
    scratch_of: dict[int, int] = {}
    for step, i in enumerate(ops):
        out = graph.ops[i].outputs[0] if graph.ops[i].outputs else None
        s = costs.scratch_bytes(i, tensor_rows(graph.tensors[out]) if out in graph.tensors else 1)
        if s:
            scratch_of[i] = align_up(s)
    # the sweep counts a piecewise temporary in its output's lifetime; the op's scratch holds it first
    tl = sweep(lives, len(ops), {ops.index(i): s for i, s in scratch_of.items()}, base=wb)
    for i, t in temps.items():
        scratch_of[i] = scratch_of.get(i, 0) + t
    for step, i in enumerate(ops):
        if scratch_of.get(i):
            blocks.append(Block(("scratch", i), scratch_of[i], step, step))
    offsets, end = assign_offsets(blocks, wb, tl.peak)
    fast = {lt.name: Placement("fast", offsets[home[lt.name]], lt.size) for lt in lives}
    scratch = {i: Placement("fast", offsets[("scratch", i)], s) for i, s in scratch_of.items()}
    unit = ExecUnit(
        stages=[],
        ops=list(ops),
        reload=[] if resident else list(info.inputs),
        spill=[] if resident else list(info.outputs),
        fast=fast,
        scratch=scratch,
        weight_bytes=wb,
        peak_bytes=end,
        timeline_peak=tl.peak,
        in_place={lt.name: lt.inplace_of for lt in lives if lt.inplace_of},
        in_place_rows=piece_rows,
    )
    return unit


def _blocks(lives: list) -> tuple[list[Block], dict[str, str]]:
    """Packing blocks of a unit's lifetimes: an in-place output and the input whose home it takes (lifetime rule 6)
    are one block over both intervals, so they get one offset. Returns the blocks and buffer -> block key."""
    home = home_of(lives)
    groups: dict[str, list] = {}
    for lt in lives:
        groups.setdefault(home[lt.name], []).append(lt)
    blocks = []
    for h, members in groups.items():
        size = max(m.size for m in members)
        birth, death = min(m.birth for m in members), max(m.death for m in members)
        shrink = [m.birth for m in members if m.piece_rows]
        steps = sorted((m.birth, m.size) for m in members)
        if not shrink and len(steps) > 1 and any(b[1] < a[1] for a, b in zip(steps[1:], steps)):
            # a join in place (lifetime rule 8): as large as the member alive at each step (sizes only grow)
            grow = []
            for t, n in steps:
                if grow and grow[-1][0] == t:
                    grow[-1] = (t, max(n, grow[-1][1]))
                elif not grow or n > grow[-1][1]:
                    grow.append((t, max(n, grow[-1][1]) if grow else n))
            blocks.append(Block(h, size, birth, death, grow=tuple(grow)))
            continue
        if shrink:
            # a piecewise pair: the input's bytes beyond the output's are free once the op that shrank it ran
            last = max(shrink)
            head = max(m.size for m in members if m.birth >= last or m.death > last)
            if head < size and last < death:
                blocks.append(Block(h, head, birth, death, tail=size - head, tail_death=last))
                continue
        blocks.append(Block(h, size, birth, death))
    return blocks, home


def _drop_idle_pieces(graph: AnalyzedGraph, bufs: Buffers, costs: Costs, infos: list[StageInfo], units: list[ExecUnit],
                      stages: list[StagePlan], redo: list, single: bool) -> None:
    """Piecewise in-place pairs only where they lower the plan's fast arena: a unit that has some is built again
    without them, and that unit is kept when its peak stays within the arena of the plan as built (so the plan's
    peak does not change). A plan that gains nothing from them then runs every window op as usual (no temporary, no
    pieces), and firmware whose plans have none may leave the code out (-DTGRS_NO_DW_PIECES)."""
    if not any(u.in_place_rows for u in units):
        return
    arena = max(u.peak_bytes for u in units)
    plain = _without_pieces(bufs)
    first_stage = 0
    for k, (group, inputs, output, lay, cid) in enumerate(redo):
        at, first_stage = first_stage, first_stage + len(group)
        unit = units[k]
        if not unit.in_place_rows:
            continue
        first, last = infos[group[0]], infos[group[-1]]
        if lay is None:
            alt = _untiled_unit(graph, plain, costs, first, resident=single)
            alt_lay = None
        else:
            ops = range(first.ops.start, last.ops.stop)
            alt_lay = plan_bands(graph, plain, ops, output, lay.tile_h, stage_weight_bytes(costs, ops),
                                 costs.scratch_bytes, False, costs.accumulate_gap, bool(lay.rolling),
                                 first_h=lay.first_h or None, recompute=lay.recompute)
            if alt_lay is None or alt_lay.tile_rows != lay.tile_rows or alt_lay.rolling != lay.rolling:
                continue
            alt = _tiled_unit(graph, plain, costs, ops, inputs, output, alt_lay)
        if alt.peak_bytes > arena:
            continue
        alt.stages = list(unit.stages)
        units[k] = alt
        for j, s in enumerate(group):
            stages[at + j] = _stage_plan(graph, costs, s, infos[s], alt, alt_lay, cid)


def _without_pieces(bufs: Buffers) -> Buffers:
    """``bufs`` with rule 6's piecewise candidates removed (element-wise ones stay)."""
    if not bufs.pieces:
        return bufs
    inplace = tuple(tuple(x for x in c if x not in p) for c, p in zip(bufs.inplace, bufs.pieces))
    return replace(bufs, inplace=inplace, pieces=tuple({} for _ in bufs.pieces))


def _band_saving(graph: AnalyzedGraph, i: int, x: str, lay: TiledLayout) -> int:
    """Bytes a piecewise pair of op i over x saves in the bands of ``lay`` (0 when plan_bands would not pair them):
    the output's band less the temporary the bands need."""
    from tigris.ops import kind_for

    op = graph.ops[i]
    y, k = op.outputs[0], kind_for(graph.ops[i].op_type)
    bx, by = lay.band_bytes.get(x, 0), lay.band_bytes.get(y, 0)
    irb, orb = row_bytes(graph, x), row_bytes(graph, y)
    need = max([1] + [k.piece_rows(op, t[x], t[y], irb, orb) for t in lay.tile_rows
                      if x in t and y in t and t[y][1] > t[y][0]])
    temp = align_up(need * orb)
    return by - temp if by <= bx and temp < by else 0


def _piece_extra(bufs: Buffers, i: int, x: str) -> int:
    """Lifetime rule 6: the bytes op i still needs when its output takes x's home (0 element by element; the input's
    tail and the temporary piecewise, whole tensors)."""
    return bufs.pieces[i][x][1] if bufs.pieces and x in bufs.pieces[i] else 0


def _piece_temps(graph: AnalyzedGraph, ops, lives) -> tuple[dict[int, int], dict[str, int]]:
    """Piecewise in-place outputs (lifetime rule 6): the temporary bytes each adds to its op's scratch (op index ->
    bytes), and output -> temporary rows (``ExecUnit.in_place_rows``)."""
    temps: dict[int, int] = {}
    rows: dict[str, int] = {}
    for lt in lives:
        if lt.piece_rows:
            i = ops[lt.birth]
            temps[i] = align_up(lt.piece_rows * row_bytes(graph, lt.name))
            rows[lt.name] = lt.piece_rows
    return temps, rows


def _tiled_unit(
    graph: AnalyzedGraph, bufs: Buffers, costs: Costs, ops: range, inputs: list[str], output: str, lay: TiledLayout
) -> ExecUnit:
    wb = stage_weight_bytes(costs, ops)
    blocks, home = _blocks(lay.lives)
    temps, piece_rows = _piece_temps(graph, list(ops), lay.lives)
    scratch_of = {i: align_up(s) + temps.get(i, 0) for i, s in lay.scratch_of.items()}
    for step, i in enumerate(ops):
        if scratch_of.get(i):
            first = 0 if i in lay.accumulate else step  # an accumulator's scratch survives across tiles
            blocks.append(Block(("scratch", i), scratch_of[i], first, step))
    for name, size in lay.carry.items():  # line buffers of halo reuse (spatial rule 9) live from tile to tile
        blocks.append(Block(("carry", name), size, 0, len(ops) - 1))
    offsets, end = assign_offsets(blocks, wb, lay.peak)
    fast = {lt.name: Placement("fast", offsets[home[lt.name]], lt.size) for lt in lay.lives}
    scratch = {i: Placement("fast", offsets[("scratch", i)], s) for i, s in scratch_of.items() if s}
    carry = {n: Placement("fast", offsets[("carry", n)], size) for n, size in lay.carry.items()}
    return ExecUnit(
        stages=[],
        ops=list(ops),
        reload=list(inputs),
        spill=[output],
        fast=fast,
        scratch=scratch,
        weight_bytes=wb,
        tiles=len(lay.tile_rows),
        tile_rows=lay.tile_rows,
        tile_cols=lay.tile_cols,
        peak_bytes=end,
        timeline_peak=lay.peak,
        accumulate=list(lay.accumulate),
        in_place={lt.name: lt.inplace_of for lt in lay.lives if lt.inplace_of},
        in_place_rows=piece_rows,
        rolling=sorted(lay.rolling),
        carry=carry,
        recompute=sorted(lay.recompute),
    )


def _plan_units(
    graph: AnalyzedGraph,
    bufs: Buffers,
    u: Uses,
    costs: Costs,
    infos: list[StageInfo],
    budget: int,
    groups: list[list[int]],
    tiled: list[bool],
) -> Planned | NoFit:
    """Plan every unit: ``groups`` are the stage indices of each unit, ``tiled`` whether it runs tile by tile."""
    single = len(groups) == 1 and not tiled[0]
    units: list[ExecUnit] = []
    stages: list[StagePlan] = []
    redo: list = []  # per unit: how to build it again without piecewise pairs
    chain_id = 0
    for group, tile in zip(groups, tiled):
        first, last = infos[group[0]], infos[group[-1]]
        ops = range(first.ops.start, last.ops.stop)
        if not tile:
            unit = _untiled_unit(graph, bufs, costs, first, resident=single)
            unit.stages = [group[0]]
            units.append(unit)
            redo.append((group, None, None, None, None))
            stages.append(_stage_plan(graph, costs, group[0], first, unit, None, None))
            continue
        if len(group) == 1 and first.untileable:
            i = first.ops[min(first.peak_step, len(first.ops) - 1)]
            return _no_fit(graph, group[0], i, first.peak, budget, "untileable", first.untileable)
        inside = {n for s in group for n in infos[s].outputs}
        inputs = list(dict.fromkeys(n for s in group for n in infos[s].inputs if n not in inside))
        output = last.outputs[0]
        cap = range_budget(costs, budget, ops.start, ops.stop)
        guess = spec_guess(cap, first, graph, bufs, costs.accumulate_gap) if len(group) == 1 else None
        lay = fit_tiles(graph, bufs, costs, ops, output, cap, guess)
        if lay is None:
            rows = min_tile_h(tiling_axis(graph, bufs, ops, output, costs.accumulate_gap)[1])
            one = unit_bands(graph, bufs, costs, ops, output, rows, False)
            need = one.peak if one else first.peak
            step = one.peak_step if one else first.peak_step
            detail = "" if rows == 1 else f"{rows} output rows (at most {MAX_TILES} tiles)"
            if costs.col_tiles and col_scope(graph, bufs, costs, ops, output) is None:
                src = grid_source(graph, bufs, ops, output, costs.accumulate_gap)
                n = max_cols(graph, src, rows)
                grid = unit_col_bands(graph, bufs, costs, ops, output, rows, n)
                if grid is not None and grid.peak < need:  # the narrowest column tiles did not fit either
                    need, step = grid.peak, grid.peak_step
                    per = -(-width(graph, src) // n)
                    detail = f"{'one output row' if rows == 1 else f'{rows} output rows'} of {per} " \
                        f"column{'s' if per > 1 else ''}"
            return _no_fit(graph, group[0], ops[step], need, cap, "one_row", detail)
        unit = _tiled_unit(graph, bufs, costs, ops, inputs, output, lay)
        unit.stages = list(group)
        units.append(unit)
        cid = None
        if len(group) > 1:
            cid, chain_id = chain_id, chain_id + 1
        redo.append((group, inputs, output, lay, cid))
        for s in group:
            stages.append(_stage_plan(graph, costs, s, infos[s], unit, lay, cid))
    _drop_idle_pieces(graph, bufs, costs, infos, units, stages, redo, single)
    for unit in units:
        cap = budget if single else range_budget(costs, budget, min(unit.ops), max(unit.ops) + 1)
        if unit.peak_bytes > cap:
            info = infos[unit.stages[0]]
            return _no_fit(graph, unit.stages[0], info.ops[0], unit.peak_bytes, cap, "packing")
    return units, stages


def _spec_partition(
    graph: AnalyzedGraph, bufs: Buffers, u: Uses, costs: Costs, budget: int, cut_budget: int
) -> tuple[list[StageInfo], list[list[int]], list[bool]]:
    """The spec: greedy stages, then chains of linkable tileable stages; a lone stage is tiled when over budget."""
    infos = _stage_infos(graph, bufs, u, costs, greedy_stages(graph, bufs, u, costs, cut_budget))
    groups = form_chains(graph, bufs, u, costs, infos, budget)
    tiled = [len(g) > 1 or infos[g[0]].peak > budget for g in groups]
    return infos, groups, tiled


def _dp_partition(
    graph: AnalyzedGraph, bufs: Buffers, u: Uses, costs: Costs, budget: int, cut_budget: int
) -> tuple[list[StageInfo], list[list[int]], list[bool]] | None:
    from tigris.plan.search import dp_units, split_stages

    chosen = dp_units(graph, bufs, u, costs, cut_budget)
    if chosen is None:
        return None
    ranges: list[range] = []
    groups: list[list[int]] = []
    tiled: list[bool] = []
    for r, tile in chosen:
        parts = split_stages(graph, r, tile, costs.accumulate_gap)
        groups.append(list(range(len(ranges), len(ranges) + len(parts))))
        ranges += parts
        tiled.append(tile)
    return _stage_infos(graph, bufs, u, costs, ranges), groups, tiled


def _stage_plan(
    graph: AnalyzedGraph, costs: Costs, index: int, info: StageInfo, unit: ExecUnit, lay: TiledLayout | None,
    chain: int | None,
) -> StagePlan:
    sp = StagePlan(
        index=index,
        ops=list(info.ops),
        inputs=list(info.inputs),
        outputs=list(info.outputs),
        peak_bytes=unit.peak_bytes,
        weight_bytes=sum(costs.weight_bytes(i) for i in info.ops),
        halo=info.halo,
    )
    if lay is not None:
        steps = [unit.ops.index(i) for i in info.ops]
        lo, hi = steps[0], steps[-1] + 1
        sub = [lt for lt in lay.lives + lay.carry_lives if lt.birth < hi and lt.death >= lo]
        usage = sweep(sub, len(unit.ops), lay.scratch, base=unit.weight_bytes).usage
        sp.peak_bytes = max(usage[lo:hi])
        out = graph.ops[info.ops[-1]].outputs[0]
        sp.tiled = True
        sp.tiles = len(lay.tile_rows)
        sp.tile_h = max(b - a for a, b in (t[out] for t in lay.tile_rows))
        sp.chain = chain
        sp.recompute_macs = _recompute(graph, info.ops, lay)
    return sp


def _recompute(graph: AnalyzedGraph, ops: range, lay: TiledLayout) -> int:
    if lay.tile_cols:
        return sum(lay.extra_of.get(i, 0) for i in ops)
    extra = 0
    for i in ops:
        out = graph.ops[i].outputs[0]
        full = tensor_rows(graph.tensors[out])
        if lay.computed_rows.get(out, 0) > full:
            extra += op_macs(graph, graph.ops[i], lay.computed_rows[out] - full)
    return extra


# Streaming overwrite (tigris.plan.overwrite): a unit's spilled output may take the slow home of an input dying in
# it when the tile order proves it safe. Off: every slow home its own bytes (the baseline of the SRAM-only bench).
OVERWRITE = True


def _slow_arena(
    graph: AnalyzedGraph, bufs: Buffers, units: list[ExecUnit], one_region: bool = False
) -> tuple[dict[str, Placement], int, dict[int, dict[str, str]]]:
    """Slow placements of every tensor a unit reloads or spills; lifetimes are in units (inclusive). The third
    value maps a unit index to the outputs it writes over a dying input's home (``ExecUnit.overwrite``): those are
    placed at the input's offset when that makes the arena smaller, and the arena is packed as before otherwise.

    ``one_region``: the slow arena is the fast arena's memory, so every home lies at or above the ``peak_bytes`` of
    each unit it is live across (``tigris.plan.overwrite.pinned_offsets`` with those floors, with and without the
    overwrites, the smaller kept)."""
    birth: dict[str, int] = {}
    death: dict[str, int] = {}
    for k, unit in enumerate(units):
        for n in unit.spill:
            birth.setdefault(n, k)
            death[n] = max(death.get(n, k), k)
        for n in unit.reload:
            birth.setdefault(n, 0 if n in bufs.inputs else k)
            death[n] = max(death.get(n, k), k)
    for n in bufs.outputs:
        if n in birth:
            death[n] = len(units)
    for n in bufs.inputs:
        if n in birth:
            birth[n] = 0
    blocks = [Block(n, bufs.size(n), birth[n], death[n]) for n in birth]
    offsets, end = assign_offsets(blocks, 0)
    pairs = _overwrites(graph, bufs, units, birth, death) if OVERWRITE else {}
    candidates = pairs
    if pairs:
        from tigris.plan.overwrite import pinned_offsets

        partner = {y: x for over in pairs.values() for y, x in over.items()}
        p_offsets, p_end, used = pinned_offsets(blocks, partner)
        if p_end < end:
            offsets, end = p_offsets, p_end
            pairs = {k: {y: x for y, x in over.items() if y in used} for k, over in pairs.items()}
            pairs = {k: over for k, over in pairs.items() if over}
        else:
            pairs = {}
    if one_region and blocks:
        # The arena above every unit's buffers (as large as the two arenas together), or homes packed down onto
        # the floors the units leave free, whichever ends lower.
        from tigris.plan.overwrite import pinned_offsets

        floors = [unit.peak_bytes for unit in units]
        top = align_up(max(floors))
        tries = [(top + end, {n: top + o for n, o in offsets.items()}, pairs)]
        # with offsets proven pair by pair, also the pairs an output may overwrite only from below its input's
        # offset (a unit that reads its input's rows again in the next tile)
        below = _overwrites(graph, bufs, units, birth, death, shifted=True) if OVERWRITE else {}
        unit_of = {y: k for use in (candidates, below) for k, over in use.items() for y in over}

        def safe(y: str, x: str, y_off: int, x_off: int) -> bool:  # the overwrite at other offsets than one
            return _overwrite_safe(graph, units[unit_of[y]], x, y, x_off, y_off)

        tries_with = [(candidates, None, False), (candidates, safe, False)] if candidates else []
        tries_with += [(below, safe, True)] if below else []
        for use, check, shifts in tries_with + [({}, None, False)]:
            partner = {y: x for over in use.values() for y, x in over.items()}
            r_offsets, r_end, used = pinned_offsets(blocks, partner, floors, check, shifts)
            kept = {k: {y: x for y, x in over.items() if y in used} for k, over in use.items()}
            tries.append((r_end, r_offsets, {k: over for k, over in kept.items() if over}))
        end, offsets, pairs = min(tries, key=lambda r: r[0])
    places = {n: Placement("slow", offsets[n], bufs.size(n)) for n in birth}
    return places, (end if blocks else 0), pairs


def _overwrites(
    graph: AnalyzedGraph, bufs: Buffers, units: list[ExecUnit], birth: dict[str, int], death: dict[str, int],
    shifted: bool = False,
) -> dict[int, dict[str, str]]:
    """Per unit, the spilled outputs born in it that may share one slow offset with a reloaded input dying in it
    (``tigris.plan.overwrite``): at most one input per output and one output per input, in list order.
    ``shifted``: also those that may share bytes with it from up to ``SHIFT_ROWS`` of their rows below its
    offset (placed only where ``pinned_offsets(safe=)`` proves the offsets)."""
    pairs: dict[int, dict[str, str]] = {}
    for k, unit in enumerate(units):
        if unit.tile_cols:  # a column band's bytes are strided in its home: not streamed (first version)
            continue
        taken: set[str] = set()
        for y in unit.spill:
            if birth.get(y) != k or y in bufs.inputs:
                continue
            for x in unit.reload:
                if x in taken or x == y or death.get(x) != k or x in bufs.outputs:
                    continue
                shifts = range(0, SHIFT_ROWS * row_bytes(graph, y) + 1, 16) if shifted and unit.tile_rows \
                    else (0,)
                if any(_overwrite_safe(graph, unit, x, y, d, 0) for d in shifts):
                    pairs.setdefault(k, {})[y] = x
                    taken.add(x)
                    break
    return pairs


# How far below its input's offset (in output rows) the one-region packing may start an overwriting output.
SHIFT_ROWS = 4


def _overwrite_safe(graph: AnalyzedGraph, unit: ExecUnit, x: str, y: str, x_off: int, y_off: int) -> bool:
    """Whether writing ``y``'s bands at ``y_off`` never touches bytes of ``x`` (at ``x_off``) a later tile reads."""
    from tigris.plan.overwrite import overwrite_ok, read_bands

    if not unit.tile_rows:
        return True  # one pass: every reload precedes every spill
    reads = read_bands([rows[x] for rows in unit.tile_rows], bool(unit.rolling) and not unit.accumulate)
    writes = [rows[y] for rows in unit.tile_rows]
    return overwrite_ok(reads, writes, x_off, row_bytes(graph, x), y_off, row_bytes(graph, y)) is None


def _traffic(graph: AnalyzedGraph, bufs: Buffers, units: list[ExecUnit]) -> tuple[int, int]:
    """(spill, reload) bytes per inference: whole tensors for untiled units, every band of every tile when tiled."""
    spill = reload = 0
    for unit in units:
        if not unit.tile_rows:
            spill += sum(bufs.nbytes[n] for n in unit.spill)
            reload += sum(bufs.nbytes[n] for n in unit.reload)
            continue
        if unit.tile_cols:  # a column-split unit moves the pixels of its bands (tigris.plan.cols rule 4)
            for rows, cols in zip(unit.tile_rows, unit.tile_cols):
                px = lambda n: (rows[n][1] - rows[n][0]) * (cols[n][1] - cols[n][0]) * pixel_bytes(graph, n)  # noqa
                spill += sum(px(n) for n in unit.spill)
                reload += sum(px(n) for n in unit.reload)
            continue
        prev: dict[str, tuple[int, int]] = {}
        for rows in unit.tile_rows:
            spill += sum((rows[n][1] - rows[n][0]) * row_bytes(graph, n) for n in unit.spill)
            for n in unit.reload:  # a carrying input (spatial rule 9) loads only its fresh rows
                lo, hi = fresh_rows(prev.get(n), rows[n]) if n in unit.rolling else rows[n]
                reload += (hi - lo) * row_bytes(graph, n)
            prev = rows
    return spill, reload


def _planned(graph, bufs, u, costs, infos, budget, groups, tiled, memo: dict) -> Planned | NoFit:
    """``_plan_units``, once per distinct partition: the spec's and the DP's partitions are often the same, and
    planning the units (arena packing above all) is the costly part on long graphs."""
    key = (tuple((i.ops.start, i.ops.stop) for i in infos), tuple(tuple(g) for g in groups), tuple(tiled))
    if key not in memo:
        memo[key] = _plan_units(graph, bufs, u, costs, infos, budget, groups, tiled)
    return memo[key]


def _partition_with(graph, bufs, u, costs, budget, how, memo: dict | None = None) -> Planned | NoFit | None:
    """Partition with ``how`` and plan the units (None: ``how`` has no partition). The cuts are judged on the
    timeline peak; arena packing can need a little more on branched graphs, so when a unit overshoots, cut again with
    a budget lowered by the overshoot (the real budget still judges every unit)."""
    memo = {} if memo is None else memo
    cut_budget = budget
    last: NoFit | None = None
    for _attempt in range(8):
        parts = how(graph, bufs, u, costs, budget, cut_budget)
        if parts is None:
            break
        infos, groups, tiled = parts
        res = _planned(graph, bufs, u, costs, infos, budget, groups, tiled, memo)
        if not isinstance(res, NoFit):
            return res
        over = res.need_bytes - res.budget  # a unit's own budget (Costs.caps) may be below ``budget``
        if res.cause != "packing" or over <= 0:
            return res
        last = res
        cut_budget -= align_up(over)
    return last


def _cost_of(graph, bufs, costs, planned) -> float:
    """Slow traffic of a planned partition, plus its halo recompute priced at ``costs.recompute_weight``."""
    units, stages = planned
    return sum(_traffic(graph, bufs, units)) + costs.recompute_weight * sum(s.recompute_macs for s in stages)


def _sram_of(graph, bufs, planned, one_region: bool = False) -> int:
    """Fast peak plus slow peak of a planned partition: the SRAM it needs when both arenas are SRAM (one region:
    the larger of the two, the slow homes packed above each unit's buffers)."""
    units, _ = planned
    fast, slow = max(unit.peak_bytes for unit in units), _slow_arena(graph, bufs, units, one_region)[1]
    return max(fast, slow) if one_region else fast + slow


def _partition(
    graph, bufs, u, costs, budget, strategy, any_fit: bool = False, least_sram: bool = False,
    slow_budget: int | None = None, one_region: bool = False,
) -> Planned | NoFit:
    """The partition of ``strategy``; for ``tigris`` the cheaper of both strategies' plans, or (``any_fit``, when
    only feasibility matters) the spec's plan as soon as it fits, or (``least_sram``) the one needing less fast plus
    slow arena. With a ``slow_budget``, only plans within it compete while any is (so a slow budget the cheaper plan
    exceeds takes the other plan instead of failing). A NoFit is the spec strategy's."""
    memo: dict = {}
    spec = _partition_with(graph, bufs, u, costs, budget, _spec_partition, memo)
    assert spec is not None  # the greedy partition always exists
    if strategy == "spec" or (any_fit and not isinstance(spec, NoFit)):
        return spec
    if PRUNE_BELOW_BOUND and isinstance(spec, NoFit) and (budget < _lower_bound(graph, bufs, u, costs)
                                                          or _over_in_every_unit(graph, bufs, u, costs, spec, budget)):
        return spec  # no plan fits below the per-op bound, so the DP's partition cannot fit either
    dp = _partition_with(graph, bufs, u, costs, budget, _dp_partition, memo)
    cands = [p for p in (dp, spec) if p is not None and not isinstance(p, NoFit)]
    if not cands:
        return spec
    if costs.recompute_weight and not isinstance(spec, NoFit):
        cands = _within_spec_traffic(graph, bufs, u, costs, budget, spec, cands, memo)
    def within(p) -> bool:
        return _slow_arena(graph, bufs, p[0], one_region)[1] <= slow_budget

    if costs.recompute_expansions and costs.recompute_weight and (
            least_sram or (slow_budget is not None and not any(within(p) for p in cands))):
        # SRAM-only: a boundary costs slow bytes the region may not have, which priced recompute does not see; the
        # DP with recompute priced at 1/SRAM_RECOMPUTE_DISCOUNT of its weight cuts fewer boundaries (a long head
        # unit recomputing its expansions' overlap rows, spatial rule 10) and competes too
        cheap = _partition_with(graph, bufs, u, replace(costs, recompute_weight=costs.recompute_weight /
                                                        SRAM_RECOMPUTE_DISCOUNT), budget, _dp_partition, memo)
        if cheap is not None and not isinstance(cheap, NoFit):
            cands.append(cheap)
    if slow_budget is not None:
        cands = [p for p in cands if within(p)] or cands
    if least_sram:
        return min(cands, key=lambda p: (_sram_of(graph, bufs, p, one_region), _cost_of(graph, bufs, costs, p)))
    return min(cands, key=lambda p: _cost_of(graph, bufs, costs, p))


def _within_spec_traffic(graph, bufs, u, costs, budget, spec: Planned, cands: list[Planned], memo: dict) -> list:
    """The candidates moving no more bytes through slow memory than the spec's partition: pricing recompute trades
    traffic for it only up to the baseline's traffic. When the priced DP's partition moves more, the traffic-only
    DP's (the least traffic the search finds) competes in its place."""
    cap = sum(_traffic(graph, bufs, spec[0]))
    ok = [p for p in cands if sum(_traffic(graph, bufs, p[0])) <= cap]
    if len(ok) < len(cands):
        plain = _partition_with(graph, bufs, u, replace(costs, recompute_weight=0.0), budget, _dp_partition, memo)
        if plain is not None and not isinstance(plain, NoFit) and sum(_traffic(graph, bufs, plain[0])) <= cap:
            ok.append(plain)
    return ok


def _costs(
    graph, xip, weight_bytes_of, scratch_bytes_of, accumulate_gap, recompute_weight, layouts, halo_reuse=False,
    col_tiles=False, force_cols=0, recompute_expansions=False,
) -> Costs:
    return Costs(
        weight_bytes_of or default_weight_bytes(graph),
        scratch_bytes_of or _no_scratch,
        xip,
        accumulate_gap,
        recompute_weight,
        halo_reuse,
        col_tiles,
        force_cols,
        recompute_expansions=recompute_expansions,
        layouts={} if layouts is None else layouts,
    )


def fast_lower_bound(graph: AnalyzedGraph, **kw) -> int:
    """A lower bound on the fast budget of any plan: the largest of :func:`op_lower_bounds` (the same keywords).

    On the shared models the bound is the minimum itself, so :func:`min_fast_budget` starts by trying it;
    tests/plan/test_lower_bound.py checks that nothing fits below it.
    """
    if not graph.ops:
        return 0
    return min(max((0, *b)) for b in _mode_bounds(graph, **kw))


def op_lower_bounds(graph: AnalyzedGraph, **kw) -> list[int]:
    """Per op, a lower bound on the fast budget of any plan holding it: what the op needs as a unit of its own,
    untiled or (when it tiles) at its smallest tile height; 0 for a tileable op with several outputs. The keywords
    are :func:`plan`'s (those a bound depends on are :func:`_bound_modes`'; the others are ignored).

    Every unit holding an op needs at least that much at the op's step: an untiled unit holds the op's whole input
    and output, weights and scratch; a tiled unit computes at least the op's smallest tile height of its rows in
    some tile (at most MAX_TILES tiles cover them), so it holds that tile's bands, the op's weights and its scratch.
    The one-op unit is measured on sampled tiles, which never gives more than every tile. A tileable op with several
    outputs gives no bound (inside a tiled unit its outputs are bands, not the untiled whole). ``tigris.api`` reads
    the per-op figures to find the ops whose weights alone keep them from fitting (weight groups).
    """
    if not graph.ops:
        return []
    # a plan runs with views or without (lifetime rule 7): the op's bound is the smaller of the two
    return [min(b) for b in zip(*_mode_bounds(graph, **kw))]


def _bound_modes(
    graph: AnalyzedGraph,
    xip: bool = XIP_DEFAULT,
    weight_bytes_of: Callable[[int], int] | None = None,
    scratch_bytes_of: Callable[[int, int], int] | None = None,
    accumulate_gap: bool = True,
    layouts: dict | None = None,
    col_tiles: bool = COL_TILES_DEFAULT,
    strategy: str = "tigris",
    **_ignored,
) -> list[tuple[Buffers, Uses, Costs]]:
    """The planner's structures of the plans without views, and with them when some op can run as a view: what
    :func:`fast_lower_bound`, :func:`op_lower_bounds` and :func:`ops_over` bound (each mode's memo the one its
    plans use). The one list of the :func:`plan` keywords a bound depends on; the others are ignored."""
    out = []
    for views in (False, True):
        bufs = buffers(graph, views=views)
        if views and not (VIEWS and bufs.view_ops):
            break
        memo = layouts if not views or layouts is None else layouts.setdefault(("views",), {})
        costs = _costs(graph, xip, weight_bytes_of, scratch_bytes_of, accumulate_gap, 0.0, memo,
                       col_tiles=col_tiles and strategy != "spec")
        out.append((bufs, uses(bufs), costs))
    return out


def _mode_bounds(graph: AnalyzedGraph, **kw) -> list[tuple[int, ...]]:
    """:func:`op_lower_bounds` of each mode of :func:`_bound_modes` (same keywords)."""
    return [_op_bounds(graph, bufs, u, costs) for bufs, u, costs in _bound_modes(graph, **kw)]


def _lower_bound(graph: AnalyzedGraph, bufs: Buffers, u: Uses, costs: Costs) -> int:
    """:func:`fast_lower_bound` on the planner's own structures."""
    return max((0, *_op_bounds(graph, bufs, u, costs)))


def _op_bounds_key(graph: AnalyzedGraph, costs: Costs) -> tuple:
    """The memo key of :func:`_op_bounds`: the per-op weight bytes the figures depend on (the scratch sizes and
    ``accumulate_gap`` are fixed for one memo, see ``Costs.layouts``)."""
    return ("lower_bound", costs.accumulate_gap, costs.col_tiles and (True, cols_module.COLS_ACCUM),
            tuple(costs.weight_bytes(i) for i in range(len(graph.ops))))


def _op_bounds(graph: AnalyzedGraph, bufs: Buffers, u: Uses, costs: Costs) -> tuple[int, ...]:
    """:func:`op_lower_bounds`, memoized in ``costs.layouts`` under the per-op weight bytes it depends on (the
    scratch sizes and ``accumulate_gap`` are fixed for one memo, see ``Costs.layouts``)."""
    key = _op_bounds_key(graph, costs)
    if key in costs.layouts:
        return costs.layouts[key]
    costs.layouts[key] = tuple(_op_bound(graph, bufs, u, costs, i) for i in range(len(graph.ops)))
    return costs.layouts[key]


def _over_in_every_unit(graph: AnalyzedGraph, bufs: Buffers, u: Uses, costs: Costs, spec: NoFit, budget: int) -> bool:
    """Whether the op the spec's partition failed at is over ``budget`` in every unit that can hold it
    (``_op_bound`` with ``pairs``): then no partition fits, the DP's included. Only that op is asked: it is the one
    most likely over, and one op's bound costs little beside the DP it spares."""
    if spec.op is None:
        return False
    i = next((k for k, op in enumerate(graph.ops) if op.name == spec.op), None)
    return i is not None and _op_bound(graph, bufs, u, costs, i, over=budget, pairs=True) > budget


def _pair_cost(bufs: Buffers, costs: Costs, i: int, x: str) -> int | None:
    """What a unit holds beyond op ``i``'s own bytes when the output of ``i`` takes the home of its input ``x``
    (lifetime rule 6): the weight prefix of an op writing ``x``, since the output may take that home only in a unit
    that produces ``x`` (unless ``i`` joins in place or overwrites a reload, ``Buffers.prefix``/``over_reload``), and
    a unit's prefix holds every op's weights. Floored to 16 bytes: the prefix is the aligned sum, at least op ``i``'s
    aligned weights plus that much. None when no op writes ``x`` (no unit shares it)."""
    if i in bufs.prefix or i in bufs.over_reload or x in bufs.writes[i]:
        return 0
    writers = [k for k, w in enumerate(bufs.writes) if x in w]
    if not writers:
        return None
    return 0 if costs.xip else min(costs.weight_bytes(k) for k in writers) // ALIGN * ALIGN


def _op_bound(graph: AnalyzedGraph, bufs: Buffers, u: Uses, costs: Costs, i: int, over: int | None = None,
              pairs: bool = False) -> int:
    """The bound of op ``i`` (:func:`op_lower_bounds`). With ``over``: a figure at most ``over`` as soon as the
    bound is proved at most ``over`` (the bound is the least of the untiled need, the one-row band and the
    one-pixel grid, so any of them at most ``over`` proves it), the exact bound otherwise. ``pairs``: a bound of
    the units holding ``i`` that also counts what an in-place pair costs (``_pair_cost``: the writer's weights the
    unit must hold too), at least the op's own bound; the planner's prune reads it (``_over_in_every_unit``), while
    the per-op figures the searches and weight groups read stay :func:`op_lower_bounds`'."""
    op = graph.ops[i]
    _, need, _ = next(grow_stage(graph, bufs, u, costs, i))
    # alone, the op reads its inputs from outside, so none is overwritten in place (lifetime rule 6); in a unit
    # that also produces one, the output may take that input's home: the bound counts the pair once
    # per input the op may overwrite in place, what that pair costs beyond the op (None: no unit shares it); the
    # pair bound never counts a saving below nothing
    extra = {x: _pair_cost(bufs, costs, i, x) if pairs else 0 for x in bufs.inplace[i]} if bufs.inplace else {}
    floor = [0] if pairs else []
    shared = max(floor + [bufs.size(x) - _piece_extra(bufs, i, x) - c for x, c in extra.items() if c is not None],
                 default=0)
    need -= shared
    if over is not None and need <= over:
        return need
    if untileable_reason(graph, op, costs.accumulate_gap) is None:
        _, outs = stage_io(bufs, u, i, i + 1)
        if len(outs) != 1:
            return 0  # a tileable op with several outputs may sit inside a tiled unit: no bound
        _, h = tiling_axis(graph, bufs, range(i, i + 1), outs[0], costs.accumulate_gap)
        lay = unit_bands(graph, bufs, costs, range(i, i + 1), outs[0], min_tile_h(h), True)
        if lay is None:
            return 0
        # a piecewise pair saves the output's band less its temporary (as plan_bands would pair them)
        saving = lambda x: _band_saving(graph, i, x, lay) if bufs.pieces and x in bufs.pieces[i] \
            else lay.band_bytes.get(x, 0)  # noqa: E731
        band = max(floor + [saving(x) - c for x, c in extra.items() if c is not None], default=0)
        need = min(need, lay.peak - band)
        if over is not None and need <= over:
            return need
        if costs.col_tiles:  # the op alone at one row by one output column per tile (tigris.plan.cols)
            th = min_tile_h(h)
            one = range(i, i + 1)
            grid = unit_col_bands(graph, bufs, costs, one, outs[0], th,
                                  width(graph, grid_source(graph, bufs, one, outs[0], costs.accumulate_gap)), True) \
                if col_scope(graph, bufs, costs, one, outs[0]) is None else None
            if grid is not None:
                need = min(need, grid.peak)
    return need


def ops_over(graph: AnalyzedGraph, budget: int, **kw) -> Callable[[int], int | None]:
    """Per op, on demand: its :func:`op_lower_bounds` figure (the same keywords) when that exceeds ``budget``, else
    None (each op computed once). The same answer as the full list, for less work: an op's figure is the least over the plans
    without and with views of the least of its untiled need, one-row band and one-pixel grid, so the first of them
    at most ``budget`` proves it is not over and the costlier ones are not built, and the ops a caller never asks
    about cost nothing (``tigris.api`` asks this of every split graph it grows)."""
    # each mode with its full list of figures when that was built
    modes = [(bufs, u, costs, costs.layouts.get(_op_bounds_key(graph, costs)))
             for bufs, u, costs in _bound_modes(graph, **kw)]
    found: dict[int, int | None] = {}

    def over(i: int) -> int | None:
        if i not in found:
            least = None
            for bufs, u, costs, full in modes:
                b = full[i] if full is not None else _op_bound(graph, bufs, u, costs, i, over=budget)
                if b <= budget:
                    least = None
                    break
                least = b if least is None else min(least, b)
            found[i] = least
        return found[i]

    return over


def plan(
    graph: AnalyzedGraph,
    fast_budget: int,
    slow_budget: int | None = None,
    xip: bool = XIP_DEFAULT,
    weight_bytes_of: Callable[[int], int] | None = None,
    scratch_bytes_of: Callable[[int, int], int] | None = None,
    strategy: str = "tigris",
    accumulate_gap: bool = True,
    recompute_weight: float = DEFAULT_RECOMPUTE_WEIGHT,
    feasibility: bool = False,
    least_sram: bool = False,
    layouts: dict | None = None,
    op_order: str = "search",
    halo_reuse: bool = True,
    col_tiles: bool = COL_TILES_DEFAULT,
    force_cols: int = 0,
    one_region: bool = False,
) -> PlanResult:
    """Plan stages 3-6 for ``graph`` within ``fast_budget`` bytes of fast memory (see module docstring):
    :class:`Fit` or :class:`NoFit`.

    ``strategy="spec"`` is the spec's greedy partition and chain rule exactly; ``"tigris"`` (the default) also tries
    the partition of ``search.py`` and keeps whichever costs less: slow traffic plus ``recompute_weight`` bytes per
    recomputed halo MAC (``DEFAULT_RECOMPUTE_WEIGHT`` unless given; 0 minimizes traffic alone). A priced plan never
    moves more bytes through slow memory than the spec's partition does (``_within_spec_traffic``).

    ``accumulate_gap`` enables spatial rule 7 (a GlobalAveragePool may end a tiled unit, accumulating over its
    tiles; the format's unit flag ACCUM and the runtime implement ``ExecUnit.accumulate``). On by default; False
    keeps every GAP structural (never tiled).

    ``feasibility`` answers only whether a plan exists: with no slow budget the first strategy that fits decides, so
    a search probe skips the second strategy and the slow arena. The Fit's plan is then *a* plan, not the chosen one.

    ``least_sram`` (``tigris`` only) keeps, of both strategies' plans, the one whose fast plus slow arena is smaller
    (then the cheaper): what :func:`min_sram_only_budget` probes with, for a board whose slow arena is SRAM too.

    ``layouts`` is a memo of candidate units' band layouts to share between calls on the same graph with the same
    callables and ``accumulate_gap`` (a budget search passes one dict to every probe; see ``Costs.layouts``).

    ``op_order="search"`` (the default) also plans the graph in the memory-aware operator order of
    :mod:`tigris.plan.order` when that order's untiled peak is lower than the graph's own, and keeps that plan when
    it fits and the graph's order does not, or when it costs less (traffic plus priced recompute) without moving
    more bytes through slow memory (``least_sram``: when it needs less fast plus slow arena); a NoFit is the graph
    order's. The plan's op indices are the graph's, in the order the units run them. ``"spec"`` plans the graph's
    own order only (the loader's DFS post-order, the baseline).

    ``halo_reuse`` (``tigris`` only; the spec recomputes its halos) lets a tiled unit carry the rows its bands share
    from tile to tile instead of recomputing them (spatial rule 9, the unit flag ROLLING) wherever that still fits;
    False gives the recomputing plans of the earlier planner.

    ``col_tiles`` (``tigris`` only) lets a tiled range that does not fit at one output row per tile cut its width
    too (column tiles, :mod:`tigris.plan.cols`, the unit flag COLS). It is a fallback: the graph is planned without
    column tiles first and again with them only when that does not fit, so every plan that fits without them is
    unchanged. ``force_cols`` (tests) plans with column tiles at once and runs every tiled unit that can be
    column-split as exactly that many column tiles (when such a grid fits).

    ``one_region`` plans for a board whose slow arena is the fast arena's memory (no PSRAM; the format's header flag
    ONE_REGION): every slow home lies at or above the fast buffers of each unit it is live across, so a unit's
    buffers use the bytes of the homes not live during it. ``slow_budget`` then bounds the slow arena's end, and the
    region the runtime takes is ``max(fast_peak, slow_peak)``; ``least_sram`` compares that.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown planning strategy {strategy!r}; choose from {STRATEGIES}")
    if op_order not in OP_ORDERS:
        raise ValueError(f"unknown operator order {op_order!r}; choose from {OP_ORDERS}")
    if not graph.ops:
        return NoFit(None, None, 0, "empty", fast_budget)
    args = (fast_budget, slow_budget, xip, strategy, accumulate_gap, recompute_weight, feasibility, least_sram)
    cols = dict(halo_reuse=halo_reuse, col_tiles=col_tiles, force_cols=force_cols, one_region=one_region)
    res = _plan_in_order(graph, *args, weight_bytes_of, scratch_bytes_of, layouts, **cols)
    if op_order == "spec" or (feasibility and slow_budget is None and isinstance(res, Fit)):
        return res
    memo = {} if layouts is None else layouts
    found = memo.get(("op_order",))
    if found is None:
        found = memo[("op_order",)] = search_order(graph)
    if found.peak >= found.baseline_peak:
        return res
    order = found.order
    wb = weight_bytes_of or default_weight_bytes(graph)
    sb = scratch_bytes_of or _no_scratch

    def rsb(k: int, rows: int, cols: int | None = None) -> int:  # a column band's too (tigris.plan.cols.band_scratch)
        return sb(order[k], rows) if cols is None else band_scratch(sb, order[k], rows, cols)

    other = _plan_in_order(reorder(graph, order), *args, lambda k: wb(order[k]), rsb,
                           memo.setdefault(("op_order", order), {}), **cols)
    if isinstance(other, NoFit):
        return res
    mine = _in_graph_order(other.plan, order, res.plan.unscheduled_peak if isinstance(res, Fit) else None, graph)
    if isinstance(res, NoFit):
        return Fit(mine)
    if feasibility:
        return res
    a = res.plan
    traffic = lambda p: p.spill_bytes + p.reload_bytes  # noqa: E731
    cost = lambda p: traffic(p) + recompute_weight * p.recompute_macs  # noqa: E731
    if least_sram:
        better = (sram_bytes(mine), cost(mine)) < (sram_bytes(a), cost(a))
    else:
        better = cost(mine) < cost(a) and traffic(mine) <= traffic(a)
    return Fit(mine) if better else res


def sram_bytes(p: MemoryPlan) -> int:
    """The SRAM a plan needs when both arenas are SRAM: their sum, or one region's size."""
    return max(p.fast_peak, p.slow_peak) if p.one_region else p.fast_peak + p.slow_peak


def _in_graph_order(p: MemoryPlan, order: tuple[int, ...], unscheduled: int | None, graph: AnalyzedGraph) -> MemoryPlan:
    """A plan of the reordered graph in the graph's own op indices (units and stages keep their running order)."""
    m = lambda ops: [order[k] for k in ops]  # noqa: E731
    units = [replace(u, ops=m(u.ops), scratch={order[k]: v for k, v in u.scratch.items()}, accumulate=m(u.accumulate))
             for u in p.units]
    stages = [replace(s, ops=m(s.ops)) for s in p.stages]
    return replace(p, units=units, stages=stages, view_ops=sorted(order[k] for k in p.view_ops),
                   unscheduled_peak=unscheduled if unscheduled is not None else unscheduled_peak(graph))


def _plan_in_order(
    graph: AnalyzedGraph, fast_budget, slow_budget, xip, strategy, accumulate_gap, recompute_weight, feasibility,
    least_sram, weight_bytes_of, scratch_bytes_of, layouts, halo_reuse: bool = True, col_tiles: bool = False,
    force_cols: int = 0, one_region: bool = False,
) -> PlanResult:
    """:func:`plan` of the graph's ops in the graph's order: with every op moving its bytes, and (``VIEWS``, when
    some op can run as a view, lifetime rule 7) with views; the plan with views where it fits and the other does
    not, or where it moves no more bytes through slow memory, costs no more and needs no more fast memory."""
    vbufs = _view_buffers(graph, layouts) if VIEWS else None
    if VIEWS == "only":  # tests: the plan with views alone, whatever it costs
        return _plan_bufs(graph, vbufs or buffers(graph), fast_budget, slow_budget, xip, strategy, accumulate_gap,
                          recompute_weight, feasibility, least_sram, weight_bytes_of, scratch_bytes_of, None,
                          halo_reuse, col_tiles, force_cols, one_region)
    res = _plan_bufs(graph, buffers(graph), fast_budget, slow_budget, xip, strategy, accumulate_gap,
                     recompute_weight, feasibility, least_sram, weight_bytes_of, scratch_bytes_of, layouts,
                     halo_reuse, col_tiles, force_cols, one_region)
    if vbufs is None or not vbufs.view_ops or (feasibility and slow_budget is None and isinstance(res, Fit)):
        return res
    memo = {} if layouts is None else layouts.setdefault(("views",), {})
    other = _plan_bufs(graph, vbufs, fast_budget, slow_budget, xip, strategy, accumulate_gap, recompute_weight,
                       feasibility, least_sram, weight_bytes_of, scratch_bytes_of, memo, halo_reuse, col_tiles,
                       force_cols, one_region)
    if isinstance(other, NoFit):
        return res
    if isinstance(res, NoFit):
        return other
    a, b = res.plan, other.plan
    traffic = lambda p: p.spill_bytes + p.reload_bytes  # noqa: E731
    cost = lambda p: traffic(p) + recompute_weight * p.recompute_macs  # noqa: E731
    if least_sram:
        keep = (sram_bytes(b), cost(b)) <= (sram_bytes(a), cost(a))
    else:
        keep = traffic(b) <= traffic(a) and cost(b) <= cost(a) and b.fast_peak <= a.fast_peak
    return other if keep else res


def _view_buffers(graph: AnalyzedGraph, layouts: dict | None) -> Buffers | None:
    """The graph's buffers with views (lifetime rule 7), None when no op runs as one; kept in the plan memo (one
    graph per memo), so a budget search finds out once."""
    key = ("view_buffers",)
    if layouts is not None and key in layouts:
        return layouts[key]
    got = buffers(graph, views=True) if view_groups(graph, alias_roots(graph))[2] else None
    if layouts is not None:
        layouts[key] = got
    return got


# Lifetime rule 7 (views) on (the default) or off: off plans every Concat and Slice as a copy, the measured baseline
# of bench/plan_views.py and of the tests comparing the two plans; "only" (tests) plans with views alone, even where
# that costs more, so a joined buffer may cross units.
VIEWS: bool | str = True


# One region with a slow budget: each unit's fast budget is what the region leaves beside the graph inputs and
# outputs live across it (Costs.caps). Off: the fast budget alone bounds every unit (the earlier planner, whose
# partitions could not cut the head to the region while keeping the later units' budget).
REGION_CAPS = True
# One region with a slow budget no partition at the caller's recompute weight fits: the planner tries again this many
# times, halving the weight each time (0: the caller's weight alone)
REGION_RELAX = 2


def _region_caps(graph: AnalyzedGraph, bufs: Buffers, u: Uses, fast_budget: int,
                 slow_budget: int | None) -> tuple[int, ...] | None:
    """``Costs.caps`` of one region ending at ``slow_budget``: in a plan of several units every graph input and
    output has a slow home, an input live from the first unit to the one reading it last, an output from the one
    making it to the end, and each home lies above the buffers of every unit it is live across. So a unit holding
    op ``i`` has at most the region less the inputs read at or after ``i`` and the outputs made at or before it
    (the whole graph as one untiled unit keeps them in fast memory and is judged by the budget alone). None when no
    cap is below ``fast_budget``: the plans do not change."""
    if slow_budget is None:
        return None
    n = len(graph.ops)
    pinned = [0] * n
    for x in bufs.inputs:
        for i in range(0, min(u.last_use.get(x, -1), n - 1) + 1):
            pinned[i] += bufs.size(x)
    for y in bufs.outputs:
        for i in range(max(u.producer.get(y, n), 0), n):
            pinned[i] += bufs.size(y)
    caps = tuple(slow_budget - p for p in pinned)
    return caps if min(caps) < fast_budget else None


def _overwrite_caps(graph: AnalyzedGraph, bufs: Buffers, units: list[ExecUnit], caps: tuple[int, ...],
                    slow_budget: int) -> tuple[int, ...] | None:
    """``caps`` lowered for the units after the one reading a graph input last, from a plan (``units``) whose
    region missed ``slow_budget``: the input's home ends within the region, so it starts at most its size below
    the end; an output written over it (``_overwrites``) starts at most the largest proven shift above that, and
    every later unit it is live across keeps its buffers below it (and so on along outputs written over that
    output). Not what every plan needs (a plan may keep such an output out of the input's bytes), but what the
    packing needs to keep it there: ``plan`` tries these caps only when neither the caps nor the fast budget alone
    fit. None when nothing is lowered."""
    from tigris.plan.overwrite import SHIFT_SPAN

    birth: dict[str, int] = {}
    death: dict[str, int] = {}
    for k, unit in enumerate(units):
        for n in list(unit.spill) + list(unit.reload):
            birth.setdefault(n, k)
            death[n] = max(death.get(n, k), k)
    pairs = _overwrites(graph, bufs, units, birth, death)
    over = {x: (k, y) for k, ys in pairs.items() for y, x in ys.items()}  # input -> (its unit, the output over it)
    new = list(caps)
    for x in bufs.inputs:
        top = slow_budget - align_up(bufs.size(x))  # the input's home starts at most here
        cur = x
        while cur in over:
            k, y = over[cur]
            lo, hi = 0, SHIFT_SPAN  # the largest proven start of y above cur's (the proof gets harder upwards)
            while lo < hi:
                mid = (lo + hi + 16) // 32 * 16
                lo, hi = (mid, hi) if _overwrite_safe(graph, units[k], cur, y, 0, mid) else (lo, mid - 16)
            top += lo
            for j in range(k + 1, death.get(y, k) + 1):
                for i in units[j].ops:
                    new[i] = min(new[i], top)
            cur = y
    chained = tuple(new)
    return chained if chained != tuple(caps) else None


def _plan_bufs(
    graph: AnalyzedGraph, bufs: Buffers, fast_budget, slow_budget, xip, strategy, accumulate_gap, recompute_weight,
    feasibility, least_sram, weight_bytes_of, scratch_bytes_of, layouts, halo_reuse: bool = True,
    col_tiles: bool = False, force_cols: int = 0, one_region: bool = False,
) -> PlanResult:
    u = uses(bufs)
    col_tiles = col_tiles and strategy != "spec"
    force_cols = force_cols if col_tiles else 0
    caps = _region_caps(graph, bufs, u, fast_budget, slow_budget) if one_region and REGION_CAPS else None

    weight = recompute_weight

    def attempt(cols: bool, caps, carry: bool) -> Planned | NoFit:
        costs = _costs(graph, xip, weight_bytes_of, scratch_bytes_of, accumulate_gap, weight, layouts,
                       halo_reuse and strategy != "spec", cols, force_cols if cols else 0,
                       recompute_expansions=(least_sram or slow_budget is not None) and strategy != "spec")
        if caps is not None:
            costs = replace(costs, caps=caps, carry_back=carry)
        return _partition(graph, bufs, u, costs, fast_budget, strategy, any_fit=feasibility and slow_budget is None,
                          least_sram=least_sram, slow_budget=slow_budget, one_region=one_region)

    def within(caps, carry: bool = False) -> tuple[Planned, tuple] | NoFit:
        # column tiles are a fallback below the row floor (tigris.plan.cols rule 5): plans that fit without them stay
        planned = attempt(bool(force_cols), caps, carry)
        if isinstance(planned, NoFit) and col_tiles and not force_cols and \
                planned.cause not in ("slow_memory", "empty"):
            planned = attempt(True, caps, carry)  # a NoFit then says what fails with column tiles too
        if isinstance(planned, NoFit):
            return planned
        arena = _slow_arena(graph, bufs, planned[0], one_region)
        if slow_budget is not None and arena[1] > slow_budget:
            missed.append(planned[0])
            return NoFit(None, None, arena[1], "slow_memory", slow_budget)
        return planned, arena

    def in_region() -> tuple[Planned, tuple] | NoFit:
        missed.clear()
        got = within(caps)
        if isinstance(got, NoFit) and caps is not None:
            # the caps are what every plan needs, but the cheapest partition within them may still miss the region
            # where the one chosen without them fits: the earlier plan then stands (and a NoFit is its)
            got = within(None)
            for units in list(missed) if isinstance(got, NoFit) else ():
                # neither fits: the units after the head, judged by the homes they must stay under (the boundary
                # written over the input), may let the packing keep that boundary in the input's bytes
                chained = _overwrite_caps(graph, bufs, units, caps, slow_budget)
                # under these caps a unit recomputing overlaps carries back what still fits (chain.carry_back): they
                # are tight, and recomputing every candidate overlap there costs more MACs than the region needs
                again = within(chained, True) if chained is not None else got
                if not isinstance(again, NoFit):
                    got = again
                    break
        return got

    missed: list[list[ExecUnit]] = []
    got = in_region()
    for _ in range(REGION_RELAX if caps is not None else 0):
        if not isinstance(got, NoFit) or got.cause != "slow_memory" or not weight:
            break
        # every partition the weight prefers overflows the region: what a boundary costs there is bytes the region
        # lacks, which the weight's traffic price does not see, so recompute is priced lower in turn (the callers
        # bound the recompute they accept)
        weight /= 2
        got = in_region()
    if isinstance(got, NoFit):
        return got
    (units, stages), (slow, slow_peak, over) = got
    units = [replace(unit, overwrite=over[k]) if k in over else unit for k, unit in enumerate(units)]
    spill, reload = _traffic(graph, bufs, units)
    return Fit(MemoryPlan(
        fast_budget=fast_budget,
        slow_budget=slow_budget,
        xip=xip,
        stages=stages,
        units=units,
        slow=slow,
        alias_of=dict(bufs.alias_of),
        view_offset=dict(bufs.offset),
        view_ops=sorted(bufs.view_ops),
        unscheduled_peak=unscheduled_peak(graph),
        fast_peak=max(unit.peak_bytes for unit in units),
        slow_peak=slow_peak,
        spill_bytes=spill,
        reload_bytes=reload,
        recompute_macs=sum(s.recompute_macs for s in stages),
        one_region=one_region and slow_peak > 0,
    ))


def plan_memory(graph: AnalyzedGraph, fast_budget: int, *args, **kw) -> MemoryPlan:
    """:func:`plan` (same arguments), for callers that want the plan or :class:`DoesNotFitError` (its ``nofit`` says
    why)."""
    res = plan(graph, fast_budget, *args, **kw)
    if isinstance(res, NoFit):
        raise DoesNotFitError(res.message, res.op or graph.name, res)
    return res.plan


def fits(graph: AnalyzedGraph, fast_budget: int, **kw) -> bool:
    """Whether a plan exists (a feasibility probe: cheaper than building the chosen plan)."""
    return isinstance(plan(graph, fast_budget, feasibility=True, **kw), Fit)


def min_fast_budget(
    graph: AnalyzedGraph, granularity: int = 16, known_fail: int = 0, failed: dict[int, NoFit] | None = None, **kw
) -> int | None:
    """The smallest fast budget (a multiple of ``granularity``) at which :func:`plan` fits, by search; each probe is
    a feasibility probe.

    Feasibility is close to monotone in the budget but the greedy cuts make it not strictly so; the search returns a
    budget that was actually planned successfully. None when even a budget of 2**31 bytes does not fit (e.g. the
    slow budget is what fails). ``known_fail`` is a budget the caller already saw fail (the search's lower end).

    The first probe is :func:`fast_lower_bound`, which nothing below fits: when it fits it is the answer. Otherwise
    the search bisects above it; a fitting probe's plan often needs much less than the budget it was given, so its
    fast peak is probed next (when that fits too it becomes the upper end at once).
    All probes share one memo of unit band layouts (``plan(layouts=)``), which do not depend on the budget.
    ``failed`` receives the NoFit of every probe that did not fit, by budget (a probe that does not fit fails the way
    the full plan does, so a caller asking why the budget just below the minimum fails need not plan it again).
    """
    kw.setdefault("layouts", {})

    def peak_if_fits(budget: int) -> int | None:
        res = plan(graph, budget, feasibility=True, **kw)
        if isinstance(res, NoFit):
            if failed is not None:
                failed[budget] = res
            return None
        return align_up(max(res.plan.fast_peak, 1), granularity)

    bound = align_up(max(fast_lower_bound(graph, **kw), granularity), granularity)
    if bound > known_fail and peak_if_fits(bound) is not None:
        return bound  # nothing below the bound fits (tests/plan/test_lower_bound.py checks the budget just below)
    known_fail = max(known_fail, bound)  # below the bound nothing fits; the bound itself was just seen to fail
    hi = align_up(unscheduled_peak(graph) + 4096, granularity)
    while (peak := peak_if_fits(hi)) is None:
        hi *= 2
        if hi > 2**31:
            return None
    lo = known_fail // granularity * granularity  # known not to fit (0: nothing is known)
    while True:
        while lo < peak < hi:  # the plan found fits in less than it was given: try its own peak as the budget
            nxt = peak_if_fits(peak)
            if nxt is None:
                lo = peak
                break
            hi, peak = peak, nxt
        if hi - lo <= granularity:
            return hi
        mid = (lo + hi) // 2 // granularity * granularity
        if mid <= lo:
            return hi
        got = peak_if_fits(mid)
        if got is None:
            lo, peak = mid, hi
        else:
            hi, peak = mid, got


@dataclass(frozen=True)
class SramOnly:
    """The smallest SRAM the planner found for a board without slow memory: both arenas in SRAM."""

    total_bytes: int  # fast arena + slow arena, the SRAM both need together (one region: the larger of the two)
    fast_budget: int  # the -m that plans it
    fast_bytes: int  # the plan's fast peak
    slow_bytes: int  # the plan's slow peak (the -s that plans it; an SRAM region on such a board)
    recompute_macs: int


def min_sram_only_budget(
    graph: AnalyzedGraph, granularity: int = 16, ratio: float = 0.8, max_recompute_macs: int | None = None, **kw
) -> SramOnly | None:
    """The plan needing the least SRAM when the slow arena is SRAM too (a board with no PSRAM): the smallest
    ``fast_peak + slow_peak`` over the plans at a geometric ladder of fast budgets, from the untiled peak down to
    where nothing fits, then refined around the best rung.

    The runtime takes the two arenas as two pointers, so such a plan runs unchanged with both in SRAM; a tiled head
    then costs its boundaries (the graph input and the tensors between units) in the slow arena instead of the whole
    untiled peak. Each probe keeps, of both strategies' plans, the one needing less SRAM (``least_sram``); the plan
    at ``fast_budget`` with ``slow_budget=slow_bytes`` is what is reported: that plan, or the traffic-cheaper one when
    it fits both budgets too (a slow budget only filters the candidate plans). None when no budget fits. ``kw`` are
    :func:`plan`'s options (``slow_budget`` excepted).

    With ``one_region=True`` (a :func:`plan` option) the arenas are one region and a plan needs
    ``max(fast_peak, slow_peak)`` bytes (``sram_bytes``): the slow homes sit above each unit's buffers, which reuse
    the bytes of the homes not live during that unit.

    ``max_recompute_macs`` keeps only plans recomputing at most that many halo MACs; each probe is then judged by the
    ordinary plan at its budget and slow peak (what ``-m``/``-s`` give), so the cap holds for the plan reported.
    """
    for k in ("slow_budget", "feasibility", "least_sram"):
        kw.pop(k, None)
    kw.setdefault("layouts", {})
    seen: dict[int, SramOnly | None] = {}

    def probe(budget: int) -> SramOnly | None:
        budget = align_up(max(budget, granularity), granularity)
        if budget not in seen:
            res = plan(graph, budget, least_sram=True, **kw)
            if not isinstance(res, NoFit) and max_recompute_macs is not None:
                res = plan(graph, budget, res.plan.slow_peak, **kw)
            ok = isinstance(res, Fit) and (max_recompute_macs is None or res.plan.recompute_macs <= max_recompute_macs)
            seen[budget] = SramOnly(
                sram_bytes(res.plan), budget, res.plan.fast_peak, res.plan.slow_peak,
                res.plan.recompute_macs,
            ) if ok else None
        return seen[budget]

    def better(a: SramOnly | None, b: SramOnly | None) -> SramOnly | None:
        if a is None or b is None:
            return a or b
        # fewest SRAM bytes; on a tie the smaller budget (less recompute is not what the figure promises)
        return min(a, b, key=lambda r: (r.total_bytes, r.recompute_macs, r.fast_budget))

    best: SramOnly | None = None
    budget = float(align_up(unscheduled_peak(graph) + 4096, granularity))
    misses = 0
    while budget >= granularity and misses < 2:
        got = probe(int(budget))
        misses = misses + 1 if got is None else 0
        best = better(best, got)
        budget *= ratio
    if best is None:
        return None
    # refine between the neighbouring rungs, then try the best plan's own fast peak as the budget
    lo, hi = best.fast_budget * ratio, best.fast_budget / ratio
    for k in range(1, 8):
        best = better(best, probe(int(lo + (hi - lo) * k / 8)))
    best = better(best, probe(best.fast_bytes))
    assert best is not None
    # What a user gets with -m fast_budget -s slow_bytes: the ordinary plan at both budgets (it fits: the plan found
    # is a candidate within both; the traffic-cheaper one is kept when it fits too)
    res = plan(graph, best.fast_budget, best.slow_bytes, **kw)
    assert isinstance(res, Fit), res
    p = res.plan
    return SramOnly(sram_bytes(p), best.fast_budget, p.fast_peak, p.slow_peak, p.recompute_macs)
