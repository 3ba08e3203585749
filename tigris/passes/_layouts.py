"""The layout rule, stated once: which physical order each activation gets (design.md "Layouts").

Passes before the layout pass (Concat axis normalize, output transpose trim) must predict the layout the layout pass
will assign, so the rule lives here and both use it.
"""
from __future__ import annotations

import numpy as np

# logical axis -> position in the physical order, per layout
PHYS_POS = {"nhwc": (0, 3, 1, 2), "nwc": (0, 2, 1)}
# physical order as a permutation of logical axes (physical = logical.transpose(PERM))
PERM = {"nhwc": (0, 2, 3, 1), "nwc": (0, 2, 1)}


def layout_for_rank(rank: int) -> str:
    return {4: "nhwc", 3: "nwc"}.get(rank, "plain")


def physical_axis(axis: int, rank: int) -> int:
    lay = layout_for_rank(rank)
    return PHYS_POS[lay][axis] if lay in PHYS_POS else axis


def perm_of(layout: str, rank: int) -> tuple[int, ...]:
    return PERM.get(layout, tuple(range(rank)))


def byte_order(shape: tuple[int, ...], layout: str) -> np.ndarray:
    """Logical flat indices in the order the bytes are stored (what a reshape preserves is the logical order)."""
    idx = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    return idx.transpose(perm_of(layout, len(shape))).reshape(-1)


def same_order(a: tuple[tuple[int, ...], str], b: tuple[tuple[int, ...], str]) -> bool:
    """True when tensors of (shape, layout) ``a`` and ``b`` store their logical elements in the same order (without
    materializing either order: :func:`tigris.layout.storage_order`)."""
    from tigris.layout import storage_order

    (sa, la), (sb, lb) = a, b
    return storage_order(sa, perm_of(la, len(sa))) == storage_order(sb, perm_of(lb, len(sb)))


def same_bytes(shape: tuple[int, ...], layout: str) -> bool:
    """True when the layout stores the elements in plain logical order (e.g. NHWC with C == 1 or H*W == 1)."""
    return same_order((tuple(shape), layout), (tuple(shape), "plain"))
