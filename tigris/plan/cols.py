"""Column tiles (two-dimensional tiling): a tiled unit that also cuts its tensors along the width W.

A row-tiled unit needs at least one output row per tile, so one op's whole input row band (kernel-height rows of the
full width) bounds the fast budget. A *column-split unit* (unit flag COLS, ``ExecUnit.tile_cols``) runs a grid of
tiles: row bands exactly as a recomputing tiled unit (spatial rule 6) times column bands, all column tiles of row band
0 first, then of row band 1, and so on. Rules:

1. Scope (:func:`cols_reason`): every op is column-local per its kind (``OpKind.col_local``: per pixel along W, or a
   window along W); every tensor of the unit is a single ``nhwc`` image that is its own buffer (no alias view); the
   unit does not accumulate (spatial rule 7; rule 6 below is the exception), does not carry (rule 9) and has no
   in-place pair (lifetime rule 6). The unit has one output, like every tiled unit. A buffer may have several
   consumers in the unit (a branch point: SqueezeNet's squeeze output feeds a 1x1 and a 3x3 expand): its band is
   the hull of their needs, in rows and in columns; a windowed consumer must need exactly that hull's columns (its
   kernel reads its whole input band), a per-pixel one or a 1x1 conv may need fewer (:func:`reads_sub_bands`; the
   runtime then runs it row by row on sub-band views, docs/format.md "COLS units"), else the grid is not planned.
2. Column bands: the unit output's W is cut into ``n`` disjoint bands, the widest first (``W // n`` columns, one more
   for the first ``W % n``). A reverse walk gives every buffer, per column band, exactly the columns its consumers
   need for their own bands (``OpKind.cols_needed``, the W window ``[a*s - p, (b-1)*s - p + (k-1)*d + 1)`` or the
   same columns; the hull over several consumers), clipped to ``[0, W)``; an input of width 1 is read whole
   (``(0, 1)``).
3. Row and column maps are independent, so a buffer's band in tile ``(r, c)`` is its row band of row band ``r``
   times its column band of column band ``c``: the walks run once per row band and once per column band, not per
   tile. A band buffer holds a dense ``[rows, cols, C]`` block, sized for the most rows times the most columns.
4. Costs: each tile reloads the input pixels of its bands (the column halos are read again by the neighbouring
   tile), spills its output band (the output once in all), and recomputes the overlapping pixels of intermediate
   bands in both directions; ``extra_of`` gives each op's extra MACs.
5. Search (``chain.fit_tiles``, ``search.dp_units``): only below the row floor, i.e. when a tiled range does not fit
   at one output row per tile: the fewest column tiles that fit at the smallest tile height, then the largest tile
   height with that many. The planner tries the whole plan without column tiles first and plans again with them only
   when that fails, so every plan that fits without them is unchanged.
6. An accumulating GlobalAveragePool may end a column-split unit (``COLS_ACCUM``; the runtime accumulates over
   the grid, docs/format.md "COLS units"): the grid then cuts the GAP's input, the GAP's output is the pixel ``(0, 1) x (0, 1)``
   of every tile and lives, with the accumulator scratch, across all tiles, as in spatial rule 7.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Sequence

from tigris.ir import AnalyzedGraph, Op
from tigris.plan.lifetime import Buffers, lifetimes, tensor_rows
from tigris.plan.spatial import (
    MAX_TILES, TiledLayout, _kind, _recompute_tile, accumulates, largest_fitting, min_tile_h, op_macs, row_bytes,
)
from tigris.plan.timeline import sweep
from tigris.plan.types import align_up


# An accumulating GlobalAveragePool may end a column-split unit (rule 6): the runtime adds each tile's column band
# (unit flags COLS and ACCUM together).
COLS_ACCUM = True


def width(graph: AnalyzedGraph, name: str) -> int:
    """W of an nhwc image (its physical axis 2)."""
    return int(graph.tensors[name].shape[3])


def pixel_bytes(graph: AnalyzedGraph, name: str) -> int:
    """Bytes of one pixel (all channels) of a single nhwc image: a band of r rows and c columns holds r*c of them."""
    t = graph.tensors[name]
    return t.nbytes // max(1, int(t.shape[2]) * int(t.shape[3]))


def accumulating(graph: AnalyzedGraph, ops: Sequence[int], output: str, accumulate_gap: bool) -> int | None:
    """Rule 6: the accumulating GlobalAveragePool ending the unit and producing ``output``, when allowed."""
    last = list(ops)[-1]
    op = graph.ops[last]
    ok = COLS_ACCUM and accumulate_gap and accumulates(op) and op.outputs[0] == output
    return last if ok else None


def grid_source(graph: AnalyzedGraph, bufs: Buffers, ops: Sequence[int], output: str,
                accumulate_gap: bool = False) -> str:
    """The buffer whose rows and columns the grid cuts: the unit output, or the input of an accumulating GAP."""
    gap = accumulating(graph, ops, output, accumulate_gap)
    return output if gap is None else bufs.root(graph.ops[gap].inputs[0])


def cols_reason(
    graph: AnalyzedGraph, bufs: Buffers, ops: Sequence[int], output: str, accumulate_gap: bool = False,
) -> str | None:
    """Why ops ``ops`` (single output ``output``) cannot form a column-split unit (rule 1), or None when they can."""
    gap = accumulating(graph, ops, output, accumulate_gap)
    for i in ops:
        op = graph.ops[i]
        if accumulates(op) and i != gap:
            return f"{op.name}: an accumulating op does not run on column bands"
        if len([o for o in op.outputs if o]) != 1:
            return f"{op.name}: {len(op.outputs)} outputs"
        why = _kind(op).col_local(graph, op) if i != gap else None
        if why:
            return f"{op.name}: {why}"
        for name in (*op.inputs, *op.outputs):
            if name and not graph.is_const(name) and bufs.root(name) != name:
                return f"{op.name}: {name} is a view of {bufs.root(name)}"
    src = grid_source(graph, bufs, ops, output, accumulate_gap)
    t = graph.tensors[src]
    if t.layout != "nhwc" or len(t.shape) != 4 or t.shape[0] != 1:
        return f"{src} is not a single nhwc image"
    return None


def band_scratch(scratch_bytes_of: Callable[..., int] | None, i: int, rows: int, cols: int) -> int:
    """Op ``i``'s scratch for an output band of ``rows`` x ``cols``: ``scratch_bytes_of(i, rows, cols)`` when the
    caller's function takes the columns (``tigris.api``'s does: ``OpKind.band_scratch_bytes``), else its figure
    for the full width."""
    if scratch_bytes_of is None:
        return 0
    code = getattr(scratch_bytes_of, "__code__", None)
    if code is not None and code.co_argcount >= 3:
        return scratch_bytes_of(i, rows, cols)
    return scratch_bytes_of(i, rows)


def reads_sub_bands(graph: AnalyzedGraph, op) -> bool:
    """Rule 1: whether ``op`` may read a band wider than its need (the runtime runs it one output row at a time on
    sub-band views): a per-pixel op, or a window of one pixel, stride 1, unpadded in both axes (a 1x1 conv), whose
    output row ``r`` and column ``c`` read input row ``r`` and column ``c`` only."""
    k = _kind(op)
    win = k.col_window(op)
    if win is None:
        return True
    x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    if win[0] != 1 or win[1] != 1 or win[3] != 0 or tuple(x.shape[2:]) != tuple(y.shape[2:]):
        return False
    rw = k.window(op)
    return rw is not None and rw[0] == 1 and rw[1] == 1 and rw[3] == 0


def input_cols(graph: AnalyzedGraph, op: Op, name: str, a: int, b: int) -> tuple[int, int]:
    """Columns (unclipped) of activation input ``name`` that output columns ``[a, b)`` of ``op`` read: the kind's
    ``cols_needed``, the output's own columns for an input it reads at the output's pixels (``same_rows_inputs``),
    the one column of a width-1 input."""
    if width(graph, name) == 1:
        return 0, 1
    k = _kind(op)
    if any(op.inputs[i] == name for i in k.same_rows_inputs(graph, op) if i < len(op.inputs)):
        return a, b
    return k.cols_needed(op, a, b)


def col_splits(w: int, n: int) -> list[tuple[int, int]]:
    """Rule 2: ``n`` disjoint column bands covering ``[0, w)``, the widest first."""
    base, extra = divmod(w, n)
    bands, a = [], 0
    for k in range(n):
        b = a + base + (1 if k < extra else 0)
        bands.append((a, b))
        a = b
    return bands


def _col_walk(
    graph: AnalyzedGraph, rev: list[int], output: str, band: tuple[int, int]
) -> dict[str, tuple[int, int]] | None:
    """Rule 2 for one output column band: the column band of every buffer (its one consumer's need, clipped);
    None when an op's output does not feed the unit output."""
    cols = {output: band}
    for i in rev:
        op = graph.ops[i]
        if op.outputs[0] not in cols:
            return None
        a, b = cols[op.outputs[0]]
        k = _kind(op)
        for name in op.inputs:
            if not name or graph.is_const(name):
                continue
            w = width(graph, name)
            lo, hi = input_cols(graph, op, name, a, b)
            lo, hi = max(0, lo), min(w, hi)
            hi = max(lo, hi)
            if name in cols:  # another consumer (or this op again) reads it too: the hull serves both (rule 1)
                plo, phi = cols[name]
                lo, hi = min(lo, plo), max(hi, phi)
            cols[name] = (lo, hi)
    for i in rev:  # rule 1: a windowed consumer reads exactly its need, so a branch's hull must be it
        op = graph.ops[i]
        k = _kind(op)
        if reads_sub_bands(graph, op):
            continue
        a, b = cols[op.outputs[0]]
        x = op.inputs[0]
        w = width(graph, x)
        lo, hi = (0, 1) if w == 1 else k.cols_needed(op, a, b)
        lo, hi = max(0, lo), min(w, hi)
        if cols[x] != (lo, max(lo, hi)):
            return None
    return cols


@dataclass
class ColGrid:
    """Rules 2-3: the row bands and column bands of a column-split unit (a tile is one of each)."""

    rows: list[dict[str, tuple[int, int]]]  # per row band: buffer -> rows
    cols: list[dict[str, tuple[int, int]]]  # per column band: buffer -> columns


def col_grid(
    graph: AnalyzedGraph, bufs: Buffers, ops: Sequence[int], output: str, tile_h: int, n_cols: int,
    accumulate_gap: bool = False,
) -> ColGrid | None:
    """Row and column bands of every buffer; None when a buffer of the unit does not feed the output. With an
    accumulating GAP (rule 6) the grid cuts its input and its output is the one pixel (0, 1) x (0, 1) every tile."""
    gap = accumulating(graph, ops, output, accumulate_gap)
    src = grid_source(graph, bufs, ops, output, accumulate_gap)
    rev = [i for i in reversed(list(ops)) if i != gap]
    h = tensor_rows(graph.tensors[src])
    rows = []
    for a in range(0, h, tile_h):
        r = _recompute_tile(graph, bufs, rev, src, (a, min(h, a + tile_h)), output if gap is not None else None)
        if r is None:
            return None
        rows.append(r)
    cols = []
    for band in col_splits(width(graph, src), n_cols):
        c = _col_walk(graph, rev, src, band)
        if c is None:
            return None
        if gap is not None:
            c[output] = (0, 1)
        cols.append(c)
    return ColGrid(rows, cols)


def plan_col_bands(
    graph: AnalyzedGraph,
    bufs: Buffers,
    ops: Sequence[int],
    output: str,
    tile_h: int,
    n_cols: int,
    weight_bytes: int = 0,
    scratch_bytes_of: Callable[[int, int], int] | None = None,
    bound: bool = False,
    accumulate_gap: bool = False,
) -> TiledLayout | None:
    """The band plan of a column-split unit at ``tile_h`` output rows by ``n_cols`` column tiles (rules 2-4); None
    when the unit is not in scope (rule 1), ``n_cols`` exceeds the output width, the grid has more than MAX_TILES
    tiles or a band of some tile is empty. ``bound`` skips the tile limit and the per-tile lists: the sizes and the peak of a grid the planner would
    not build, for the lower bound of one op (``tigris.plan.op_lower_bounds``)."""
    if cols_reason(graph, bufs, ops, output, accumulate_gap) is not None:
        return None
    gap = accumulating(graph, ops, output, accumulate_gap)
    src = grid_source(graph, bufs, ops, output, accumulate_gap)
    h, w = tensor_rows(graph.tensors[src]), width(graph, src)
    if not 1 <= n_cols <= w or tile_h < 1:
        return None
    n_rows = -(-h // tile_h)
    if not bound and n_rows * n_cols > MAX_TILES:
        return None
    grid = col_grid(graph, bufs, ops, output, tile_h, n_cols, accumulate_gap)
    if grid is None:
        return None
    names = list(grid.cols[0])
    if not bound and any(b <= a for band in (*grid.rows, *grid.cols) for a, b in band.values()):
        # a band of only padding (a padded 1x1 window at the edge): the runtime runs no empty band, so this grid is
        # not planned (an empty band needs less than any other, so the lower bound may keep it)
        return None
    most_rows = {n: max(r[n][1] - r[n][0] for r in grid.rows) for n in names}
    most_cols = {n: max(c[n][1] - c[n][0] for c in grid.cols) for n in names}
    band = {n: align_up(most_rows[n] * most_cols[n] * pixel_bytes(graph, n)) for n in names}
    # pixels each buffer holds over all tiles: every row band meets every column band
    pixels = {n: sum(r[n][1] - r[n][0] for r in grid.rows) * sum(c[n][1] - c[n][0] for c in grid.cols)
              for n in names}
    # a kernel's scratch for a column band is at most its scratch for the full width at as many rows (and less
    # for a float im2col over a band of fewer pixels than its block, when the caller's figure takes the columns)
    scratch_of = {i: band_scratch(scratch_bytes_of, i, most_rows[graph.ops[i].outputs[0]],
                                  most_cols[graph.ops[i].outputs[0]]) for i in ops}
    base = weight_bytes
    if gap is not None:  # rule 6: the accumulator's scratch lives from the first tile to the last, as in rule 7
        scratch_of[gap] = max(scratch_of[gap], _kind(graph.ops[gap]).accumulator_bytes(graph, graph.ops[gap]))
        base += align_up(scratch_of[gap])
    scratch = {step: align_up(scratch_of[i]) for step, i in enumerate(ops) if scratch_of[i] and i != gap}
    lives = lifetimes(bufs, ops, [], [output], size_of=lambda n: band[n], inplace=False)
    if gap is not None:  # and so does the accumulating output
        lives = [replace(lt, birth=0) if lt.name == output else lt for lt in lives]
    tl = sweep(lives, len(ops), scratch, base=base)
    extra_of: dict[int, int] = {}
    for i in ops:
        if i == gap:
            continue  # it adds each input pixel once
        op = graph.ops[i]
        out = op.outputs[0]
        full = tensor_rows(graph.tensors[out]) * width(graph, out)
        if pixels[out] > full:
            extra_of[i] = op_macs(graph, op) * (pixels[out] - full) // full
    tile_rows: list[dict[str, tuple[int, int]]] = []
    tile_cols: list[dict[str, tuple[int, int]]] = []
    if not bound:
        for r in grid.rows:
            for c in grid.cols:
                tile_rows.append(dict(r))
                tile_cols.append(dict(c))
    computed_rows = {n: sum(r[n][1] - r[n][0] for r in grid.rows) for n in names}
    return TiledLayout(
        tile_h, tile_rows, band, lives, scratch, scratch_of, tl.peak, tl.peak_step, sum(extra_of.values()),
        computed_rows, accumulate=[gap] if gap is not None else [], tile_cols=tile_cols, pixels=pixels,
        extra_of=extra_of,
    )


def max_cols(graph: AnalyzedGraph, src: str, tile_h: int) -> int:
    """The most column tiles a grid over ``src`` (:func:`grid_source`) at ``tile_h`` may have: one per column, at
    most MAX_TILES tiles."""
    n_rows = -(-tensor_rows(graph.tensors[src]) // tile_h)
    return max(1, min(width(graph, src), MAX_TILES // n_rows))


def moved_bytes(graph: AnalyzedGraph, lay: TiledLayout, name: str) -> int:
    """Bytes of ``name`` a layout holds over all its (counted) tiles: reloaded for an input, computed otherwise."""
    if lay.tile_cols or lay.pixels:
        return lay.pixels.get(name, 0) * pixel_bytes(graph, name)
    return lay.computed_rows.get(name, 0) * row_bytes(graph, name)


def fit_cols(
    layout: Callable[[int, int], TiledLayout | None], graph: AnalyzedGraph, src: str, budget: int,
    n_cols: int | None = None,
) -> TiledLayout | None:
    """Rule 5: the fewest column tiles that fit ``budget`` at the smallest tile height (exactly ``n_cols`` when
    given), then the largest tile height with that many; None when no grid fits. ``layout(tile_h, n)`` plans one."""
    h = tensor_rows(graph.tensors[src])
    th0 = min_tile_h(h)

    def fits(th: int, n: int) -> bool:
        lay = layout(th, n)
        return lay is not None and lay.peak <= budget

    if n_cols is None:
        top = max_cols(graph, src, th0)
        if top < 2 or not fits(th0, top):
            return None
        # fewest columns that fit (feasibility is close to monotone in n; only a tested n is returned)
        lo, hi = 2, top
        while lo < hi:
            mid = (lo + hi) // 2
            if fits(th0, mid):
                hi = mid
            else:
                lo = mid + 1
        n = lo
    else:
        n = n_cols
    best = largest_fitting(lambda th: n <= max_cols(graph, src, th) and fits(th, n), th0, h)
    return layout(best, n) if best is not None else None


def with_weights(lay: TiledLayout | None, wb: int) -> TiledLayout | None:
    return replace(lay, peak=lay.peak + wb) if lay is not None and wb else lay


