"""Families of issue 16 that need no new kernel family of their own: an MCUNet/TinyEngine-style network exported
channels-last (squeeze-excite whose ReduceMean runs over NHWC axes [1, 2]), an openWakeWord-style audio CNN with
element-wise Max between activations, and an onnx2tf-style network whose Gather and Transpose move int8 tensors
(``strip_move_qdq`` writes its int8 form without their own QuantizeLinear/DequantizeLinear).

Seeded random weights, small shapes, the helpers of builders.py; registered in ``builders.FAMILIES``."""
from __future__ import annotations

import numpy as np
import onnx

from builders import _finish, _G, _new

_TO_NCHW = [0, 3, 1, 2]
_TO_NHWC = [0, 2, 3, 1]


def _nhwc_conv(g: _G, x: str, cin: int, cout: int, k: int = 3, stride: int = 1, group: int = 1) -> str:
    """A Conv on a channels-last tensor the way NHWC exporters write it: Transpose to NCHW, Conv, Transpose back."""
    t = g.op("Transpose", [x], perm=_TO_NCHW)
    return g.op("Transpose", [g.conv(t, cin, cout, k, stride, group=group)], perm=_TO_NHWC)


def _relu6(g: _G, x: str) -> str:
    return g.op("Clip", [x, g.const(np.array(0.0, np.float32), "lo"), g.const(np.array(6.0, np.float32), "hi")])


def mcunet_nhwc_se() -> onnx.ModelProto:
    """MCUNet/TinyEngine style, exported channels-last: input [1, H, W, C], every Conv between Transposes, ReLU6,
    inverted residuals with depthwise 3x3 and 5x5, squeeze-excite as ReduceMean over NHWC axes [1, 2] (keepdims)
    -> 1x1 conv -> ReLU -> 1x1 conv -> Sigmoid -> Mul broadcast over H, W, residual Adds, and a head of ReduceMean
    over [1, 2] without keepdims -> MatMul + Add."""
    g = _new(41)
    x = _relu6(g, _nhwc_conv(g, "x", 3, 8, 3, 2))                                     # 16 x 16 x 8
    cin = 8
    for t, cout, k, s, se in [(3, 8, 3, 1, True), (4, 16, 5, 2, True), (3, 16, 3, 1, False)]:
        e = _relu6(g, _nhwc_conv(g, x, cin, cin * t, 1))
        e = _relu6(g, _nhwc_conv(g, e, cin * t, cin * t, k, s, group=cin * t))
        if se:
            sq = g.op("ReduceMean", [e], axes=[1, 2], keepdims=1)                       # [1, 1, 1, C]
            sq = g.op("Relu", [_nhwc_conv(g, sq, cin * t, max(4, cin * t // 4), 1)])
            sq = g.op("Sigmoid", [_nhwc_conv(g, sq, max(4, cin * t // 4), cin * t, 1)])
            e = g.op("Mul", [e, sq])
        y = _nhwc_conv(g, e, cin * t, cout, 1)
        x = g.op("Add", [x, y]) if s == 1 and cin == cout else y
        cin = cout
    h = g.op("ReduceMean", [x], axes=[1, 2], keepdims=0)                                 # [1, C]
    w = (g.rng.standard_normal((cin, 10)) * 0.3).astype(np.float32)
    out = g.op("Add", [g.op("MatMul", [h, g.const(w)]), g.const((g.rng.standard_normal(10) * 0.1).astype(np.float32), "b")])
    return _finish(g, "mcunet_nhwc_se", [1, 32, 32, 3], out, opset=13)


def wakeword_max_cnn() -> onnx.ModelProto:
    """openWakeWord style keyword spotter on a [1, 1, time, mel] spectrogram: convs whose activation is the
    element-wise Max of the conv and a scaled copy (leaky ReLU as TensorFlow exports it, Max(x, 0.2 x)), a Max
    between two parallel conv branches, a three-operand Max, pooling over time, GAP and a Sigmoid score."""
    g = _new(43)

    def leaky_max(x: str) -> str:
        return g.op("Max", [x, g.op("Mul", [x, g.const(np.array(0.2, np.float32), "alpha")])])

    x = leaky_max(g.conv("x", 1, 8, 3))                                                   # 8 x 32 x 16
    x = g.op("MaxPool", [x], kernel_shape=[2, 1], strides=[2, 1])                         # 8 x 16 x 16
    a = g.conv(x, 8, 16, (3, 1))
    b = g.conv(x, 8, 16, (1, 3))
    x = leaky_max(g.op("Max", [a, b]))                                                    # 16 x 16 x 16
    x = g.op("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])                         # 16 x 8 x 8
    c1 = g.conv(x, 16, 16, 3)
    c2 = g.conv(x, 16, 16, 3, group=16)
    x = g.op("Max", [c1, c2, g.op("Mul", [x, g.const(np.array(0.5, np.float32), "half")])])
    x = g.op("Flatten", [g.op("GlobalAveragePool", [x])], axis=1)
    w = (g.rng.standard_normal((1, 16)) * 0.4).astype(np.float32)
    out = g.op("Sigmoid", [g.op("Gemm", [x, g.const(w), g.const(np.zeros(1, np.float32), "b")], transB=1)])
    return _finish(g, "wakeword_max", [1, 1, 32, 16], out, opset=13)


def onnx2tf_moves() -> onnx.ModelProto:
    """A network with the data movement onnx2tf-converted models carry between convolutions: a Transpose to
    channels-last and back, a Gather with constant indices permuting the channels (axis 3 of the channels-last
    tensor), a Gather selecting 12 of 16 channels (axis 1), and a Gather of rows (axis 2). Its int8 form without
    QDQ around the moves is ``strip_move_qdq`` of the ORT-quantized model."""
    g = _new(47)
    x = g.op("Relu", [g.conv("x", 3, 8, 3, 1)])                                          # 8 x 48 x 48
    x = g.op("Relu", [g.conv(x, 8, 16, 3, 3)])                                           # 16 x 16 x 16
    t = g.op("Transpose", [x], perm=_TO_NHWC)                                             # 1 x 16 x 16 x 16
    perm = g.rng.permutation(16).astype(np.int64)
    t = g.op("Gather", [t, g.const(perm, "perm")], axis=3)
    x = g.op("Transpose", [t], perm=_TO_NCHW)
    x = g.op("Relu", [g.conv(x, 16, 16, 3, 1, group=16)])
    keep = np.sort(g.rng.choice(16, 12, replace=False)).astype(np.int64)
    x = g.op("Gather", [x, g.const(keep, "keep")], axis=1)                               # 12 x 16 x 16
    rows = np.arange(0, 16, 2, dtype=np.int64)
    x = g.op("Gather", [x, g.const(rows, "rows")], axis=2)                               # 12 x 8 x 16
    x = g.op("Relu", [g.conv(x, 12, 16, 1)])
    x = g.op("Flatten", [g.op("GlobalAveragePool", [x])], axis=1)
    w = (g.rng.standard_normal((10, 16)) * 0.3).astype(np.float32)
    out = g.op("Gemm", [x, g.const(w), g.const(np.zeros(10, np.float32), "b")], transB=1)
    return _finish(g, "onnx2tf_moves", [1, 3, 48, 48], out, opset=13)


_MOVE_OPS = ("Gather", "Transpose")


def strip_move_qdq(q: onnx.ModelProto) -> onnx.ModelProto:
    """The int8 model as onnx2tf writes it: every ``DequantizeLinear -> Gather/Transpose -> QuantizeLinear`` on the
    same grid becomes the Gather/Transpose of the int8 tensor itself, with no QDQ of its own (its output then has
    its producer's quantization, stated nowhere but by the tensor it moves)."""
    m = onnx.ModelProto()
    m.CopyFrom(q)
    nodes = list(m.graph.node)
    by_out = {o: n for n in nodes for o in n.output}
    readers: dict[str, list] = {}
    for n in nodes:
        for i in n.input:
            readers.setdefault(i, []).append(n)
    drop, changed = set(), 0
    for mv in nodes:
        if mv.op_type not in _MOVE_OPS:
            continue
        dq = by_out.get(mv.input[0])
        rd = readers.get(mv.output[0], [])
        if dq is None or dq.op_type != "DequantizeLinear" or len(rd) != 1 or rd[0].op_type != "QuantizeLinear":
            continue
        qn = rd[0]
        if list(dq.input[1:]) != list(qn.input[1:]) or len(readers.get(dq.output[0], [])) != 1:
            continue  # only a move on one grid is a plain move of the codes
        mv.input[0] = dq.input[0]
        mv.output[0] = qn.output[0]
        drop.update({id(dq), id(qn)})
        changed += 1
    if not changed:
        raise ValueError("no DequantizeLinear -> Gather/Transpose -> QuantizeLinear to strip")
    keep = [n for n in nodes if id(n) not in drop]
    del m.graph.node[:]
    m.graph.node.extend(keep)
    del m.graph.value_info[:]
    onnx.checker.check_model(m)
    return m


FAMILIES = {
    "mcunet_nhwc": mcunet_nhwc_se,
    "wakeword_max": wakeword_max_cnn,
    "onnx2tf_moves": onnx2tf_moves,
}
