"""Stage 6: spatial partitioning (spec section 6): op classes, the tileable rule, receptive field, halo, tile height.

Rules:

1. Every op has a tiling class, declared by its kind (``OpKind.tiling``): *spatial* ops read a window of input rows
   (Conv, DepthwiseConv, Conv1D, ConvTranspose, MaxPool, AveragePool), *pointwise* ops read the rows they write (the elementwise
   ops, Concat, Resize, Pad, Quantize/Dequantize), *structural* ops need their whole input. An op type no kind
   lowers is structural.
2. GlobalAveragePool is structural as an op of its own: it needs every input row at once. Rule 7 is the exception
   that lets it end a tiled unit.
3. An op is tileable when its class is spatial or pointwise, its output is stored row-major by H (``nhwc``, or the L
   axis of ``nwc``), every activation input is too, or has one row (a broadcast operand read whole by every tile),
   and it does not mix rows (``OpKind.mixes_rows``: Concat along the physical H axis does).
4. A *stage* is tileable when every op is tileable, it holds at most one spatial op (spec), and it leaves exactly one
   tensor behind (the tiler cuts that one output into disjoint row ranges; a second output would be written in
   overlapping bands).
5. Rows needed from an input for output rows ``[a, b)`` (``OpKind.rows_needed``): for a windowed op with kernel k,
   stride s, dilation d and leading pad p, ``[a*s - p, (b-1)*s - p + (k-1)*d + 1)``; a ConvTranspose (its own row
   map) ``[ceil((a + p - (k-1)*d) / s), floor((b-1 + p) / s) + 1)``; pointwise ops need the same
   rows; Pad shifts them by its leading H pad (a reflect/edge/wrap Pad of the rows: the hull of the rows its mode
   maps them to, its ``row_src``); Resize needs ``[a//f - 1, ceil(b/f) + 1)`` (one extra row each side
   covers every coordinate-transformation mode); a Slice or Gather along H the rows its start and step (or indices)
   name; DepthToSpace / SpaceToDepth with block size B ``[a//B, (b-1)//B + 1)`` / ``[a*B, b*B)``; an operand the
   kind reads whole (``OpKind.whole_inputs``: a product's second operand) every row. The result is clipped to the
   input.
6. A tiled unit is run tile by tile; for every tile all ops run on bands. The rows of every tensor for one tile are
   found by walking the ops in reverse from the unit output's rows, taking the hull over consumers. Each band buffer
   is sized for its largest band.
7. On by default (``accumulate_gap``; the runtime implements it with the unit flag ACCUM): an op whose kind
   ``accumulates`` (GlobalAveragePool) may end a tiled unit; the runtime zeroes its output before the first tile,
   adds the sums of each tile's input band, divides (float) or requantizes (int8) after the last. The tiles then cut
   the GAP's input rows; the GAP output has the band (0, 1) in every tile and lives, with the kernel's scratch
   (``OpKind.accumulator_bytes``: int32 sums for int8), across all tiles. ``ExecUnit.accumulate`` lists such ops.
   Such a GAP counts as the unit's spatial op.
8. A Softmax whose axis is not the row axis (per-pixel class scores: Softmax over the channels of an NHWC tensor) is
   pointwise for tiling: each line lies inside one row, and the kernel runs on bands of such lines.
9. Halo reuse (``rolling=True``, the unit flag ROLLING): tiles run in row order, so the rows a buffer's band in tile t
   shares with its band in tile t-1 were computed by tile t-1. They are *carried* instead of recomputed: right after
   its producer runs in tile t-1 the runtime copies them into the buffer's *line buffer*, a small buffer of its own
   live from tile to tile, and right before the producer runs in tile t copies them back to the top of the band
   buffer; the producer computes only the rows after them, the *fresh* rows (:func:`carried_rows`). A reloaded input
   carries the same way and loads only its fresh rows. The walk of rule 6 derives an op's input needs from the fresh
   rows of its output, not from its whole band, so every row of every buffer is computed (or loaded) once. A buffer
   whose consumers need nothing new keeps its rows (its band ends no earlier than in the tile before). Its band
   buffer then lives as in a recomputing unit (producer to last reader) and its line buffer holds the most rows it
   ever carries; or, without a line buffer, the band buffer lives from tile to tile and the runtime moves the
   carried rows from its end to its top in place (cheaper when the band is live most of the tile anyway). Each unit
   takes the cheaper of all-line and all-in-place, then switches single buffers while that lowers its peak. A
   carrying buffer takes no part in an in-place pair. Bands of a carrying buffer never move
   backwards (row maps are monotone; a unit where one would is not planned rolling). The accumulating GAP's output
   (rule 7) never carries. The first tile carries nothing, so its bands hold every op's halo stacked up on the rows
   it computes; a short first tile (one output row, ``FIRST_TILE_SHORT``; the later tiles ``tile_h`` rows each)
   keeps that prologue off the later tiles' band sizes, and the unit takes it where that lowers the peak.
10. Recomputed overlaps in a rolling unit (``plan_bands(recompute=...)``): a buffer named there carries nothing
   although its bands overlap; its producer computes the whole band in every tile, so its inputs' needs come from
   that band. A wide tensor made by a 1x1 conv from a narrow one (an inverted-residual block's expansion, read by a
   3x3 depthwise conv) then keeps no line buffer: its narrow input carries the overlap rows instead, and the expand
   recomputes them (``TiledLayout.recompute``, the runtime's "never carries" line-buffer entry). That is tier 1
   (``chain.recompute_candidates``); tier 2, tried only where tier 1 does not fit, also recomputes the output of a
   windowed op whose inputs all enter the unit and are narrower per row (times its stride) than it (a stem conv
   3x3/2 of an RGB image: the loaded image rows carry the overlap). Carry back (``chain.carry_back``) then carries
   again, one at a time, the buffers whose carrying still fits the unit's budget.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Callable, Sequence

from tigris.ir import AnalyzedGraph, Op
from tigris.layout import ROW_LAYOUTS
from tigris.ops import kind_for
from tigris.ops.base import OpKind
from tigris.plan.lifetime import Buffers, Lifetime, lifetimes, tensor_rows
from tigris.plan.timeline import sweep
from tigris.plan.types import align_up

_NO_KIND = OpKind()  # the answers for an op type no kind lowers: structural, no window, no MACs


def _kind(op: Op) -> OpKind:
    return kind_for(op.op_type) or _NO_KIND


def accumulates(op: Op) -> bool:
    """Rule 7: the op may end a tiled unit, accumulating over its tiles."""
    return _kind(op).accumulates


def op_class(graph: AnalyzedGraph, op: Op, accumulate_gap: bool = False) -> str:
    """'spatial', 'pointwise' or 'structural' (rules 1-2 and 8; rule 7 for an accumulating op)."""
    if accumulate_gap and accumulates(op):
        return "spatial"
    return _kind(op).tiling(graph, op)


def untileable_reason(graph: AnalyzedGraph, op: Op, accumulate_gap: bool = False) -> str | None:
    """Why ``op`` cannot run on row bands (rule 3), or None when it can."""
    cls = op_class(graph, op, accumulate_gap)
    if cls == "structural":
        return f"{op.op_type} is structural"
    out = graph.tensors[op.outputs[0]]
    if out.layout not in ROW_LAYOUTS:
        return f"output {out.name} is not row-major ({out.layout})"
    for name in op.inputs:
        if not name or graph.is_const(name):
            continue
        t = graph.tensors[name]
        if t.layout not in ROW_LAYOUTS and t.numel > 1 and cls != "pointwise":
            return f"input {name} is not row-major"
        if t.layout not in ROW_LAYOUTS and cls == "pointwise":
            # A plain operand broadcast against a row-major output works only if it has no row extent.
            padded = (1,) * (len(out.shape) - len(t.shape)) + tuple(t.shape)
            if len(padded) != len(out.shape) or padded[2] != 1:
                return f"input {name} is not row-major"
    return _kind(op).mixes_rows(graph, op)


def stage_tileable(
    graph: AnalyzedGraph, ops: Sequence[int], outputs: Sequence[str], accumulate_gap: bool = False
) -> str | None:
    """Why a stage cannot be tiled (rule 4), or None when it can."""
    n_spatial = 0
    for i in ops:
        op = graph.ops[i]
        why = untileable_reason(graph, op, accumulate_gap)
        if why:
            return f"{op.name}: {why}"
        if accumulates(op) and i != ops[-1]:
            return f"{op.name}: an accumulating {op.op_type} must end its unit"
        n_spatial += op_class(graph, op, accumulate_gap) == "spatial"
    if n_spatial > 1:
        return f"{n_spatial} spatial ops"
    if len(outputs) != 1:
        return f"{len(outputs)} outputs"
    return None


def input_rows(graph: AnalyzedGraph, op: Op, name: str, rows: tuple[int, int]) -> tuple[int, int]:
    """Rows of activation input ``name`` that ``op`` needs to compute output rows ``rows`` (rule 5)."""
    t = graph.tensors[name]
    h_in = tensor_rows(t)
    if t.layout not in ROW_LAYOUTS or h_in == 1:
        return (0, h_in)  # broadcast operand: read whole by every tile
    kind = _kind(op)
    if any(op.inputs[i] == name for i in kind.whole_inputs(graph, op) if i < len(op.inputs)):
        return (0, h_in)  # an operand every band reads whole (a product's second operand)
    if any(op.inputs[i] == name for i in kind.same_rows_inputs(graph, op) if i < len(op.inputs)):
        lo, hi = max(0, rows[0]), min(h_in, rows[1])  # an accumulator added into at the output's own rows
        return (lo, max(lo, hi))
    own = kind.input_rows_of(graph, op, name, *rows)
    lo, hi = kind.rows_needed(op, *rows) if own is None else own
    lo, hi = max(0, lo), min(h_in, hi)
    return (lo, max(lo, hi))


def receptive_field(graph: AnalyzedGraph, ops: Sequence[int]) -> int:
    """The spec's walk: RF = 1 + sum over windowed ops (reverse order) of (eff_kernel - 1) * cumulative stride, on a
    chain of ops. Ops that run side by side (the branches of a block, channel groups) are not one chain: the walk
    follows each path of producers to consumers within ``ops`` and takes the largest, which is the spec's sum on a
    chain (``acc = acc * stride + (eff_kernel - 1)`` along the path, forwards)."""
    acc: dict[int, int] = {}
    made = {}  # tensor -> the op of ``ops`` producing it
    for i in ops:
        op = graph.ops[i]
        kind = _kind(op)
        same = {op.inputs[j] for j in kind.same_rows_inputs(graph, op) if j < len(op.inputs)}
        before = max((acc[made[n]] for n in op.inputs if n in made and n not in same), default=0)
        win = kind.window(op)
        if win is None:
            acc[i] = before
        else:
            k, s, d, _ = win
            acc[i] = before * s + (k - 1) * d  # (eff_kernel - 1) = (k - 1) * d
        # an accumulator read at the output's own rows adds no window
        acc[i] = max([acc[i], *(acc[made[n]] for n in same if n in made)])
        for n in op.outputs:
            made[n] = i
    return 1 + max(acc.values(), default=0)


def halo(graph: AnalyzedGraph, ops: Sequence[int]) -> int:
    return receptive_field(graph, ops) - 1


def spec_tile_h(budget: int, h: int, peak: int, halo_rows: int) -> int:
    """The spec's estimate ``floor(budget * H / peak) - halo``, clamped to [1, H]."""
    if peak <= 0:
        return h
    return max(1, min(h, budget * h // peak - halo_rows))


def spec_tiled_peak(peak: int, tile_h: int, halo_rows: int, h: int) -> int:
    """The spec's approximation ``peak * (tile_h + halo) / H``."""
    return math.ceil(peak * (tile_h + halo_rows) / h)


def spec_halo_cost(halo_bytes: int, tiles: int) -> int:
    """The spec's recompute overhead in bytes: ``halo_bytes * (tiles - 1)``."""
    return halo_bytes * max(0, tiles - 1)


def op_window(op: Op) -> tuple[int, int, int, int] | None:
    """(kernel, stride, dilation, leading pad) along H of a windowed op, as its kind declares them; None otherwise."""
    return _kind(op).window(op)


def op_macs(graph: AnalyzedGraph, op: Op, out_rows: int | None = None) -> int:
    """Multiply-accumulates of ``op`` for ``out_rows`` output rows (all rows when None), as its kind counts them."""
    return _kind(op).macs(graph, op, out_rows)


@dataclass
class TiledLayout:
    """The band plan of a tiled unit at one tile height (rule 6)."""

    tile_h: int
    tile_rows: list[dict[str, tuple[int, int]]]  # per tile: buffer -> (start, stop)
    band_bytes: dict[str, int]  # buffer -> aligned size of its largest band
    lives: list  # Lifetime of every band buffer, unit steps
    scratch: dict[int, int]  # step -> scratch bytes
    scratch_of: dict[int, int]  # op index -> scratch bytes
    peak: int  # weight prefix + timeline peak of the band buffers
    peak_step: int
    recompute_macs: int = 0
    computed_rows: dict[str, int] = field(default_factory=dict)  # buffer -> rows computed over all tiles
    accumulate: list[int] = field(default_factory=list)  # rule 7: GAP ops accumulating over the tiles
    rolling: frozenset[str] = frozenset()  # rule 9: buffers that carry rows from tile to tile (empty: recompute)
    # rule 9: carrying buffer -> bytes of its line buffer; a carrying buffer without one carries in place (its band
    # buffer lives from tile to tile, so its Lifetime in ``lives`` covers every step)
    carry: dict[str, int] = field(default_factory=dict)
    carry_lives: list = field(default_factory=list)  # rule 9: Lifetime of each line buffer (every step of a tile)
    # column tiles (tigris.plan.cols): per tile the column band of every buffer (empty: full rows), pixels of every
    # buffer over all tiles, and each op's recomputed MACs
    tile_cols: list = field(default_factory=list)
    pixels: dict[str, int] = field(default_factory=dict)
    extra_of: dict[int, int] = field(default_factory=dict)
    first_h: int = 0  # rule 9: output rows of a short first tile (0: the first tile is tile_h rows like the others)
    # rule 10: buffers of a rolling unit whose bands overlap from tile to tile but which carry nothing: their
    # producer computes the whole band in every tile (the overlap rows recomputed instead of kept)
    recompute: frozenset[str] = frozenset()


def carried_rows(prev: tuple[int, int] | None, cur: tuple[int, int]) -> int:
    """Rule 9: rows of band ``cur`` a carrying buffer keeps from its band ``prev`` of the previous tile (0 when the
    two do not overlap; the bands of a carrying buffer never move backwards, so the kept rows are the first of
    ``cur``)."""
    if prev is None or prev[1] <= prev[0] or cur[0] >= prev[1]:
        return 0
    return prev[1] - cur[0]


def fresh_rows(prev: tuple[int, int] | None, cur: tuple[int, int]) -> tuple[int, int]:
    """Rule 9: the rows of band ``cur`` a tile computes (or loads) when the buffer carries from band ``prev``."""
    return (cur[0] + carried_rows(prev, cur), cur[1])


def monotone(prev: tuple[int, int] | None, cur: tuple[int, int]) -> bool:
    """Rule 9: a band that carries rows from ``prev`` starts and ends no earlier than ``prev``."""
    return not carried_rows(prev, cur) or (prev[0] <= cur[0] and prev[1] <= cur[1])  # type: ignore[index]


def same_rows(graph: AnalyzedGraph, view: str, root: str) -> bool:
    """An alias view can be banded like its buffer when both have the same rows of the same bytes (the runtime
    reads the band from the root's rows and hands the kernel the view's dims)."""
    a, r = graph.tensors[view], graph.tensors[root]
    return tensor_rows(a) == tensor_rows(r) and row_bytes(graph, view) == row_bytes(graph, root)


def row_bytes(graph: AnalyzedGraph, name: str) -> int:
    t = graph.tensors[name]
    return t.nbytes // max(1, tensor_rows(t))


MAX_TILES = 16384  # tiles per unit: bounds the plan's per-tile records and the planner's per-tile work
SAMPLED_SEARCH_ROWS = 1024  # tiling axes longer than this search the tile height on sampled tiles first
# rule 9: a rolling unit may run its first tile on one output row (tigris.plan.chain.unit_bands takes it where that
# lowers the peak; False: every tile tile_h rows, the earlier rule)
FIRST_TILE_SHORT = True


def min_tile_h(h: int) -> int:
    """The smallest tile height the planner considers for a tiling axis of ``h`` rows (at most MAX_TILES tiles)."""
    return max(1, -(-h // MAX_TILES))


def plan_bands(
    graph: AnalyzedGraph,
    bufs: Buffers,
    ops: Sequence[int],
    output: str,
    tile_h: int,
    weight_bytes: int = 0,
    scratch_bytes_of: Callable[[int, int], int] | None = None,
    sample: bool = False,
    accumulate_gap: bool = False,
    rolling: bool = False,
    first_h: int | None = None,
    recompute: frozenset[str] = frozenset(),
) -> TiledLayout | None:
    """Bands of every tensor of a tiled unit whose single output is ``output`` (rule 6); None if a tensor of the unit
    does not feed the output (its rows would be undefined) or ``tile_h`` makes more than MAX_TILES tiles. With
    ``rolling`` the bands follow rule 9 (halo reuse), and ``first_h`` (below ``tile_h``) makes the first tile that
    many output rows, the others ``tile_h`` each; None when a carrying band would move backwards. ``recompute``
    (rolling only, rule 10) names buffers that carry nothing: their producers compute their whole bands every tile.

    ``sample`` looks only at the first, middle and last eight tiles: band lengths depend on a tile's position only
    through clipping at the edges and the phase of the strides, so this is a fast *estimate* for searching; the
    plan itself is always built from every tile (and proven by ``check.py``). A rolling band also depends on the
    previous tile's, so each sampled run of tiles is preceded by one tile it is not counted for.
    """
    gap = accumulating_gap(graph, ops, output) if accumulate_gap else None
    src, h = tiling_axis(graph, bufs, ops, output, accumulate_gap)
    if tile_h < min_tile_h(h):
        return None  # more than MAX_TILES tiles
    # rule 9: ``first_h`` rows in the first tile (a short first tile: FIRST_TILE_SHORT), tile_h in every later one
    first = first_h if rolling and first_h is not None and 0 < first_h < tile_h < h else tile_h
    starts = [0] + list(range(first, h, tile_h))
    if len(starts) > MAX_TILES:
        return None
    stop_of = {a: b for a, b in zip(starts, starts[1:] + [h])}
    counted = [True] * len(starts)
    if sample and len(starts) > 24:
        mid = len(starts) // 2
        picks = [range(0, 8), range(mid - 4, mid + 4), range(len(starts) - 8, len(starts))]
        if rolling:  # a warm-up tile before each run, so its first tile carries as it would
            picks = [range(max(0, r.start - 1), r.stop) for r in picks]
        idx = [j for r in picks for j in r]
        # rolling: the first tile of a run (other than tile 0) is its warm-up, walked but not counted
        counted = [not rolling or j == 0 or (k > 0 and idx[k - 1] == j - 1) for k, j in enumerate(idx)]
        starts = [starts[j] for j in idx]
    tile_rows: list[dict[str, tuple[int, int]]] = []
    biggest: dict[str, int] = {}
    computed: dict[str, int] = {}
    fresh_max: dict[str, int] = {}
    carrying: set[str] = set()
    rev = [i for i in reversed(list(ops)) if i != gap]
    prev: dict[str, tuple[int, int]] = {}
    for a, count in zip(starts, counted):
        if rolling:
            walked = _rolling_tile(graph, bufs, rev, src, (a, stop_of[a]), output if gap is not None else None,
                                   prev if count else {}, recompute)
            if walked is None:
                return None
            rows, fresh = walked
        else:
            rows = _recompute_tile(graph, bufs, rev, src, (a, stop_of[a]), output if gap is not None else None)
            if rows is None:
                return None
            fresh = rows
        if count and rolling:
            carrying.update(n for n in rows if fresh[n] != rows[n])
        prev = rows
        if not count:
            continue
        for name, (lo, hi) in rows.items():
            n = hi - lo
            if n > biggest.get(name, 0):
                biggest[name] = n
            f = fresh[name][1] - fresh[name][0]
            computed[name] = computed.get(name, 0) + f
            fresh_max[name] = max(fresh_max.get(name, 0), f)
        tile_rows.append(rows)
    band = {n: align_up(biggest[n] * row_bytes(graph, n)) for n in biggest}
    # a kernel computes the fresh rows of its output (rule 9; every row of its band when recomputing)
    out_rows_max = {i: fresh_max.get(graph.ops[i].outputs[0], 0) for i in ops}
    scratch_of = {i: (scratch_bytes_of(i, out_rows_max[i]) if scratch_bytes_of else 0) for i in ops}
    if gap is not None:
        scratch_of[gap] = max(scratch_of[gap], _kind(graph.ops[gap]).accumulator_bytes(graph, graph.ops[gap]))
    scratch = {step: align_up(scratch_of[i]) for step, i in enumerate(ops) if scratch_of[i] and i != gap}
    # lifetime rule 6 in bands: an output takes an input's home only where their bands coincide in every tile, and
    # (rule 9) neither carries rows from tile to tile
    same_bands = lambda x, y: x not in carrying and y not in carrying and \
        all(t.get(x) == t.get(y) for t in tile_rows)  # noqa: E731

    def banded_piece(i: int, x: str, y: str) -> tuple[int, int] | None:
        # piecewise (a window op over its own input): every tile's bands start at one address; the temporary holds
        # the most rows any tile needs
        if x in carrying or y in carrying:
            return None
        op, need = graph.ops[i], 1
        k = _kind(op)
        irb, orb = row_bytes(graph, x), row_bytes(graph, y)
        computing = [t for t in tile_rows if x in t and y in t and t[y][1] > t[y][0]]
        for t in computing:
            need = max(need, k.piece_rows(op, t[x], t[y], irb, orb))
        if any(t[y][1] - t[y][0] < need for t in computing):
            return None  # the runtime refuses a temporary taller than a band it computes (a short last tile)
        temp = align_up(need * orb)
        return (need, band[x] - band[y] + temp) if band[y] <= band[x] and temp < band[y] else None

    lives = lifetimes(bufs, ops, [], [output], size_of=lambda n: band[n], inplace=same_bands, piece_of=banded_piece)
    base = weight_bytes
    last = len(ops) - 1
    if gap is not None:  # rule 7: the accumulator and its scratch survive from the first tile to the last
        lives = [replace(lt, birth=0) if lt.name == output else lt for lt in lives]
        base += align_up(scratch_of[gap])
    # rule 9: each carrying buffer has a line buffer for the rows it carries, live from tile to tile
    carry_max: dict[str, int] = {}
    for t0, t1 in zip(tile_rows, tile_rows[1:]):
        for n in carrying:
            c = carried_rows(t0.get(n), t1[n]) if n in t1 else 0
            if c > carry_max.get(n, 0):
                carry_max[n] = c
    line = {n: align_up(c * row_bytes(graph, n)) for n, c in sorted(carry_max.items())}

    def keep(lined: frozenset[str]):
        # buffers in ``lined`` carry through their line buffer; the other carrying ones keep their band buffer
        # alive from tile to tile and carry in place
        lv = [replace(lt, birth=0, death=last) if lt.name in line and lt.name not in lined else lt for lt in lives]
        cl = [Lifetime(n, line[n], 0, last) for n in sorted(lined)]
        return sweep(lv + cl, len(ops), scratch, base=base), lv, cl

    # the cheaper of all-line and all-in-place, then one pass of single switches that lower the peak
    options = [keep(frozenset(line)), keep(frozenset())]
    best_set = frozenset(line) if options[0][0].peak <= options[1][0].peak else frozenset()
    best = min(options, key=lambda o: o[0].peak)
    for n in line:
        trial = best_set ^ {n}
        got = keep(trial)
        if got[0].peak < best[0].peak:
            best, best_set = got, trial
    tl, lives, carry_lives = best
    carry = {n: line[n] for n in sorted(best_set)}
    extra = 0
    for i in ops:
        op = graph.ops[i]
        full = tensor_rows(graph.tensors[op.outputs[0]])
        extra += op_macs(graph, op, computed[op.outputs[0]] - full) if computed[op.outputs[0]] > full else 0
    # the recomputed buffers the runtime must be told of: those whose bands overlap from one tile to the next
    told = frozenset(n for n in recompute if any(carried_rows(t0.get(n), t1[n]) for t0, t1 in
                                                 zip(tile_rows, tile_rows[1:]) if n in t1))
    return TiledLayout(
        tile_h, tile_rows, band, lives, scratch, scratch_of, tl.peak, tl.peak_step, extra, computed,
        [gap] if gap is not None else [], frozenset(line), carry, carry_lives, first_h=first if first < tile_h else 0,
        recompute=told,
    )


def _recompute_tile(
    graph: AnalyzedGraph, bufs: Buffers, rev: list[int], src: str, out_rows: tuple[int, int], acc_out: str | None,
) -> dict[str, tuple[int, int]] | None:
    """Rule 6 for one tile: the band of every buffer, each op computing its output's whole band."""
    rows: dict[str, tuple[int, int]] = {src: out_rows}
    if acc_out is not None:
        rows[acc_out] = (0, 1)  # rule 7: every tile adds its band into the one-row accumulator
    for i in rev:
        op = graph.ops[i]
        if accumulates(op):
            return None  # only the unit's last op may reduce over H
        out_name = op.outputs[0]
        if out_name not in rows:
            return None
        r = rows[out_name]
        for name in op.inputs:
            if not name or graph.is_const(name):
                continue
            root = bufs.root(name)
            if root != name and not same_rows(graph, name, root):
                return None  # bands of this reshaped view are not bands of its buffer
            lo, hi = input_rows(graph, op, name, r)
            name = root
            if name in rows:
                plo, phi = rows[name]
                lo, hi = min(lo, plo), max(hi, phi)
            rows[name] = (lo, hi)
    return rows


def _rolling_tile(
    graph: AnalyzedGraph, bufs: Buffers, rev: list[int], src: str, out_rows: tuple[int, int], acc_out: str | None,
    prev: dict[str, tuple[int, int]], recompute: frozenset[str] = frozenset(),
) -> tuple[dict[str, tuple[int, int]], dict[str, tuple[int, int]]] | None:
    """Rule 9 for one tile after a tile with bands ``prev`` (empty for the first): (band, fresh rows) of every
    buffer. An op computes only its output's fresh rows, so its inputs' needs come from those; a buffer in
    ``recompute`` (rule 10) has its whole band fresh."""
    needs: dict[str, tuple[int, int]] = {src: out_rows}  # hull of the non-empty needs
    seen = {src}  # buffers some op of the tile reads (or the unit output)
    rows: dict[str, tuple[int, int]] = {}
    fresh: dict[str, tuple[int, int]] = {}

    def settle(name: str) -> bool:
        # a buffer no consumer needs anything new of keeps its previous band (it carries it whole)
        band = needs.get(name) or prev.get(name) or (0, 0)
        p = prev.get(name)
        if name in recompute:  # rule 10: computed whole in every tile, nothing kept from the tile before
            rows[name] = fresh[name] = band
            return True
        if p is not None and p[0] < p[1] and band[0] < p[1] and band[1] < p[1]:
            band = (band[0], p[1])  # what it needs was computed before: it keeps those rows, ending where it did
        if not monotone(p, band):
            return False
        rows[name] = band
        fresh[name] = fresh_rows(p, band)
        return True

    if acc_out is not None:
        rows[acc_out] = fresh[acc_out] = (0, 1)  # rule 7: the accumulator never carries
    for i in rev:
        op = graph.ops[i]
        if accumulates(op):
            return None
        out_name = op.outputs[0]
        if out_name not in seen or not settle(out_name):
            return None
        f = fresh[out_name]
        for name in op.inputs:
            if not name or graph.is_const(name):
                continue
            root = bufs.root(name)
            if root != name and not same_rows(graph, name, root):
                return None
            seen.add(root)
            if f[1] <= f[0]:
                continue  # nothing fresh: the op does not run in this tile
            lo, hi = input_rows(graph, op, name, f)
            if hi <= lo:
                continue
            if root in needs:
                plo, phi = needs[root]
                lo, hi = min(lo, plo), max(hi, phi)
            needs[root] = (lo, hi)
    for name in seen:
        if name not in rows and not settle(name):  # buffers entering the unit: loaded fresh rows only
            return None
    return rows, fresh


def accumulating_gap(graph: AnalyzedGraph, ops: Sequence[int], output: str) -> int | None:
    """The accumulating op (GlobalAveragePool) ending the unit and producing ``output`` (rule 7), if any."""
    last = list(ops)[-1]
    op = graph.ops[last]
    return last if accumulates(op) and op.outputs[0] == output else None


def tiling_axis(
    graph: AnalyzedGraph, bufs: Buffers, ops: Sequence[int], output: str, accumulate_gap: bool = False
) -> tuple[str, int]:
    """(buffer whose rows the tiles cut, its row count): the unit output, or the input of an accumulating GAP."""
    gap = accumulating_gap(graph, ops, output) if accumulate_gap else None
    if gap is None:
        return output, tensor_rows(graph.tensors[output])
    name = graph.ops[gap].inputs[0]
    return bufs.root(name), tensor_rows(graph.tensors[name])


def largest_fitting(fits: Callable[[int], bool], lo: int, hi: int) -> int | None:
    """Binary search for the largest x in [lo, hi] with fits(x), assuming fits is (mostly) monotone decreasing.

    Only values that were actually tested and fit are returned, so a non-monotone corner never yields a bad plan.
    """
    best = None
    while lo <= hi:
        mid = (lo + hi) // 2
        if fits(mid):
            best, lo = mid, mid + 1
        else:
            hi = mid - 1
    return best
