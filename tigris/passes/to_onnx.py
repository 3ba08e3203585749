"""Export the normalized IR back to an ONNX model with the same *logical* semantics, for ONNX Runtime to run.

This is how structural rewrites are checked before the NumPy reference executor exists (and independently of it):
ONNX Runtime on the original model versus ONNX Runtime on the exported normalized graph. Int8 ops are written in QDQ
form (DequantizeLinear on every int8 operand, the float op, QuantizeLinear on an int8 output), which is exactly the
arithmetic ONNX Runtime applies to the original QDQ model when graph optimizations are off.

Layout facts are translated back: a physical Concat axis uses its recorded logical axis; a reshape marked
``nhwc_order`` (Gemm weights permuted by the layout pass) flattens the NHWC order explicitly; graph inputs/outputs
whose logical shape was changed by the input/output transpose passes get the Transpose back at the edge, so the
exported model has the original interface.
"""
from __future__ import annotations

import ast

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from tigris.ir import AnalyzedGraph, Op, QuantParam
from tigris.layout import PERM

_ELEM = {"float32": TensorProto.FLOAT, "int8": TensorProto.INT8, "uint8": TensorProto.UINT8,
         "int32": TensorProto.INT32, "int64": TensorProto.INT64, "bool": TensorProto.BOOL, "int16": TensorProto.INT16}
_SAME = {"Relu", "Sigmoid", "Tanh", "HardSwish", "HardSigmoid", "LeakyRelu", "PRelu", "Softmax", "Transpose",
         "GlobalAveragePool", "MaxPool", "AveragePool", "Add", "Mul", "Sub"}


_MARKERS = {"fused_activation", "alias", "normalized", "unsupported_why", "nhwc_order", "axis_physical", "logical_axis", "lifted", "_extracted",
            "coerce_2d", "domain", "tflm_avgpool"}


class _Builder:
    def __init__(self, g: AnalyzedGraph):
        self.g = g
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.k = 0
        self.float_cache: dict[str, str] = {}

    def fresh(self, base: str) -> str:
        self.k += 1
        return f"__x{self.k}_{base[-40:]}"

    def const(self, arr: np.ndarray, base: str = "c") -> str:
        name = self.fresh(base)
        self.inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def node(self, op_type: str, inputs: list[str], outputs: list[str], **attrs) -> None:
        self.nodes.append(helper.make_node(op_type, inputs, outputs, name=self.fresh(op_type), **attrs))

    def qconsts(self, q: QuantParam, zp_dtype: str) -> tuple[list[str], dict]:
        s = self.const(q.scale.astype(np.float32) if q.scale.size > 1 else np.float32(q.scale[0]), "s")
        zpa = q.zero_point.astype(zp_dtype) if q.scale.size > 1 else np.array(q.zero_point[0], dtype=zp_dtype)
        z = self.const(zpa, "z")
        attrs = {"axis": int(q.axis)} if q.scale.size > 1 and q.axis is not None else {}
        return [s, z], attrs

    def as_float(self, name: str) -> str:
        """A float view of tensor ``name`` (DequantizeLinear for quantized tensors)."""
        if not name:
            return ""
        t = self.g.tensors[name]
        if t.quant is None:
            return name
        if name not in self.float_cache:
            out = self.fresh(name + "_f")
            sz, attrs = self.qconsts(t.quant, t.dtype)
            self.node("DequantizeLinear", [name, *sz], [out], **attrs)
            self.float_cache[name] = out
        return self.float_cache[name]

    def write(self, name: str) -> str:
        """The float name an op should write so that tensor ``name`` ends up right (Q when quantized)."""
        t = self.g.tensors[name]
        if t.quant is None:
            return name
        return self.fresh(name + "_pre")

    def finish(self, pre: str, name: str) -> None:
        t = self.g.tensors[name]
        if pre != name:
            sz, attrs = self.qconsts(t.quant, t.dtype)
            self.node("QuantizeLinear", [pre, *sz], [name], **attrs)


def _act(b: _Builder, act: str | None, src: str, dst: str) -> None:
    if act is None:
        b.node("Identity", [src], [dst])
    elif act == "relu":
        b.node("Relu", [src], [dst])
    else:
        b.node("Clip", [src, b.const(np.float32(0)), b.const(np.float32(6))], [dst])


def _emit(b: _Builder, op: Op) -> None:
    g = b.g
    t = op.op_type
    y = op.outputs[0]
    if t == "QuantizeLinear":
        sz, attrs = b.qconsts(g.tensors[y].quant, g.tensors[y].dtype)
        b.node("QuantizeLinear", [op.inputs[0], *sz], [y], **attrs)
        return
    if t == "DequantizeLinear":
        b.node("Identity", [b.as_float(op.inputs[0])], [y])
        return
    ins = [b.as_float(i) for i in op.inputs]
    pre = b.write(y)
    act = op.attrs.get("fused_activation")
    mid = b.fresh(y + "_lin") if act else pre
    a = op.attrs
    if t in ("Conv", "DepthwiseConv", "Conv1D"):
        b.node("Conv", ins, [mid], kernel_shape=a["kernel_shape"], strides=a["strides"], dilations=a["dilations"],
               pads=a["pads"], group=int(a["group"]))
    elif t == "Gemm":
        b.node("Gemm", ins, [mid], transB=1)
    elif t == "MatMul" and "transA" in a:  # a Gemm the matmul kind runs (matmul_relabel rule 7)
        b.node("Gemm", ins, [mid], transA=int(a["transA"]), transB=int(a["transB"]), alpha=float(a["alpha"]),
               beta=float(a["beta"]))
    elif t == "Relu6":
        b.node("Clip", [ins[0], b.const(np.float32(0)), b.const(np.float32(6))], [mid])
    elif t == "Clip":
        b.node("Clip", [ins[0], b.const(np.float32(a["min"])), b.const(np.float32(a["max"]))], [mid])
    elif t == "Pad":
        b.node("Pad", [ins[0], b.const(np.array(a["pads"], dtype=np.int64)), b.const(np.float32(a["value"]))], [mid])
    elif t in ("Reshape", "Flatten", "Squeeze", "Unsqueeze"):
        src = ins[0]
        if a.get("nhwc_order"):
            rank = len(g.tensors[op.inputs[0]].shape)
            tr = b.fresh("nhwc")
            b.node("Transpose", [src], [tr], perm=list(PERM["nhwc" if rank == 4 else "nwc"]))
            src = tr
        b.node("Reshape", [src, b.const(np.array(g.tensors[y].shape, dtype=np.int64))], [mid])
    elif t == "Resize":
        rs = ([ins[0], "", "", b.const(np.array(g.tensors[y].shape, dtype=np.int64))] if a.get("by_sizes") else
              [ins[0], "", b.const(np.array(a["scales"], dtype=np.float32))])
        extra = {k: a[k] for k in ("cubic_coeff_a", "exclude_outside", "antialias", "extrapolation_value") if k in a}
        if a.get("roi_hw") is not None:
            rs = [rs[0], b.const(np.array(a["roi_hw"], dtype=np.float32))] + rs[2:]
        b.node("Resize", rs, [mid], mode=a["mode"], coordinate_transformation_mode=a["coordinate_transformation_mode"],
               nearest_mode=a["nearest_mode"], **extra)
    elif t == "Concat":
        b.node("Concat", ins, [mid], axis=int(a.get("logical_axis", a["axis"])))
    elif t == "Slice":  # the TFLite importer states a slice in attributes; ONNX takes them as inputs
        b.node("Slice", [ins[0]] + [b.const(np.array(a[k], dtype=np.int64)) for k in ("starts", "ends", "axes",
                                                                                      "steps")], [mid])
    elif t == "Split":
        b.node("Split", [ins[0], b.const(np.array(a["split"], dtype=np.int64))], [mid] + list(op.outputs[1:]),
               axis=int(a["axis"]))
    elif t in ("ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd") and "axes" in a:
        b.node(t, [ins[0], b.const(np.array(a["axes"], dtype=np.int64))], [mid], keepdims=int(a.get("keepdims", 1)))
    elif t == "Gather":  # the normalized form (pass slice_normalize) states its indices in an attribute
        idx = [b.const(np.array(a["indices"], dtype=np.int64))] if "indices" in a else []
        b.node("Gather", ins + idx, [mid], axis=int(a.get("axis", 0)))
    elif t in _SAME:
        keep = {k: v for k, v in a.items() if k not in _MARKERS and v is not None}
        if t == "AveragePool" and keep.get("dilations") and all(d == 1 for d in keep["dilations"]):
            keep.pop("dilations")
        b.node(t, ins, [mid], **keep)
    else:
        # Not (yet) a normalized op, e.g. mid-pipeline: written back as the ONNX op it still is.
        keep = {k: v for k, v in a.items() if k not in _MARKERS and v is not None}
        b.node(t, ins, [mid] + list(op.outputs[1:]), **keep)
    if act:
        _act(b, act, mid, pre)
    b.finish(pre, y)


def to_onnx(graph: AnalyzedGraph, opset: int = 19) -> onnx.ModelProto:
    b = _Builder(graph)
    g = graph
    for name, arr in g.weights.items():
        b.inits.append(numpy_helper.from_array(np.asarray(arr), name))
    inputs = []
    for name in g.inputs:
        t = g.tensors[name]
        bd = g.boundary.get(name)
        declared = bd.shape if bd is not None else t.shape
        raw, dt, cur = name, t.dtype, name
        if bd is not None and bd.dtype == "uint8" and t.dtype == "int8":
            # the caller's uint8 bytes, restated as int8 (v - 128) exactly like the runtime's boundary
            raw, dt = b.fresh(name), "uint8"
            mid = b.fresh(name + "_f")
            b.nodes.insert(0, helper.make_node("QuantizeLinear", [mid, b.const(np.float32(1)), b.const(np.int8(0))],
                                               [cur]))
            b.nodes.insert(0, helper.make_node("DequantizeLinear", [raw, b.const(np.float32(1)),
                                                                    b.const(np.uint8(128))], [mid]))
            cur = raw
        if declared != t.shape and t.layout in PERM:
            new_raw = b.fresh(name)
            inv = list(np.argsort(PERM[t.layout]))
            # declared bytes are the physical order; logical = physical.transpose(inverse perm)
            b.nodes.insert(0, helper.make_node("Transpose", [new_raw], [cur], perm=[int(i) for i in inv]))
            raw = new_raw
        inputs.append((raw, name, declared, dt))
    for op in g.ops:
        _emit(b, op)
    outputs = []
    for name in g.outputs:
        t = g.tensors[name]
        bd = g.boundary.get(name)
        declared = bd.shape if bd is not None else t.shape
        fin, dt = name, t.dtype
        if declared != t.shape and t.layout in PERM:
            fin = b.fresh(name)
            b.node("Transpose", [name], [fin], perm=list(PERM[t.layout]))
        if bd is not None and bd.dtype == "uint8" and t.dtype == "int8":
            mid, last = b.fresh(name + "_f"), b.fresh(name + "_u8")
            b.node("DequantizeLinear", [fin, b.const(np.float32(1)), b.const(np.int8(-128))], [mid])
            b.node("QuantizeLinear", [mid, b.const(np.float32(1)), b.const(np.uint8(0))], [last])
            fin, dt = last, "uint8"
        outputs.append((fin, name, declared, dt))
    # Edge tensors that got a Transpose have internal names; doc_string maps them back to the IR's names.
    vi_in = [helper.make_tensor_value_info(raw, _ELEM[dt], list(shp)) for raw, _, shp, dt in inputs]
    vi_out = [helper.make_tensor_value_info(fin, _ELEM[dt], list(shp)) for fin, _, shp, dt in outputs]
    graph_proto = helper.make_graph(b.nodes, g.name, vi_in, vi_out, b.inits)
    m = helper.make_model(graph_proto, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    m.doc_string = repr({"inputs": {raw: orig for raw, orig, _, _ in inputs},
                         "outputs": {fin: orig for fin, orig, _, _ in outputs}})
    return m


def run_ort(graph: AnalyzedGraph, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Run the exported graph in ONNX Runtime (optimizations off) with feeds/results keyed by the IR's names."""
    import onnxruntime as ort

    m = to_onnx(graph)
    names = ast.literal_eval(m.doc_string)  # written by to_onnx: a dict literal of str
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3
    sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    inv_in = {orig: raw for raw, orig in names["inputs"].items()}
    res = sess.run(None, {inv_in[k]: v for k, v in feeds.items()})
    return {names["outputs"][o.name]: r for o, r in zip(sess.get_outputs(), res)}
