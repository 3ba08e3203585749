"""Arena offset assignment: every buffer of a unit (activation or band buffer, kernel scratch) gets a 16-byte-aligned
offset in the fast arena after the unit's weight prefix; every tensor crossing units gets one in the slow arena.

This is interval packing: a block is ``(size, [birth, death])`` and two blocks whose intervals intersect must not share
bytes. The timeline peak is a lower bound on the arena size. Several cheap placement orders are tried and the
smallest result kept:

1. *size-first*: largest block first, each at the lowest offset clear of every placed block it overlaps in time.
2. *ping-pong*: blocks in birth order, alternately packed against the bottom and against the timeline-peak ceiling.
   On a chain (each buffer overlapping only its neighbours, plus short-lived scratch) this reaches the peak exactly:
   a buffer and its successor sit at opposite ends and never need more than their sum.
3. *birth-first*: blocks in birth order, lowest offset (the classic linear-scan heuristic).

The planner reports both numbers (timeline peak and arena end) so the gap is visible.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable, Sequence

from tigris.plan.types import ALIGN, align_up


@dataclass(frozen=True)
class Block:
    key: Hashable
    size: int
    birth: int
    death: int


def _clear(placed: list[tuple[int, int]], size: int, lo: int, hi: int | None, from_top: bool) -> int | None:
    """Lowest (or highest, when from_top) aligned offset in [lo, hi - size] that avoids every busy range in placed."""
    busy = sorted(placed)
    if not from_top:
        cand = lo
        for s, e in busy:
            if e <= cand:
                continue
            if s >= cand + size:
                break
            cand = align_up(e)
        return cand if hi is None or cand + size <= hi else None
    assert hi is not None
    cand = (hi - size) // ALIGN * ALIGN
    for s, e in sorted(busy, key=lambda r: -r[1]):
        if s >= cand + size:
            continue
        if e <= cand:
            break
        cand = (s - size) // ALIGN * ALIGN
    return cand if cand >= lo else None


def _pack(order: Sequence[Block], base: int, ceiling: int | None, alternate: bool) -> dict[Hashable, int]:
    offsets: dict[Hashable, int] = {}
    placed: list[Block] = []
    for n, b in enumerate(order):
        busy = [(offsets[p.key], offsets[p.key] + p.size) for p in placed if p.birth <= b.death and b.birth <= p.death]
        off = None
        if alternate and ceiling is not None and n % 2 == 1:
            off = _clear(busy, b.size, base, ceiling, from_top=True)
        if off is None and ceiling is not None:
            off = _clear(busy, b.size, base, ceiling, from_top=False)
        if off is None:
            off = _clear(busy, b.size, base, None, from_top=False)
        offsets[b.key] = off
        placed.append(b)
    return offsets


def arena_end(blocks: Sequence[Block], offsets: dict[Hashable, int], base: int) -> int:
    return max([base] + [offsets[b.key] + b.size for b in blocks if b.size])


def assign_offsets(blocks: Sequence[Block], base: int = 0, peak: int | None = None) -> tuple[dict[Hashable, int], int]:
    """Offsets for ``blocks`` starting at ``base`` (aligned); returns (offsets, arena end). ``peak`` is the timeline peak
    (base included) used as the ping-pong ceiling."""
    base = align_up(base)
    blocks = [b for b in blocks]
    if not blocks:
        return {}, base
    by_size = sorted(blocks, key=lambda b: (-b.size, b.birth, str(b.key)))
    by_birth = sorted(blocks, key=lambda b: (b.birth, -b.size, str(b.key)))
    tries = [_pack(by_size, base, None, False), _pack(by_birth, base, None, False)]
    if peak is not None:
        tries.append(_pack(by_birth, base, align_up(peak), True))
    best = min(tries, key=lambda o: arena_end(blocks, o, base))
    return best, arena_end(blocks, best, base)
