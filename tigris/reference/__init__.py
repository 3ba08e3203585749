"""The NumPy reference executor: the golden semantics of every runtime op.

It runs the *normalized* IR op by op in the runtime's physical layouts, through the same lowering
(:func:`tigris.ops.lower`) the emitter serializes, so the C runtime must match it bit for bit on int8 and within float
rounding on float32. The reference itself is checked against ONNX Runtime on the original model.

Inputs and outputs are given in the model's declared shapes and dtypes (NCHW images, uint8 where the model says
uint8), exactly like ``tigris run``.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from tigris.ir import AnalyzedGraph, Boundary, Tensor, TigrisError, valid_rows
from tigris.layout import input_to_physical, output_from_physical, tensor_view_dims
from tigris.ops import Lowered, TensorView, kind, lower

NP_DTYPES = {
    "float32": np.float32,
    "int8": np.int8,
    "uint8": np.uint8,
    "int32": np.int32,
    "int16": np.int16,
    "int64": np.int64,
    "bool": np.bool_,
}


def boundary_of(graph: AnalyzedGraph, name: str) -> Boundary:
    t = graph.tensors[name]
    return graph.boundary.get(name) or Boundary(name, t.shape, t.dtype, t.quant)


def declared_to_internal(t: Tensor, b: Boundary, arr: np.ndarray) -> np.ndarray:
    """Convert a user array in the declared dtype to the tensor's internal dtype (uint8 -> int8 shifts by 128)."""
    a = np.asarray(arr)
    if b.dtype == "uint8" and t.dtype == "int8":
        return (a.astype(np.int16) - 128).astype(np.int8)
    return a.astype(NP_DTYPES[t.dtype], copy=False)


def internal_to_declared(t: Tensor, b: Boundary, arr: np.ndarray) -> np.ndarray:
    if b.rows:  # a row-counted output: the valid rows (docs/format.md, IoFlag ROWS)
        arr = arr[:valid_rows(arr)]
    if b.dtype == "uint8" and t.dtype == "int8":
        return (arr.astype(np.int16) + 128).astype(np.uint8)
    return arr.astype(NP_DTYPES[b.dtype] if b.dtype in NP_DTYPES else arr.dtype, copy=False)


def make_view(t: Tensor, data: np.ndarray) -> TensorView:
    scale, zp = 1.0, 0
    if t.quant is not None and t.quant.scale.size == 1:
        scale = float(t.quant.scale.reshape(-1)[0])
        zp = int(t.quant.zero_point.reshape(-1)[0])
    dims = tensor_view_dims(t)
    return TensorView(data=data, dims=dims, row0=0, rows=dims[1], dtype=t.dtype, scale=scale, zero_point=zp)


def lower_all(graph: AnalyzedGraph) -> list[Lowered]:
    return [lower(graph, op) for op in graph.ops]


def run_reference(
    graph: AnalyzedGraph,
    inputs: dict[str, np.ndarray],
    lowered: Sequence[Lowered] | None = None,
    keep: bool = False,
) -> dict[str, np.ndarray]:
    """Execute the normalized graph. Returns the graph outputs in declared shape/dtype; with ``keep`` also every
    intermediate tensor as its physical view array (keyed by tensor name, prefixed with ``"phys:"``)."""
    if lowered is None:
        lowered = lower_all(graph)
    values: dict[str, np.ndarray] = {}
    for name in graph.inputs:
        if name not in inputs:
            raise TigrisError("missing input", name)
        t = graph.tensors[name]
        b = boundary_of(graph, name)
        values[name] = input_to_physical(t, b, declared_to_internal(t, b, inputs[name]))
    for low in lowered:
        out_t = graph.tensors[low.outputs[0]]
        if low.alias:
            values[low.outputs[0]] = values[low.inputs[0]].reshape(tensor_view_dims(out_t))
            continue
        in_views = [make_view(graph.tensors[n], values[n]) for n in low.inputs]
        out = make_view(out_t, np.zeros(tensor_view_dims(out_t), dtype=NP_DTYPES[out_t.dtype]))
        kind(low.kind).reference(low, in_views, out)
        values[low.outputs[0]] = out.data
    result: dict[str, np.ndarray] = {}
    for name in graph.outputs:
        t = graph.tensors[name]
        b = boundary_of(graph, name)
        result[name] = internal_to_declared(t, b, output_from_physical(t, b, values[name]))
    if keep:
        result.update({f"phys:{k}": v for k, v in values.items()})
    return result
