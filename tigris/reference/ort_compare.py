"""Op-by-op comparison of the reference executor with ONNX Runtime on a quantized model (the "precise check").

End-to-end comparisons of a quantized model drift: one rounding difference early on is amplified by every layer after
it. The precise check feeds each int8 op of the normalized graph the *ONNX Runtime* values of its inputs and compares
its output with ONNX Runtime's value of the same tensor, so every op is judged on its own rounding alone.

ONNX Runtime's values of intermediate tensors are read by exposing them as extra graph outputs of a copy of the model.
A normalized tensor keeps the name of the original tensor it stands for; when that original tensor is float (the
output of a float op that a QuantizeLinear then quantizes), its int8 value is that QuantizeLinear's output.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import helper

from tigris.ir import AnalyzedGraph
from tigris.layout import tensor_view_dims, to_physical
from tigris.ops import Lowered, kind
from tigris.reference import NP_DTYPES, make_view


@dataclass
class OpCheck:
    op: str
    op_type: str
    max_lsb: int
    elements: int


def _exposed_model(model: onnx.ModelProto, names: set[str]) -> tuple[onnx.ModelProto, dict[str, str]]:
    """A copy of ``model`` that also outputs, for each wanted name, its int8 stand-in. Returns (model, name ->
    original tensor holding the int8 value)."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    inferred = onnx.shape_inference.infer_shapes(m)
    types = {vi.name: vi for vi in list(inferred.graph.value_info) + list(inferred.graph.output)
             + list(inferred.graph.input)}
    q_of: dict[str, str] = {}
    for n in m.graph.node:
        if n.op_type == "QuantizeLinear":
            q_of.setdefault(n.input[0], n.output[0])
    where: dict[str, str] = {}
    for name in names:
        vi = types.get(name)
        if vi is not None and vi.type.tensor_type.elem_type in (onnx.TensorProto.INT8, onnx.TensorProto.UINT8):
            where[name] = name
        elif name in q_of:
            where[name] = q_of[name]
    existing = {o.name for o in m.graph.output}
    for src in sorted(set(where.values())):
        if src in existing:
            continue
        vi = types.get(src)
        m.graph.output.append(vi if vi is not None else helper.make_empty_tensor_value_info(src))
    return m, where


def precise_check(model_path: str | Path, graph: AnalyzedGraph, lowered: list[Lowered],
                  inputs: dict[str, np.ndarray]) -> list[OpCheck]:
    """For every int8 op of the normalized graph whose inputs and output ONNX Runtime also computes: the largest
    difference, in output LSBs, between the reference op fed ONNX Runtime's inputs and ONNX Runtime's output."""
    import onnxruntime as ort

    wanted = {t for low in lowered for t in (*low.inputs, *low.outputs) if graph.tensors[t].dtype == "int8"}
    floats = {t for low in lowered for t in (*low.inputs, *low.outputs) if graph.tensors[t].dtype != "int8"}
    model = onnx.load(str(model_path))
    exposed, where = _exposed_model(model, wanted)
    # A float tensor (model-boundary Quantize/Dequantize) is compared as the very tensor ONNX Runtime computes.
    existing = {o.name for o in exposed.graph.output} | {i.name for i in exposed.graph.input}
    for t in sorted(floats):
        where[t] = t
        if t not in existing:
            exposed.graph.output.append(helper.make_empty_tensor_value_info(t))
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(exposed.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    values = dict(zip(names, sess.run(names, inputs)))
    checks: list[OpCheck] = []
    for low in lowered:
        if low.alias:
            continue
        out_t = graph.tensors[low.outputs[0]]
        if out_t.dtype != "int8" and not any(graph.tensors[t].dtype == "int8" for t in low.inputs):
            continue
        tensors = [*low.inputs, low.outputs[0]]
        if any(t not in where or where[t] not in values for t in tensors):
            continue
        phys = {}
        for t in tensors:
            v = values[where[t]]
            if v.dtype == np.uint8:  # restated in the signed domain, like the QDQ fold does
                v = (v.astype(np.int16) - 128).astype(np.int8)
            tt = graph.tensors[t]
            if v.size != tt.numel:
                break
            if tuple(v.shape) != tuple(tt.shape):
                # Declared in our physical order already (an NHWC model input whose Transpose was removed).
                phys[t] = np.ascontiguousarray(v).reshape(tensor_view_dims(tt))
            else:
                phys[t] = to_physical(v, tt.shape, tt.layout)
        else:
            in_views = [make_view(graph.tensors[n], phys[n]) for n in low.inputs]
            out = make_view(out_t, np.zeros(tensor_view_dims(out_t), NP_DTYPES[out_t.dtype]))
            kind(low.kind).reference(low, in_views, out)
            want = phys[low.outputs[0]]
            if out_t.dtype == "int8":
                diff = np.abs(out.data.astype(np.int64) - want.astype(np.int64))
            else:  # a Dequantize: the difference in LSBs of its int8 input
                diff = np.rint(np.abs(out.data.astype(np.float64) - want) / make_view(
                    graph.tensors[low.inputs[0]], phys[low.inputs[0]]).scale).astype(np.int64)
            checks.append(OpCheck(low.op_name, low.kind, int(diff.max()) if diff.size else 0, int(diff.size)))
    return checks
