"""Folding the shape subgraph before the IR exists.

Exporters compute reshape targets at run time (``Shape -> Gather -> Unsqueeze -> Concat -> Reshape``). Until that
arithmetic is a constant, shape inference cannot give the Reshape's output a rank, and everything downstream stays
unknown. So the loader alternates two steps until nothing changes:

1. run ONNX shape inference (with data propagation, which already resolves many Shape chains);
2. replace by initializers every node of :data:`FOLDABLE` whose inputs are all constants, and every ``Shape``/``Size``
   whose input shape is static.

Rules for what may fold:
* ``QuantizeLinear``/``DequantizeLinear`` never fold, even on constant inputs: the QDQ pass needs to see the int8
  weight and its scale, and folding would turn an int8 model's weights into floats.
* ``Constant`` nodes are not removed here (normalization pass 1 does that), but their values count as constants.
* Only deterministic, side-effect-free tensor arithmetic is in :data:`FOLDABLE`; a node the evaluator cannot run is
  simply left in place (it will be reported later if the runtime cannot run it either).
"""
from __future__ import annotations

import math

import numpy as np
import onnx
from onnx import helper, numpy_helper

from tigris.load.onnx_io import default_opset, is_static, node_attrs, value_info_map, vi_shape
from tigris.load.validate import FOLD_MAX_ELEMENTS

FOLDABLE = frozenset({
    "Shape", "Size", "Gather", "Unsqueeze", "Squeeze", "Concat", "Slice", "Cast", "Mul", "Add", "Sub", "Div",
    "Reshape", "ConstantOfShape", "Range", "Equal", "Where", "Expand", "ReduceProd", "Identity", "Transpose",
    "Floor", "Ceil", "Neg", "Abs", "Sqrt", "Min", "Max", "Not", "Less", "Greater", "Tile", "Flatten", "Mod",
    "ReduceMin", "ReduceMax", "ReduceSum", "GatherElements", "Pow",
})

MAX_ROUNDS = 16


def _infer(model: onnx.ModelProto) -> onnx.ModelProto:
    try:
        return onnx.shape_inference.infer_shapes(model, data_prop=True)
    except Exception:
        # A model the strict inferencer rejects may still infer without data propagation.
        return onnx.shape_inference.infer_shapes(model)


def _const_values(graph: onnx.GraphProto) -> dict[str, np.ndarray]:
    vals = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    for n in graph.node:
        if n.op_type == "Constant" and n.output:
            a = node_attrs(n)
            if "value" in a and isinstance(a["value"], np.ndarray):
                vals[n.output[0]] = a["value"]
            elif "value_int" in a:
                vals[n.output[0]] = np.array(a["value_int"], dtype=np.int64)
            elif "value_ints" in a:
                vals[n.output[0]] = np.array(a["value_ints"], dtype=np.int64)
            elif "value_float" in a:
                vals[n.output[0]] = np.array(a["value_float"], dtype=np.float32)
            elif "value_floats" in a:
                vals[n.output[0]] = np.array(a["value_floats"], dtype=np.float32)
    return vals


def _evaluate(node: onnx.NodeProto, inputs: list[np.ndarray | None], opset: int) -> list[np.ndarray] | None:
    """Run one node on constant inputs; None when neither evaluator manages (the node then stays)."""
    feeds = {name: v for name, v in zip(node.input, inputs) if name}
    try:
        from onnx.reference import ReferenceEvaluator

        res = ReferenceEvaluator(node, opsets={"": opset}).run(None, feeds)
        return [np.asarray(r) for r in res]
    except Exception:
        pass
    try:  # the ONNX reference evaluator has gaps for old opsets; ONNX Runtime is the second opinion
        import onnxruntime as ort

        g_in = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
                for n, v in feeds.items()]
        g_out = [helper.make_empty_tensor_value_info(o) for o in node.output if o]
        g = helper.make_graph([node], "fold", g_in, g_out)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = 8
        so = ort.SessionOptions()
        so.log_severity_level = 4
        sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
        return [np.asarray(r) for r in sess.run(None, feeds)]
    except Exception:
        return None


def _small_enough(node: onnx.NodeProto, consts: dict[str, np.ndarray], vis: dict) -> bool:
    """Whether folding ``node`` stays within FOLD_MAX_ELEMENTS per output, judged before anything is allocated: from
    the inferred output shapes, or for the ops whose output size is a value of their inputs, from those values. A
    node that would be larger stays a node (shape arithmetic is never that big)."""
    limit = FOLD_MAX_ELEMENTS
    for o in node.output:
        shp = vi_shape(vis[o]) if o in vis else None
        if is_static(shp) and math.prod(shp) > limit:
            return False
    vals = [consts.get(i) for i in node.input]
    try:
        if node.op_type in ("ConstantOfShape", "Expand") and len(vals) >= 1:
            target = vals[0 if node.op_type == "ConstantOfShape" else 1]
            t = [int(d) for d in np.asarray(target).reshape(-1)]
            if any(d < 0 for d in t) or math.prod(max(d, 1) for d in t) > limit:
                return False
            if node.op_type == "Expand" and vals[0] is not None:
                if math.prod(np.broadcast_shapes(np.shape(vals[0]), tuple(t))) > limit:
                    return False
        elif node.op_type == "Tile" and len(vals) >= 2:
            reps = [int(d) for d in np.asarray(vals[1]).reshape(-1)]
            if any(r < 0 for r in reps) or np.asarray(vals[0]).size * math.prod(reps) > limit:
                return False
        elif node.op_type == "Range" and len(vals) == 3:
            start, stop, delta = (float(np.asarray(v).reshape(-1)[0]) for v in vals)
            if delta == 0 or not all(math.isfinite(x) for x in (start, stop, delta)):
                return False
            if (stop - start) / delta > limit:
                return False
        elif len(node.input) >= 2 and all(v is not None for v in vals):
            # broadcasting ops: the output has at most the product of the inputs' largest dims per axis
            try:
                b = np.broadcast_shapes(*(np.shape(v) for v in vals))
                if math.prod(b) > limit:
                    return False
            except ValueError:
                pass  # not a broadcast (Concat, Gather, ...): bounded by its inputs, which are bounded
    except (TypeError, ValueError, OverflowError, IndexError):
        return False
    return True


def _fold_once(model: onnx.ModelProto) -> bool:
    g = model.graph
    opset = default_opset(model)
    consts = _const_values(g)
    vis = value_info_map(g)
    graph_outputs = {o.name for o in g.output}
    keep: list[onnx.NodeProto] = []
    new_inits: list[onnx.TensorProto] = []
    changed = False
    for node in g.node:
        if node.domain not in ("", "ai.onnx") or node.op_type not in FOLDABLE:
            keep.append(node)
            continue
        outs: list[np.ndarray] | None = None
        if node.op_type in ("Shape", "Size") and node.input[0] not in consts:
            shp = vi_shape(vis[node.input[0]]) if node.input[0] in vis else None
            if is_static(shp):
                arr = np.array(shp, dtype=np.int64)
                if node.op_type == "Size":
                    outs = [np.array(int(np.prod(arr)), dtype=np.int64)]
                else:
                    a = node_attrs(node)
                    r = len(arr)
                    start = a.get("start", 0)
                    end = a.get("end", r)
                    outs = [arr[slice(start, end)]]
        elif all((not i) or i in consts for i in node.input) and _small_enough(node, consts, vis):
            outs = _evaluate(node, [consts.get(i) for i in node.input], opset)
        if outs is None or any(o in graph_outputs for o in node.output):
            keep.append(node)
            continue
        changed = True
        for name, val in zip(node.output, outs):
            if name:
                consts[name] = val
                new_inits.append(numpy_helper.from_array(np.asarray(val), name))
    if changed:
        del g.node[:]
        g.node.extend(keep)
        g.initializer.extend(new_inits)
        # Drop stale value_info of names that are now initializers so inference restates them.
        folded = {t.name for t in new_inits}
        kept_vi = [vi for vi in g.value_info if vi.name not in folded]
        del g.value_info[:]
        g.value_info.extend(kept_vi)
    return changed


def fold_shape_subgraph(model: onnx.ModelProto) -> onnx.ModelProto:
    """Alternate shape inference and constant folding until a fixed point; returns the inferred model."""
    model = _infer(model)
    for _ in range(MAX_ROUNDS):
        if not _fold_once(model):
            break
        model = _infer(model)
    return model
