"""DBNet-style text detector (seeded random weights, small widths): the family that needs ConvTranspose.

A strided backbone gives maps at 1/4, 1/8, 1/16 and 1/32 of the input; an FPN lifts each to a common width with a 1x1
Conv, merges them top-down (Resize nearest 2x + Add), smooths each level with a 3x3 Conv, up-samples every level to
1/2 with Resize and Concats them; the probability head is Conv -> BatchNorm -> Relu -> ConvTranspose 2x ->
BatchNorm -> Relu -> ConvTranspose 2x -> Sigmoid: a text probability map at the input's size.
The BatchNorms stay unfolded, as a PyTorch export without constant folding writes them.
"""
from __future__ import annotations

import numpy as np
import onnx

from builders import _finish, _new


def dbnet() -> onnx.ModelProto:
    g = _new(31)

    def cbr(x: str, cin: int, cout: int, k: int = 3, s: int = 1) -> str:
        return g.op("Relu", [g.bn(g.conv(x, cin, cout, k, s, bias=False), cout)])

    def up(x: str, f: int) -> str:
        return g.op("Resize", [x, "", g.const(np.array([1, 1, f, f], np.float32), "scales")], mode="nearest")

    def deconv(x: str, cin: int, cout: int, bias: bool) -> str:
        w = (g.rng.standard_normal((cin, cout, 2, 2)) * np.sqrt(2.0 / cin)).astype(np.float32)
        ins = [x, g.const(w)]
        if bias:
            ins.append(g.const((g.rng.standard_normal(cout) * 0.1).astype(np.float32), "b"))
        return g.op("ConvTranspose", ins, kernel_shape=[2, 2], strides=[2, 2])

    # backbone: 3 x 64 x 64 -> c2 8 x 16 x 16, c3 12 x 8 x 8, c4 16 x 4 x 4, c5 16 x 2 x 2
    c2 = cbr(cbr("x", 3, 8, 3, 2), 8, 8, 3, 2)
    c3 = cbr(cbr(c2, 8, 12, 3, 2), 12, 12)
    c4 = cbr(c3, 12, 16, 3, 2)
    c5 = cbr(c4, 16, 16, 3, 2)
    w = 8
    i5, i4, i3, i2 = (g.conv(c, ci, w, 1, bias=False) for c, ci in ((c5, 16), (c4, 16), (c3, 12), (c2, 8)))
    o4 = g.op("Add", [up(i5, 2), i4])
    o3 = g.op("Add", [up(o4, 2), i3])
    o2 = g.op("Add", [up(o3, 2), i2])
    q = w // 4
    p5 = up(g.conv(i5, w, q, 3, bias=False), 8)
    p4 = up(g.conv(o4, w, q, 3, bias=False), 4)
    p3 = up(g.conv(o3, w, q, 3, bias=False), 2)
    p2 = g.conv(o2, w, q, 3, bias=False)
    fuse = g.op("Concat", [p5, p4, p3, p2], axis=1)                         # 8 x 16 x 16
    h = cbr(fuse, w, 4)
    h = g.op("Relu", [g.bn(deconv(h, 4, 4, False), 4)])                   # 4 x 32 x 32
    h = g.op("Sigmoid", [deconv(h, 4, 1, True)])                          # 1 x 64 x 64
    return _finish(g, "dbnet", [1, 3, 64, 64], h)


def pad_modes() -> onnx.ModelProto:
    """Image-to-image convs behind reflect, edge and wrap Pads (as style-transfer and denoising nets pad instead of
    zero-padding the conv): a reflect Pad of the rows (whole-tensor), an edge Pad of the columns only (runs on row
    bands) and a wrap Pad of the columns (a panorama's horizontal wrap-around)."""
    g = _new(33)

    def pad(x: str, mode: str, pads: list[int]) -> str:
        return g.op("Pad", [x, g.const(np.array(pads, np.int64), "pads")], mode=mode)

    x = g.op("Relu", [g.conv("x", 3, 8, 3, pad=1)])                          # 8 x 32 x 32
    x = g.op("Relu", [g.conv(x, 8, 8, 3, 2)])                                 # 8 x 16 x 16
    x = g.op("Relu", [g.conv(pad(x, "reflect", [0, 0, 1, 1, 0, 0, 1, 1]), 8, 8, 3, pad=0)])  # 8 x 16 x 16
    x = g.op("Relu", [g.conv(pad(x, "edge", [0, 0, 0, 2, 0, 0, 0, 2]), 8, 8, (1, 5), pad=0)])
    x = g.conv(pad(x, "wrap", [0, 0, 0, 1, 0, 0, 0, 1]), 8, 4, (3, 3), pad=0)  # 4 x 14 x 16
    return _finish(g, "pad_modes", [1, 3, 32, 32], x, opset=19)


FAMILIES = {"dbnet": dbnet, "pad_modes": pad_modes}


def maxpool_indices() -> onnx.ModelProto:
    """A SegNet-style encoder MaxPool that also returns its argmax Indices (for a MaxUnpool): the runtime has no
    int64 tensors, so `analyze` must report the MaxPool unsupported (exit 2)."""
    g = _new(32)
    x = g.op("Relu", [g.conv("x", 3, 4, 3)])
    y, idx = g.name("maxpool_"), g.name("indices_")
    g.nodes.append(onnx.helper.make_node("MaxPool", [x], [y, idx], name=y, kernel_shape=[2, 2], strides=[2, 2]))
    return _finish(g, "maxpool_indices", [1, 3, 8, 8], [g.conv(y, 4, 2, 1)])


UNSUPPORTED = {"maxpool_indices": maxpool_indices}
