"""Logical (ONNX) shapes versus the runtime's physical views, and conversion at the model boundary.

The runtime stores every activation as a rank-4 physical view ``{N, H, W, C}`` (see docs/design.md "Layouts"):

* ``nhwc``: logical ``[N, C, H, W]`` -> ``{N, H, W, C}``
* ``nwc``: logical ``[N, C, L]`` -> ``{N, L, 1, C}`` (L is the row axis, so 1-D signals tile like images)
* ``plain``: logical order, padded on the left with ones to rank 4 (ranks above 4 fold their leading axes)

This module is the one place that knows the mapping; the reference executor, the host session and the emitter use it.
"""
from __future__ import annotations

import numpy as np

from tigris.ir import Boundary, Tensor, TigrisError


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
