"""Arena offset assignment: alignment, no overlap of simultaneously live blocks, the timeline peak reached on chains."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tigris.plan.arena import Block, assign_offsets
from tigris.plan.lifetime import Lifetime
from tigris.plan.spatial import spec_halo_cost, spec_tiled_peak
from tigris.plan.timeline import sweep


def test_chain_reaches_the_peak_with_hand_checked_offsets():
    # A(0-1, 160) B(1-2, 32) C(2-3, 160) D(3-4, 32): peak 192 at every step; A and C can share offset 0
    blocks = [Block("A", 160, 0, 1), Block("B", 32, 1, 2), Block("C", 160, 2, 3), Block("D", 32, 3, 4)]
    offsets, end = assign_offsets(blocks, base=0, peak=192)
    assert end == 192
    assert offsets["A"] == offsets["C"] == 0 and offsets["B"] == offsets["D"] == 160


def test_base_is_the_weight_prefix():
    offsets, end = assign_offsets([Block("A", 32, 0, 0)], base=100)
    assert offsets["A"] == 112 and end == 144  # aligned up past the prefix


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 40), st.integers(0, 12), st.integers(0, 5)), min_size=1, max_size=25))
def test_random_intervals_never_overlap_and_a_chain_hits_the_peak(specs):
    blocks = [Block(k, size * 16, b, b + span) for k, (size, b, span) in enumerate(specs)]
    peak = sweep([Lifetime(str(b.key), b.size, b.birth, b.death) for b in blocks], 20).peak
    offsets, end = assign_offsets(blocks, 0, peak)
    assert end >= peak
    for b in blocks:
        assert offsets[b.key] % 16 == 0
        for c in blocks:
            if b.key < c.key and b.birth <= c.death and c.birth <= b.death:
                assert offsets[b.key] + b.size <= offsets[c.key] or offsets[c.key] + c.size <= offsets[b.key]
    # a pure chain (each block overlaps only its neighbours) is packed at exactly the peak
    chain = [Block(k, size * 16, k, k + 1) for k, (size, _, _) in enumerate(specs)]
    cpeak = sweep([Lifetime(str(b.key), b.size, b.birth, b.death) for b in chain], len(chain) + 1).peak
    assert assign_offsets(chain, 0, cpeak)[1] == cpeak


def test_spec_figures():
    assert spec_tiled_peak(768, 12, 0, 16) == 576
    assert spec_halo_cost(64, 4) == 192 and spec_halo_cost(64, 1) == 0
