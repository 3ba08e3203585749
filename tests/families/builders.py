"""Small seeded ONNX models of the families TiGrIS is judged on (built here with onnx.helper and NumPy random weights:
no downloads, no torch), plus their ONNX Runtime static-quantized QDQ twins.

Each builder returns a float ``onnx.ModelProto`` with one image-like input named ``x``. The shapes are small (16-48
pixels, few channels) so that compiling, running on the C runtime and ONNX Runtime stays fast, yet each model keeps
the structural feature that made its family worth testing (squeeze-excite broadcast, unfolded BatchNorm, Conv1D,
Resize + Concat skips, depth multiplier 2, ...)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


@dataclass
class _G:
    """A graph under construction: nodes and initializers, with fresh names and seeded weights."""

    rng: np.random.Generator
    nodes: list
    inits: list
    count: int = 0

    def name(self, stem: str) -> str:
        self.count += 1
        return f"{stem}{self.count}"

    def const(self, arr: np.ndarray, stem: str = "w") -> str:
        n = self.name(stem)
        self.inits.append(numpy_helper.from_array(np.asarray(arr), n))
        return n

    def op(self, op_type: str, inputs: list[str], **attrs) -> str:
        out = self.name(op_type.lower() + "_")
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=out, **attrs))
        return out

    def conv(self, x: str, cin: int, cout: int, k: int | tuple[int, ...] = 3, stride: int = 1, pad: int | None = None,
             group: int = 1, bias: bool = True, dims: int = 2) -> str:
        ks = (k,) * dims if isinstance(k, int) else tuple(k)
        p = [ki // 2 for ki in ks] if pad is None else [pad] * dims
        # He-like scaling keeps activations O(1) through a dozen layers, so float tolerances stay meaningful.
        fan_in = (cin // group) * int(np.prod(ks))
        w = (self.rng.standard_normal((cout, cin // group, *ks)) * np.sqrt(2.0 / fan_in)).astype(np.float32)
        ins = [x, self.const(w)]
        if bias:
            ins.append(self.const((self.rng.standard_normal(cout) * 0.1).astype(np.float32), "b"))
        return self.op("Conv", ins, kernel_shape=list(ks), strides=[stride] * dims, pads=p + p, group=group)

    def bn(self, x: str, c: int) -> str:
        r = self.rng
        return self.op("BatchNormalization", [
            x,
            self.const((r.uniform(0.5, 1.5, c)).astype(np.float32), "gamma"),
            self.const((r.standard_normal(c) * 0.1).astype(np.float32), "beta"),
            self.const((r.standard_normal(c) * 0.1).astype(np.float32), "mean"),
            self.const((r.uniform(0.5, 1.5, c)).astype(np.float32), "var"),
        ], epsilon=1e-5)


def _finish(g: _G, name: str, in_shape: list, out: str | list[str], opset: int = 13,
            in_dtype: int = TensorProto.FLOAT) -> onnx.ModelProto:
    outs = [out] if isinstance(out, str) else out
    graph = helper.make_graph(
        g.nodes, name, [helper.make_tensor_value_info("x", in_dtype, in_shape)],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs], initializer=g.inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    # Output shapes come from shape inference so the models declare what a real exporter would.
    m = onnx.shape_inference.infer_shapes(m, strict_mode=True)
    onnx.checker.check_model(m, full_check=True)
    return m


def _new(seed: int) -> _G:
    return _G(np.random.default_rng(seed), [], [])


def mobilenet_v3_small() -> onnx.ModelProto:
    """HardSwish stem, inverted residuals with depthwise convs, squeeze-excite (GAP -> 1x1 -> ReLU -> 1x1 ->
    HardSigmoid -> Mul broadcast over H, W), a residual Add, and a GAP + Gemm head."""
    g = _new(1)
    x = g.op("HardSwish", [g.conv("x", 3, 8, 3, 2)])                         # 8 x 16 x 16
    # block 1: dw 3x3 s2 + SE, no expansion
    d = g.op("Relu", [g.conv(x, 8, 8, 3, 2, group=8)])                         # 8 x 8 x 8
    s = g.op("GlobalAveragePool", [d])
    s = g.op("Relu", [g.conv(s, 8, 4, 1)])
    s = g.op("HardSigmoid", [g.conv(s, 4, 8, 1)], alpha=1.0 / 6, beta=0.5)
    d = g.op("Mul", [d, s])
    y = g.conv(d, 8, 8, 1)
    # block 2: expand 1x1, dw 5x5, SE, project, residual
    e = g.op("HardSwish", [g.conv(y, 8, 16, 1)])
    e = g.op("HardSwish", [g.conv(e, 16, 16, 5, 1, group=16)])
    s = g.op("GlobalAveragePool", [e])
    s = g.op("Relu", [g.conv(s, 16, 8, 1)])
    s = g.op("HardSigmoid", [g.conv(s, 8, 16, 1)], alpha=1.0 / 6, beta=0.5)
    e = g.op("Mul", [e, s])
    y = g.op("Add", [y, g.conv(e, 16, 8, 1)])
    h = g.op("HardSwish", [g.conv(y, 8, 16, 1)])
    h = g.op("GlobalAveragePool", [h])
    h = g.op("Flatten", [h], axis=1)
    w = (g.rng.standard_normal((10, 16)) * 0.3).astype(np.float32)
    out = g.op("Gemm", [h, g.const(w), g.const(np.zeros(10, np.float32), "b")], transB=1)
    return _finish(g, "mbv3_small", [1, 3, 32, 32], out, opset=14)


def mobilenet_v3_decomposed() -> onnx.ModelProto:
    """MobileNetV3 as older exporters spell it: HardSwish = x * Clip(x + 3, 0, 6) / 6 and an SE gate
    HardSigmoid = Clip(x + 3, 0, 6) / 6 out of primitives (opset 13); ORT leaves each Div float in QDQ."""
    g = _new(18)

    def six(x: str) -> str:
        return g.op("Clip", [g.op("Add", [x, g.const(np.array(3, np.float32), "three")]),
                             g.const(np.array(0, np.float32), "lo"), g.const(np.array(6, np.float32), "hi")])

    def hswish(x: str) -> str:
        return g.op("Div", [g.op("Mul", [x, six(x)]), g.const(np.array(6, np.float32), "six")])

    x = hswish(g.conv("x", 3, 8, 3, 2))                                         # 8 x 12 x 12
    d = hswish(g.conv(x, 8, 8, 3, group=8))
    s = g.op("Relu", [g.conv(g.op("GlobalAveragePool", [d]), 8, 4, 1)])
    s = g.op("Div", [six(g.conv(s, 4, 8, 1)), g.const(np.array(6, np.float32), "six")])
    y = g.op("Add", [x, g.conv(g.op("Mul", [d, s]), 8, 8, 1)])
    return _finish(g, "mbv3_decomposed", [1, 3, 24, 24], hswish(g.conv(y, 8, 8, 1)))


def resnet18_stem() -> onnx.ModelProto:
    """7x7 s2 conv + BatchNormalization (not folded) + ReLU + MaxPool 3x3 s2 p1, then two basic blocks, the second
    with a strided projection shortcut (1x1 conv + BN)."""
    g = _new(2)
    x = g.op("Relu", [g.bn(g.conv("x", 3, 8, 7, 2, bias=False), 8)])          # 8 x 24 x 24
    x = g.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])  # 8 x 12 x 12
    a = g.op("Relu", [g.bn(g.conv(x, 8, 8, 3, bias=False), 8)])
    a = g.bn(g.conv(a, 8, 8, 3, bias=False), 8)
    x = g.op("Relu", [g.op("Add", [a, x])])
    a = g.op("Relu", [g.bn(g.conv(x, 8, 16, 3, 2, bias=False), 16)])         # 16 x 6 x 6
    a = g.bn(g.conv(a, 16, 16, 3, bias=False), 16)
    sc = g.bn(g.conv(x, 8, 16, 1, 2, bias=False), 16)
    x = g.op("Relu", [g.op("Add", [a, sc])])
    x = g.op("Flatten", [g.op("GlobalAveragePool", [x])])
    out = g.op("Gemm", [x, g.const((g.rng.standard_normal((5, 16)) * 0.3).astype(np.float32)),
                        g.const(np.zeros(5, np.float32), "b")], transB=1)
    return _finish(g, "resnet18_stem", [1, 3, 48, 48], out)


def dscnn_conv1d() -> onnx.ModelProto:
    """Keyword-spotting style: Conv1D on a 3-D [N, C, L] input, depthwise/pointwise Conv1D pairs with BN, average
    pooling over time and a MatMul + Add classifier (opset 11)."""
    g = _new(3)
    x = g.op("Relu", [g.conv("x", 10, 16, 5, 2, dims=1)])                     # 16 x 24
    for _ in range(2):
        d = g.op("Relu", [g.bn(g.conv(x, 16, 16, 3, group=16, dims=1), 16)])
        x = g.op("Relu", [g.bn(g.conv(d, 16, 16, 1, dims=1), 16)])
    x = g.op("AveragePool", [x], kernel_shape=[24])                           # 16 x 1
    x = g.op("Flatten", [x])
    x = g.op("MatMul", [x, g.const((g.rng.standard_normal((16, 6)) * 0.3).astype(np.float32))])
    out = g.op("Add", [x, g.const((g.rng.standard_normal(6) * 0.1).astype(np.float32), "b")])
    return _finish(g, "dscnn1d", [1, 10, 48], out, opset=11)


def tiny_unet() -> onnx.ModelProto:
    """Two-level U-Net: conv encoder with MaxPool, Resize nearest x2 decoder (opset 13 scales input) and Concat skip
    connections, a 1x1 head and a Sigmoid."""
    g = _new(4)
    e1 = g.op("Relu", [g.conv("x", 3, 8, 3)])                                 # 8 x 32 x 32
    p1 = g.op("MaxPool", [e1], kernel_shape=[2, 2], strides=[2, 2])          # 8 x 16 x 16
    e2 = g.op("Relu", [g.conv(p1, 8, 16, 3)])
    p2 = g.op("MaxPool", [e2], kernel_shape=[2, 2], strides=[2, 2])          # 16 x 8 x 8
    b = g.op("Relu", [g.conv(p2, 16, 16, 3)])
    scales = g.const(np.array([1, 1, 2, 2], np.float32), "scales")
    u2 = g.op("Resize", [b, "", scales], mode="nearest")                     # 16 x 16 x 16
    d2 = g.op("Relu", [g.conv(g.op("Concat", [u2, e2], axis=1), 32, 16, 3)])
    u1 = g.op("Resize", [d2, "", scales], mode="nearest")                    # 16 x 32 x 32
    d1 = g.op("Relu", [g.conv(g.op("Concat", [u1, e1], axis=1), 24, 8, 3)])
    out = g.op("Sigmoid", [g.conv(d1, 8, 1, 1)])
    return _finish(g, "tiny_unet", [1, 3, 32, 32], out)


def depth_multiplier() -> onnx.ModelProto:
    """A depthwise conv with depth multiplier 2 (group = C_in, C_out = 2 C_in), then pointwise + ReLU6 (Clip)."""
    g = _new(5)
    x = g.conv("x", 4, 8, 3, 1, group=4)
    x = g.op("Clip", [x, g.const(np.array(0, np.float32), "lo"), g.const(np.array(6, np.float32), "hi")])
    out = g.conv(x, 8, 6, 1)
    return _finish(g, "dw_mult2", [1, 4, 20, 20], out)


def dense_autoencoder() -> onnx.ModelProto:
    """Anomaly-detection autoencoder: Gemm -> BatchNormalization (unfolded) -> ReLU, 32-16-8-16-32, on a [1, 32]
    input; ORT quantizes each BatchNorm separately."""
    g = _new(20)
    x = "x"
    for a, b in ((32, 16), (16, 8), (8, 16), (16, 32)):
        w = (g.rng.standard_normal((b, a)) * np.sqrt(2.0 / a)).astype(np.float32)
        x = g.op("Gemm", [x, g.const(w), g.const(np.zeros(b, np.float32), "b")], transB=1)
        x = g.op("Relu", [g.bn(x, b)])
    return _finish(g, "dense_ae", [1, 32], x)


def mlp_flatten() -> onnx.ModelProto:
    """Flatten of a 4-D tensor into an MLP of Gemm with transB=0 (weights stored K x N), ReLU and Tanh."""
    g = _new(6)
    x = g.op("Flatten", ["x"], axis=1)                                        # 1 x 48
    x = g.op("Relu", [g.op("Gemm", [x, g.const((g.rng.standard_normal((48, 32)) * 0.2).astype(np.float32)),
                                    g.const((g.rng.standard_normal(32) * 0.1).astype(np.float32), "b")])])
    x = g.op("Gemm", [x, g.const((g.rng.standard_normal((32, 8)) * 0.25).astype(np.float32)),
                      g.const((g.rng.standard_normal(8) * 0.1).astype(np.float32), "b")], alpha=1.0, beta=1.0)
    out = g.op("Tanh", [x])
    return _finish(g, "mlp", [1, 3, 4, 4], out)


def softmax_axis1() -> onnx.ModelProto:
    """Per-pixel class scores: conv -> Softmax over axis 1 (channels) of a 4-D tensor (opset 13 semantics)."""
    g = _new(7)
    out = g.op("Softmax", [g.conv("x", 3, 5, 3)], axis=1)
    return _finish(g, "softmax_c", [1, 3, 16, 16], out)


def activations_mix() -> onnx.ModelProto:
    """LeakyRelu, PRelu (per-channel slope), Sigmoid, Tanh, explicit Pad + Conv, AveragePool with
    count_include_pad=1, at opset 17."""
    g = _new(8)
    x = g.op("LeakyRelu", [g.conv("x", 3, 8, 3)], alpha=0.1)
    slope = (g.rng.uniform(0.05, 0.3, (8, 1, 1))).astype(np.float32)
    x = g.op("PRelu", [g.conv(x, 8, 8, 3), g.const(slope, "slope")])
    x = g.op("Pad", [x, g.const(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "pads")], mode="constant")
    x = g.op("Sigmoid", [g.conv(x, 8, 8, 3, pad=0)])
    x = g.op("AveragePool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=1)
    out = g.op("Tanh", [g.conv(x, 8, 4, 3)])
    return _finish(g, "acts", [1, 3, 24, 24], out, opset=17)


def channel_shuffle() -> onnx.ModelProto:
    """ShuffleNet channel shuffle in the middle: grouped 1x1 conv -> Reshape [N, g, C/g, H, W] -> Transpose(0, 2, 1,
    3, 4) -> Reshape back -> depthwise 3x3 -> grouped 1x1, with a residual Add."""
    g = _new(9)
    x = g.op("Relu", [g.conv("x", 3, 8, 3)])                                  # 8 x 16 x 16
    a = g.op("Relu", [g.conv(x, 8, 8, 1, group=2)])
    a = g.op("Reshape", [a, g.const(np.array([1, 2, 4, 16, 16], np.int64), "shape")])
    a = g.op("Transpose", [a], perm=[0, 2, 1, 3, 4])
    a = g.op("Reshape", [a, g.const(np.array([1, 8, 16, 16], np.int64), "shape")])
    a = g.conv(a, 8, 8, 3, group=8)
    a = g.conv(a, 8, 8, 1, group=2)
    out = g.op("Relu", [g.op("Add", [a, x])])
    return _finish(g, "shuffle", [1, 3, 16, 16], out)


def dynamic_batch() -> onnx.ModelProto:
    """An autoencoder-like conv net whose input batch is a dim_param ('N'); opset 11 (Resize with roi + scales)."""
    g = _new(10)
    x = g.op("Relu", [g.conv("x", 1, 8, 3, 2)])                               # 8 x 8 x 8
    x = g.op("Relu", [g.conv(x, 8, 4, 3, 2)])                                 # 4 x 4 x 4
    roi = g.const(np.zeros(0, np.float32), "roi")
    x = g.op("Resize", [x, roi, g.const(np.array([1, 1, 2, 2], np.float32), "scales")], mode="nearest")
    x = g.op("Relu", [g.conv(x, 4, 8, 3)])
    x = g.op("Resize", [x, roi, g.const(np.array([1, 1, 2, 2], np.float32), "scales")], mode="nearest")
    out = g.op("Sigmoid", [g.conv(x, 8, 1, 3)])
    return _finish(g, "ae_dyn", ["N", 1, 16, 16], out, opset=11)


def _relu6(g: _G, x: str) -> str:
    return g.op("Clip", [x, g.const(np.array(0, np.float32), "lo"), g.const(np.array(6, np.float32), "hi")])


def mobilenet_v2() -> onnx.ModelProto:
    """Inverted residual with ReLU6 as Clip(0, 6), a ReduceMean(H, W) head instead of GAP, Flatten + Gemm."""
    g = _new(11)
    x = _relu6(g, g.conv("x", 3, 8, 3, 2))                                   # 8 x 16 x 16
    e = _relu6(g, g.conv(x, 8, 24, 1))
    e = _relu6(g, g.conv(e, 24, 24, 3, 1, group=24))
    x = g.op("Add", [x, g.conv(e, 24, 8, 1)])
    e = _relu6(g, g.conv(x, 8, 24, 1))
    e = _relu6(g, g.conv(e, 24, 24, 3, 2, group=24))                         # 24 x 8 x 8
    x = g.conv(e, 24, 12, 1)
    x = g.op("Flatten", [g.op("ReduceMean", [x], axes=[2, 3], keepdims=1)])
    out = g.op("Gemm", [x, g.const((g.rng.standard_normal((4, 12)) * 0.3).astype(np.float32)),
                        g.const(np.zeros(4, np.float32), "b")], transB=1)
    return _finish(g, "mbv2", [1, 3, 32, 32], out)


def person_detection_mbv1() -> onnx.ModelProto:
    """Person-detection style MobileNetV1 on a grayscale image: depthwise/pointwise pairs with ReLU6, an AveragePool
    over the last feature map, a 1x1 conv classifier, Reshape to [1, 2] and Softmax."""
    g = _new(19)
    x = _relu6(g, g.conv("x", 1, 8, 3, 2))                                   # 8 x 24 x 24
    for cin, cout, st in ((8, 16, 1), (16, 16, 2), (16, 32, 2)):
        x = _relu6(g, g.conv(x, cin, cin, 3, st, group=cin))
        x = _relu6(g, g.conv(x, cin, cout, 1))                                # 32 x 6 x 6 at the end
    x = g.op("AveragePool", [x], kernel_shape=[6, 6], strides=[2, 2])
    x = g.op("Reshape", [g.conv(x, 32, 2, 1), g.const(np.array([1, 2], np.int64), "shape")])
    return _finish(g, "person_mbv1", [1, 1, 48, 48], g.op("Softmax", [x], axis=-1))


def efficientnet_lite() -> onnx.ModelProto:
    """EfficientNet-style MBConv with Swish (x * Sigmoid(x)) and a Swish squeeze-excite; Lite's ReLU6 stem."""
    g = _new(12)
    x = _relu6(g, g.conv("x", 3, 8, 3, 2))                                   # 8 x 12 x 12
    e = g.conv(x, 8, 16, 1)
    e = g.op("Mul", [e, g.op("Sigmoid", [e])])
    d = g.conv(e, 16, 16, 3, group=16)
    d = g.op("Mul", [d, g.op("Sigmoid", [d])])
    s = g.conv(g.op("GlobalAveragePool", [d]), 16, 4, 1)
    s = g.op("Sigmoid", [g.conv(g.op("Mul", [s, g.op("Sigmoid", [s])]), 4, 16, 1)])
    y = g.op("Add", [x, g.conv(g.op("Mul", [d, s]), 16, 8, 1)])
    out = _relu6(g, g.conv(y, 8, 8, 3, 2))
    return _finish(g, "effnet_lite", [1, 3, 24, 24], out)


def detection_head() -> onnx.ModelProto:
    """SSD-like head on two scales: 1x1 class convs, Transpose to NHWC, Reshape to [1, boxes, classes], Concat of the
    two scales on the box axis and Softmax over the last axis; plus a second (box regression) output."""
    g = _new(13)
    f1 = g.op("Relu", [g.conv("x", 3, 8, 3, 2)])                             # 8 x 8 x 8
    f2 = g.op("Relu", [g.conv(f1, 8, 8, 3, 2)])                               # 8 x 4 x 4
    cls, box = [], []
    for f in (f1, f2):
        c = g.op("Transpose", [g.conv(f, 8, 6, 1)], perm=[0, 2, 3, 1])
        cls.append(g.op("Reshape", [c, g.const(np.array([1, -1, 3], np.int64), "shape")]))
        b = g.op("Transpose", [g.conv(f, 8, 4, 3)], perm=[0, 2, 3, 1])
        box.append(g.op("Reshape", [b, g.const(np.array([1, -1, 4], np.int64), "shape")]))
    scores = g.op("Softmax", [g.op("Concat", cls, axis=1)], axis=-1)
    boxes = g.op("Concat", box, axis=1)
    return _finish(g, "det_head", [1, 3, 16, 16], [scores, boxes])


def tf_style_head() -> onnx.ModelProto:
    """A TensorFlow-converted classifier: NHWC input normalized by ``(x - mean) / std`` (ORT leaves this head float),
    Transpose to NCHW, an explicit asymmetric Pad before a stride-2 conv (TF "SAME"), dilated conv, GAP, Squeeze
    and a Gemm with transB=0."""
    g = _new(16)
    x = g.op("Sub", ["x", g.const(np.array([0.5, 0.4, 0.3], np.float32), "mean")])
    x = g.op("Div", [x, g.const(np.array([0.2, 0.25, 0.3], np.float32), "std")])
    x = g.op("Transpose", [x], perm=[0, 3, 1, 2])
    x = g.op("Pad", [x, g.const(np.array([0, 0, 0, 0, 0, 0, 1, 1], np.int64), "pads")], mode="constant")
    x = g.op("Relu", [g.conv(x, 3, 8, 3, 2, pad=0)])                          # 8 x 12 x 12
    w = (g.rng.standard_normal((8, 8, 3, 3)) * 0.2).astype(np.float32)
    x = g.op("Relu", [g.op("Conv", [x, g.const(w)], kernel_shape=[3, 3], dilations=[2, 2], pads=[2, 2, 2, 2])])
    x = g.op("Squeeze", [g.op("GlobalAveragePool", [x]), g.const(np.array([2, 3], np.int64), "axes")])
    out = g.op("Gemm", [x, g.const((g.rng.standard_normal((8, 5)) * 0.3).astype(np.float32)),
                        g.const(np.zeros(5, np.float32), "b")])
    return _finish(g, "tf_head", [1, 24, 24, 3], out)


def bilinear_unet() -> onnx.ModelProto:
    """A decoder with Resize linear (half_pixel) up-sampling + Concat skip (the int8 bilinear Resize runs as a float
    island: passes/float_tail.py)."""
    g = _new(14)
    e = g.op("Relu", [g.conv("x", 3, 6, 3)])                                  # 6 x 16 x 16
    b = g.op("Relu", [g.conv(g.op("MaxPool", [e], kernel_shape=[2, 2], strides=[2, 2]), 6, 8, 3)])
    u = g.op("Resize", [b, "", g.const(np.array([1, 1, 2, 2], np.float32), "scales")], mode="linear")
    out = g.conv(g.op("Concat", [u, e], axis=1), 14, 2, 3)
    return _finish(g, "bilinear_unet", [1, 3, 16, 16], out)


# Models TiGrIS must run (float and every quantized variant).
def lcnet() -> onnx.ModelProto:
    """PP-LCNet style: Conv + unfolded BatchNorm + HardSwish everywhere, depthwise 3x3 and 5x5, squeeze-excite with
    HardSigmoid * Mul in the late blocks, GAP -> 1x1 conv -> HardSwish head, Gemm classifier. ORT's QDQ output
    quantizes each conv output and each BatchNorm output on their own grids."""
    g = _new(31)

    def cbh(x: str, cin: int, cout: int, k: int, s: int = 1, group: int = 1) -> str:
        return g.op("HardSwish", [g.bn(g.conv(x, cin, cout, k, s, group=group, bias=False), cout)])

    x = cbh("x", 3, 8, 3, 2)                                                     # 8 x 24 x 24
    for cin, cout, k, s, use_se in [(8, 16, 3, 1, False), (16, 24, 3, 2, False), (24, 24, 3, 1, False),
                                    (24, 48, 5, 2, True), (48, 48, 5, 1, True)]:
        x = cbh(x, cin, cin, k, s, group=cin)
        if use_se:
            sq = g.op("Relu", [g.conv(g.op("GlobalAveragePool", [x]), cin, cin // 4, 1)])
            sq = g.op("HardSigmoid", [g.conv(sq, cin // 4, cin, 1)], alpha=1.0 / 6, beta=0.5)
            x = g.op("Mul", [x, sq])
        x = cbh(x, cin, cout, 1)
    h = g.op("HardSwish", [g.conv(g.op("GlobalAveragePool", [x]), 48, 64, 1)])
    h = g.op("Flatten", [h], axis=1)
    w = (g.rng.standard_normal((10, 64)) * 0.3).astype(np.float32)
    out = g.op("Gemm", [h, g.const(w), g.const(np.zeros(10, np.float32), "b")], transB=1)
    return _finish(g, "lcnet", [1, 3, 48, 48], out, opset=14)


FAMILIES: dict[str, Callable[[], onnx.ModelProto]] = {
    "lcnet": lcnet,
    "mbv3_small": mobilenet_v3_small,
    "mbv3_decomposed": mobilenet_v3_decomposed,
    "resnet18_stem": resnet18_stem,
    "dscnn1d": dscnn_conv1d,
    "tiny_unet": tiny_unet,
    "dw_mult2": depth_multiplier,
    "mlp": mlp_flatten,
    "dense_ae": dense_autoencoder,
    "softmax_c": softmax_axis1,
    "acts": activations_mix,
    "shuffle": channel_shuffle,
    "ae_dyn": dynamic_batch,
    "mbv2": mobilenet_v2,
    "person_mbv1": person_detection_mbv1,
    "effnet_lite": efficientnet_lite,
    "det_head": detection_head,
    "tf_head": tf_style_head,
    "bilinear_unet": bilinear_unet,
}

# Families with a module of their own (tests/families/fam_<topic>.py); they import this module's helpers.
from fam_transformer import FAMILIES as _TRANSFORMER  # noqa: E402

from fam_misc import FAMILIES as _MISC  # noqa: E402
from fam_slicing import FAMILIES as _SLICING  # noqa: E402
from fam_seg import FAMILIES as _SEG  # noqa: E402
from fam_det import FAMILIES as _DET  # noqa: E402

FAMILIES.update(_TRANSFORMER)
FAMILIES.update(_MISC)
FAMILIES.update(_SLICING)
FAMILIES.update(_SEG)
FAMILIES.update(_DET)

# Models (or variants) with a feature TiGrIS does not run: `analyze` must list them as unsupported (exit 2).
UNSUPPORTED: dict[str, Callable[[], onnx.ModelProto]] = {
}

import fam_dbnet  # noqa: E402  (the family modules import this one's helpers)

FAMILIES.update(fam_dbnet.FAMILIES)
UNSUPPORTED.update(fam_dbnet.UNSUPPORTED)


def input_shape(m: onnx.ModelProto) -> tuple[int, ...]:
    """The concrete input shape, with a symbolic batch bound to 1."""
    dims = m.graph.input[0].type.tensor_type.shape.dim
    return tuple(d.dim_value if d.dim_value > 0 else 1 for d in dims)


def quantize(float_path: Path, out_path: Path, activation: str, per_channel: bool, qoperator: bool = False,
             extra: dict | None = None) -> None:
    """ORT static quantization to QDQ with a seeded random calibration reader. ``activation`` is 'uint8' (ORT's
    default QUInt8) or 'int8'; weights are always QInt8, per channel or per tensor. ``qoperator``: ORT's QOperator
    format instead (QLinearConv, com.microsoft QLinearAdd...), which TiGrIS does not take. ``extra``: ORT's
    ``extra_options`` (e.g. DedicatedQDQPair, AddQDQPairToWeight)."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    m = onnx.load(str(float_path))
    shape = input_shape(m)
    opset = next(o.version for o in m.opset_import if o.domain in ("", "ai.onnx"))
    if per_channel and opset < 13:
        # ORT writes per-channel DequantizeLinear (an `axis`, opset 13) without raising the opset: an invalid model.
        # Raise it first, as a user following ORT's advice would.
        from onnx import version_converter

        m = version_converter.convert_version(m, 13)
        float_path = out_path.with_suffix(".opset13.onnx")
        onnx.save(m, str(float_path))

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            rng = np.random.default_rng(11)
            self.data = iter([{"x": rng.standard_normal(shape).astype(np.float32)} for _ in range(4)])

        def get_next(self):
            return next(self.data, None)

    quantize_static(str(float_path), str(out_path), Reader(),
                    quant_format=QuantFormat.QOperator if qoperator else QuantFormat.QDQ,
                    activation_type=QuantType.QUInt8 if activation == "uint8" else QuantType.QInt8,
                    weight_type=QuantType.QInt8, per_channel=per_channel, extra_options=dict(extra or {}))


# Not a family test model (too large to run in the suites): the SRAM-only target, planned by the benchmark.
MBV2_BLOCKS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
               (6, 320, 1, 1))  # expansion t, output channels c, repeats n, first stride s


def mobilenet_v2_224(width: float = 1.0, size: int = 224, seed: int = 21) -> onnx.ModelProto:
    """MobileNetV2 with the published layer shapes (stem 3x3/2 to 32, the seven inverted-residual block groups
    above, 1x1 to 1280, GAP, 1000-way Gemm) and seeded random weights: the TFLite Micro example network's shape."""

    def ch(c: int) -> int:  # channels rounded to a multiple of 8, as the reference implementation does
        return max(8, int(c * width + 4) // 8 * 8)

    g = _new(seed)
    cin = ch(32)
    x = _relu6(g, g.conv("x", 3, cin, 3, 2))
    for t, c, n, s in MBV2_BLOCKS:
        cout = ch(c)
        for k in range(n):
            stride = s if k == 0 else 1
            e = _relu6(g, g.conv(x, cin, cin * t, 1)) if t != 1 else x
            e = _relu6(g, g.conv(e, cin * t, cin * t, 3, stride, group=cin * t))
            y = g.conv(e, cin * t, cout, 1)
            x = g.op("Add", [x, y]) if stride == 1 and cin == cout else y
            cin = cout
    x = _relu6(g, g.conv(x, cin, 1280, 1))
    x = g.op("Flatten", [g.op("GlobalAveragePool", [x])])
    out = g.op("Gemm", [x, g.const((g.rng.standard_normal((1000, 1280)) * 0.03).astype(np.float32)),
                        g.const(np.zeros(1000, np.float32), "b")], transB=1)
    return _finish(g, f"mbv2_{width}_{size}", [1, 3, size, size], out)


MNASNET_STACKS = ((3, 2, 3, 3), (5, 2, 3, 3), (5, 2, 6, 3), (3, 1, 6, 2), (5, 2, 6, 4), (3, 1, 6, 1))
# kernel, first stride, expansion, repeats of the six inverted-residual stacks after the separable stem (MnasNet-B1)


def mnasnet(alpha: float = 0.5, size: int = 96, seed: int = 23) -> onnx.ModelProto:
    """MnasNet-B1 with torchvision's layer shapes at width ``alpha`` (stem 3x3/2, a depthwise-separable block, the six
    stacks above with ReLU, 1x1 to 1280, mean over H and W, 1000-way Gemm), BatchNorm folded into the convs as an
    inference export has it, seeded random weights: a model of issue 15's comparison with the peer."""

    def depth(c: int) -> int:  # channels rounded to a multiple of 8, rounding up when that loses over 10%
        d = max(8, int(c * alpha + 4) // 8 * 8)
        return d if d >= 0.9 * c * alpha else d + 8

    g = _new(seed)
    d = [depth(c) for c in (32, 16, 24, 40, 80, 96, 192, 320)]
    x = g.op("Relu", [g.conv("x", 3, d[0], 3, 2)])
    x = g.op("Relu", [g.conv(x, d[0], d[0], 3, 1, group=d[0])])
    x = g.conv(x, d[0], d[1], 1)
    cin = d[1]
    for (k, s, t, n), cout in zip(MNASNET_STACKS, d[2:]):
        for r in range(n):
            stride = s if r == 0 else 1
            e = g.op("Relu", [g.conv(x, cin, cin * t, 1)])
            e = g.op("Relu", [g.conv(e, cin * t, cin * t, k, stride, group=cin * t)])
            y = g.conv(e, cin * t, cout, 1)
            x = g.op("Add", [x, y]) if stride == 1 and cin == cout else y
            cin = cout
    x = g.op("Relu", [g.conv(x, cin, 1280, 1)])
    x = g.op("ReduceMean", [x], axes=[2, 3], keepdims=0)
    out = g.op("Gemm", [x, g.const((g.rng.standard_normal((1000, 1280)) * 0.03).astype(np.float32)),
                        g.const(np.zeros(1000, np.float32), "b")], transB=1)
    return _finish(g, f"mnasnet_{alpha}_{size}", [1, 3, size, size], out)


SQUEEZENET_FIRES = ((16, 64), (16, 64), "pool", (32, 128), (32, 128), "pool", (48, 192), (48, 192), (64, 256),
                    (64, 256))  # squeeze channels, expand channels (each of the 1x1 and 3x3 halves)


def squeezenet_1_1(size: int = 96, seed: int = 29) -> onnx.ModelProto:
    """SqueezeNet 1.1 with torchvision's layer shapes (unpadded 3x3/2 stem to 64, ceil-mode 3x3/2 max pools, eight
    Fire modules: 1x1 squeeze, 1x1 and 3x3 expands concatenated on channels, a 1x1 1000-way classifier conv, ReLU,
    global average pool), seeded random weights: a model of issue 15's comparison with the peer."""
    g = _new(seed)
    x = g.op("Relu", [g.conv("x", 3, 64, 3, 2, pad=0)])
    pool = lambda t: g.op("MaxPool", [t], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)  # noqa: E731
    x, cin = pool(x), 64
    for fire in SQUEEZENET_FIRES:
        if fire == "pool":
            x = pool(x)
            continue
        sq, ex = fire
        s = g.op("Relu", [g.conv(x, cin, sq, 1)])
        x = g.op("Concat", [g.op("Relu", [g.conv(s, sq, ex, 1)]), g.op("Relu", [g.conv(s, sq, ex, 3)])], axis=1)
        cin = 2 * ex
    x = g.op("GlobalAveragePool", [g.op("Relu", [g.conv(x, cin, 1000, 1)])])
    out = g.op("Flatten", [x])
    return _finish(g, f"squeezenet_1_1_{size}", [1, 3, size, size], out)


def int8_input(q: onnx.ModelProto) -> onnx.ModelProto:
    """A QDQ model whose graph input feeds one QuantizeLinear, rewritten to take that quantized tensor as its input
    (int8/uint8, as TFLite Micro's example models do), so the caller's float image is not part of the plan."""
    inp = q.graph.input[0].name
    qnode = next(n for n in q.graph.node if n.op_type == "QuantizeLinear" and n.input[0] == inp)
    zp = next(i for i in q.graph.initializer if i.name == qnode.input[2])
    shape = [d.dim_value for d in q.graph.input[0].type.tensor_type.shape.dim]
    q.graph.node.remove(qnode)
    q.graph.input.remove(q.graph.input[0])
    q.graph.input.insert(0, helper.make_tensor_value_info(qnode.output[0], zp.data_type, shape))
    onnx.checker.check_model(q)
    return q
