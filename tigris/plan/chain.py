"""Stage 6, chain tiling (spec section 6 "Chain tiling") and the tile-height search every tiled unit uses.

Chain conditions between consecutive stages A and B (spec), as checked by :func:`link_reason`:

1. Both stages are tileable (``spatial.stage_tileable``: no untileable op, at most one spatial op, one output).
2. A has exactly one output tensor and every reader of it is in B (no fan-out from the intermediate; it is not a
   graph output either).
3. B may read other tensors from slow memory too (a residual branch, say): they are reloaded per tile as bands, like
   the chain's input. This is a relaxation of the spec, which only pictures a single-input chain; it is safe because
   the runtime reloads every unit input per tile anyway.

Tile heights are back-propagated from the last stage's output through every op's kernel, stride, dilation and
padding (``spatial.plan_bands``); a binary search finds the largest output tile height at which every band buffer,
the weight prefix and the kernel scratch, each 16-byte aligned, fit the budget (:func:`fit_tiles`).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

from tigris.ir import AnalyzedGraph
from tigris.plan.lifetime import ROW_LAYOUTS, Buffers
from tigris.plan.spatial import (
    SAMPLED_SEARCH_ROWS, TiledLayout, largest_fitting, min_tile_h, op_macs, plan_bands, row_bytes, spec_tile_h,
    tiling_axis,
)
from tigris.plan.temporal import Costs, Uses, stage_weight_bytes
from tigris.plan import cols as cols_module
from tigris.plan import spatial
from tigris.plan.cols import cols_reason, fit_cols, grid_source, max_cols, moved_bytes, plan_col_bands, with_weights


@dataclass
class StageInfo:
    ops: range
    inputs: list[str]
    outputs: list[str]
    peak: int  # untiled timeline peak, weight prefix included
    peak_step: int
    untileable: str | None  # why the stage cannot be tiled, None when it can
    halo: int = 0


def link_reason(graph: AnalyzedGraph, bufs: Buffers, u: Uses, a: StageInfo, b: StageInfo) -> str | None:
    """Why stages a and b cannot form (part of) a chain, or None when they can (rules 1-3)."""
    if a.untileable or b.untileable:
        return a.untileable or b.untileable
    if len(a.outputs) != 1:
        return f"stage has {len(a.outputs)} outputs"
    t = a.outputs[0]
    if t in u.outputs:
        return f"{t} is a graph output"
    readers = [i for i, r in enumerate(bufs.reads) if t in r]
    if any(i not in b.ops for i in readers):
        return f"{t} fans out beyond the next stage"
    if graph.tensors[t].layout not in ROW_LAYOUTS:
        return f"{t} is not row-major"
    return None


# spatial rule 10's tiers (recompute_candidates), tried in this order where carrying every overlap does not fit
RECOMPUTE_TIERS = (1, 2)


def unit_bands(
    graph: AnalyzedGraph, bufs: Buffers, costs: Costs, ops: Sequence[int], output: str, tile_h: int, sample: bool,
    rolling: bool = False, equal: bool = False, partial: int = 0, carried: frozenset[str] = frozenset(),
) -> TiledLayout | None:
    """:func:`plan_bands` of a candidate unit at one tile height, memoized in ``costs.layouts`` (callers treat the
    layout as read-only). ``rolling`` plans halo reuse (spatial rule 9); such a layout whose bands carry nothing is
    None (the unit has no halo to reuse: the recomputing layout is the plan). A rolling layout runs a short first
    tile where that lowers its peak (``spatial.FIRST_TILE_SHORT``), unless ``equal``. ``partial`` (rolling only)
    recomputes the overlaps of :func:`recompute_candidates` of that tier instead of carrying them (spatial rule 10),
    except those of ``carried`` (carry back); None when that leaves none.

    The bands are planned once without weights: the weight prefix only raises every step of the band timeline by
    the same amount, so the layout with weights is the same layout with its peak raised, and the searches with and
    without XIP share one memo."""
    again = recompute_candidates(graph, bufs, ops, output, partial) - carried if rolling and partial else frozenset()
    if rolling and partial and not again:
        return None

    def planned(key: tuple, first_h: int | None) -> TiledLayout | None:
        if key not in costs.layouts:
            lay = plan_bands(graph, bufs, ops, output, tile_h, 0, costs.scratch_bytes, sample, costs.accumulate_gap,
                             rolling, first_h=first_h, recompute=again)
            costs.layouts[key] = None if rolling and lay is not None and not lay.rolling else lay
        return costs.layouts[key]

    # tier 1 without carry back keeps the key it always had; the other recompute sets are named in theirs
    tag = () if not again else ("partial",) if partial == 1 and not carried else ("partial", tuple(sorted(again)))
    key = (tuple(ops), output, tile_h, sample, costs.accumulate_gap, rolling, False) + tag
    if rolling and spatial.FIRST_TILE_SHORT and tile_h > 1 and not equal:
        # a short first tile (rule 9): the first tile's bands hold every op's halo stacked up on the rows it
        # computes; on one row that prologue no longer sizes the band buffers of the later, taller tiles
        lay = planned(key, None)
        key = key[:7] + (True,) + key[7:]
        if key not in costs.layouts:
            short = planned(key + ("short",), 1)
            costs.layouts[key] = short if short is not None and (lay is None or short.peak < lay.peak) else lay
    else:
        planned(key, None)
    lay = costs.layouts[key]
    wb = stage_weight_bytes(costs, ops)
    return replace(lay, peak=lay.peak + wb) if lay is not None and wb else lay


def recompute_candidates(graph: AnalyzedGraph, bufs: Buffers, ops: Sequence[int], output: str,
                         tier: int = 1) -> frozenset[str]:
    """Spatial rule 10's buffers of a unit. Tier 1: made inside it by ops that read their activation inputs row for
    row (a 1x1 conv, an element-wise op), taken together per set of inputs (an expansion's channel groups all read
    the block's input) where they write more bytes per row than those inputs hold, so recomputing their overlap rows
    carries the narrower inputs' rows instead of theirs. Tier 2 adds the outputs of windowed ops whose activation
    inputs all enter the unit (loaded, not made in it) and hold fewer bytes per row times the op's row stride than
    the output (the stem conv 3x3/2 of an RGB image): the loaded rows then carry the overlap instead of the wide
    output. The unit's output is never one (it is spilled)."""
    made = {n for i in ops for n in bufs.writes[i]}
    by_inputs: dict[tuple[str, ...], list[str]] = {}
    out: set[str] = set()
    for i in ops:
        op = graph.ops[i]
        y = op.outputs[0] if op.outputs else None
        if y is None or y == output or bufs.root(y) != y or graph.tensors[y].layout not in ROW_LAYOUTS:
            continue
        h = graph.tensors[y].shape[2] if len(graph.tensors[y].shape) == 4 else 0
        acts = [x for x in op.inputs if x and not graph.is_const(x)]
        if h < 3 or not acts:
            continue
        if all(spatial.input_rows(graph, op, x, (1, 2)) == (1, 2) for x in acts):
            by_inputs.setdefault(tuple(sorted({bufs.root(x) for x in acts})), []).append(y)
            continue
        win = spatial.op_window(op)
        if tier >= 2 and win is not None and all(bufs.root(x) not in made for x in acts) and \
                sum(row_bytes(graph, x) for x in acts) * win[1] < row_bytes(graph, y):
            out.add(y)
    for xs, ys in by_inputs.items():
        if sum(row_bytes(graph, x) for x in xs) < sum(row_bytes(graph, y) for y in ys):
            out.update(ys)
    return frozenset(out)


def unit_col_bands(
    graph: AnalyzedGraph, bufs: Buffers, costs: Costs, ops: Sequence[int], output: str, tile_h: int, n_cols: int,
    bound: bool = False,
) -> TiledLayout | None:
    """:func:`tigris.plan.cols.plan_col_bands` of a candidate unit, memoized in ``costs.layouts`` like
    :func:`unit_bands` (planned without weights, the weight prefix added to the peak)."""
    key = ("cols", tuple(ops), output, tile_h, n_cols, bound, costs.accumulate_gap, cols_module.COLS_ACCUM)
    if key not in costs.layouts:
        costs.layouts[key] = plan_col_bands(graph, bufs, ops, output, tile_h, n_cols, 0, costs.scratch_bytes, bound,
                                            costs.accumulate_gap)
    return with_weights(costs.layouts[key], stage_weight_bytes(costs, ops))


def col_layout(
    graph: AnalyzedGraph, bufs: Buffers, costs: Costs, ops: Sequence[int], output: str, budget: int,
) -> TiledLayout | None:
    """The column-split layout a tiled range runs with below the row floor (cols rule 5), None when none fits or
    the range cannot be column-split; exactly ``costs.force_cols`` column tiles when that is set."""
    if col_scope(graph, bufs, costs, ops, output) is not None:
        return None
    src = grid_source(graph, bufs, ops, output, costs.accumulate_gap)
    return fit_cols(lambda th, n: unit_col_bands(graph, bufs, costs, ops, output, th, n), graph, src, budget,
                    costs.force_cols or None)


def col_scope(graph: AnalyzedGraph, bufs: Buffers, costs: Costs, ops: Sequence[int], output: str) -> str | None:
    """:func:`tigris.plan.cols.cols_reason`, memoized in ``costs.layouts``."""
    key = ("cols_reason", tuple(ops), output, costs.accumulate_gap, cols_module.COLS_ACCUM)
    if key not in costs.layouts:
        costs.layouts[key] = cols_reason(graph, bufs, ops, output, costs.accumulate_gap)
    return costs.layouts[key]


def col_fits_somewhere(
    graph: AnalyzedGraph, bufs: Buffers, costs: Costs, ops: Sequence[int], output: str, budget: int,
) -> bool:
    """Whether a column-split layout of the range fits ``budget``: the narrowest columns at the smallest height."""
    if not costs.col_tiles or col_scope(graph, bufs, costs, ops, output) is not None:
        return False
    _, h = tiling_axis(graph, bufs, ops, output, costs.accumulate_gap)
    th = min_tile_h(h)
    src = grid_source(graph, bufs, ops, output, costs.accumulate_gap)
    lay = unit_col_bands(graph, bufs, costs, ops, output, th, max_cols(graph, src, th))
    return lay is not None and lay.peak <= budget


def fitting_bands(
    graph: AnalyzedGraph, bufs: Buffers, costs: Costs, ops: Sequence[int], output: str, tile_h: int, sample: bool,
    budget: int,
) -> TiledLayout | None:
    """The layout a unit runs with at ``tile_h`` within ``budget``: halo reuse when enabled and it fits (it
    recomputes nothing and reloads no halo row twice), else halo reuse recomputing rule 10's overlaps (tier 1, then
    tier 2), else recompute; None when none fits."""
    if costs.halo_reuse:
        lay = unit_bands(graph, bufs, costs, ops, output, tile_h, sample, True)
        if lay is not None and lay.peak <= budget:
            return lay
        for tier in RECOMPUTE_TIERS if costs.recompute_expansions else ():
            lay = unit_bands(graph, bufs, costs, ops, output, tile_h, sample, True, partial=tier)
            if lay is not None and lay.peak <= budget:
                return lay
    lay = unit_bands(graph, bufs, costs, ops, output, tile_h, sample)
    return lay if lay is not None and lay.peak <= budget else None


def fit_tiles(
    graph: AnalyzedGraph,
    bufs: Buffers,
    costs: Costs,
    ops: Sequence[int],
    output: str,
    budget: int,
    guess: int | None = None,
) -> TiledLayout | None:
    """The largest output tile height whose tiled unit fits ``budget``; None when even one row does not fit (and,
    with ``costs.col_tiles``, no column split fits either: then the column-split layout, tigris.plan.cols).

    ``guess`` (the spec's ``floor(budget * H / peak) - halo``) is tried first: when it fits and one row more does not,
    the search is skipped. With ``costs.halo_reuse`` the unit reuses its halos (spatial rule 9) at the largest tile
    height where that fits, unless that fits nowhere (then it recomputes them at the largest height that fits) or
    the unit fits as one tile reloading no more.
    """
    if costs.col_tiles and costs.force_cols:
        forced = col_layout(graph, bufs, costs, ops, output, budget)
        if forced is not None:
            return forced
    roll = _fit_tiles(graph, bufs, costs, ops, output, budget, guess, True) if costs.halo_reuse else None
    for tier in RECOMPUTE_TIERS if roll is None and costs.halo_reuse and costs.recompute_expansions else ():
        # rule 10: carry the narrow inputs of expansions (and, tier 2, the loaded inputs of wide windowed outputs)
        # and recompute those
        roll = _fit_tiles(graph, bufs, costs, ops, output, budget, guess, True, partial=tier)
        if roll is not None:
            if costs.carry_back:
                roll = carry_back(graph, bufs, costs, ops, output, budget, tier, roll)
            break
    if roll is None:
        rows = _fit_tiles(graph, bufs, costs, ops, output, budget, guess, False)
        if rows is None and costs.col_tiles:  # below the row floor: cut the width too (cols rule 5)
            return col_layout(graph, bufs, costs, ops, output, budget)
        return rows
    if roll.accumulate:
        # an accumulator's band is spilled at every tile (spatial rule 7): halo reuse fits at fewer rows, and its extra
        # tiles can move more bytes than the taller tiles of the recomputing layout
        rows = _fit_tiles(graph, bufs, costs, ops, output, budget, guess, False)
        if rows is not None and moved_total(graph, bufs, ops, output, rows) < \
                moved_total(graph, bufs, ops, output, roll):
            roll = rows
    # A recomputing layout recomputes nothing and reloads no more only as one tile: the rolling one carries rows, so
    # its bands overlap, and a recomputing layout of more tiles computes (or reloads) those rows twice.
    _, h = tiling_axis(graph, bufs, ops, output, costs.accumulate_gap)
    one = unit_bands(graph, bufs, costs, ops, output, h, False)
    if one is not None and one.peak <= budget and loaded_bytes(graph, bufs, ops, one) <= \
            loaded_bytes(graph, bufs, ops, roll):
        return one
    return roll


def carry_back(
    graph: AnalyzedGraph, bufs: Buffers, costs: Costs, ops: Sequence[int], output: str, budget: int, tier: int,
    lay: TiledLayout,
) -> TiledLayout:
    """Rule 10's carry back: ``lay`` (a fitting layout recomputing every overlap of its ``tier``) with buffers taken
    out of its recompute set again, one at a time, the one whose producer recomputes the most MACs first, wherever
    the unit then still fits ``budget`` at the same tile height: the unit recomputes only what its budget needs."""
    equal = not lay.first_h  # the same first tile as ``lay``: a short one only where ``lay`` runs one
    producer = {graph.ops[i].outputs[0]: i for i in ops if graph.ops[i].outputs}

    def extra(n: str) -> int:
        rows = lay.computed_rows.get(n, 0) - spatial.tensor_rows(graph.tensors[n])
        return op_macs(graph, graph.ops[producer[n]], rows) if rows > 0 and n in producer else 0

    carried: frozenset[str] = frozenset()
    for n in sorted(lay.recompute, key=lambda n: (-extra(n), producer.get(n, -1), n)):
        trial = unit_bands(graph, bufs, costs, ops, output, lay.tile_h, False, True, equal=equal, partial=tier,
                           carried=carried | {n})
        if trial is not None and trial.peak <= budget:
            carried, lay = carried | {n}, trial
    return lay


def loaded_bytes(graph: AnalyzedGraph, bufs: Buffers, ops: Sequence[int], lay: TiledLayout) -> int:
    """Bytes a tiled layout reloads over its (counted) tiles: the rows of the buffers its ops do not produce."""
    made = {n for i in ops for n in bufs.writes[i]}
    return sum(moved_bytes(graph, lay, n) for n in lay.computed_rows if n not in made)


def moved_total(graph: AnalyzedGraph, bufs: Buffers, ops: Sequence[int], output: str, lay: TiledLayout) -> int:
    """Bytes a row-tiled layout moves through slow memory: its reloads, and its output once, or at every tile for an
    accumulator (as ``tigris.plan._traffic`` and the runtime count it)."""
    out = moved_bytes(graph, lay, output) if lay.accumulate else bufs.nbytes[output]
    return loaded_bytes(graph, bufs, ops, lay) + out


def _fit_tiles(
    graph: AnalyzedGraph, bufs: Buffers, costs: Costs, ops: Sequence[int], output: str, budget: int,
    guess: int | None, rolling: bool, partial: int = 0,
) -> TiledLayout | None:
    _, h = tiling_axis(graph, bufs, ops, output, costs.accumulate_gap)
    if partial:
        again = recompute_candidates(graph, bufs, ops, output, partial)
        if not again or partial > 1 and again == recompute_candidates(graph, bufs, ops, output, partial - 1):
            return None  # nothing to recompute, or nothing more than the tier below (which did not fit)

    def layout(th: int) -> TiledLayout | None:
        return unit_bands(graph, bufs, costs, ops, output, th, False, rolling, partial=partial)

    def fits(th: int) -> bool:
        lay = layout(th)
        return lay is not None and lay.peak <= budget

    def equal(th: int) -> TiledLayout | None:
        return unit_bands(graph, bufs, costs, ops, output, th, False, rolling, equal=True, partial=partial)

    def chosen(th: int) -> TiledLayout | None:
        # a short first tile lets taller tiles fit; equal tiles (searched as without short first tiles: their
        # peak is not monotone in the height) where they need no more tiles
        lay = layout(th)
        if not rolling or lay is None or not lay.first_h:
            return lay
        best_eq = largest_fitting(lambda t: (e := equal(t)) is not None and e.peak <= budget, lo, h)
        eq = equal(best_eq) if best_eq is not None else None
        return eq if eq is not None and len(eq.tile_rows) <= len(lay.tile_rows) else lay

    lo = min_tile_h(h)
    if guess is not None and fits(guess) and (guess == h or not fits(guess + 1)):
        return chosen(guess)
    if h > SAMPLED_SEARCH_ROWS:
        # A tall axis: search on sampled tiles (24 per height instead of h / tile_h), then confirm on every tile that
        # the estimate fits and one row more does not; only when that fails, search on every tile.
        def fits_sampled(th: int) -> bool:
            lay = unit_bands(graph, bufs, costs, ops, output, th, True, rolling, partial=partial)
            return lay is not None and lay.peak <= budget

        est = largest_fitting(fits_sampled, lo, h)
        if est is None:
            # sampled tiles are a subset of all tiles, so a sampled peak never exceeds the full one: when no height
            # fits sampled, none fits at all (assuming, like the search itself, that fitting is monotone)
            return None
        if fits(est) and (est == h or not fits(est + 1)):
            return chosen(est)
    best = largest_fitting(fits, lo, h)
    return chosen(best) if best is not None else None


def spec_guess(budget: int, info: StageInfo, graph: AnalyzedGraph, bufs: Buffers, accumulate_gap: bool = False) -> int:
    _, h = tiling_axis(graph, bufs, info.ops, info.outputs[0], accumulate_gap)
    return spec_tile_h(budget, h, info.peak, info.halo)


def form_chains(
    graph: AnalyzedGraph, bufs: Buffers, u: Uses, costs: Costs, infos: list[StageInfo], budget: int
) -> list[list[int]]:
    """Group stage indices into units: maximal runs of linkable tileable stages that still fit at one row per tile.

    A run of one stage is returned alone (tiled later only if it is over budget).
    """
    groups: list[list[int]] = []
    i = 0
    while i < len(infos):
        group = [i]
        while group[-1] + 1 < len(infos):
            j = group[-1] + 1
            if link_reason(graph, bufs, u, infos[group[-1]], infos[j]) is not None:
                break
            ops = range(infos[group[0]].ops.start, infos[j].ops.stop)
            _, h = tiling_axis(graph, bufs, ops, infos[j].outputs[0], costs.accumulate_gap)
            if fitting_bands(graph, bufs, costs, ops, infos[j].outputs[0], min_tile_h(h), False, budget) is None:
                break
            group.append(j)
        groups.append(group)
        i = group[-1] + 1
    return groups
