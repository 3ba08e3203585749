"""Arena offset assignment: every buffer of a unit (activation or band buffer, kernel scratch) gets a 16-byte-aligned
offset in the fast arena after the unit's weight prefix; every tensor crossing units gets one in the slow arena.

This is interval packing: a block is ``(size, [birth, death])`` and two blocks whose intervals intersect must not share
bytes. The timeline peak is a lower bound on the arena size. Several cheap placement orders are tried and the
smallest result kept:

1. *size-first*: largest block first, each at the lowest offset clear of every placed block it overlaps in time.
2. *ping-pong*: blocks in birth order, alternately packed against the bottom and against the timeline-peak ceiling.
   On a chain (each buffer overlapping only its neighbours, plus short-lived scratch) this reaches the peak exactly:
   a buffer and its successor sit at opposite ends and never need more than their sum. A variant places the
   long-lived buffers (skip connections) first and ping-pongs the rest around them.
3. *birth-first*: blocks in birth order, lowest offset (the classic linear-scan heuristic); the same orders also run
   with best fit (the smallest free gap that holds the block).
4. When none of these reaches the timeline peak (skip connections fragment the arena), seeded random perturbations of
   the orders are tried for a bounded number of rounds. Deterministic: the seed depends on the blocks only.

The planner reports both numbers (timeline peak and arena end) so the gap is visible.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Hashable, Sequence

from tigris.plan.types import ALIGN, align_up


@dataclass(frozen=True)
class Block:
    key: Hashable
    size: int
    birth: int
    death: int
    # A piecewise in-place pair (lifetime rule 6): ``tail`` more bytes right above ``size`` until ``tail_death``
    # (the input the output was written over is larger and still read at that step).
    tail: int = 0
    tail_death: int = -1
    # A join in place (lifetime rule 8): the block grows, ``(from step, bytes)`` in step order, ``size`` the last;
    # before a step it is as large as the entry before it (the first entry's bytes from its birth).
    grow: tuple[tuple[int, int], ...] = ()

    def extent(self, step: int) -> int:
        if self.grow:
            return next((n for t, n in reversed(self.grow) if t <= step), self.grow[0][1])
        return self.size + (self.tail if step <= self.tail_death else 0)


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


def _best_gap(placed: list[tuple[int, int]], size: int, lo: int) -> int:
    """Offset of the smallest free gap that holds ``size`` (best fit); above everything when no gap does."""
    best, best_len, cand = None, None, lo
    for s, e in sorted(placed):
        if s >= cand + size and (best_len is None or s - cand < best_len):
            best, best_len = cand, s - cand
        cand = max(cand, align_up(e))
    return best if best is not None else cand


def _pack(
    order: Sequence[Block], base: int, ceiling: int | None, alternate: bool, best_fit: bool = False
) -> dict[Hashable, int]:
    offsets: dict[Hashable, int] = {}
    # step -> (placement number, start, end) of every placed block alive at that step: the blocks whose lifetime
    # overlaps b's are found from b's own steps, not by scanning everything placed (linear in the lifetimes, where a
    # scan is quadratic in the block count). The consumers sort the busy ranges, so their order does not matter.
    alive: dict[int, list[tuple[int, int, int]]] = {}
    for n, b in enumerate(order):
        seen: set[tuple[int, int]] = set()
        busy: list[tuple[int, int]] = []
        head: list[tuple[int, int]] = []  # a tailed block: ranges busy only where it no longer has its tail
        if b.grow:
            off = _place_growing(b, [(t, s, e) for t in range(b.birth, b.death + 1) for _, s, e in alive.get(t, ())],
                                 base)
        else:
            for t in range(b.birth, b.death + 1):
                for k, s, e in alive.get(t, ()):
                    if (k, e) not in seen:  # a growing block is busy over more bytes at its later steps
                        seen.add((k, e))
                        (busy if t <= b.tail_death or not b.tail else head).append((s, e))
            off = _place(b, busy, base, ceiling, alternate, best_fit, n) if not b.tail else \
                _place_tailed(b, busy, head, base)
        offsets[b.key] = off
        for t in range(b.birth, b.death + 1):
            alive.setdefault(t, []).append((n, off, off + b.extent(t)))
    return offsets


def _place_growing(b: Block, busy: list[tuple[int, int, int]], base: int) -> int:
    """Lowest offset where the growing block clears, at every step of its life, what is placed at that step."""
    def clear(off: int) -> bool:
        return all(e <= off or s >= off + b.extent(t) for t, s, e in busy)

    for off in sorted({base} | {align_up(e) for _, _, e in busy if align_up(e) >= base}):
        if clear(off):
            return off
    raise AssertionError("unreachable: the offset above every busy range is clear")


def _place_tailed(b: Block, full: list[tuple[int, int]], head: list[tuple[int, int]], base: int) -> int:
    """Lowest offset where the block with its tail clears ``full`` and the block alone clears ``head``."""
    def clear(off: int) -> bool:
        return all(e <= off or s >= off + b.size + b.tail for s, e in full) and \
            all(e <= off or s >= off + b.size for s, e in head)

    for off in sorted({base} | {align_up(e) for _, e in full + head if align_up(e) >= base}):
        if clear(off):
            return off
    raise AssertionError("unreachable: the offset above every busy range is clear")


def _place(
    b: Block, busy: list[tuple[int, int]], base: int, ceiling: int | None, alternate: bool, best_fit: bool, n: int
) -> int:
    """Offset of the n-th block of a packing order among the ``busy`` ranges of the blocks placed before it."""
    if best_fit:
        return _best_gap(busy, b.size, base)
    off = None
    if alternate and ceiling is not None and n % 2 == 1:
        off = _clear(busy, b.size, base, ceiling, from_top=True)
    if off is None and ceiling is not None:
        off = _clear(busy, b.size, base, ceiling, from_top=False)
    if off is None:
        off = _clear(busy, b.size, base, None, from_top=False)
    return off


def arena_end(blocks: Sequence[Block], offsets: dict[Hashable, int], base: int) -> int:
    return max([base] + [offsets[b.key] + b.size + b.tail for b in blocks if b.size + b.tail])


def assign_offsets(blocks: Sequence[Block], base: int = 0, peak: int | None = None) -> tuple[dict[Hashable, int], int]:
    """Offsets for ``blocks`` starting at ``base`` (aligned); returns (offsets, arena end). ``peak`` is the timeline peak
    (base included) used as the ping-pong ceiling."""
    base = align_up(base)
    blocks = [b for b in blocks]
    if not blocks:
        return {}, base
    by_size = sorted(blocks, key=lambda b: (-b.size, b.birth, str(b.key)))
    by_birth = sorted(blocks, key=lambda b: (b.birth, -b.size, str(b.key)))
    by_area = sorted(blocks, key=lambda b: (-b.size * (b.death - b.birth + 1), b.birth, str(b.key)))
    by_span = sorted(blocks, key=lambda b: (-(b.death - b.birth), -b.size, str(b.key)))
    tries = [_pack(by_size, base, None, False), _pack(by_birth, base, None, False)]
    tries += [_pack(o, base, None, False, best_fit=True) for o in (by_size, by_area, by_span, by_birth)]
    tries += [_pack(o, base, None, False) for o in (by_area, by_span)]
    if peak is not None:
        tries.append(_pack(by_birth, base, align_up(peak), True))
        # skip connections: place the long-lived buffers first, then ping-pong the short ones around them
        longs = sorted([b for b in blocks if b.death - b.birth >= 2], key=lambda b: (b.birth, -b.size, str(b.key)))
        shorts = sorted([b for b in blocks if b.death - b.birth < 2], key=lambda b: (b.birth, -b.size, str(b.key)))
        tries += [_pack(longs + shorts, base, align_up(peak), alt) for alt in (True, False)]
    best = min(tries, key=lambda o: arena_end(blocks, o, base))
    best_end = arena_end(blocks, best, base)
    if peak is not None and best_end > align_up(peak):
        best, best_end = _search(blocks, base, align_up(peak), best, best_end)
    return best, best_end


def _search(
    blocks: list[Block], base: int, target: int, best: dict[Hashable, int], best_end: int, rounds: int | None = None
) -> tuple[dict[Hashable, int], int]:
    """Rule 4: when no fixed order reaches the timeline peak, try seeded random perturbations of the size order
    (first fit and ping-pong against the peak ceiling) and keep the best; stop as soon as the peak is reached.
    The number of rounds shrinks with the square of the block count (the cost of one packing)."""
    if rounds is None:
        rounds = max(32, min(1000, 100_000 // max(1, len(blocks)) ** 2))
    rng = random.Random(len(blocks) * 7919 + target)
    for r in range(rounds):
        noisy = sorted(blocks, key=lambda b: (-b.size * rng.uniform(0.5, 1.5), str(b.key)))
        if r % 2:
            noisy = sorted(noisy, key=lambda b: b.birth + rng.uniform(-2.0, 2.0))
        o = _pack(noisy, base, target, alternate=bool(r % 2))
        end = arena_end(blocks, o, base)
        if end < best_end:
            best, best_end = o, end
            if best_end <= target:
                break
    return best, best_end
