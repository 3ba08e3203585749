"""Logical (ONNX) shapes versus the runtime's physical views, and conversion at the model boundary.

The runtime stores every activation as a rank-4 physical view ``{N, H, W, C}`` (see docs/design.md "Layouts"):

* ``nhwc``: logical ``[N, C, H, W]`` -> ``{N, H, W, C}``
* ``nwc``: logical ``[N, C, L]`` -> ``{N, L, 1, C}`` (L is the row axis, so 1-D signals tile like images)
* ``plain``: logical order, padded on the left with ones to rank 4 (ranks above 4 fold their leading axes)

This module is the one place that knows the mapping: the layout rule (:func:`layout_for_rank`, which the layout
pass applies and the passes before it predict), the axis maps, the byte order a layout stores elements in
(:func:`byte_order`, from which the layout pass decides and records whether a reshape moves bytes), and the
conversions the reference executor, the host session and the emitter use.
"""
from __future__ import annotations

import numpy as np

from tigris.ir import Boundary, Tensor, TigrisError

# Layouts whose physical row axis (H of nhwc, L of nwc) is a logical axis: tensors the planner can cut into row bands.
ROW_LAYOUTS = ("nhwc", "nwc")


# logical axis -> its position in the physical order, per layout
PHYS_POS = {"nhwc": (0, 3, 1, 2), "nwc": (0, 2, 1)}
# the physical order as a permutation of the logical axes (physical = logical.transpose(PERM))
PERM = {"nhwc": (0, 2, 3, 1), "nwc": (0, 2, 1)}


def layout_for_rank(rank: int) -> str:
    """The layout rule: rank-4 activations are nhwc, rank-3 nwc, every other rank plain."""
    return {4: "nhwc", 3: "nwc"}.get(rank, "plain")


def physical_axis(axis: int, rank: int) -> int:
    """Where logical ``axis`` of a rank-``rank`` activation sits in its physical order (under the layout rule)."""
    lay = layout_for_rank(rank)
    return PHYS_POS[lay][axis] if lay in PHYS_POS else axis


def perm_of(layout: str, rank: int) -> tuple[int, ...]:
    p = PERM.get(layout)
    return p if p is not None and len(p) == rank else tuple(range(rank))


def byte_order(shape: tuple[int, ...], layout: str) -> np.ndarray:
    """Logical flat index of the element stored at each physical position (a reshape keeps the logical order, so it
    moves no bytes exactly when input and output have the same byte order; :func:`same_order` answers that without
    building this array)."""
    shape = tuple(int(d) for d in shape)
    idx = np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.int64).reshape(shape)
    return idx.transpose(perm_of(layout, len(shape))).reshape(-1)


def same_order(a: tuple[tuple[int, ...], str], b: tuple[tuple[int, ...], str]) -> bool:
    """True when tensors of (shape, layout) ``a`` and ``b`` store their logical elements in the same order (compared
    in O(rank) through :func:`storage_order`)."""
    (sa, la), (sb, lb) = a, b
    return storage_order(tuple(sa), perm_of(la, len(sa))) == storage_order(tuple(sb), perm_of(lb, len(sb)))


def same_byte_order(a: Tensor, b: Tensor) -> bool:
    """``a`` and ``b`` store their elements (logical row-major order) in the same physical sequence."""
    return same_order((a.shape, a.layout), (b.shape, b.layout))


def in_logical_order(shape: tuple[int, ...], layout: str) -> bool:
    """The layout stores the elements in plain logical order (e.g. NHWC with C == 1 or H*W == 1)."""
    return same_order((tuple(shape), layout), (tuple(shape), "plain"))


def view_dims(shape: tuple[int, ...], layout: str) -> tuple[int, int, int, int]:
    s = tuple(int(d) for d in shape)
    if layout == "nhwc":
        if len(s) != 4:
            raise ValueError(f"nhwc layout needs rank 4, got {s}")
        return (s[0], s[2], s[3], s[1])
    if layout == "nwc":
        if len(s) != 3:
            raise ValueError(f"nwc layout needs rank 3, got {s}")
        return (s[0], s[2], 1, s[1])
    if layout != "plain":
        raise ValueError(f"unknown layout {layout!r}")
    if len(s) > 4:
        lead = 1
        for d in s[:-3]:
            lead *= d
        s = (lead,) + s[-3:]
    return (1,) * (4 - len(s)) + s  # type: ignore[return-value]


def tensor_view_dims(t: Tensor) -> tuple[int, int, int, int]:
    return view_dims(t.shape, t.layout)


def to_physical(arr: np.ndarray, shape: tuple[int, ...], layout: str) -> np.ndarray:
    """Logical-order array -> contiguous physical view array of shape view_dims."""
    a = np.asarray(arr).reshape(shape)
    if layout == "nhwc":
        a = a.transpose(0, 2, 3, 1)
    elif layout == "nwc":
        a = a.transpose(0, 2, 1)
    return np.ascontiguousarray(a).reshape(view_dims(shape, layout))


def from_physical(arr: np.ndarray, shape: tuple[int, ...], layout: str) -> np.ndarray:
    """Physical view array -> logical-order array of ``shape``."""
    dims = view_dims(shape, layout)
    a = np.asarray(arr).reshape(dims)
    if layout == "nhwc":
        return np.ascontiguousarray(a.transpose(0, 3, 1, 2))
    if layout == "nwc":
        return np.ascontiguousarray(a.reshape(dims[0], dims[1], dims[3]).transpose(0, 2, 1))
    return np.ascontiguousarray(a.reshape(shape))


def boundary_is_physical(t: Tensor, b: Boundary) -> bool:
    """True when the model declares this boundary in our physical order already (an NHWC-exported model whose
    leading Transpose was removed): the user's bytes are used as they are."""
    return tuple(b.shape) != tuple(t.shape) and int(np.prod(b.shape)) == t.numel


def input_to_physical(t: Tensor, b: Boundary, arr: np.ndarray) -> np.ndarray:
    """A user array in the model's declared shape -> the physical view (dtype untouched)."""
    a = np.asarray(arr)
    if tuple(a.shape) != tuple(b.shape):
        raise TigrisError(f"input has shape {list(a.shape)}, the model declares {list(b.shape)}", t.name)
    if boundary_is_physical(t, b):
        return np.ascontiguousarray(a).reshape(tensor_view_dims(t))
    return to_physical(a, t.shape, t.layout)


def output_from_physical(t: Tensor, b: Boundary, arr: np.ndarray) -> np.ndarray:
    if boundary_is_physical(t, b):
        return np.ascontiguousarray(arr).reshape(b.shape)
    return from_physical(arr, t.shape, t.layout).reshape(b.shape)


def storage_order(shape: tuple[int, ...], perm: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    """The order in which a tensor stored with logical axes ``perm`` (outermost first) enumerates its row-major
    logical elements, as a canonical list of (count, logical stride) runs: unit axes dropped, and an axis merged into
    the next outer one whenever the two walk memory contiguously. Two (shape, perm) pairs with the same element count
    store the same logical sequence exactly when their canonical forms are equal, so reshape-alias questions are
    answered in O(rank) instead of by materializing an index array as large as the tensor."""
    shape = tuple(int(d) for d in shape)
    strides = [1] * len(shape)
    for a in range(len(shape) - 2, -1, -1):
        strides[a] = strides[a + 1] * shape[a + 1]
    runs: list[tuple[int, int]] = []
    for a in reversed(perm):  # innermost first
        if shape[a] == 1:
            continue
        if runs and strides[a] == runs[-1][0] * runs[-1][1]:
            count, stride = runs[-1]
            runs[-1] = (count * shape[a], stride)
        else:
            runs.append((shape[a], strides[a]))
    return tuple(reversed(runs))
