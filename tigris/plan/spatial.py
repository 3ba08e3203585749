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
   rows; Pad shifts them by its leading H pad (a reflect/edge/wrap Pad of the rows does not tile); Resize needs ``[a//f - 1, ceil(b/f) + 1)`` (one extra row each side
   covers every coordinate-transformation mode); a Slice or Gather along H the rows its start and step (or indices)
   name; DepthToSpace / SpaceToDepth with block size B ``[a//B, (b-1)//B + 1)`` / ``[a*B, b*B)``. The result is
   clipped to the input.
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
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Callable, Sequence

from tigris.ir import AnalyzedGraph, Op
from tigris.layout import ROW_LAYOUTS
from tigris.ops import kind_for
from tigris.ops.base import OpKind
from tigris.plan.lifetime import Buffers, lifetimes, tensor_rows
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
    lo, hi = _kind(op).rows_needed(op, *rows)
    lo, hi = max(0, lo), min(h_in, hi)
    return (lo, max(lo, hi))


def receptive_field(graph: AnalyzedGraph, ops: Sequence[int]) -> int:
    """The spec's walk: RF = 1 + sum over windowed ops (reverse order) of (eff_kernel - 1) * cumulative stride."""
    rf, cum_stride = 1, 1
    for i in reversed(list(ops)):
        win = _kind(graph.ops[i]).window(graph.ops[i])
        if win is None:
            continue
        k, s, d, _ = win
        eff = k + (k - 1) * (d - 1)
        rf += (eff - 1) * cum_stride
        cum_stride *= s
    return rf


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
) -> TiledLayout | None:
    """Bands of every tensor of a tiled unit whose single output is ``output`` (rule 6); None if a tensor of the unit
    does not feed the output (its rows would be undefined) or ``tile_h`` makes more than MAX_TILES tiles.

    ``sample`` looks only at the first, middle and last eight tiles: band lengths depend on a tile's position only
    through clipping at the edges and the phase of the strides, so this is a fast *estimate* for searching; the
    plan itself is always built from every tile (and proven by ``check.py``).
    """
    gap = accumulating_gap(graph, ops, output) if accumulate_gap else None
    src, h = tiling_axis(graph, bufs, ops, output, accumulate_gap)
    if tile_h < min_tile_h(h):
        return None  # more than MAX_TILES tiles
    starts = list(range(0, h, tile_h))
    if sample and len(starts) > 24:
        mid = len(starts) // 2
        starts = starts[:8] + starts[mid - 4 : mid + 4] + starts[-8:]
    tile_rows: list[dict[str, tuple[int, int]]] = []
    biggest: dict[str, int] = {}
    computed: dict[str, int] = {}
    rev = [i for i in reversed(list(ops)) if i != gap]
    for a in starts:
        rows: dict[str, tuple[int, int]] = {src: (a, min(h, a + tile_h))}
        if gap is not None:
            rows[output] = (0, 1)  # rule 7: every tile adds its band into the one-row accumulator
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
        for name, (lo, hi) in rows.items():
            n = hi - lo
            if n > biggest.get(name, 0):
                biggest[name] = n
            computed[name] = computed.get(name, 0) + n
        tile_rows.append(rows)
    band = {n: align_up(biggest[n] * row_bytes(graph, n)) for n in biggest}
    out_rows_max = {i: biggest.get(graph.ops[i].outputs[0], 0) for i in ops}
    scratch_of = {i: (scratch_bytes_of(i, out_rows_max[i]) if scratch_bytes_of else 0) for i in ops}
    if gap is not None:
        scratch_of[gap] = max(scratch_of[gap], _kind(graph.ops[gap]).accumulator_bytes(graph, graph.ops[gap]))
    scratch = {step: align_up(scratch_of[i]) for step, i in enumerate(ops) if scratch_of[i] and i != gap}
    # lifetime rule 6 in bands: an output takes an input's home only where their bands coincide in every tile
    same_bands = lambda x, y: all(t.get(x) == t.get(y) for t in tile_rows)  # noqa: E731
    lives = lifetimes(bufs, ops, [], [output], size_of=lambda n: band[n], inplace=same_bands)
    base = weight_bytes
    if gap is not None:  # rule 7: the accumulator and its scratch survive from the first tile to the last
        lives = [replace(lt, birth=0) if lt.name == output else lt for lt in lives]
        base += align_up(scratch_of[gap])
    tl = sweep(lives, len(ops), scratch, base=base)
    extra = 0
    for i in ops:
        op = graph.ops[i]
        full = tensor_rows(graph.tensors[op.outputs[0]])
        extra += op_macs(graph, op, computed[op.outputs[0]] - full) if computed[op.outputs[0]] > full else 0
    return TiledLayout(
        tile_h, tile_rows, band, lives, scratch, scratch_of, tl.peak, tl.peak_step, extra, computed,
        [gap] if gap is not None else [],
    )


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
