"""The ``tigris`` strategy: choose unit boundaries by dynamic programming instead of the spec's greedy pass.

The spec's greedy pass cuts wherever the budget first overflows, which is often right after an expansion layer, so
the biggest tensor of a block is the one that crosses to slow memory. Here every unit is a contiguous op range
``[i, j)`` (the ops are in topological order, so a range's inputs and outputs depend on the range alone) and the cost
of a plan is the sum of its units' slow-memory traffic. Rules:

1. An *untiled* range is feasible when its stage timeline peak fits the budget. Its cost is the bytes of its inputs
   (reloaded) plus its outputs (spilled); the whole graph as one range costs 0 (inputs and outputs stay resident).
   The peak of ``[i, j+1)`` is never below that of ``[i, j)`` (the common steps keep the same live set), so the
   extension stops at the first overflow.
2. A *tiled* range is feasible when every op is tileable (``spatial.untileable_reason``), exactly one tensor leaves
   it, and its bands at one output row per tile fit (estimated on sampled tiles; the unit is later planned and
   checked on every tile). Unlike the spec, a tiled range may hold several spatial ops: for the report it is split
   into spec-style stages (one spatial op each, an accumulating GAP counting as one) that form one chain. Its cost
   is its output's bytes plus the input bands it reloads at the largest tile height that fits (halo re-reads
   included), plus its recomputed halo MACs at ``recompute_weight`` bytes each (none for a unit that rolls, spatial
   rule 9).
3. ``best[j] = min over i of best[i] + cost(i, j)``, ties broken by fewer units, then by preferring untiled ranges
   (no halo recompute).

The driver plans both this and the spec's greedy partition and keeps the one that costs less (a priced plan never moves
more than the spec's partition), so this strategy never fits fewer models than the baseline.
"""
from __future__ import annotations

from tigris.ir import AnalyzedGraph
from tigris.plan.lifetime import Buffers
from tigris.plan.lifetime import tensor_rows
from tigris.plan.spatial import (
    largest_fitting, min_tile_h, op_macs, row_bytes, tiling_axis, untileable_reason,
)
from tigris.plan.chain import col_fits_somewhere, col_layout, fitting_bands, recompute_candidates, unit_bands
from tigris.plan.cols import moved_bytes
from tigris.plan.spatial import TiledLayout
from tigris.plan.temporal import Costs, Uses, grow_stage
from tigris.plan.types import align_up

INF = (float("inf"), 0, 0)


def dp_units(
    graph: AnalyzedGraph, bufs: Buffers, u: Uses, costs: Costs, budget: int
) -> list[tuple[range, bool]] | None:
    """Unit ranges and whether each is tiled, minimizing slow traffic (rules 1-3); None when no partition fits."""
    n = len(graph.ops)
    tileable = [untileable_reason(graph, op, costs.accumulate_gap) is None for op in graph.ops]
    best: list[tuple[float, int, int]] = [INF] * (n + 1)
    best[0] = (0, 0, 0)
    choice: list[tuple[int, bool] | None] = [None] * (n + 1)

    def relax(i: int, j: int, traffic: int, tiled: bool) -> None:
        cand = (best[i][0] + traffic, best[i][1] + 1, best[i][2] + int(tiled))
        if cand < best[j]:
            best[j], choice[j] = cand, (i, tiled)

    # first_untileable[i]: the first op at or after i that cannot be tiled (n if none); a tiled range [i, j) needs
    # j <= first_untileable[i]
    first_untileable = [n] * (n + 1)
    for k in range(n - 1, -1, -1):
        first_untileable[k] = k if not tileable[k] else first_untileable[k + 1]
    # prefix sums of the copied weights (None with XIP): a range's weight prefix in O(1)
    weights: list[int] | None = None
    if not costs.xip:
        weights = [0] * (n + 1)
        for k in range(n):
            weights[k + 1] = weights[k] + costs.weight_bytes(k)
    for i in range(n):
        if best[i] == INF:
            continue
        # Pruning (exact, same result): costs are >= 0 and a path through i has at least one more unit, so every
        # plan through i is >= (best[i] cost, units + 1, tiled). When that bound is already worse than best[n], no
        # range from i can improve best[n] nor tie with (and so displace) any best[j] on the winning path, whose
        # values are all strictly below best[n].
        if (best[i][0], best[i][1] + 1, best[i][2]) > best[n]:
            continue
        untiled_fits_to = i
        caps = costs.caps
        cap = budget  # the range's budget (Costs.caps: one region), only lower as the range grows
        for j, peak, traffic in grow_stage(graph, bufs, u, costs, i):  # rule 1
            if caps is not None:
                cap = min(cap, caps[j - 1])
            # the whole graph as one untiled unit keeps its inputs and outputs in fast memory: no slow homes
            if peak > (budget if (i, j) == (0, n) else cap):
                break
            relax(i, j, traffic, False)
            untiled_fits_to = j
        # rule 2; ranges ending at or before untiled_fits_to are skipped: the untiled range has the same estimated
        # cost and no recompute, so it dominates
        first_j = max(i + 1, untiled_fits_to + 1)
        io = _RangeIO(bufs, u, i)
        cap = budget
        for j in range(i + 1, first_untileable[i] + 1):
            io.extend(j)
            if caps is not None:
                cap = min(cap, caps[j - 1])
            if j < first_j:
                continue
            if weights is not None and align_up(weights[j] - weights[i]) > cap:
                # a tiled unit holds its ops' weights in its fast prefix (chain.unit_bands adds them to every
                # layout's peak), and they only grow with the range: no longer range from i fits
                break
            if len(io.outs) != 1:
                continue
            ins, outs = list(io.ins), list(io.outs)
            ops = range(i, j)
            _, h = tiling_axis(graph, bufs, ops, outs[0], costs.accumulate_gap)
            lay = unit_bands(graph, bufs, costs, ops, outs[0], min_tile_h(h), True)
            if lay is None:
                continue
            if lay.peak > cap and fitting_bands(graph, bufs, costs, ops, outs[0], min_tile_h(h), True,
                                                cap) is None:
                # below the row floor: the range may still fit with its width cut too (tigris.plan.cols)
                cost = col_traffic(graph, bufs, costs, ops, ins, outs[0], cap) \
                    if col_fits_somewhere(graph, bufs, costs, ops, outs[0], cap) else None
                if cost is None:
                    break
                relax(i, j, cost, True)
                continue
            relax(i, j, tiled_traffic(graph, bufs, costs, ops, ins, outs[0], cap), True)
    if best[n] == INF:
        return None
    units: list[tuple[range, bool]] = []
    j = n
    while j > 0:
        i, tiled = choice[j]  # type: ignore[misc]
        units.append((range(i, j), tiled))
        j = i
    return units[::-1]


class _RangeIO:
    """``temporal.stage_io`` of the ranges ``[start, stop)`` for stop = start+1, start+2, ..., kept up to date in
    O(buffers the new op touches) per step instead of re-scanning the range (the DP asks it of every range it
    prices; on a split graph of thousands of ops that scan was cubic). ``ins`` and ``outs`` are ordered like
    ``stage_io``'s lists (first seen)."""

    def __init__(self, bufs: Buffers, u: Uses, start: int):
        self.bufs, self.u, self.start, self.stop = bufs, u, start, start
        self.ins: dict[str, None] = {}
        self.outs: dict[str, None] = {}
        self.written: set[str] = set()
        self.expire: dict[int, list[str]] = {}  # last use -> outputs that stop leaving the range after it

    def extend(self, stop: int) -> None:
        bufs, u = self.bufs, self.u
        for k in range(self.stop, stop):
            for n in bufs.reads[k]:
                if u.producer[n] < self.start:
                    self.ins[n] = None
            for n in self.expire.pop(k, ()):  # read last by op k: no longer leaves a range that holds k
                self.outs.pop(n, None)
            for n in bufs.writes[k]:
                if n in self.written:
                    continue
                self.written.add(n)
                last = u.last_use.get(n, -1)
                if n in u.outputs:
                    self.outs[n] = None
                elif last > k:
                    self.outs[n] = None
                    self.expire.setdefault(last, []).append(n)
        self.stop = stop


def tiled_traffic(
    graph: AnalyzedGraph, bufs: Buffers, costs: Costs, ops: range, ins: list[str], out: str, budget: int
) -> int:
    """Rule 2's cost: bytes a tiled range reloads and spills at the largest tile height that fits (estimated on
    sampled tiles and scaled to all of them), so halo re-reads of the inputs are counted."""
    _, h = tiling_axis(graph, bufs, ops, out, costs.accumulate_gap)
    lo = min_tile_h(h)
    # the unit reuses its halos (spatial rule 9) when that fits at one row, as chain.fit_tiles plans it
    one_row = fitting_bands(graph, bufs, costs, ops, out, lo, True, budget)
    rolling = one_row is not None and bool(one_row.rolling)
    # spatial rule 10: the layout that fits recomputes overlaps, those of tier 1 or (beyond them) of tier 2
    partial = 0 if not rolling or not one_row.recompute else \
        1 if one_row.recompute <= recompute_candidates(graph, bufs, ops, out, 1) else 2

    def estimate(rolling: bool, partial: int, must_fit: bool = False) -> tuple[int, int] | None:
        """(traffic, recomputed MACs) of the layout at the largest tile height that fits (the smallest when none does
        and not ``must_fit``); None when there is no such layout."""
        def lay(th: int) -> TiledLayout | None:
            return unit_bands(graph, bufs, costs, ops, out, th, True, rolling, partial=partial)

        th = largest_fitting(lambda t: (lay(t) is not None and lay(t).peak <= budget), lo, h)
        if th is None and must_fit:
            return None
        th = th or lo
        layout = lay(th)
        if layout is None:
            return None
        tiles = 1 + -(-(h - layout.first_h) // th) if layout.first_h else -(-h // th)  # a short first tile: one more
        sampled = len(layout.tile_rows)
        moved = [n for n in ins] + ([out] if layout.accumulate else [])  # an accumulator is spilled every tile
        # rows loaded per tile: the whole band, or (rule 9) its fresh rows; computed_rows counts either
        reload = sum(layout.computed_rows.get(n, 0) * row_bytes(graph, n) for n in moved)
        traffic = reload * tiles // sampled + (0 if layout.accumulate else bufs.nbytes[out])
        extra = 0
        for i in ops if costs.recompute_weight else ():
            o = graph.ops[i].outputs[0]
            rows = layout.computed_rows.get(o, 0) * tiles // sampled - tensor_rows(graph.tensors[o])
            extra += op_macs(graph, graph.ops[i], rows) if rows > 0 else 0
        if rolling and layout.accumulate:
            # chain.fit_tiles takes the recomputing layout where its fewer tiles move fewer accumulator bytes
            other = estimate(False, 0, True)
            if other is not None and other[0] < traffic:
                return other
        return traffic, extra

    got = estimate(rolling, partial)
    assert got is not None
    traffic, extra = got
    return traffic + (int(costs.recompute_weight * extra) if costs.recompute_weight else 0)


def col_traffic(
    graph: AnalyzedGraph, bufs: Buffers, costs: Costs, ops: range, ins: list[str], out: str, budget: int
) -> int | None:
    """Rule 2's cost of a range that fits only with column tiles: the input pixels its grid reloads (halos in both
    directions) plus its output, at the layout ``chain.fit_tiles`` gives it; recompute priced as for row tiles."""
    layout = col_layout(graph, bufs, costs, ops, out, budget)
    if layout is None:  # the narrowest grid fits but the search found no grid (a non-monotone corner)
        return None
    cost = sum(moved_bytes(graph, layout, n) for n in ins) + bufs.nbytes[out]
    if costs.recompute_weight:
        cost += int(costs.recompute_weight * layout.recompute_macs)
    return cost


def split_stages(graph: AnalyzedGraph, r: range, tiled: bool, accumulate_gap: bool = False) -> list[range]:
    """Report stages of a unit: an untiled unit is one stage; a tiled one starts a stage at each spatial op after
    its first, so each stage holds one spatial op like the spec's chain stages. An accumulating op (spatial rule 7)
    counts as spatial, as ``spatial.stage_tileable`` counts it: else a range of a pointwise conv and the GAP it
    feeds is one stage of two spatial ops, which the unit planner refuses as untileable."""
    if not tiled:
        return [r]
    from tigris.plan.spatial import op_class

    cuts = [r.start]
    seen_spatial = False
    for i in r:
        if op_class(graph, graph.ops[i], accumulate_gap) == "spatial":
            if seen_spatial:
                cuts.append(i)
            seen_spatial = True
    cuts.append(r.stop)
    return [range(a, b) for a, b in zip(cuts, cuts[1:])]
