"""Families that need slicing and joining (seeded random weights, small widths): ShuffleNetV2, a YOLO-Fastest-v2-style
detector and a YOLOv8n-style detector.

* ShuffleNetV2: Conv + MaxPool stem; down-sampling units (two branches, depthwise 3x3 stride 2, Concat) and basic
  units that halve the channels, one with a Split and one with a Slice pair, and run the second half through
  1x1 -> depthwise 3x3 -> 1x1; every unit ends with the channel shuffle Reshape [1, 2, C/2, H, W] -> Transpose ->
  Reshape; 1x1 Conv, GlobalAveragePool, Gemm head.
* YOLO-Fastest-v2: a ShuffleNetV2-ish backbone, the stride-32 map up-sampled (Resize nearest 2x) and Concat'ed with
  the stride-16 map, two heads whose outputs are cut into box, objectness and class channels (Split on one head,
  Slice on the other), Sigmoid on objectness and classes, Concat'ed back: two outputs.
* YOLOv8n: SiLU written as x * Sigmoid(x); C2f blocks (1x1 Conv, Split into halves, bottlenecks with a residual Add,
  Concat of every part, 1x1 Conv); SPPF (1x1 Conv, three MaxPool k5 s1 p2 in a chain, Concat of four, 1x1 Conv);
  a Resize-nearest + Concat neck; a detect head whose two scales are reshaped to [1, C, H*W], Concat'ed along the
  anchors, Split into box and class channels and joined again with Sigmoid on the classes.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import helper

from builders import _finish, _new


def _split(g, x: str, sizes: list[int], axis: int = 1) -> list[str]:
    outs = [g.name("split_") for _ in sizes]
    g.nodes.append(helper.make_node("Split", [x, g.const(np.array(sizes, np.int64), "split")], outs, axis=axis,
                                    name=g.name("Split")))
    return outs


def _slice(g, x: str, start: int, end: int, axis: int = 1, step: int | None = None) -> str:
    ins = [x, g.const(np.array([start], np.int64), "st"), g.const(np.array([end], np.int64), "en"),
           g.const(np.array([axis], np.int64), "ax")]
    if step is not None:
        ins.append(g.const(np.array([step], np.int64), "sp"))
    return g.op("Slice", ins)


def _shuffle(g, x: str, c: int, h: int, w: int) -> str:
    r = g.op("Reshape", [x, g.const(np.array([1, 2, c // 2, h, w], np.int64), "shape")])
    t = g.op("Transpose", [r], perm=[0, 2, 1, 3, 4])
    return g.op("Reshape", [t, g.const(np.array([1, c, h, w], np.int64), "shape")])


def _relu_conv(g, x: str, cin: int, cout: int, k: int = 1, s: int = 1, group: int = 1, relu: bool = True) -> str:
    y = g.bn(g.conv(x, cin, cout, k, s, group=group, bias=False), cout)
    return g.op("Relu", [y]) if relu else y


def _down_unit(g, x: str, cin: int, cout: int, h: int, w: int) -> str:
    """Stride-2 unit: both branches see the whole input; Concat; shuffle."""
    half = cout // 2
    b1 = _relu_conv(g, _relu_conv(g, x, cin, cin, 3, 2, group=cin, relu=False), cin, half)
    b2 = _relu_conv(g, x, cin, half)
    b2 = _relu_conv(g, _relu_conv(g, b2, half, half, 3, 2, group=half, relu=False), half, half)
    return _shuffle(g, g.op("Concat", [b1, b2], axis=1), cout, h // 2, w // 2)


def _basic_unit(g, x: str, c: int, h: int, w: int, use_slice: bool) -> str:
    """Stride-1 unit: the channels are halved (Split, or two Slices), the second half runs the branch."""
    half = c // 2
    if use_slice:
        a, b = _slice(g, x, 0, half), _slice(g, x, half, 1 << 30)
    else:
        a, b = _split(g, x, [half, half])
    b = _relu_conv(g, b, half, half)
    b = _relu_conv(g, _relu_conv(g, b, half, half, 3, 1, group=half, relu=False), half, half)
    return _shuffle(g, g.op("Concat", [a, b], axis=1), c, h, w)


def _stem(g) -> str:
    x = g.op("Relu", [g.conv("x", 3, 8, 3, 2)])                                     # 8 x 24 x 24
    return g.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])  # 8 x 12 x 12


def shufflenet_v2() -> onnx.ModelProto:
    g = _new(41)
    x = _stem(g)
    x = _down_unit(g, x, 8, 16, 12, 12)                                              # 16 x 6 x 6
    x = _basic_unit(g, x, 16, 6, 6, use_slice=False)
    x = _basic_unit(g, x, 16, 6, 6, use_slice=True)
    x = _down_unit(g, x, 16, 32, 6, 6)                                               # 32 x 3 x 3
    x = _basic_unit(g, x, 32, 3, 3, use_slice=False)
    x = g.op("Relu", [g.conv(x, 32, 48, 1)])
    x = g.op("Flatten", [g.op("GlobalAveragePool", [x])], axis=1)
    w = (g.rng.standard_normal((10, 48)) * 0.3).astype(np.float32)
    out = g.op("Gemm", [x, g.const(w), g.const(np.zeros(10, np.float32), "b")], transB=1)
    return _finish(g, "shufflenet_v2", [1, 3, 48, 48], out)


def _yolo_head(g, x: str, cin: int, use_split: bool) -> str:
    """Conv -> 12 channels = 8 box + 2 objectness + 2 classes; Sigmoid on the last two parts; Concat back."""
    h = g.conv(g.op("Relu", [g.conv(x, cin, cin, 3, group=cin)]), cin, 12, 1)
    if use_split:
        box, obj, cls = _split(g, h, [8, 2, 2])
    else:
        box, obj, cls = _slice(g, h, 0, 8), _slice(g, h, 8, 10), _slice(g, h, -2, 1 << 30)
    return g.op("Concat", [box, g.op("Sigmoid", [obj]), g.op("Sigmoid", [cls])], axis=1)


def yolo_fastest_v2() -> onnx.ModelProto:
    g = _new(42)
    x = _stem(g)                                                                     # 8 x 12 x 12
    x = _down_unit(g, x, 8, 16, 12, 12)                                              # 16 x 6 x 6
    s16 = _basic_unit(g, x, 16, 6, 6, use_slice=True)
    x = _down_unit(g, s16, 16, 32, 6, 6)                                             # 32 x 3 x 3
    s32 = _basic_unit(g, x, 32, 3, 3, use_slice=False)
    up = g.op("Resize", [s32, "", g.const(np.array([1, 1, 2, 2], np.float32), "scales")], mode="nearest")
    p16 = g.op("Relu", [g.conv(g.op("Concat", [up, s16], axis=1), 48, 24, 1)])       # 24 x 6 x 6
    p32 = g.op("Relu", [g.conv(s32, 32, 24, 1)])                                     # 24 x 3 x 3
    return _finish(g, "yolo_fastest_v2", [1, 3, 48, 48], [_yolo_head(g, p16, 24, True), _yolo_head(g, p32, 24, False)])


def _silu(g, x: str) -> str:
    return g.op("Mul", [x, g.op("Sigmoid", [x])])


def _cbs(g, x: str, cin: int, cout: int, k: int = 1, s: int = 1) -> str:
    return _silu(g, g.conv(x, cin, cout, k, s))


def _c2f(g, x: str, cin: int, cout: int, n: int, shortcut: bool = True) -> str:
    c = cout // 2
    y = _cbs(g, x, cin, 2 * c)
    parts = _split(g, y, [c, c])
    last = parts[-1]
    for _ in range(n):
        b = _cbs(g, _cbs(g, last, c, c, 3), c, c, 3)
        last = g.op("Add", [last, b]) if shortcut else b
        parts.append(last)
    return _cbs(g, g.op("Concat", parts, axis=1), (2 + n) * c, cout)


def _sppf(g, x: str, cin: int, cout: int) -> str:
    c = cin // 2
    y = _cbs(g, x, cin, c)
    parts = [y]
    for _ in range(3):
        parts.append(g.op("MaxPool", [parts[-1]], kernel_shape=[5, 5], strides=[1, 1], pads=[2, 2, 2, 2]))
    return _cbs(g, g.op("Concat", parts, axis=1), 4 * c, cout)


def yolov8n() -> onnx.ModelProto:
    g = _new(43)
    x = _cbs(g, "x", 3, 8, 3, 2)                                                     # 8 x 24 x 24
    x = _cbs(g, x, 8, 16, 3, 2)                                                      # 16 x 12 x 12
    x = _c2f(g, x, 16, 16, 1)
    p3 = _c2f(g, _cbs(g, x, 16, 24, 3, 2), 24, 24, 1)                                # 24 x 6 x 6
    p4 = _sppf(g, _c2f(g, _cbs(g, p3, 24, 32, 3, 2), 32, 32, 1), 32, 32)             # 32 x 3 x 3
    up = g.op("Resize", [p4, "", g.const(np.array([1, 1, 2, 2], np.float32), "scales")], mode="nearest")
    n3 = _c2f(g, g.op("Concat", [up, p3], axis=1), 56, 24, 1, shortcut=False)        # 24 x 6 x 6
    n4 = _c2f(g, g.op("Concat", [_cbs(g, n3, 24, 24, 3, 2), p4], axis=1), 56, 32, 1, shortcut=False)  # 32 x 3 x 3
    heads = []
    for f, c, hw in ((n3, 24, 36), (n4, 32, 9)):
        box = g.conv(_cbs(g, f, c, 16, 3), 16, 16, 1)                                # 4 x reg_max (4) box logits
        cls = g.conv(_cbs(g, f, c, 16, 3), 16, 4, 1)                                 # 4 classes
        h = g.op("Concat", [box, cls], axis=1)                                       # 20 x H x W
        heads.append(g.op("Reshape", [h, g.const(np.array([1, 20, hw], np.int64), "shape")]))
    d = g.op("Concat", heads, axis=2)                                                # 20 x 45
    box, cls = _split(g, d, [16, 4])
    out = g.op("Concat", [box, g.op("Sigmoid", [cls])], axis=1)
    return _finish(g, "yolov8n", [1, 3, 48, 48], out)


FAMILIES = {"shufflenet_v2": shufflenet_v2, "yolo_fastest_v2": yolo_fastest_v2, "yolov8n": yolov8n}
