"""Segmentation families: an LRASPP head on a MobileNetV3-style backbone, and a segmentation head ending in ArgMax.

``lraspp``: HardSwish stem (the low-level features, stride 2), inverted residuals with depthwise convs and
squeeze-excite (GAP -> 1x1 -> ReLU -> 1x1 -> HardSigmoid -> broadcast Mul), HardSwish, the high-level features at
stride 8; the LRASPP head as torchvision writes it: a 1x1 conv + ReLU branch gated by GAP -> 1x1 -> Sigmoid (a
broadcast Mul), bilinear Resize (``sizes``, pytorch_half_pixel as PyTorch exports ``align_corners=False``) to the
low-level grid, a 1x1 classifier on each branch, their Add, and a final bilinear Resize to the input size.

``seg_argmax``: a small encoder-decoder (strided convs, a nearest x2 Resize with a skip Add) whose per-pixel class
scores (at half the input resolution) end in ArgMax over the channels: an int64 ``[1, H, W]`` class map, as the model
states it.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper

from builders import _G, _new

CLASSES = 4


def finish_typed(g: _G, name: str, in_shape: list, outs: list[tuple], opset: int = 13) -> onnx.ModelProto:
    """Like builders._finish, with each output's element type stated (an ArgMax output is int64) and, where shape
    inference cannot see through a shape chain, its shape: ``(name, elem_type[, shape])``."""
    graph = helper.make_graph(g.nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, in_shape)],
                              [helper.make_tensor_value_info(o[0], o[1], o[2] if len(o) > 2 else None) for o in outs],
                              initializer=g.inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    m = onnx.shape_inference.infer_shapes(m, strict_mode=True, data_prop=True)  # sizes from shapes
    onnx.checker.check_model(m, full_check=True)
    return m


def _se(g: _G, x: str, c: int) -> str:
    s = g.op("GlobalAveragePool", [x])
    s = g.op("Relu", [g.conv(s, c, max(2, c // 4), 1)])
    s = g.op("HardSigmoid", [g.conv(s, max(2, c // 4), c, 1)], alpha=1.0 / 6, beta=0.5)
    return g.op("Mul", [x, s])


def _resize_to(g: _G, x: str, like: str, mode: str, ctm: str) -> str:
    """Resize ``x`` to the spatial size of ``like``, ``sizes`` from a Concat of shapes (as torch.onnx exports
    F.interpolate(size=like.shape[-2:]))."""
    nc = g.op("Slice", [g.op("Shape", [x]), g.const(np.array([0], np.int64), "s0"),
                        g.const(np.array([2], np.int64), "s2")])
    hw = g.op("Slice", [g.op("Shape", [like]), g.const(np.array([2], np.int64), "s2"),
                        g.const(np.array([4], np.int64), "s4")])
    sizes = g.op("Concat", [nc, hw], axis=0)
    attrs = {"mode": mode, "coordinate_transformation_mode": ctm}
    if mode == "nearest":
        attrs["nearest_mode"] = "floor"
    return g.op("Resize", [x, "", "", sizes], **attrs)


def lraspp() -> onnx.ModelProto:
    g = _new(41)
    low = g.op("HardSwish", [g.conv("x", 3, 8, 3, 2)])                         # 8 x 16 x 16 (stride 2)
    d = g.op("Relu", [g.conv(low, 8, 8, 3, 2, group=8)])                       # 8 x 8 x 8
    d = g.conv(_se(g, d, 8), 8, 12, 1)
    e = g.op("HardSwish", [g.conv(d, 12, 24, 1)])
    e = g.op("HardSwish", [g.conv(e, 24, 24, 5, 2, group=24)])                # 24 x 4 x 4 (stride 8)
    high = g.op("HardSwish", [g.conv(_se(g, e, 24), 24, 16, 1)])              # 16 x 4 x 4
    # LRASPP: cbr branch gated by the scale branch
    cbr = g.op("Relu", [g.conv(high, 16, 16, 1, bias=False)])
    gate = g.op("Sigmoid", [g.conv(g.op("GlobalAveragePool", [high]), 16, 16, 1, bias=False)])
    m = g.op("Mul", [cbr, gate])
    up = _resize_to(g, m, low, "linear", "pytorch_half_pixel")                 # 16 x 16 x 16
    out = g.op("Add", [g.conv(low, 8, CLASSES, 1), g.conv(up, 16, CLASSES, 1)])
    out = g.op("Resize", [out, "", "", g.const(np.array([1, CLASSES, 32, 32], np.int64), "sizes")], mode="linear",
               coordinate_transformation_mode="pytorch_half_pixel")             # classes x 32 x 32
    return finish_typed(g, "lraspp", [1, 3, 32, 32], [(out, TensorProto.FLOAT, [1, CLASSES, 32, 32])], opset=14)


def seg_argmax() -> onnx.ModelProto:
    g = _new(42)
    e1 = g.op("Relu", [g.conv("x", 3, 8, 3, 2)])                               # 8 x 32 x 32
    e2 = g.op("Relu", [g.conv(e1, 8, 12, 3, 2)])                               # 12 x 16 x 16
    u = g.op("Resize", [g.conv(e2, 12, 8, 1), "", g.const(np.array([1, 1, 2, 2], np.float32), "scales")],
             mode="nearest")                                                    # 8 x 32 x 32
    d = g.op("Relu", [g.op("Add", [u, e1])])
    logits = g.conv(d, 8, CLASSES, 3)                                          # 4 x 32 x 32 (stride 2)
    cls = g.op("ArgMax", [logits], axis=1, keepdims=0)                         # int64 1 x 32 x 32
    return finish_typed(g, "seg_argmax", [1, 3, 64, 64], [(cls, TensorProto.INT64)])


FAMILIES = {"lraspp": lraspp, "seg_argmax": seg_argmax}


# MobileNetV3-Large's bneck table (kernel, expanded channels, output channels, squeeze-excite, activation, stride,
# dilation) as torchvision's LRASPP uses it: the last stage dilated (stride 1, dilation 2), so the 960-channel
# features are at stride 16 and the low-level features (the output of the fifth block, 40 channels) at stride 8.
MBV3_LARGE = ((3, 16, 16, False, "RE", 1, 1), (3, 64, 24, False, "RE", 2, 1), (3, 72, 24, False, "RE", 1, 1),
              (5, 72, 40, True, "RE", 2, 1), (5, 120, 40, True, "RE", 1, 1), (5, 120, 40, True, "RE", 1, 1),
              (3, 240, 80, False, "HS", 2, 1), (3, 200, 80, False, "HS", 1, 1), (3, 184, 80, False, "HS", 1, 1),
              (3, 184, 80, False, "HS", 1, 1), (3, 480, 112, True, "HS", 1, 1), (3, 672, 112, True, "HS", 1, 1),
              (5, 672, 160, True, "HS", 1, 2), (5, 960, 160, True, "HS", 1, 2), (5, 960, 160, True, "HS", 1, 2))
LOW_BLOCK = 5  # blocks up to and including the fifth (the last of stride 8) give the low-level features


def _divisible8(v: float) -> int:
    """torchvision's _make_divisible(v, 8): the nearest multiple of 8, never more than 10% below ``v``."""
    n = max(8, int(v + 4) // 8 * 8)
    return n + 8 if n < 0.9 * v else n


def lraspp_mobilenet_v3_large(size: int = 128, classes: int = 21, seed: int = 43) -> onnx.ModelProto:
    """LRASPP with a MobileNetV3-Large backbone, torchvision's layer shapes with seeded random weights (BatchNorms
    folded into the convs as an exporter writes them): stem 3x3/2 to 16 + HardSwish; the 15 bneck blocks above
    (1x1 expand + act when expanded, depthwise k x k with its stride and dilation + act, squeeze-excite with
    ``_divisible8(expanded / 4)`` channels (1x1 + ReLU, 1x1 + HardSigmoid, Mul), 1x1 project, residual Add when the
    shape is kept); 1x1 to 960 + HardSwish; the LRASPP head (128 inter channels) on the 960-channel features and the
    40-channel low-level ones, bilinear Resizes as fam_seg.lraspp."""
    g = _new(seed)
    acts = {"RE": "Relu", "HS": "HardSwish"}
    x = g.op("HardSwish", [g.conv("x", 3, 16, 3, 2)])
    cin = 16
    low = x
    for i, (k, exp, cout, se, act, stride, dil) in enumerate(MBV3_LARGE):
        e = x
        if exp != cin:
            e = g.op(acts[act], [g.conv(e, cin, exp, 1)])
        dw = g.conv(e, exp, exp, k, stride, pad=(k - 1) // 2 * dil, group=exp)
        if dil > 1:
            node = g.nodes[-1]
            node.attribute.append(helper.make_attribute("dilations", [dil, dil]))
        e = g.op(acts[act], [dw])
        if se:
            sq = _divisible8(exp / 4)
            s = g.op("GlobalAveragePool", [e])
            s = g.op("Relu", [g.conv(s, exp, sq, 1)])
            s = g.op("HardSigmoid", [g.conv(s, sq, exp, 1)], alpha=1.0 / 6, beta=0.5)
            e = g.op("Mul", [e, s])
        y = g.conv(e, exp, cout, 1)
        x = g.op("Add", [x, y]) if stride == 1 and cin == cout else y
        cin = cout
        if i + 1 == LOW_BLOCK:
            low = x
    high = g.op("HardSwish", [g.conv(x, cin, 960, 1)])                        # 960 x size/16 x size/16
    cbr = g.op("Relu", [g.conv(high, 960, 128, 1, bias=False)])
    gate = g.op("Sigmoid", [g.conv(g.op("GlobalAveragePool", [high]), 960, 128, 1, bias=False)])
    m = g.op("Mul", [cbr, gate])
    up = _resize_to(g, m, low, "linear", "pytorch_half_pixel")                 # 128 x size/8 x size/8
    out = g.op("Add", [g.conv(low, 40, classes, 1), g.conv(up, 128, classes, 1)])
    out = g.op("Resize", [out, "", "", g.const(np.array([1, classes, size, size], np.int64), "sizes")], mode="linear",
               coordinate_transformation_mode="pytorch_half_pixel")
    return finish_typed(g, f"lraspp_mbv3_large_{size}", [1, 3, size, size],
                        [(out, TensorProto.FLOAT, [1, classes, size, size])], opset=14)
