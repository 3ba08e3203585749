"""Stage 5: temporal partitioning (spec section 5), the greedy forward pass.

1. Start a new stage.
2. Add ops in execution order; after each addition run the memory timeline of the stage.
3. If the peak exceeds the budget, cut before that op and start a new stage with it. A stage always keeps its first
   op even when that op alone exceeds the budget: such a stage is a candidate for spatial tiling (stage 6).
4. Repeat until every op is assigned.

A stage's *inputs* (produced by an earlier stage, or graph inputs) are reloaded from slow memory when the stage
starts, so they are live from its first step; its *outputs* (read by a later stage, or graph outputs) are spilled
when it ends, so they are live to its last step. When the plan is not XIP the stage's weights occupy a reserved
prefix of the fast arena, which counts against the budget.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

from tigris.ir import AnalyzedGraph
from tigris.plan.lifetime import Buffers, lifetimes, tensor_rows
from tigris.plan.timeline import Timeline, sweep
from tigris.plan.types import align_up


@dataclass(frozen=True)
class Uses:
    """Where each buffer is produced and read, as global op indices (-1 = before the first op)."""

    producer: dict[str, int]
    last_use: dict[str, int]
    outputs: frozenset[str]


def uses(bufs: Buffers) -> Uses:
    producer = {n: -1 for n in bufs.inputs}
    last_use: dict[str, int] = {}
    for i, (r, w) in enumerate(zip(bufs.reads, bufs.writes)):
        for n in w:
            producer.setdefault(n, i)
        for n in r:
            producer.setdefault(n, -1)
            last_use[n] = i
    return Uses(producer, last_use, frozenset(bufs.outputs))


def stage_io(bufs: Buffers, u: Uses, start: int, stop: int) -> tuple[list[str], list[str]]:
    """(inputs, outputs) of the stage holding ops ``[start, stop)``."""
    # dicts as ordered sets: the lists keep first-seen order, membership stays O(1) on long stages
    ins: dict[str, None] = {}
    outs: dict[str, None] = {}
    for i in range(start, stop):
        for n in bufs.reads[i]:
            if u.producer[n] < start:
                ins[n] = None
        for n in bufs.writes[i]:
            if u.last_use.get(n, -1) >= stop or n in u.outputs:
                outs[n] = None
    for n in bufs.outputs:  # a graph output produced here but only aliased later still leaves this stage
        if start <= u.producer.get(n, -2) < stop:
            outs[n] = None
    return list(ins), list(outs)


@dataclass(frozen=True)
class Costs:
    """Per-op costs the planner is given: non-XIP weight bytes and full-size kernel scratch."""

    weight_bytes: Callable[[int], int]
    scratch_bytes: Callable[[int, int], int]
    xip: bool
    accumulate_gap: bool = False  # spatial rule 7 (opt-in)
    recompute_weight: float = 0.0  # `tigris` strategy: bytes of slow traffic one recomputed halo MAC is worth
    halo_reuse: bool = False  # spatial rule 9: tiled units carry halo rows from tile to tile where they still fit
    # column tiles (tigris.plan.cols): a tiled range that does not fit at one output row per tile may cut its width
    col_tiles: bool = False
    force_cols: int = 0  # tests: every tiled unit that can be column-split runs exactly this many column tiles
    # spatial rule 10: a rolling unit that does not fit carrying everything may recompute its expansions' overlap
    # rows (chain.recompute_candidates) before it falls back to recomputing every halo; on where slow memory is
    # bounded (SRAM-only plans), where a unit boundary may not fit at all
    recompute_expansions: bool = False
    # rule 10's carry back (chain.carry_back): a unit recomputing overlaps carries again every buffer it still fits
    # carrying; on for the retry under the caps of the head's output written over the input (plan._overwrite_caps)
    carry_back: bool = False
    # One SRAM region with a slow budget (plan(one_region=True, slow_budget=R)): per op, the most fast bytes a unit
    # holding it may use, R less the graph inputs and outputs whose slow homes are live across every such unit (each
    # home sits above the buffers of the units it is live across, so no plan needs less). None: the budget alone.
    caps: tuple[int, ...] | None = None
    # Band layouts of candidate units (chain.unit_bands). A unit's bands do not depend on the budget, so one dict
    # shared by every probe of a budget search computes each once; it is only valid for one graph and one set of
    # the callables above.
    layouts: dict = field(default_factory=dict, compare=False, repr=False)


def range_budget(costs: Costs, budget: int, start: int, stop: int) -> int:
    """The fast budget of a unit holding ops ``[start, stop)``: ``budget``, or less where ``costs.caps`` says so."""
    if costs.caps is None or stop <= start:
        return budget
    return min(budget, min(costs.caps[start:stop]))


def stage_timeline(graph: AnalyzedGraph, bufs: Buffers, u: Uses, costs: Costs, start: int, stop: int) -> Timeline:
    ins, outs = stage_io(bufs, u, start, stop)
    ops = range(start, stop)
    lives = lifetimes(bufs, ops, ins, outs)
    scratch = {}
    for step, i in enumerate(ops):
        op = graph.ops[i]
        rows = tensor_rows(graph.tensors[op.outputs[0]]) if op.outputs and op.outputs[0] in graph.tensors else 1
        s = costs.scratch_bytes(i, rows)
        if s:
            scratch[step] = align_up(s)
    return sweep(lives, stop - start, scratch, base=stage_weight_bytes(costs, ops))


def stage_weight_bytes(costs: Costs, ops: Sequence[int]) -> int:
    return 0 if costs.xip else align_up(sum(costs.weight_bytes(i) for i in ops))


def greedy_stages(graph: AnalyzedGraph, bufs: Buffers, u: Uses, costs: Costs, budget: int) -> list[range]:
    """The spec's greedy forward pass (rules 1-4): a list of contiguous op ranges."""
    stages: list[range] = []
    start, n = 0, len(graph.ops)
    while start < n:
        stop = start + 1  # rule 3: the first op stays even when it alone overflows
        for end, peak, _traffic in grow_stage(graph, bufs, u, costs, start):
            if end > start + 1 and peak > budget:
                break
            stop = end
        stages.append(range(start, stop))
        start = stop
    return stages


def grow_stage(graph: AnalyzedGraph, bufs: Buffers, u: Uses, costs: Costs, start: int):
    """Yield ``(stop, peak, traffic)`` for the stages ``[start, stop)``, stop = start+1, start+2, ..., incrementally.

    Same figures as :func:`stage_timeline` and :func:`stage_io` (``traffic`` = bytes of inputs + outputs), in
    O(buffers live at the step) per step instead of re-sweeping the stage (the peak is a running maximum).
    Extending a stage never lowers the usage of its earlier steps:
    tensors it produces were already kept to its end, and an input read again at the new step only lives longer.
    So the peak never decreases with ``stop``, and a caller may stop at the first overflow.
    """
    n = len(graph.ops)
    usage: list[int] = []
    peak = 0  # max(usage), kept up to date: usage entries only ever grow
    last_read: dict[str, int] = {}  # stage input -> last step reading it so far
    kept: dict[str, int] = {}  # produced here and needed after the current step -> aligned size
    kept_bytes = 0  # exact bytes of `kept` (spilled if the stage ended here)
    in_bytes = 0
    weights = 0
    for j in range(start, n):
        r = j - start
        usage.append(0)
        # lifetime rule 6: the first candidate produced in the stage whose last use is this op gives its home to the
        # output, so it is not counted at this step
        given = next((x for x in (bufs.inplace[j] if bufs.inplace else ())
                      if u.last_use.get(x) == j and (u.producer[x] >= start or j in bufs.prefix or j in bufs.over_reload)), None)
        for t in bufs.reads[j]:
            if u.producer[t] >= start or t in kept:  # kept: a joined buffer entering and written here (rule 7)
                continue
            size = bufs.size(t)
            prev = last_read.get(t)
            if prev is None:
                in_bytes += bufs.nbytes[t]
                prev = -1  # born at step 0: reloaded when the stage starts
            for s in range(prev + 1, r):  # each step is covered once per input: linear over the whole growth
                usage[s] += size
                if usage[s] > peak:
                    peak = usage[s]
            usage[r] += 0 if t == given else size
            last_read[t] = r
        if given is not None and bufs.pieces and given in bufs.pieces[j]:
            usage[r] += bufs.pieces[j][given][1]  # piecewise: the input's tail and the temporary
        for t, size in list(kept.items()):
            usage[r] += 0 if t == given else size
            if u.last_use.get(t, -1) <= j and t not in u.outputs:
                del kept[t]
                kept_bytes -= bufs.nbytes[t]
        for t in bufs.writes[j]:
            if t in kept:
                continue  # lifetime rule 7: a later producer of a joined buffer this stage already holds
            if t not in last_read:  # (an entering joined buffer is counted at this step as read)
                usage[r] += bufs.size(t)
            if u.last_use.get(t, -1) > j or t in u.outputs:
                kept[t] = bufs.size(t)
                kept_bytes += bufs.nbytes[t]
        op = graph.ops[j]
        rows = tensor_rows(graph.tensors[op.outputs[0]]) if op.outputs and op.outputs[0] in graph.tensors else 1
        usage[r] += align_up(costs.scratch_bytes(j, rows))
        weights += 0 if costs.xip else costs.weight_bytes(j)
        traffic = 0 if start == 0 and j + 1 == n else in_bytes + kept_bytes
        if usage[r] > peak:
            peak = usage[r]
        yield j + 1, peak + align_up(weights), traffic
