"""float16 models, computed in float32.

Converters such as onnxconverter-common turn a float32 model into float16 by storing every weight and activation
as float16 and putting a ``Cast`` at the edges, so the model's interface stays float32. Microcontroller FPUs have
no float16 arithmetic worth the name (Cortex-M4F and M55's scalar FPU compute in float32), so TiGrIS runs such a
model in float32: every float16 initializer and constant is widened (exactly: every float16 value is a float32
value), every float16 tensor becomes float32, and a ``Cast`` between float types becomes an ``Identity``, which the
cleanup pass removes. The results are then those of the float32 model whose weights are the float16 ones, which is
closer to the real numbers than float16 arithmetic; verify compares with ONNX Runtime's float16 execution at a
float16 tolerance (docs/cli.md, "Pass criteria of verify").

A graph input or output declared float16 is refused: the plan's interface dtypes are float32, int8 and uint8, so
the model must keep float32 inputs and outputs (onnxconverter-common's ``keep_io_types=True``).
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

from tigris.ir import TigrisError

_F16 = TensorProto.FLOAT16
_FLOATS = (TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE, TensorProto.BFLOAT16)
# ONNX operators this rewrite turns into others (the rewrite table of docs/operators.md).
ONNX_REWRITES = {"Cast": "between float types (a float16 model's edges): removed"}


def has_float16(model: onnx.ModelProto) -> bool:
    g = model.graph
    return any(t.data_type == _F16 for t in g.initializer) \
        or any(vi.type.tensor_type.elem_type == _F16 for vi in (*g.input, *g.output, *g.value_info)) \
        or any(n.op_type == "Cast" and any(a.name == "to" and a.i == _F16 for a in n.attribute) for n in g.node)


def _widen(t: onnx.TensorProto) -> onnx.TensorProto:
    arr = numpy_helper.to_array(t).astype(np.float32)
    out = numpy_helper.from_array(arr, t.name)
    return out


def float16_to_float32(model: onnx.ModelProto) -> onnx.ModelProto:
    """The same model computed in float32 (a new ``ModelProto``); a model without float16 is returned as it is."""
    if not has_float16(model):
        return model
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    inits = {t.name for t in g.initializer}
    for vi in (*g.input, *g.output):
        if vi.type.tensor_type.elem_type == _F16 and vi.name not in inits:
            raise TigrisError("float16 graph input/output: the plan's interface is float32, int8 or uint8 (convert the "
                              "model keeping float32 inputs and outputs, e.g. onnxconverter-common's keep_io_types=True)",
                              vi.name)
    for i, t in enumerate(g.initializer):
        if t.data_type == _F16:
            g.initializer[i].CopyFrom(_widen(t))
    for vi in (*g.input, *g.value_info):
        if vi.type.tensor_type.elem_type == _F16:
            vi.type.tensor_type.elem_type = TensorProto.FLOAT
    for n in g.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.TENSOR and a.t.data_type == _F16:
                a.t.CopyFrom(_widen(a.t))
        if n.op_type == "Cast":
            to = next((a.i for a in n.attribute if a.name == "to"), None)
            if to == _F16:
                # a Cast to float16 after a float input is a no-op once everything is float32; from an integer
                # input it becomes a Cast to float32
                for a in n.attribute:
                    if a.name == "to":
                        a.i = TensorProto.FLOAT
    # Casts between float types are now Cast-to-float32 of a float32 tensor: identities. Shape inference tells which
    # Casts read a float tensor; the rest (integer -> float) stay Casts.
    inferred = onnx.shape_inference.infer_shapes(m)
    types = {vi.name: vi.type.tensor_type.elem_type for vi in (*inferred.graph.input, *inferred.graph.value_info,
                                                                 *inferred.graph.output)}
    types.update({t.name: t.data_type for t in g.initializer})
    for n in g.node:
        if n.op_type == "Cast" and types.get(n.input[0]) in _FLOATS \
                and next((a.i for a in n.attribute if a.name == "to"), None) == TensorProto.FLOAT:
            n.op_type = "Identity"
            del n.attribute[:]
    return m
