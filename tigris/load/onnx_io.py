"""Reading an ONNX file and translating ONNX protobuf pieces (dtypes, attributes) into plain Python values.

Everything ONNX-specific that more than one loader module needs lives here so the other modules stay small.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from tigris.ir import TigrisError

# ONNX TensorProto element types the IR can name. Anything else is kept under ONNX's own name so validation can
# report it instead of the loader crashing on it.
_ELEM_NAMES = {
    onnx.TensorProto.FLOAT: "float32",
    onnx.TensorProto.INT8: "int8",
    onnx.TensorProto.UINT8: "uint8",
    onnx.TensorProto.INT16: "int16",
    onnx.TensorProto.INT32: "int32",
    onnx.TensorProto.INT64: "int64",
    onnx.TensorProto.BOOL: "bool",
}


def dtype_name(elem_type: int) -> str:
    """The IR dtype name of an ONNX element type (unknown types keep their ONNX name, lower-cased)."""
    if elem_type in _ELEM_NAMES:
        return _ELEM_NAMES[elem_type]
    return onnx.TensorProto.DataType.Name(elem_type).lower()


def numpy_dtype_name(arr: np.ndarray) -> str:
    return str(arr.dtype)


def read_model(path: str | Path) -> onnx.ModelProto:
    """Load and check an ONNX file; any failure is a :class:`TigrisError` that names the file."""
    p = Path(path)
    if not p.exists():
        raise TigrisError("model file not found", str(p))
    if not p.is_file():
        raise TigrisError("not a regular file", str(p))
    try:
        model = onnx.load(str(p))
    except Exception as e:  # protobuf raises several unrelated types for garbage input
        raise TigrisError(f"cannot parse ONNX model: {type(e).__name__}: {e}", str(p)) from e
    if not model.graph.node and not model.graph.output:
        raise TigrisError("not an ONNX model (empty graph)", str(p))
    from tigris.load.validate import check_opsets

    check_opsets(model, str(p))  # before the checker, which would judge the nodes by the wrong opset
    try:
        onnx.checker.check_model(model)
    except Exception as e:
        text = " ".join(str(e).split()) or type(e).__name__  # its messages span lines; keep the node name
        raise TigrisError(f"invalid ONNX model: {text}", str(p)) from e
    return model


def default_opset(model: onnx.ModelProto) -> int:
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            return int(o.version)
    return 1


def attr_value(a: onnx.AttributeProto) -> Any:
    """An ONNX attribute as a plain value: lists of ints/floats, str, or a NumPy array for tensors.

    Subgraph attributes (If/Loop bodies) become ``None``: no runtime kernel exists for control flow, and validation
    reports the op by its type.
    """
    if a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS):
        return None
    if a.type == onnx.AttributeProto.TENSOR:
        return numpy_helper.to_array(a.t)
    v = helper.get_attribute_value(a)
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, list):
        return [x.decode("utf-8", "replace") if isinstance(x, bytes) else x for x in v]
    return v


def node_attrs(node: onnx.NodeProto) -> dict[str, Any]:
    return {a.name: attr_value(a) for a in node.attribute}


def value_info_map(graph: onnx.GraphProto) -> dict[str, onnx.ValueInfoProto]:
    out: dict[str, onnx.ValueInfoProto] = {}
    for vi in list(graph.value_info) + list(graph.input) + list(graph.output):
        out[vi.name] = vi
    return out


def vi_shape(vi: onnx.ValueInfoProto) -> tuple[int | str | None, ...] | None:
    """Dims of a value: int when static, the dim_param string when symbolic, None when unknown; None if no rank."""
    tt = vi.type.tensor_type
    if not tt.HasField("shape"):
        return None
    dims: list[int | str | None] = []
    for d in tt.shape.dim:
        if d.HasField("dim_value"):
            dims.append(int(d.dim_value))
        elif d.HasField("dim_param"):
            dims.append(d.dim_param)
        else:
            dims.append(None)
    return tuple(dims)


def is_static(shape: tuple[int | str | None, ...] | None) -> bool:
    return shape is not None and all(isinstance(d, int) and d >= 0 for d in shape)
