"""Quantized operators in the QOperator format, rewritten to the QDQ form at load.

ONNX Runtime's quantizer can write a quantized model in two formats. The QDQ format (float operators between
``DequantizeLinear`` and ``QuantizeLinear``) is what the passes fold into int8 kernels. The QOperator format spells
each quantized operator as one node that takes the 8-bit tensors and their scales and zero points: ONNX's
``QLinearConv`` and ``QLinearMatMul``, and ONNX Runtime's ``com.microsoft`` operators ``QLinearAdd``, ``QLinearMul``,
``QLinearGlobalAveragePool``, ``QLinearAveragePool``, ``QLinearConcat``, ``QLinearSigmoid``, ``QLinearLeakyRelu``,
``QLinearSoftmax`` and ``QGemm``. Between them, data-movement operators (``MaxPool``, ``Reshape``, ``Transpose``,
``Resize``...) read and write the 8-bit tensors directly.

Both formats state the same arithmetic: a QOperator node is defined as dequantize its inputs, compute in real
numbers, quantize the result. So each one is rewritten to exactly that: ``DequantizeLinear`` of every 8-bit input
(and of the int32 bias, whose scale is the product of the input and weight scales and whose zero point is 0), the
float operator, ``QuantizeLinear`` with the output's scale and zero point. A data-movement operator on an 8-bit
tensor is given the ``DequantizeLinear`` / ``QuantizeLinear`` pair with the parameters its input carries, which is
exact (it moves or selects values, and requantizing to the same grid is the identity). After this rewrite the model
is an ordinary QDQ model and every later stage treats it as one.

Rewriting happens on the ``ModelProto`` before shape inference, because ONNX cannot infer the output shapes of the
``com.microsoft`` operators.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from tigris.ir import TigrisError

MS = "com.microsoft"

# op type -> (domain, float op type, [(8-bit input, scale, zero point) positions], (out scale, out zp) positions)
_UNARY = {
    "QLinearGlobalAveragePool": "GlobalAveragePool",
    "QLinearAveragePool": "AveragePool",
    "QLinearSigmoid": "Sigmoid",
    "QLinearLeakyRelu": "LeakyRelu",
    "QLinearSoftmax": "Softmax",
}
_BINARY = {"QLinearAdd": "Add", "QLinearMul": "Mul"}
_OTHER = {"QLinearConv": "Conv", "QLinearMatMul": "MatMul", "QGemm": "Gemm", "QLinearConcat": "Concat"}
QOPERATOR_OPS = frozenset({*_OTHER, *_UNARY, *_BINARY})
# ONNX operators this rewrite turns into others (the rewrite table of docs/operators.md).
ONNX_REWRITES = {op: f"DequantizeLinear, {f}, QuantizeLinear (the QDQ form){'' if op in ('QLinearConv', 'QLinearMatMul') else '; com.microsoft'}"
                 for op, f in {**_OTHER, **_UNARY, **_BINARY}.items()}

# Operators that only move or select values: on an 8-bit tensor they keep its scale and zero point.
_MOVE = frozenset({"MaxPool", "GlobalMaxPool", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Resize",
                   "Identity", "DepthToSpace", "SpaceToDepth", "Slice", "Split", "Gather", "Concat"})
_Q8 = (onnx.TensorProto.UINT8, onnx.TensorProto.INT8)


def has_qoperator_nodes(model: onnx.ModelProto) -> bool:
    return any(n.op_type in QOPERATOR_OPS and n.domain in ("", "ai.onnx", MS) for n in model.graph.node)


class _Rewriter:
    def __init__(self, model: onnx.ModelProto):
        self.m = model
        g = model.graph
        self.inits = {t.name: t for t in g.initializer}
        self.names = {t.name for t in g.initializer} | {v.name for v in g.input} | {v.name for v in g.output}
        for n in g.node:
            self.names.update(n.input)
            self.names.update(n.output)
            self.names.add(n.name)
        # 8-bit tensor -> (scale name, zero-point name) of its grid
        self.grid: dict[str, tuple[str, str]] = {}
        self.nodes: list[onnx.NodeProto] = []
        self.new_inits: list[onnx.TensorProto] = []

    def fresh(self, base: str) -> str:
        name, i = base, 0
        while name in self.names:
            i += 1
            name = f"{base}_{i}"
        self.names.add(name)
        return name

    def const(self, base: str, value: np.ndarray) -> str:
        name = self.fresh(base)
        t = numpy_helper.from_array(value, name)
        self.new_inits.append(t)
        self.inits[name] = t
        return name

    def array(self, name: str, where: str) -> np.ndarray:
        if name not in self.inits:
            raise TigrisError(f"quantization parameter {name!r} is not a constant", where)
        return numpy_helper.to_array(self.inits[name])

    def dq(self, x: str, scale: str, zp: str, where: str, axis: int | None = None) -> str:
        out = self.fresh(f"{x}_dequantized")
        attrs = {} if axis is None or self.array(scale, where).size == 1 else {"axis": axis}
        self.nodes.append(helper.make_node("DequantizeLinear", [x, scale, zp] if zp else [x, scale], [out],
                                           name=self.fresh(f"{where}/dq"), **attrs))
        return out

    def q(self, x: str, scale: str, zp: str, out: str, where: str) -> None:
        self.nodes.append(helper.make_node("QuantizeLinear", [x, scale, zp] if zp else [x, scale], [out],
                                           name=self.fresh(f"{where}/q")))
        self.grid[out] = (scale, zp)

    def bias(self, b: str, x_scale: str, w_scale: str, where: str, alpha: float = 1.0) -> str:
        """DequantizeLinear of an int32 bias with scale ``x_scale * w_scale`` (per output channel) and zero point 0."""
        s = (self.array(x_scale, where).astype(np.float32) * self.array(w_scale, where).astype(np.float32)
             * np.float32(alpha)).astype(np.float32).reshape(-1)
        scale = self.const(f"{b}_scale", s if s.size > 1 else s.reshape(()))
        zp = self.const(f"{b}_zero_point", np.zeros(s.shape if s.size > 1 else (), np.int32))
        return self.dq(b, scale, zp, where, axis=0)

    def rewrite(self) -> onnx.ModelProto:
        g = self.m.graph
        for n in g.node:
            where = n.name or n.op_type
            if n.op_type == "QuantizeLinear" and n.domain in ("", "ai.onnx"):
                self.nodes.append(n)
                self.grid[n.output[0]] = (n.input[1], n.input[2] if len(n.input) > 2 else "")
            elif n.op_type in QOPERATOR_OPS and n.domain in ("", "ai.onnx", MS):
                self._qop(n, where)
            elif n.op_type in _MOVE and n.domain in ("", "ai.onnx") and n.input and n.input[0] in self.grid:
                self._move(n, where)
            else:
                self.nodes.append(n)
        m = onnx.ModelProto()
        m.CopyFrom(self.m)
        del m.graph.node[:]
        m.graph.node.extend(self.nodes)
        m.graph.initializer.extend(self.new_inits)
        # a value_info entry stating an 8-bit type for a tensor that is now float would mislead shape inference
        floats = {o for n in self.nodes if n.op_type != "QuantizeLinear" for o in n.output}
        keep = [vi for vi in m.graph.value_info if not (vi.name in floats and vi.type.tensor_type.elem_type in _Q8)]
        del m.graph.value_info[:]
        m.graph.value_info.extend(keep)
        if not _uses_domain(m, MS):
            keep_ops = [o for o in m.opset_import if o.domain != MS]
            del m.opset_import[:]
            m.opset_import.extend(keep_ops)
        return m

    def _qop(self, n: onnx.NodeProto, where: str) -> None:
        i = list(n.input) + [""] * 9
        attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
        op = n.op_type
        y = n.output[0]
        yf = self.fresh(f"{y}_float")
        if op == "QLinearConv":
            x, xs, xz, w, ws, wz, ys, yz, b = i[:9]
            ins = [self.dq(x, xs, xz, where), self.dq(w, ws, wz, where, axis=0)]
            if b:
                ins.append(self.bias(b, xs, ws, where))
            self.nodes.append(helper.make_node("Conv", ins, [yf], name=self.fresh(where), **attrs))
            self.q(yf, ys, yz, y, where)
        elif op == "QLinearMatMul":
            a, as_, az, b, bs, bz, ys, yz = i[:8]
            ins = [self.dq(a, as_, az, where), self.dq(b, bs, bz, where, axis=-1)]
            self.nodes.append(helper.make_node("MatMul", ins, [yf], name=self.fresh(where)))
            self.q(yf, ys, yz, y, where)
        elif op == "QGemm":
            a, as_, az, b, bs, bz, c, ys, yz = i[:9]
            alpha = float(attrs.get("alpha", 1.0))
            trans_b = int(attrs.get("transB", 0))
            ins = [self.dq(a, as_, az, where), self.dq(b, bs, bz, where, axis=0 if trans_b else 1)]
            if c:
                # the int32 bias is on the grid of alpha * a_scale * b_scale: dequantize it there and add it as is
                ins.append(self.bias(c, as_, bs, where, alpha))
            gemm = dict(alpha=alpha, beta=1.0, transA=int(attrs.get("transA", 0)), transB=trans_b)
            if ys:
                self.nodes.append(helper.make_node("Gemm", ins, [yf], name=self.fresh(where), **gemm))
                self.q(yf, ys, yz, y, where)
            else:  # no output scale: the result is float
                self.nodes.append(helper.make_node("Gemm", ins, [y], name=self.fresh(where), **gemm))
        elif op == "QLinearConcat":
            ys, yz = i[0], i[1]
            xs = list(n.input[2:])
            if len(xs) % 3:
                raise TigrisError("QLinearConcat needs (tensor, scale, zero point) triples", where)
            ins = [self.dq(xs[k], xs[k + 1], xs[k + 2], where) for k in range(0, len(xs), 3)]
            self.nodes.append(helper.make_node("Concat", ins, [yf], name=self.fresh(where), axis=int(attrs["axis"])))
            self.q(yf, ys, yz, y, where)
        elif op in _BINARY:
            a, as_, az, b, bs, bz, ys, yz = i[:8]
            ins = [self.dq(a, as_, az, where), self.dq(b, bs, bz, where)]
            self.nodes.append(helper.make_node(_BINARY[op], ins, [yf], name=self.fresh(where)))
            self.q(yf, ys, yz, y, where)
        else:  # the unary ones: X, x_scale, x_zp, y_scale, y_zp
            x, xs, xz, ys, yz = i[:5]
            if int(attrs.pop("channels_last", 0)):
                raise TigrisError(f"{op} with channels_last=1 is not supported", where)
            fop = _UNARY[op]
            if fop == "Softmax":
                # ORT's QLinearSoftmax names the Softmax version it means by an `opset` attribute, which is the
                # model's own; only the axis default depends on it
                version = int(attrs.pop("opset", 13))
                attrs = {"axis": int(attrs.get("axis", -1 if version >= 13 else 1))}
            self.nodes.append(helper.make_node(fop, [self.dq(x, xs, xz, where)], [yf], name=self.fresh(where), **attrs))
            self.q(yf, ys, yz, y, where)

    def _move(self, n: onnx.NodeProto, where: str) -> None:
        """A data-movement op on 8-bit tensors: dequantize each 8-bit data input on its own grid, run the op in
        float, and quantize every output onto the first input's grid."""
        scale, zp = self.grid[n.input[0]]
        ins = list(n.input)
        data_positions = range(len(ins)) if n.op_type == "Concat" else [0]
        for k in data_positions:
            if ins[k] in self.grid:
                ins[k] = self.dq(ins[k], *self.grid[ins[k]], where)
            elif n.op_type == "Concat":
                self.nodes.append(n)  # a Concat mixing 8-bit and other tensors stays as it is
                return
        outs = [self.fresh(f"{o}_float") for o in n.output]
        node = onnx.NodeProto()
        node.CopyFrom(n)
        del node.input[:]
        node.input.extend(ins)
        del node.output[:]
        node.output.extend(outs)
        self.nodes.append(node)
        for of, o in zip(outs, n.output):
            self.q(of, scale, zp, o, where)


def _uses_domain(m: onnx.ModelProto, domain: str) -> bool:
    return any(n.domain == domain for n in m.graph.node)


def qoperator_to_qdq(model: onnx.ModelProto) -> onnx.ModelProto:
    """The same model in QDQ form (a new ``ModelProto``; ``model`` is not modified). A model with no QOperator node
    is returned unchanged."""
    if not has_qoperator_nodes(model):
        return model
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)
    out = _Rewriter(model).rewrite()
    if opset < 13 and any(n.op_type == "DequantizeLinear" and any(a.name == "axis" for a in n.attribute)
                          for n in out.graph.node):
        # a per-channel DequantizeLinear needs opset 13, which the QOperator nodes did not: convert the whole
        # (now standard-domain) model, so every other operator keeps its meaning
        from onnx import version_converter

        try:
            out = version_converter.convert_version(out, 13)
        except Exception as e:
            raise TigrisError(f"per-channel QOperator model at opset {opset} cannot be converted to opset 13: {e}",
                              "model") from None
    return out
