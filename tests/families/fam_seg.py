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
