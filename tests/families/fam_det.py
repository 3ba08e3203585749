"""Detector families: EfficientDet-Lite0-style at 320x320 and an SSD-style detector ending in NonMaxSuppression.

``effdet_lite0``: the structure the EfficientDet-Lite0 detector traces, with small channel widths: a depthwise-
separable ReLU6 backbone to P3..P5 (strides 8..32), P6 and P7 by padded 3x3/2 MaxPool (10 -> 5 -> 3), one BiFPN
layer (top-down up-sampling by Resize nearest whose ``sizes`` come from a Concat of shapes, 3x3 -> 5x5 among them;
bottom-up down-sampling by padded MaxPool; every fusion a fast-normalized weighted Add, ``relu(w) / (sum + eps)``
folded to constants as PyTorch exports it, followed by a Swish depthwise-separable conv), and a shared class/box head on the
five levels, each Transpose + Reshape to ``[1, cells * anchors, k]`` and the five grids Concat'ed, class scores
through a Sigmoid.

``ssd_nms``: an SSD-style detector whose post-processing is in the graph, as the background chapter ends
EfficientDet: sigmoid class scores, anchor decode (``centre = anchor_centre + 0.1 * d_xy * anchor_size``, ``size =
exp(0.2 * d_wh) * anchor_size``, constant anchors) and ONNX NonMaxSuppression with constant bounds
(``center_point_box`` 1), whose ``[num_selected, 3]`` int64 output the plan stores at its maximum size, row-counted.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto

from builders import _G, _new, _relu6
from fam_seg import finish_typed

ANCHORS, CLASSES, WIDTH = 3, 4, 8


def _sep(g: _G, x: str, c: int, cout: int, stride: int = 1, act: str = "relu6") -> str:
    d = g.conv(x, c, c, 3, stride, group=c)
    d = _relu6(g, d) if act == "relu6" else g.op("Mul", [d, g.op("Sigmoid", [d])])
    return g.conv(d, c, cout, 1)


def _wadd(g: _G, xs: list[str]) -> str:
    """EfficientDet's fast normalized fusion: sum_i x_i * relu(w_i) / (sum_j relu(w_j) + 1e-4), the normalized
    weights constants as PyTorch's export (constant folding on) states them."""
    r = np.maximum(g.rng.uniform(0.5, 1.5, len(xs)).astype(np.float32), 0)
    out = None
    for x, v in zip(xs, r / (r.sum() + np.float32(1e-4))):
        t = g.op("Mul", [x, g.const(np.float32(v), "fw")])
        out = t if out is None else g.op("Add", [out, t])
    return out


def _up(g: _G, x: str, like: str) -> str:
    nc = g.op("Slice", [g.op("Shape", [x]), g.const(np.array([0], np.int64), "s0"),
                        g.const(np.array([2], np.int64), "s2")])
    hw = g.op("Slice", [g.op("Shape", [like]), g.const(np.array([2], np.int64), "s2"),
                        g.const(np.array([4], np.int64), "s4")])
    return g.op("Resize", [x, "", "", g.op("Concat", [nc, hw], axis=0)], mode="nearest",
                coordinate_transformation_mode="asymmetric", nearest_mode="floor")


def _down(g: _G, x: str) -> str:
    return g.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])


def effdet_lite0() -> onnx.ModelProto:
    g = _new(51)
    W = WIDTH
    x = _relu6(g, g.conv("x", 3, 4, 3, 2))                                       # 4 x 160 x 160
    x = _relu6(g, _sep(g, x, 4, 8, 2))                                          # 8 x 80
    p3 = _relu6(g, _sep(g, x, 8, 12, 2))                                        # 12 x 40
    p4 = _relu6(g, _sep(g, p3, 12, 16, 2))                                      # 16 x 20
    p5 = _relu6(g, _sep(g, p4, 16, 16, 2))                                      # 16 x 10
    l3, l4, l5 = g.conv(p3, 12, W, 1), g.conv(p4, 16, W, 1), g.conv(p5, 16, W, 1)
    p6 = _down(g, l5)                                                           # 5 x 5
    p7 = _down(g, p6)                                                           # 3 x 3
    sep = lambda t: _sep(g, t, W, W, act="swish")  # noqa: E731
    p6td = sep(_wadd(g, [p6, _up(g, p7, p6)]))                                 # 3x3 -> 5x5
    p5td = sep(_wadd(g, [l5, _up(g, p6td, l5)]))
    p4td = sep(_wadd(g, [l4, _up(g, p5td, l4)]))
    p3o = sep(_wadd(g, [l3, _up(g, p4td, l3)]))
    p4o = sep(_wadd(g, [l4, p4td, _down(g, p3o)]))
    p5o = sep(_wadd(g, [l5, p5td, _down(g, p4o)]))
    p6o = sep(_wadd(g, [p6, p6td, _down(g, p5o)]))
    p7o = sep(_wadd(g, [p7, _down(g, p6o)]))
    # the head's weights are shared by the five levels, as in EfficientDet
    wc = g.const((g.rng.standard_normal((ANCHORS * CLASSES, W, 3, 3)) * 0.2).astype(np.float32))
    wb = g.const((g.rng.standard_normal((ANCHORS * 4, W, 3, 3)) * 0.2).astype(np.float32))
    cls, box = [], []
    for p in (p3o, p4o, p5o, p6o, p7o):
        for w, k, acc in ((wc, CLASSES, cls), (wb, 4, box)):
            t = g.op("Transpose", [g.op("Conv", [p, w], kernel_shape=[3, 3], pads=[1, 1, 1, 1])], perm=[0, 2, 3, 1])
            acc.append(g.op("Reshape", [t, g.const(np.array([1, -1, k], np.int64), "shape")]))
    n = ANCHORS * (40 * 40 + 20 * 20 + 10 * 10 + 5 * 5 + 3 * 3)
    scores = g.op("Sigmoid", [g.op("Concat", cls, axis=1)])
    boxes = g.op("Concat", box, axis=1)
    return finish_typed(g, "effdet_lite0", [1, 3, 320, 320],
                        [(scores, TensorProto.FLOAT, [1, n, CLASSES]), (boxes, TensorProto.FLOAT, [1, n, 4])])


def _anchors(sizes: list[tuple[int, float]], per_cell: int) -> tuple[np.ndarray, np.ndarray]:
    """Centres and sizes ([1, N, 2] each) of ``per_cell`` anchors per cell of each (grid, scale) level."""
    xy, wh = [], []
    for n, s in sizes:
        c = (np.arange(n) + 0.5) / n
        cy, cx = np.meshgrid(c, c, indexing="ij")
        for yy, xx in zip(cy.reshape(-1), cx.reshape(-1)):
            for a in range(per_cell):
                xy.append((xx, yy))
                r = 1.0 + 0.5 * a
                wh.append((s * r, s / r))
    return (np.array(xy, np.float32)[None], np.array(wh, np.float32)[None])


def ssd_nms() -> onnx.ModelProto:
    g = _new(52)
    A, C = 2, 3
    x = g.op("Relu", [g.conv("x", 3, 8, 3, 2)])                                # 8 x 32 x 32
    x = g.op("Relu", [g.conv(x, 8, 16, 3, 2)])                                 # 16 x 16
    f1 = g.op("Relu", [g.conv(x, 16, 16, 3, 2)])                               # 16 x 8 x 8
    f2 = g.op("Relu", [g.conv(f1, 16, 16, 3, 2)])                              # 16 x 4 x 4
    cls, dxy, dwh = [], [], []
    for f in (f1, f2):
        for cout, k, acc in ((A * C, C, cls), (A * 2, 2, dxy), (A * 2, 2, dwh)):
            t = g.op("Transpose", [g.conv(f, 16, cout, 3)], perm=[0, 2, 3, 1])
            acc.append(g.op("Reshape", [t, g.const(np.array([1, -1, k], np.int64), "shape")]))
    scores = g.op("Transpose", [g.op("Sigmoid", [g.op("Concat", cls, axis=1)])], perm=[0, 2, 1])  # [1, C, N]
    a_xy, a_wh = _anchors([(8, 0.2), (4, 0.45)], A)
    axy, awh = g.const(a_xy, "anchor_xy"), g.const(a_wh, "anchor_wh")
    cxy = g.op("Add", [g.op("Mul", [g.op("Mul", [g.op("Concat", dxy, axis=1), g.const(np.float32(0.1), "k")]),
                                    awh]), axy])
    wh = g.op("Mul", [g.op("Exp", [g.op("Mul", [g.op("Concat", dwh, axis=1), g.const(np.float32(0.2), "k")])]), awh])
    boxes = g.op("Concat", [cxy, wh], axis=2)                                  # [1, N, 4] centre form
    sel = g.op("NonMaxSuppression", [boxes, scores, g.const(np.array([20], np.int64), "max_out"),
                                     g.const(np.array([0.5], np.float32), "iou"),
                                     g.const(np.array([0.8], np.float32), "score_thr")], center_point_box=1)
    return finish_typed(g, "ssd_nms", [1, 3, 64, 64], [(sel, TensorProto.INT64, ["num_selected", 3])])


FAMILIES = {"effdet_lite0": effdet_lite0, "ssd_nms": ssd_nms}
