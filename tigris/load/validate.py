"""What stage 1 refuses before anything is computed from a model, and the limits every tensor must respect.

Each check raises a :class:`~tigris.ir.TigrisError` (exit 2) naming the model, node or tensor at fault:

1. **Opsets**: the default-domain opset must be one the installed ``onnx`` package defines; a newer one would be
   read with older semantics.
2. **Graph interface**: the graph declares at least one output, and no output is a graph input (nothing would be
   computed: the plan has no operator).
3. **Declared dims**: no ``dim_value`` of a graph input, output or value_info is negative or above :data:`MAX_DIM`.
4. **Attribute domains**: string attributes with a closed set of values (``auto_pad``, ``Pad.mode``, ...) hold one
   of them (:data:`ENUMS`); the checker does not look at values.
5. **Limits** (:func:`check_tensor_limits`, after shape inference): every dimension fits the plan format's signed
   32-bit dims (:data:`MAX_DIM`), every tensor's byte size its unsigned 32-bit sizes (:data:`MAX_TENSOR_BYTES`), and
   its element count what the compiler may enumerate on this host (:data:`MAX_ELEMENTS`). Nothing downstream iterates
   over a range proportional to a dimension before this holds.
6. **Declared output shapes** (:func:`check_declared_outputs`): a graph output's declared shape must agree with the
   shape its producer computes; a disagreement is refused rather than planned from either guess (the runtime would
   refuse the plan, and silently trusting the inferred shape would hide an export bug).

Non-finite weights (NaN, inf) are not refused, because ``-inf`` masks and ``inf`` clip bounds are legitimate; the
loader emits one :class:`TigrisWarning` naming the initializer (:func:`warn_non_finite`).
"""
from __future__ import annotations

import math
import warnings
from typing import Iterable

import numpy as np
import onnx

from tigris.ir import TigrisError, TigrisWarning

MAX_DIM = 2**31 - 1  # tensor dims are i32 in the plan format
MAX_TENSOR_BYTES = 2**32 - 1  # tensor sizes and arena offsets are u32
MAX_ELEMENTS = 2**31 - 1  # elements per tensor the compiler accepts (the format's own bound for 1-byte elements)
FOLD_MAX_ELEMENTS = 2**24  # a constant the loader folds (shape arithmetic) never needs more elements than this

ENUMS: dict[str, dict[str, frozenset[str]]] = {}
_PAD = frozenset({"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"})
for _op in ("Conv", "ConvTranspose", "ConvInteger", "QLinearConv", "MaxPool", "AveragePool", "LpPool"):
    ENUMS[_op] = {"auto_pad": _PAD}
ENUMS["Pad"] = {"mode": frozenset({"constant", "reflect", "edge", "wrap"})}
ENUMS["Resize"] = {
    "mode": frozenset({"nearest", "linear", "cubic"}),
    "coordinate_transformation_mode": frozenset({"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",
                                                 "align_corners", "asymmetric", "tf_half_pixel_for_nn",
                                                 "tf_crop_and_resize"}),
    "nearest_mode": frozenset({"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}),
    "keep_aspect_ratio_policy": frozenset({"stretch", "not_larger", "not_smaller"}),
}
ENUMS["Upsample"] = {"mode": frozenset({"nearest", "linear", "bilinear", "trilinear"})}
ENUMS["DepthToSpace"] = {"mode": frozenset({"DCR", "CRD"})}
ENUMS["Gelu"] = {"approximate": frozenset({"none", "tanh"})}


def _node_name(node: onnx.NodeProto, index: int) -> str:
    return node.name or f"{node.op_type}_{index}"


def check_opsets(model: onnx.ModelProto, where: str) -> None:
    known = onnx.defs.onnx_opset_version()
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx") and o.version > known:
            raise TigrisError(f"opset {o.version} is newer than the installed onnx package knows (up to {known})",
                              where)
        if o.domain in ("", "ai.onnx") and o.version < 1:
            raise TigrisError(f"opset {o.version} is not a valid ONNX opset", where)


def check_interface(graph: onnx.GraphProto, inputs: Iterable[str], where: str) -> None:
    if not graph.output:
        raise TigrisError("the model declares no graph outputs", where)
    ins = set(inputs)
    for o in graph.output:
        if o.name in ins:
            raise TigrisError("graph output is a graph input (the model computes nothing)", o.name)
    names = [o.name for o in graph.output]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup is not None:
        raise TigrisError("graph output is declared twice", dup)


def check_declared_dims(graph: onnx.GraphProto) -> None:
    for vi in (*graph.input, *graph.output, *graph.value_info):
        if not vi.type.HasField("tensor_type"):
            continue
        for ax, d in enumerate(vi.type.tensor_type.shape.dim):
            if d.HasField("dim_value") and d.dim_value < 0:
                raise TigrisError(f"axis {ax} has the negative size {d.dim_value}", vi.name)
            if d.HasField("dim_value") and d.dim_value > MAX_DIM:
                raise TigrisError(f"axis {ax} has size {d.dim_value}, above the plan format's limit {MAX_DIM}",
                                  vi.name)


def check_attributes(graph: onnx.GraphProto) -> None:
    for i, node in enumerate(graph.node):
        if node.domain not in ("", "ai.onnx"):
            continue
        domains = ENUMS.get(node.op_type)
        if not domains:
            continue
        for a in node.attribute:
            allowed = domains.get(a.name)
            if allowed is None or a.type != onnx.AttributeProto.STRING:
                continue
            v = a.s.decode("utf-8", "replace")
            if v not in allowed:
                raise TigrisError(f"attribute {a.name}={v!r} of {node.op_type} is not one of {sorted(allowed)}",
                                  _node_name(node, i))


def check_model(model: onnx.ModelProto, inputs: Iterable[str], where: str) -> None:
    """Rules 1-4, on the model as read (before any shape is bound or inferred)."""
    check_opsets(model, where)
    check_interface(model.graph, inputs, where)
    check_declared_dims(model.graph)
    check_attributes(model.graph)


def shape_problem(shape: tuple[int, ...], itemsize: int) -> str | None:
    """Why a tensor of ``shape`` and element size ``itemsize`` breaks rule 5, or None."""
    for ax, d in enumerate(shape):
        if d < 0:
            return f"axis {ax} has the negative size {d}"
        if d > MAX_DIM:
            return f"axis {ax} has size {d}, above the plan format's limit {MAX_DIM}"
    n = math.prod(shape)
    if n > MAX_ELEMENTS:
        return f"{n} elements, above the limit of {MAX_ELEMENTS} elements per tensor"
    if n * itemsize > MAX_TENSOR_BYTES:
        return f"{n * itemsize} bytes, above the plan format's limit of {MAX_TENSOR_BYTES} bytes per tensor"
    return None


def itemsize_of(dtype: str) -> int:
    try:
        return int(np.dtype(dtype).itemsize)
    except TypeError:
        return 1  # an ONNX type NumPy does not name (validation refuses it later); the dims are still checked


def check_tensor_limits(name: str, shape: tuple[int, ...], dtype: str) -> None:
    why = shape_problem(shape, itemsize_of(dtype))
    if why is not None:
        raise TigrisError(f"tensor too large: {why}", name)


def check_declared_outputs(declared: dict[str, tuple], inferred: dict[str, tuple | None]) -> None:
    """Rule 6: ``declared`` output shapes (from the file) against ``inferred`` ones (None = not inferable)."""
    for name, want in declared.items():
        got = inferred.get(name)
        if want is None or got is None:
            continue
        if len(want) != len(got):
            raise TigrisError(f"graph output declares rank {len(want)} but its producer computes shape {list(got)}",
                              name)
        for w, g in zip(want, got):
            if isinstance(w, int) and isinstance(g, int) and w != g:
                raise TigrisError(f"graph output declares shape {list(want)} but its producer computes "
                                  f"{list(got)}", name)


def warn_non_finite(weights: dict[str, np.ndarray]) -> None:
    """One warning naming the first initializer holding NaN or inf (and how many others do)."""
    bad = []
    for name, a in weights.items():
        if a.dtype.kind in "fc" and a.size and not np.isfinite(a).all():
            bad.append((name, int(np.count_nonzero(~np.isfinite(a)))))
    if bad:
        name, count = bad[0]
        more = f" (and {len(bad) - 1} more initializer(s))" if len(bad) > 1 else ""
        warnings.warn(TigrisWarning(f"initializer {name} holds {count} non-finite value(s) (NaN or inf){more}; "
                                    "the plan computes with them as stored"), stacklevel=2)
