"""Outputs over a dying input in the slow arena (streaming overwrite; docs/memory-planning.md "Boards without slow
memory").

A unit reads its reloaded inputs from their slow homes band by band at the start of each tile and writes its
spilled outputs band by band at the end of it. When an input ``x`` dies in the unit (no later unit reloads it, it is
no graph output) and an output ``y`` is born there, ``y`` may take bytes of ``x``'s home, provided every byte a tile
writes of ``y`` is no longer read by any later tile of ``x``: the input bands are consumed top to bottom, so an
output whose rows advance no faster than the input's fits behind the read front. In a rolling unit a tile reloads
only the rows the tile before did not bring (spatial rule 9), so only those count as later reads.

One rule, stated on byte intervals so that the planner (which places ``y`` at ``x``'s offset), the checker
(``check.py`` rule 6), the reader (``tigris/emit/reader.py``) and the C loader (``runtime_c/src/loader.c``,
TGRS_ERR_OVERWRITE) prove the same thing: for every tile ``t``, the bytes tile ``t`` writes of ``y`` share none with
the hull of the bytes the tiles after ``t`` read of ``x``. The hull is conservative (a gap between later reads is
not used), which costs nothing on row-streamed units, whose later reads are one advancing run.
"""
from __future__ import annotations

from typing import Sequence

Band = tuple[int, int]  # half-open rows (start, stop)


def read_bands(bands: Sequence[Band], rolling: bool) -> list[Band]:
    """Rows each tile reads of a reloaded tensor from its slow home: its band, or in a rolling unit the rows after
    the ones it carries from the tile before (``spatial.fresh_rows``)."""
    out: list[Band] = []
    prev: Band | None = None
    for cur in bands:
        lo, hi = cur
        if rolling and prev is not None and prev[1] > prev[0] and lo < prev[1]:
            lo = min(prev[1], hi)
        out.append((lo, hi))
        prev = cur
    return out


def overwrite_ok(
    reads: Sequence[Band], writes: Sequence[Band], x_off: int, x_row: int, y_off: int, y_row: int
) -> int | None:
    """None when writing ``writes`` (rows of ``y``, per tile, at ``y_off`` with ``y_row`` bytes a row) never touches a
    byte that a later tile reads of ``x`` (``reads``, rows at ``x_off`` with ``x_row`` bytes a row); otherwise the
    first tile that would. Tiles without rows write or read nothing."""
    assert len(reads) == len(writes)
    lo = hi = None  # hull of the bytes read by the tiles after t
    bad = None
    for t in range(len(writes) - 1, -1, -1):
        w0, w1 = writes[t]
        if lo is not None and w1 > w0:
            a, b = y_off + w0 * y_row, y_off + w1 * y_row
            if a < hi and lo < b:
                bad = t
        r0, r1 = reads[t]
        if r1 > r0:
            a, b = x_off + r0 * x_row, x_off + r1 * x_row
            lo, hi = (a, b) if lo is None else (min(lo, a), max(hi, b))
    return bad


# How far (bytes) above or below its input's offset the one-region packing looks for an overwriting output's start.
SHIFT_SPAN = 8192


def pinned_offsets(blocks, partner: dict, floors: Sequence[int] | None = None, safe=None,
                   shifts: bool = False) -> tuple[dict, int, set]:
    """Slow offsets in birth order, each block at the lowest aligned offset clear of every block live with it,
    except that a block with a ``partner`` (the dying input it may overwrite) first tries the partner's offset,
    where only the partner may share its bytes. Returns (offsets, arena end, the blocks placed over their partner).

    ``floors`` (one region): per unit, the end of its fast buffers; a block starts at or above the floor of every
    unit in its lifetime. ``blocks`` are :class:`tigris.plan.arena.Block` (no tails); lifetimes are unit indices,
    inclusive (a graph output lives one past the last unit).

    ``safe(y, x, y_off, x_off)`` (one region): whether ``y`` may be written at ``y_off`` over ``x`` at ``x_off``
    (``overwrite_ok`` of the unit that pairs them). With it, a block whose floor is above its partner's offset may
    start at its floor over the partner, and a partner is placed no lower than its overwriter's floor less the
    largest shift the overwriter may start above it: the input of a unit whose successor has more fast buffers sits
    just high enough for its output to start at that successor's floor.

    ``shifts`` (with ``safe``): each pair's largest proven shift of the output above its partner (below it where
    negative) is bisected within ``SHIFT_SPAN`` bytes, and both placements use it: a partner is lifted just enough
    for its overwriter to start at its floor (unless the partner then loses its own partner), and an output starts
    at that shift from its partner where its floor allows. The bisection assumes the proof gets easier as the
    output moves down, which need not hold, so callers pack without ``shifts`` too and keep the lower end."""
    from tigris.plan.types import align_up

    def floor_of(b) -> int:
        return align_up(max([0] + list(floors[b.birth : b.death + 1]))) if floors and b.size else 0

    by_key = {b.key: b for b in blocks}
    over_by = {x: by_key[y] for y, x in partner.items() if y in by_key}  # input -> the output that may overwrite it
    reach: dict = {}

    def most_above(y, x) -> int | None:
        """The largest proven ``y_off - x_off`` (16-byte steps, from 64 rows of slack down; the proof only gets
        easier as the output moves down, so a bisection finds it); None when none is."""
        if (y, x) not in reach:
            lo_d, hi_d = -SHIFT_SPAN, SHIFT_SPAN
            if not safe(y, x, lo_d, 0):
                reach[(y, x)] = None
            else:
                while lo_d < hi_d:
                    mid = (lo_d + hi_d + 16) // 32 * 16
                    lo_d, hi_d = (mid, hi_d) if safe(y, x, mid, 0) else (lo_d, mid - 16)
                reach[(y, x)] = lo_d
        return reach[(y, x)]

    offsets: dict = {}
    over: set = set()
    alive: dict[int, list] = {}  # step -> [(key, start, end)] of the blocks placed so far
    for b in sorted(blocks, key=lambda b: (b.birth, -b.size, str(b.key))):
        live = {(k, s, e) for t in range(b.birth, b.death + 1) for k, s, e in alive.get(t, ())}
        lo = floor_of(b)
        y = over_by.get(b.key)
        p = partner.get(b.key)
        if shifts and safe is not None and y is not None and most_above(y.key, b.key) is not None:
            lift = floor_of(y) - most_above(y.key, b.key)  # high enough for y to start at its floor over b
            own = most_above(b.key, p) if p is not None and p in offsets else None
            if own is None or lift <= offsets[p] + own:  # unless b then loses its own partner
                lo = max(lo, lift)
        elif safe is not None and y is not None and floor_of(y) > lo:
            top = floor_of(y)
            shift = top - lo
            while shift > 0 and not safe(y.key, b.key, top, top - shift):
                shift -= 16
            lo = top - shift
        off = None
        if p is not None and p in offsets:
            cands = [offsets[p]] if offsets[p] >= lo else []
            if shifts and safe is not None:
                d = most_above(b.key, p)
                c = None if d is None else max(lo, offsets[p] + min(d, 0))
                cands = [c] if c is not None and c - offsets[p] <= d and safe(b.key, p, c, offsets[p]) else []
            elif safe is not None and offsets[p] < lo and safe(b.key, p, lo, offsets[p]):
                cands = [lo]
            for cand in cands:
                if all(e <= cand or s >= cand + b.size for k, s, e in live if k != p):
                    off = cand
                    over.add(b.key)
        if off is None:
            off = lo
            for k, s, e in sorted(live, key=lambda r: r[1]):
                if s >= off + b.size:
                    break
                if e > off:
                    off = align_up(e)
        offsets[b.key] = off
        for t in range(b.birth, b.death + 1):
            alive.setdefault(t, []).append((b.key, off, off + b.size))
    end = max([0] + [offsets[b.key] + b.size for b in blocks])
    return offsets, end, over
