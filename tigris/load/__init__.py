"""Stage 1: ONNX file -> :class:`~tigris.ir.AnalyzedGraph`.

Steps, in the spec's order:
1. read and check the file (:mod:`tigris.load.onnx_io`); a quantized model in the QOperator format is rewritten
   to the QDQ form (:mod:`tigris.load.qoperator`), a float16 model to float32 (:mod:`tigris.load.float16`);
2. bind every graph input to a concrete shape (:mod:`tigris.load.shapes`);
3. fold the shape subgraph and run ONNX shape inference to a fixed point (:mod:`tigris.load.fold`);
4. build IR ops and tensors; every activation must now have a static shape, else an error names the tensor;
5. collect initializers and folded values as weights (:mod:`tigris.load.weights`); ``Constant`` nodes stay ops,
   normalization pass 1 turns them into weights;
6. order ops by DFS post-order with reversed child order (:mod:`tigris.load.order`).

Version-dependent semantics are settled here so passes see one form: ``Softmax`` below opset 13 coerces its input to
2-D at ``axis``; when that equals "softmax over the last axis" the op gets the modern explicit axis, otherwise it is
marked ``coerce_2d`` and validation reports it.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx

from tigris.ir import AnalyzedGraph, Boundary, Op, Tensor, TigrisError, UnsupportedModelError
from tigris.load.fold import fold_shape_subgraph
from tigris.load.onnx_io import default_opset, dtype_name, is_static, node_attrs, read_model, value_info_map, vi_shape
from tigris.load.order import dfs_postorder
from tigris.load.float16 import float16_to_float32, has_float16
from tigris.load.qoperator import qoperator_to_qdq
from tigris.load.shapes import bind_input_shapes, real_inputs
from tigris.load.validate import (
    check_declared_outputs, check_model, check_tensor_limits, warn_non_finite,
)
from tigris.load.weights import initializer_arrays

__all__ = ["load_model", "load_onnx_model", "dfs_postorder", "is_tflite_file"]


def is_tflite_file(path: str | Path) -> bool:
    """True when the file starts like a TFLite flatbuffer (identifier ``TFL3`` at byte offset 4)."""
    try:
        with open(path, "rb") as f:
            head = f.read(8)
    except OSError:
        return False
    return len(head) == 8 and head[4:8] == b"TFL3"


def load_model(path: str | Path, input_shapes: dict[str, tuple[int, ...]] | None = None) -> AnalyzedGraph:
    """Load an ONNX or TFLite file into the IR. Raises :class:`TigrisError` naming the file, input or tensor at fault.

    The format is decided by the file's content, not its name: a TFLite flatbuffer carries ``TFL3`` at byte 4."""
    if is_tflite_file(path):
        from tigris.load.tflite import load_tflite

        return load_tflite(path, input_shapes)
    model = read_model(path)
    name = Path(path).stem
    try:
        return load_onnx_model(model, input_shapes, name=name)
    except TigrisError:
        raise
    except Exception as e:  # an internal failure on a strange model still names the file
        raise TigrisError(f"cannot load model: {type(e).__name__}: {e}", str(path)) from e


def load_onnx_model(model: onnx.ModelProto, input_shapes: dict[str, tuple[int, ...]] | None = None,
                    name: str = "model") -> AnalyzedGraph:
    """Stage 1 on an in-memory model (tests build models with ``onnx.helper``). ``model`` is not modified."""
    m = onnx.ModelProto()
    f16 = has_float16(model)
    m.CopyFrom(float16_to_float32(qoperator_to_qdq(model)))
    check_model(m, [vi.name for vi in real_inputs(m.graph)], name)
    notes = bind_input_shapes(m, input_shapes)
    declared = _strip_output_shapes(m.graph)
    m = fold_shape_subgraph(m)
    g = m.graph
    opset = default_opset(m)
    check_declared_outputs(declared, {o.name: vi_shape(o) for o in g.output})
    _restore_output_shapes(g, declared)

    weights_all = initializer_arrays(g)
    vis = value_info_map(g)
    inputs = [vi.name for vi in real_inputs(g)]
    outputs = [o.name for o in g.output]

    raw_ops = [_make_op(n, i) for i, n in enumerate(g.node)]
    for out in outputs:
        if out not in {t for op in raw_ops for t in op.outputs} and out not in inputs:
            raise TigrisError("graph output is not computed by any node", out)
    ops = dfs_postorder(raw_ops, outputs)
    dropped = len(raw_ops) - len(ops)
    if dropped:
        notes.append(f"{dropped} node(s) from which no graph output is reachable were dropped")

    # An operator of another domain whose output shape ONNX cannot infer (ORT's QOperator ops were rewritten to QDQ
    # above; anything else, e.g. com.microsoft FusedConv) has no kernel here: report every such node as unsupported rather than a shape question.
    # (Custom ops with inferable shapes, e.g. a Swish the passes decompose, load normally.)
    custom = [{"node": op.name, "op": op.op_type, "reason": f"operator of domain {op.attrs['domain']!r} (only the "
               f"standard ONNX domain and ONNX Runtime's quantized operators are supported)"}
              for op in ops if op.attrs.get("domain") not in (None, "", "ai.onnx")
              and any(t and not is_static(vi_shape(vis[t]) if t in vis else None) for t in op.outputs)]
    if custom:
        raise UnsupportedModelError(custom, name)

    rows = _bound_nms_outputs(ops, vis, weights_all)
    used = {t for op in ops for t in (*op.inputs, *op.outputs) if t} | set(inputs) | set(outputs)
    weights = {k: v for k, v in weights_all.items() if k in used and k not in inputs}
    warn_non_finite(weights)
    tensors: dict[str, Tensor] = {}
    for t in sorted(used):
        if t in weights:
            tensors[t] = Tensor(t, tuple(int(d) for d in weights[t].shape), _np_dtype(weights[t]))
            continue
        vi = vis.get(t)
        shp = vi_shape(vi) if vi is not None else None
        if not is_static(shp):
            raise TigrisError(_unresolved(m, t, shp), t)
        if 0 in shp:
            raise TigrisError(f"tensor has a zero-size dimension {shp}; zero-size tensors cannot be executed", t)
        check_tensor_limits(t, tuple(shp), dtype_name(vi.type.tensor_type.elem_type))
        tensors[t] = Tensor(t, tuple(int(d) for d in shp), dtype_name(vi.type.tensor_type.elem_type))

    ops = [_settle_versions(op, tensors, opset) for op in ops]
    boundary = {t: Boundary(t, tensors[t].shape, tensors[t].dtype, rows=t in rows) for t in inputs + outputs}
    if f16:
        notes.append("float16 model: weights and activations widened to float32 (verify judges it at the float16 "
                     "tolerance)")
    return AnalyzedGraph(name=name, tensors=tensors, ops=ops, inputs=inputs, outputs=outputs, weights=weights,
                         boundary=boundary, notes=notes, precision="float16" if f16 else "float32")


def _unresolved(m: onnx.ModelProto, t: str, shp) -> str:
    """Why tensor ``t`` has no static shape: the error strict shape inference reports (an invalid model: bad
    attribute, incompatible shapes), else the node whose output inference cannot state."""
    try:
        onnx.shape_inference.infer_shapes(m, strict_mode=True, data_prop=True)
        reason = None
    except Exception as e:  # noqa: BLE001 - onnx raises InferenceError, ValidationError, RuntimeError
        reason = " ".join(str(e).split())[:400] or type(e).__name__
    if reason:
        return f"cannot resolve the shape of tensor: ONNX shape inference fails: {reason}"
    producer = next((f"{n.name or n.op_type} ({n.op_type})" for n in m.graph.node if t in n.output), None)
    by = f" computed by {producer}" if producer else ""
    return (f"cannot resolve the shape of tensor{by} (inferred {list(shp) if shp is not None else 'no rank'}); "
            f"give the input shapes with --input-shape or simplify the model")


def _bound_nms_outputs(ops: list[Op], vis: dict, weights: dict) -> set[str]:
    """NonMaxSuppression selects a data-dependent number of boxes; with a constant ``max_output_boxes_per_class``
    its output gets its maximum shape ``[B * C * min(max, N), 3]`` (the plan stores that many rows and marks the
    output row-counted, docs/format.md). Returns the outputs so bounded."""
    out: set[str] = set()
    for op in ops:
        if op.op_type != "NonMaxSuppression" or len(op.inputs) < 2:
            continue
        bs = vi_shape(vis[op.inputs[0]]) if op.inputs[0] in vis else None
        ss = vi_shape(vis[op.inputs[1]]) if op.inputs[1] in vis else None
        mname = op.inputs[2] if len(op.inputs) > 2 else ""
        if not (is_static(bs) and is_static(ss)) or len(bs) != 3 or len(ss) != 3 or (mname and mname not in weights):
            continue
        m = np.asarray(weights[mname]).reshape(-1) if mname else np.zeros(0)
        k = max(int(m[0]), 0) if m.size else 0
        rows = int(bs[0]) * int(ss[1]) * min(k, int(bs[1]))
        vis[op.outputs[0]] = onnx.helper.make_tensor_value_info(op.outputs[0], onnx.TensorProto.INT64, [rows, 3])
        out.add(op.outputs[0])
    return out


def _strip_output_shapes(g: onnx.GraphProto) -> dict[str, tuple | None]:
    """Declared shapes of the graph outputs some node computes, cleared so inference states its own (validate
    rule 6)."""
    produced = {t for n in g.node for t in n.output}
    declared: dict[str, tuple | None] = {}
    for o in g.output:
        if o.name in produced and o.type.HasField("tensor_type"):
            declared[o.name] = vi_shape(o)
            o.type.tensor_type.ClearField("shape")
    return declared


def _restore_output_shapes(g: onnx.GraphProto, declared: dict[str, tuple | None]) -> None:
    """Outputs inference could not shape (another domain's op) keep their declared shape."""
    for o in g.output:
        want = declared.get(o.name)
        if want is None or o.type.tensor_type.HasField("shape"):
            continue
        o.type.tensor_type.shape.SetInParent()
        for d in want:
            dim = o.type.tensor_type.shape.dim.add()
            if isinstance(d, int):
                dim.dim_value = d
            elif isinstance(d, str):
                dim.dim_param = d


def _np_dtype(a: np.ndarray) -> str:
    return "bool" if a.dtype == np.bool_ else str(a.dtype)


def _make_op(node: onnx.NodeProto, index: int) -> Op:
    name = node.name or f"{node.op_type}_{index}"
    attrs = node_attrs(node)
    if node.domain not in ("", "ai.onnx"):
        attrs["domain"] = node.domain
    return Op(name, node.op_type, tuple(node.input), tuple(node.output), attrs)


def _settle_versions(op: Op, tensors: dict[str, Tensor], opset: int) -> Op:
    if op.op_type in ("Softmax", "LogSoftmax", "Hardmax"):
        rank = len(tensors[op.inputs[0]].shape)
        default = 1 if opset < 13 else -1
        axis = int(op.attrs.get("axis", default))
        axis = axis + rank if axis < 0 else axis
        attrs = dict(op.attrs, axis=axis)
        if opset < 13 and axis != rank - 1:
            # Pre-13 Softmax flattens to 2-D at `axis`; equal to last-axis softmax only when axis is the last
            # non-trivial axis. Check that all dims after axis are 1 is not enough either, so report it.
            if all(d == 1 for d in tensors[op.inputs[0]].shape[axis + 1:]):
                attrs["axis"] = axis
            else:
                attrs["coerce_2d"] = True
        return op.with_(attrs=attrs)
    return op
