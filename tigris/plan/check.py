"""The plan checker: an independent proof that a :class:`MemoryPlan` is safe to execute.

It re-derives liveness from the plan's own lists (unit ops, reloads, spills) rather than trusting the planner's
intermediate results, and checks:

1. every op runs in exactly one unit, each after the ops that produce its inputs (the units' running order is a
   topological order of the graph: the graph's own, or the planner's memory-aware one);
2. every buffer a unit touches has a fast placement, 16-byte aligned, after the weight prefix, within the fast
   budget, and large enough (the whole tensor, or the largest band of a tiled unit);
3. no two buffers (activations and kernel scratch) live at the same step of a unit share a byte;
4. a tensor a unit reads but does not produce is reloaded (or, in a single-unit plan, is a graph input resident in
   fast memory); a tensor a later unit reads, or a graph output, is spilled;
5. tiled units: every tile gives rows for every tensor; the output tiles are disjoint and cover the output exactly
   once; each op's input bands cover the rows its output band needs; every band fits its buffer;
   rolling units (halo reuse, spatial rule 9): the buffers whose bands overlap from tile to tile are exactly the ones
   the unit declares; their bands never move backwards; each op's input bands cover what its output's *fresh* rows
   need (the carried rows were computed, or loaded, by an earlier tile); each has a line buffer, large enough for
   the most rows it carries and live over every step, or else its band buffer is live over every step (rule 3 sees
   either so); none takes part in an in-place pair;
6. slow placements: every reloaded/spilled tensor has one, aligned; tensors whose unit intervals intersect do not
   overlap, except an output a unit declares written over an input dying in it (``ExecUnit.overwrite``), proven
   tile by tile (``tigris.plan.overwrite``); the high water is within the slow budget; in a one-region plan
   (``MemoryPlan.one_region``) every home lies at or above the fast peak of each unit it is live in;
7. column-split units (``tile_cols``, tigris.plan.cols): no rolling, accumulating or in-place buffers; every op
   column-local per its kind, every buffer its own root; the output tiles form a grid, row band by row band, whose
   column bands cover ``[0, W)`` left to right, and whose row bands cover the rows once; every band of every tile
   is exactly the hull of the rows and columns its consumers need (clipped; a windowed consumer's columns exactly
   its band), not empty, within the tensor, and its dense ``rows x cols`` block fits its buffer;
8. views (lifetime rule 7; ``MemoryPlan.view_offset``, ``view_ops``): the plan's tables are the rule's for this
   graph; every view's run lies inside its root, 16-byte aligned; each op run as a view moves bytes that are
   exactly where the table says (its kind's reference, run on element numbers instead of values, puts output
   element ``j`` where the runs say it is), between tensors of one element encoding; no tensor of a view group is a
   graph input or output other than the root, and no unit touching a run is tiled. A later producer of a joined
   buffer reads it (rule 4 then requires a unit that writes it after an earlier one to reload it first).

:func:`check_plan` returns the list of violations (empty = proven); :func:`assert_plan` raises on the first few.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Hashable

from tigris.ir import AnalyzedGraph
from tigris.plan.lifetime import buffers, lifetimes, tensor_rows
from tigris.plan.spatial import carried_rows, fresh_rows, input_rows, monotone, row_bytes
from tigris.plan.types import ALIGN, MemoryPlan, Placement, align_up


def _overlaps(items: list[tuple[Hashable, Placement, int, int]], allowed: frozenset = frozenset()) -> list[str]:
    """Pairs of non-empty placements that overlap in memory while both are live, in (offset order, offset order).

    A sweep over time: each item is compared only with the items still live when it is born, so the cost follows
    how many buffers are live together, not the square of the count (a chain ping-pongs thousands of buffers over
    the same two offsets)."""
    by_offset = sorted(items, key=lambda it: it[1].offset)
    rank = {id(it): r for r, it in enumerate(by_offset)}
    pairs: list[tuple[int, int]] = []
    active: list[tuple[Hashable, Placement, int, int]] = []
    for it in sorted((it for it in by_offset if it[1].size), key=lambda it: (it[2], rank[id(it)])):
        _, p, birth, _death = it
        active = [a for a in active if a[3] >= birth]
        for a in active:
            if a[1].offset < p.end and p.offset < a[1].end:
                ra, rb = rank[id(a)], rank[id(it)]
                pairs.append((min(ra, rb), max(ra, rb)))
        active.append(it)
    bad = []
    for ra, rb in sorted(pairs):
        ka, pa, _, _ = by_offset[ra]
        kb, pb, _, _ = by_offset[rb]
        if frozenset((ka, kb)) in allowed:
            continue
        bad.append(f"{ka} [{pa.offset},{pa.end}) and {kb} [{pb.offset},{pb.end}) are live together")
    return bad


def check_plan(graph: AnalyzedGraph, plan: MemoryPlan) -> list[str]:
    order = [i for unit in plan.units for i in unit.ops]
    views = bool(plan.view_ops or plan.view_offset)
    bufs = buffers(graph, views=views, order=order if views and sorted(order) == list(range(len(graph.ops))) else None)
    errs: list[str] = _check_views(graph, bufs, plan)
    if sorted(order) != list(range(len(graph.ops))):  # rule 1
        errs.append("units do not run every op exactly once")
    else:
        made = set(graph.inputs) | set(graph.weights)
        for i in order:
            op = graph.ops[i]
            early = [t for t in op.inputs if t and t not in made and t in graph.tensors and not graph.is_const(t)]
            if early:
                errs.append(f"{op.name} runs before {early[0]} is produced")
                break
            made |= {t for t in op.outputs if t}
    single = len(plan.units) == 1 and not plan.units[0].tile_rows
    read_in: dict[str, set[int]] = {}
    for k, unit in enumerate(plan.units):
        for i in unit.ops:
            for n in bufs.reads[i]:
                read_in.setdefault(n, set()).add(k)
    for k, unit in enumerate(plan.units):
        where = f"unit {k}"
        ops = unit.ops
        inside = {n for i in ops for n in bufs.writes[i]}
        for i in ops:  # rule 4
            for n in bufs.reads[i]:
                if n not in inside and n not in unit.reload and not (single and n in bufs.inputs):
                    errs.append(f"{where}: {n} is read but neither produced nor reloaded")
        for n in inside:
            later = any(j > k for j in read_in.get(n, ()))
            if (later or n in bufs.outputs) and not single and n not in unit.spill:
                errs.append(f"{where}: {n} is needed later but not spilled")
        leaving = list(unit.spill) + ([n for n in bufs.outputs if n in inside] if single else [])
        entering = list(unit.reload) + ([n for n in bufs.inputs] if single else [])
        try:
            lives = lifetimes(bufs, ops, entering, leaving, size_of=lambda n: unit.fast[n].size, inplace=False)
        except KeyError as e:
            errs.append(f"{where}: buffer {e.args[0]} has no fast placement")
            continue
        acc_out = {graph.ops[i].outputs[0] for i in unit.accumulate}
        carrying = _carrying(unit, acc_out)
        if unit.recompute:  # spatial rule 10: made inside the unit (not loaded, not spilled), no line buffer
            made = {n for i in ops for n in bufs.writes[i]}
            bad_rc = sorted(n for n in unit.recompute if not unit.rolling or n not in made or n in unit.spill
                            or n in unit.carry or n in acc_out or n not in unit.fast)
            if bad_rc:
                errs.append(f"{where}: {bad_rc} are declared recomputed but are not buffers a rolling unit makes "
                            "and keeps to itself without a line buffer")
            carrying -= set(unit.recompute)
        if carrying != set(unit.rolling):
            errs.append(f"{where}: buffers {sorted(carrying ^ set(unit.rolling))} carry rows from tile to tile "
                        f"but the unit declares {sorted(unit.rolling)}")
        items: list[tuple[Hashable, Placement, int, int]] = []
        for lt in lives:  # rule 2
            if lt.name in acc_out:  # an accumulator must survive every tile (spatial rule 7)
                lt = replace(lt, birth=0)
            if lt.name in carrying and lt.name not in unit.carry:  # carries in place: survives every tile (rule 9)
                lt = replace(lt, birth=0, death=len(ops) - 1)
            p = unit.fast[lt.name]
            if p.arena != "fast" or p.offset % ALIGN or p.offset < unit.weight_bytes or p.end > plan.fast_budget:
                errs.append(f"{where}: {lt.name} placement {p} is misaligned, in the prefix or over budget")
            if not unit.tile_rows and p.size < bufs.nbytes[lt.name]:
                errs.append(f"{where}: {lt.name} buffer {p.size} < tensor {bufs.nbytes[lt.name]}")
            items.append((lt.name, p, lt.birth, lt.death))
        for n in sorted(carrying):  # rule 5: line buffers of halo reuse live from tile to tile
            p = unit.carry.get(n)
            if p is None:
                continue  # it carries in place (its band buffer lives over every step, above)
            need = max(carried_rows(a[n], b[n]) for a, b in zip(unit.tile_rows, unit.tile_rows[1:])) * \
                row_bytes(graph, n)
            if p.offset % ALIGN or p.offset < unit.weight_bytes or p.end > plan.fast_budget or p.size < need:
                errs.append(f"{where}: {n} carries {need} bytes but its line buffer is {p}")
                continue
            items.append((f"carry[{n}]", p, 0, len(ops) - 1))
        for i, p in unit.scratch.items():
            step = ops.index(i)
            if p.offset % ALIGN or p.offset < unit.weight_bytes or p.end > plan.fast_budget:
                errs.append(f"{where}: scratch of op {i} placement {p} is misaligned or out of bounds")
            items.append((f"scratch[{i}]", p, 0 if i in unit.accumulate else step, step))
        allowed, bad = _check_in_place(graph, bufs, plan, k, carrying)
        errs += [f"{where}: {e}" for e in bad]
        errs += [f"{where}: {e}" for e in _overlaps(items, allowed)]  # rule 3
        top = max([unit.weight_bytes] + [p.end for _, p, _, _ in items])
        if top > unit.peak_bytes:
            errs.append(f"{where}: buffers reach {top} bytes but the unit's peak says {unit.peak_bytes}")
        for n in unit.reload:  # rule 4: a reload reads what an earlier unit spilled (or a graph input)
            if n not in bufs.inputs and not any(n in plan.units[j].spill for j in range(k)):
                errs.append(f"{where}: {n} is reloaded before any unit spilled it")
        if unit.tile_cols:
            errs += [f"{where}: {e}" for e in _check_cols(graph, bufs, unit)]
        elif unit.tile_rows:
            errs += [f"{where}: {e}" for e in _check_tiles(graph, bufs, unit, carrying)]
    errs += _check_slow(graph, bufs, plan)
    if plan.units and plan.fast_peak != max(u.peak_bytes for u in plan.units):
        errs.append(f"fast peak {plan.fast_peak} is not the largest unit peak")
    if plan.fast_peak > plan.fast_budget:
        errs.append(f"fast peak {plan.fast_peak} exceeds budget {plan.fast_budget}")
    return errs


def _carrying(unit, acc_out: set[str]) -> set[str]:
    """Spatial rule 9 as the runtime applies it: in a rolling unit, the buffers whose band in some tile overlaps their
    band in the tile before (the accumulator excepted); none in any other unit."""
    if not unit.rolling or not unit.tile_rows:
        return set()
    return {
        n for prev, rows in zip(unit.tile_rows, unit.tile_rows[1:]) for n in rows
        if n not in acc_out and n in prev and carried_rows(prev[n], rows[n])
    }


def _check_in_place(graph: AnalyzedGraph, bufs, plan: MemoryPlan, k: int, carrying: set[str] = frozenset()):
    """Rule 3's one exception, each declared in-place pair ``output -> input`` of unit ``k`` proven on its own:
    one op of the unit writes the output and reads the input, its kind may run in place, the two tensors have one
    shape, dtype, layout and size, share one offset and size (and the same band in every tile), and nothing reads
    the input after that op in the unit (it is not spilled, nor a graph input or output; a later unit reading it
    reloads the slow copy, which this unit leaves alone).
    Returns the pairs allowed to overlap and the violations."""
    from tigris.ops import kind_for

    unit = plan.units[k]
    allowed, errs, given = set(), [], set()
    writers: dict[str, list[int]] = {}  # buffer -> the steps of the unit whose op writes exactly it
    last_read: dict[str, int] = {}  # buffer -> the last step of the unit that reads it
    for s, i in enumerate(unit.ops):
        if len(bufs.writes[i]) == 1:
            writers.setdefault(bufs.writes[i][0], []).append(s)
        for n in bufs.reads[i]:
            last_read[n] = s
    for y, x in unit.in_place.items():
        steps = writers.get(y, [])
        if len(steps) != 1:
            errs.append(f"in-place {y}: written by {len(steps)} ops of the unit")
            continue
        s = steps[0]
        op = graph.ops[unit.ops[s]]
        kind = kind_for(op.op_type)
        tx, ty = graph.tensors.get(x), graph.tensors.get(y)
        why = None
        piece = unit.in_place_rows.get(y)
        grows = kind is not None and kind.prefix_in_place and not piece
        if grows:  # rule 8: a join over its first input, which is the output's prefix
            why = _check_prefix(graph, bufs, unit, op, x, y, s, last_read)
            if why is None and x in given:
                why = f"{x} gives its home twice"
            if why is None and (x in carrying or y in carrying):
                why = "a buffer carrying rows from tile to tile cannot share its home"
            if why:
                errs.append(f"in-place {y} over {x}: {why}")
            else:
                given.add(x)
                allowed.add(frozenset((x, y)))
            continue
        if kind is None or not (kind.piecewise_in_place if piece else kind.in_place):
            why = f"{op.name} ({op.op_type}) may not run in place" + (" in pieces" if piece else "")
        elif (xin := _in_place_input(graph, bufs, op, x, kind, piece)) is None:
            why = f"{x} is not an activation buffer {op.name} reads"
        elif piece:
            why = _check_pieces(graph, unit, unit.ops[s], x, y, piece)
        elif tx is None or ty is None or tx.nbytes != ty.nbytes or bufs.nbytes.get(x) != ty.nbytes \
                or not kind.in_place_over(graph, op, xin):
            why = f"{x} and {y} differ in shape, dtype, layout or size"
        # a later unit reading x reloads it from slow memory, which this unit does not write unless it spills x
        elif last_read.get(x, -1) > s or x in unit.spill or x in bufs.inputs \
                or x in bufs.outputs or y in bufs.outputs:
            why = f"{x} is still needed after {op.name}"
        elif x in given:
            why = f"{x} gives its home twice"
        elif x not in unit.fast or y not in unit.fast or (unit.fast[x] != unit.fast[y] if not piece else
                                                            unit.fast[x].offset != unit.fast[y].offset):
            why = f"{y} does not take {x}'s placement"
        elif not piece and any(rows.get(x) != rows.get(y) for rows in unit.tile_rows):
            why = f"{x} and {y} have different bands"
        elif x in carrying or y in carrying:
            why = "a buffer carrying rows from tile to tile cannot share its home"
        if why:
            errs.append(f"in-place {y} over {x}: {why}")
            continue
        given.add(x)
        allowed.add(frozenset((x, y)))
    for y in sorted(set(unit.in_place_rows) - set(unit.in_place)):
        errs.append(f"in-place {y}: temporary rows declared for a buffer that takes no home")
    return frozenset(allowed), errs


def _in_place_input(graph: AnalyzedGraph, bufs, op, x: str, kind, piece) -> str | None:
    """The input of ``op`` through which the in-place buffer ``x`` is read: ``x`` itself when it is its own
    buffer, or (where the kind allows it, ``in_place_alias``) an alias naming the root ``x``'s bytes whole; None
    when neither."""
    if bufs.root(x) != x or graph.is_const(x):
        return None
    if x in op.inputs and x not in bufs.alias_of.values():
        return x
    if piece or not kind.in_place_alias:
        return None
    return next((n for n in op.inputs if n and bufs.root(n) == x and graph.tensors[n].nbytes == bufs.nbytes.get(x)),
                None)


def _check_prefix(graph: AnalyzedGraph, bufs, unit, op, x: str, y: str, s: int, last_read: dict) -> str | None:
    """A join in place (lifetime rule 8): op writes y over its first input x, whose bytes are y's first bytes, so
    the kernel leaves them and writes the rest. Proves the kind's condition, one offset, y's buffer holding x's,
    the same band in every tile, and that nothing needs x after the op in this unit."""
    from tigris.ops import kind_for

    if bufs.root(x) != x or graph.is_const(x) or all(bufs.root(n) != x for n in op.inputs if n):
        return f"{x} is not an activation buffer {op.name} reads"
    first = next(n for n in op.inputs if n)  # the joined prefix, or an alias naming x's bytes whole
    if bufs.root(first) != x or graph.tensors[first].nbytes != bufs.nbytes.get(x) \
            or not kind_for(op.op_type).prefix_over(graph, op, first):
        return f"{x} is not the prefix of {op.name}'s output {y} (first input, same encoding, one row or a join along the rows)"
    if last_read.get(x, -1) > s or x in unit.spill or x in bufs.inputs or x in bufs.outputs:
        return f"{x} is still needed after {op.name}"
    if x not in unit.fast or y not in unit.fast or unit.fast[x].offset != unit.fast[y].offset \
            or unit.fast[x].arena != unit.fast[y].arena:
        return f"{y} does not take {x}'s placement"
    if unit.fast[y].size < unit.fast[x].size:
        return f"{y}'s buffer is smaller than {x}'s"
    if any(rows.get(x) != rows.get(y) for rows in unit.tile_rows):
        return f"{x} and {y} have different bands"
    return None


def _check_pieces(graph: AnalyzedGraph, unit, i: int, x: str, y: str, rows: int) -> str | None:
    """A piecewise in-place pair (lifetime rule 6): op i writes y over x in row pieces through a temporary of
    ``rows`` rows at the start of its scratch. Walks the runtime's schedule in every tile (rows computed into the
    temporary while it has room; then the finished rows stored, as many as lie below the first byte of the input band
    that the rows still to compute read, by the kind's own ``rows_needed``) and proves it stores every row and never
    a byte of input still to be read. Returns the violation or None."""
    from tigris.ops import kind_for

    op = graph.ops[i]
    kind = kind_for(op.op_type)
    if not kind.piecewise_over(graph, op, x):
        return f"{op.name} cannot write {y} over {x} in pieces (channels, dtype, layout or size)"
    irb, orb = row_bytes(graph, x), row_bytes(graph, y)
    scratch = unit.scratch.get(i)
    if rows < 1 or scratch is None or scratch.size < align_up(rows * orb):
        return f"the temporary of {rows} rows of {orb} bytes does not fit the scratch {scratch}"
    if unit.fast[y].size > unit.fast[x].size:
        return f"{y}'s buffer is larger than {x}'s"
    hx, hy = tensor_rows(graph.tensors[x]), tensor_rows(graph.tensors[y])
    for band in unit.tile_rows or [{x: (0, hx), y: (0, hy)}]:
        (i0, i1), (o0, o1) = band[x], band[y]
        if rows > o1 - o0 > 0:  # as the loader refuses it (dw_pieces: more rows than the band)
            return f"the temporary of {rows} rows is taller than the band {band[y]} of {y}"
        held, nxt, stored = 0, o0, o0
        while stored < o1:
            n = min(rows - held, o1 - nxt)
            nxt, held = nxt + n, held + n
            if nxt < o1:
                lo = max(kind.rows_needed(op, nxt, o1)[0], 0)
                if lo < i0:
                    return f"rows {nxt}.. of {y} read row {lo} of {x}, below its band {band[x]}"
                limit = (lo - i0) * irb  # the first byte of the band still to be read
                w = stored
                while w < nxt and (w + 1 - o0) * orb <= limit:
                    w += 1
            else:
                w = o1
            if w == stored and n == 0:
                return f"band {band[y]} over {band[x]} stalls at row {stored} with a temporary of {rows} rows"
            stored, held = w, nxt - w
    return None


def _check_tiles(graph: AnalyzedGraph, bufs, unit, carrying: set[str] = frozenset()) -> list[str]:  # rule 5
    errs = []
    names = set(unit.fast)
    out = unit.spill[0] if unit.spill else None
    if out is None:
        return ["tiled unit has no output"]
    h = tensor_rows(graph.tensors[out])
    acc_out = {graph.ops[i].outputs[0] for i in unit.accumulate}
    if out in acc_out:  # spatial rule 7: the tiles cut the accumulating GAP's input; its output is one row
        gap_in = graph.ops[[i for i in unit.accumulate if graph.ops[i].outputs[0] == out][0]].inputs[0]
        if any(rows.get(out) != (0, 1) for rows in unit.tile_rows):
            errs.append(f"accumulator {out} is not the row band (0, 1) in every tile")
        out, h = bufs.root(gap_in), tensor_rows(graph.tensors[gap_in])
    covered = 0
    prev: dict[str, tuple[int, int]] = {}
    for t, rows in enumerate(unit.tile_rows):
        missing = names - set(rows)
        if missing:
            errs.append(f"tile {t} gives no rows for {sorted(missing)}")
            continue
        a, b = rows[out]
        if a != covered or b <= a:
            errs.append(f"tile {t}: output rows {rows[out]} do not continue from row {covered}")
        covered = b
        for n, (lo, hi) in rows.items():
            if not 0 <= lo <= hi <= tensor_rows(graph.tensors[n]):
                errs.append(f"tile {t}: band {n} {rows[n]} is outside its rows")
            if (hi - lo) * row_bytes(graph, n) > unit.fast[n].size:
                errs.append(f"tile {t}: band {n} {rows[n]} does not fit its buffer")
        for n in carrying:
            if n in rows and not monotone(prev.get(n), rows[n]):
                errs.append(f"tile {t}: band {n} {rows[n]} moves back from {prev[n]} while carrying rows")
        for i in unit.ops:
            if i in unit.accumulate:
                continue  # its input band is the tile itself (covered above)
            op = graph.ops[i]
            o = op.outputs[0]
            # a carrying output: the op computes only the rows after the carried ones (spatial rule 9)
            made = fresh_rows(prev.get(o), rows[o]) if o in carrying else rows[o]
            if made[1] <= made[0]:
                continue  # it computes nothing in this tile (the runtime skips it)
            for name in op.inputs:
                if not name or graph.is_const(name):
                    continue
                need = input_rows(graph, op, name, made)
                have = rows[bufs.root(name)]
                if need[0] < need[1] and not (have[0] <= need[0] and need[1] <= have[1]):
                    errs.append(f"tile {t}: {op.name} needs rows {need} of {name}, band holds {have}")
        prev = rows
    if covered != h:
        errs.append(f"output tiles cover rows [0,{covered}) of {h}")
    return errs


def _check_cols(graph: AnalyzedGraph, bufs, unit) -> list[str]:  # rule 7
    """A column-split unit (tigris.plan.cols): its scope, the grid of its output bands, every band exactly the hull of
    what its consumers need in both axes (clipped; a windowed consumer's columns exactly), and every dense band
    within its buffer."""
    from tigris.ops import kind_for
    from tigris.plan.cols import input_cols, pixel_bytes, reads_sub_bands, width

    errs: list[str] = []
    if len(unit.tile_cols) != len(unit.tile_rows) or unit.tiles != len(unit.tile_rows):
        return [f"{len(unit.tile_cols)} column bands for {len(unit.tile_rows)} row bands of {unit.tiles} tiles"]
    if unit.rolling or unit.carry or unit.in_place:
        errs.append("a column-split unit carries or runs an op in place")
    if len(unit.spill) != 1:
        return errs + [f"a column-split unit spills {len(unit.spill)} tensors"]
    out = unit.spill[0]
    # an accumulating GlobalAveragePool may end the unit (tigris.plan.cols rule 6): the grid cuts its input
    gap = unit.ops[-1] if unit.accumulate else None
    if unit.accumulate and (unit.accumulate != [gap] or not getattr(kind_for(graph.ops[gap].op_type), "accumulates",
                                                                      False) or graph.ops[gap].outputs[0] != out):
        return errs + ["a column-split unit accumulates other than with its last op into its output"]
    if gap is not None and any(r.get(out) != (0, 1) or c.get(out) != (0, 1)
                               for r, c in zip(unit.tile_rows, unit.tile_cols)):
        errs.append(f"accumulator {out} is not the pixel (0, 1) x (0, 1) in every tile")
    src = out if gap is None else bufs.root(graph.ops[gap].inputs[0])
    for i in unit.ops:
        op = graph.ops[i]
        kind = kind_for(op.op_type)
        why = (kind.col_local(graph, op) if kind is not None else f"{op.op_type} has no kind") if i != gap else None
        if why:
            errs.append(f"{op.name} is not column-local: {why}")
        for n in (*op.inputs, *op.outputs):
            if n and not graph.is_const(n) and bufs.root(n) != n:
                errs.append(f"{op.name}: {n} is an alias view in a column-split unit")
    if errs:
        return errs
    names = set(unit.fast)
    h, w = tensor_rows(graph.tensors[src]), width(graph, src)
    row_at, col_at = 0, 0  # the grid: row-band-major, column bands left to right covering [0, W) per row band
    for t, (rows, cols) in enumerate(zip(unit.tile_rows, unit.tile_cols)):
        if set(rows) != names or set(cols) != names:
            errs.append(f"tile {t} gives bands for {sorted(set(rows) & set(cols))}, not every buffer of the unit")
            continue
        (a, b), (c0, c1) = rows[src], cols[src]
        if col_at == 0:
            if a != row_at or b <= a:
                errs.append(f"tile {t}: output rows {rows[src]} do not continue from row {row_at}")
            band_rows = (a, b)
        elif (a, b) != band_rows:
            errs.append(f"tile {t}: output rows {rows[src]} change inside row band {band_rows}")
        if c0 != col_at or c1 <= c0:
            errs.append(f"tile {t}: output columns {cols[src]} do not continue from column {col_at}")
        col_at = c1
        if col_at >= w:
            col_at, row_at = 0, b
        for n in names:
            (lo, hi), (l0, l1) = rows[n], cols[n]
            if not (0 <= lo < hi <= tensor_rows(graph.tensors[n]) and 0 <= l0 < l1 <= width(graph, n)):
                errs.append(f"tile {t}: band {n} rows {rows[n]} columns {cols[n]} is empty or outside the tensor")
            if (hi - lo) * (l1 - l0) * pixel_bytes(graph, n) > unit.fast[n].size:
                errs.append(f"tile {t}: band {n} rows {rows[n]} columns {cols[n]} does not fit its buffer")
        hull_r: dict[str, tuple[int, int]] = {}  # per buffer read in the unit: the hull of its consumers' needs
        hull_c: dict[str, tuple[int, int]] = {}
        for i in unit.ops:
            if i == gap:
                continue  # it adds its input band, the tile itself (covered above)
            op = graph.ops[i]
            o = op.outputs[0]
            kind = kind_for(op.op_type)
            for name in op.inputs:
                if not name or graph.is_const(name):
                    continue
                need_r = input_rows(graph, op, name, rows[o])
                wi = width(graph, name)
                lo, hi = input_cols(graph, op, name, *cols[o])
                need_c = (max(0, lo), max(max(0, lo), min(wi, hi)))
                if not reads_sub_bands(graph, op) and cols[name] != need_c:
                    # a windowed kernel reads its whole input band: the band must be exactly its need
                    errs.append(f"tile {t}: {op.name} needs columns {need_c} of {name}, band is {cols[name]}")
                for hull, need in ((hull_r, need_r), (hull_c, need_c)):
                    lo0, hi0 = hull.get(name, need)
                    hull[name] = (min(lo0, need[0]), max(hi0, need[1]))
        for name in hull_r:
            if rows[name] != hull_r[name] or cols[name] != hull_c[name]:
                errs.append(f"tile {t}: the ops of the unit need rows {hull_r[name]} columns {hull_c[name]} of "
                            f"{name}, band is rows {rows[name]} columns {cols[name]}")
    if col_at != 0 or row_at != h:
        errs.append(f"output tiles cover rows [0,{row_at}) and columns [0,{col_at}) of {h}x{w}")
    return errs


def _check_slow(graph, bufs, plan: MemoryPlan) -> list[str]:  # rule 6
    errs = []
    span: dict[str, list[int]] = {}
    for k, unit in enumerate(plan.units):
        for n in list(unit.reload) + list(unit.spill):
            if n not in plan.slow:
                errs.append(f"unit {k}: {n} moves through slow memory but has no slow placement")
                continue
            s = span.setdefault(n, [k, k])
            s[0], s[1] = min(s[0], k), max(s[1], k)
    for n in bufs.inputs:
        if n in span:
            span[n][0] = 0
    for n in bufs.outputs:
        if n in span:
            span[n][1] = len(plan.units)
    allowed: set[frozenset] = set()
    for k, unit in enumerate(plan.units):
        for y, x in unit.overwrite.items():
            why = _overwrite_violation(graph, plan, k, unit, x, y, span)
            if why:
                errs.append(f"unit {k}: {y} over {x}: {why}")
            else:
                allowed.add(frozenset((x, y)))
    items = []
    for n, (b, d) in span.items():
        p = plan.slow[n]
        if p.offset % ALIGN or p.size < align_up(bufs.nbytes[n]):
            errs.append(f"slow placement of {n} {p} is misaligned or too small")
        if plan.slow_budget is not None and p.end > plan.slow_budget:
            errs.append(f"slow placement of {n} {p} exceeds the slow budget {plan.slow_budget}")
        items.append((n, p, b, d))
        if plan.one_region and p.size:  # the slow arena is the fast arena's memory: above every unit it is live in
            for k in range(b, min(d, len(plan.units) - 1) + 1):
                if p.offset < plan.units[k].peak_bytes:
                    errs.append(f"one region: slow home of {n} {p} is live in unit {k} and below its fast peak "
                                f"{plan.units[k].peak_bytes}")
    errs += [f"slow: {e}" for e in _overlaps(items, frozenset(allowed))]
    return errs


def _overwrite_violation(graph, plan: MemoryPlan, k: int, unit, x: str, y: str, span) -> str:
    """Rule 6, streaming overwrite (tigris.plan.overwrite): why unit ``k`` may not write ``y`` over ``x`` ('' when
    it may): ``y`` is spilled and born here, ``x`` reloaded and dying here (no later reader, no graph output), the
    unit is not column-split, and no tile writes a byte of ``y`` that a later tile reads of ``x``."""
    from tigris.plan.overwrite import overwrite_ok, read_bands

    if y not in unit.spill or x not in unit.reload or x == y:
        return "not a spilled output over a reloaded input of the unit"
    if x not in span or y not in span or span[x][1] != k or span[y][0] != k:
        return "the input outlives the unit or the output is live before it"
    if unit.tile_cols:
        return "a column-split unit does not stream its homes"
    if not unit.tile_rows:
        return ""
    reads = read_bands([rows.get(x, (0, 0)) for rows in unit.tile_rows], bool(unit.rolling) and not unit.accumulate)
    writes = [rows.get(y, (0, 0)) for rows in unit.tile_rows]
    px, py = plan.slow[x], plan.slow[y]
    bad = overwrite_ok(reads, writes, px.offset, row_bytes(graph, x), py.offset, row_bytes(graph, y))
    return "" if bad is None else f"tile {bad} writes bytes a later tile still reads"


def assert_plan(graph: AnalyzedGraph, plan: MemoryPlan) -> None:
    errs = check_plan(graph, plan)
    if errs:
        raise AssertionError(f"{len(errs)} plan violation(s): " + "; ".join(errs[:5]))


def _check_views(graph: AnalyzedGraph, bufs, plan: MemoryPlan) -> list[str]:
    """Rule 8 (views)."""
    import numpy as np

    from tigris.ops import kind_for, lower
    from tigris.ops._common import same_bytes
    from tigris.ops.base import TensorView
    from tigris.layout import tensor_view_dims

    if not plan.view_ops and not plan.view_offset:
        return []
    errs = []
    if plan.alias_of != bufs.alias_of or plan.view_offset != bufs.offset or set(plan.view_ops) != bufs.view_ops:
        errs.append("the plan's alias and view tables are not lifetime rule 7's")
    boundary = set(graph.inputs) | set(graph.outputs)
    for n, off in plan.view_offset.items():
        r = plan.alias_of.get(n)
        if r is None or r in plan.alias_of:
            errs.append(f"view {n}: no root")
            continue
        if off % ALIGN or off < 0 or off + graph.tensors[n].nbytes > graph.tensors[r].nbytes:
            errs.append(f"view {n}: run {off}+{graph.tensors[n].nbytes} outside its root {r} or misaligned")
        if n in boundary:
            errs.append(f"view {n}: a graph input or output")
    runs = {n: (plan.alias_of.get(n, n), plan.view_offset.get(n, 0)) for n in graph.tensors}

    def elems(n: str) -> np.ndarray:  # element numbers of n's run inside its root, in n's stored order
        t = graph.tensors[n]
        e = t.nbytes // max(1, t.numel)
        return (runs[n][1] // e + np.arange(t.numel, dtype=np.float64)).reshape(tensor_view_dims(t))

    for i in plan.view_ops:
        op = graph.ops[i]
        ins = [x for x in op.inputs if x and not graph.is_const(x)]
        y = op.outputs[0]
        if any(runs[x][0] != runs[y][0] for x in ins) or any(not same_bytes(graph.tensors[x], graph.tensors[y])
                                                               for x in ins):
            errs.append(f"view op {op.name}: its operands are not runs of one buffer of one encoding")
            continue
        # the kind's own lowering and reference, on float twins of the op's tensors: element numbers are values
        twins = {n: replace(graph.tensors[n], dtype="float32", quant=None) for n in (*ins, y)}
        low = lower(replace(graph, tensors={**graph.tensors, **twins}), op)
        views = [TensorView(elems(x), tensor_view_dims(graph.tensors[x])) for x in ins]
        out = TensorView(np.full(tensor_view_dims(graph.tensors[y]), -1.0), tensor_view_dims(graph.tensors[y]))
        kind_for(op.op_type).reference(low, views, out)
        if not np.array_equal(out.data, elems(y)):
            errs.append(f"view op {op.name}: its output is not where its view runs put it")
    for k, unit in enumerate(plan.units):
        if unit.tile_rows and any(x in plan.view_offset for i in unit.ops for x in (*graph.ops[i].inputs,
                                                                                    *graph.ops[i].outputs) if x):
            errs.append(f"unit {k}: a tiled unit touches a view")
    return errs
