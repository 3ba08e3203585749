"""Rows an op needs from each input (spatial rule 5) for the op types beyond conv/pool, and plans that use them."""
from __future__ import annotations

import numpy as np
from plan_graphs import G

from tigris.ir import Op, Tensor
from tigris.plan import plan_memory
from tigris.plan.check import check_plan
from tigris.plan.spatial import input_rows, untileable_reason


def test_conv1d_on_nwc_tiles_along_l():
    g = G()
    x = g.input("x", (1, 4, 40))  # nwc: 40 rows of 4 bytes
    g.tensors["w"] = Tensor("w", (4, 4, 3), "int8")
    g.weights["w"] = np.zeros((4, 4, 3), np.int8)
    g.tensors["y"] = Tensor("y", (1, 4, 20), "int8", None, "nwc")
    attrs = dict(kernel_shape=[3], strides=[2], dilations=[1], pads=[1, 1], group=1, fused_activation=None)
    g.ops.append(Op("c1", "Conv1D", ("x", "w"), ("y",), attrs))
    graph = g.graph(["y"])
    op = graph.ops[0]
    assert untileable_reason(graph, op) is None
    assert input_rows(graph, op, "x", (5, 8)) == (9, 16)  # [5*2-1, 7*2-1+3)
    plan = plan_memory(graph, 160, xip=True)  # whole: 160 + 80 = 240 B; tiled fits
    assert plan.units[0].tile_rows and check_plan(graph, plan) == []


def test_pad_shifts_rows_and_resize_widens_them():
    g = G()
    x = g.input("x", (1, 2, 8, 8))
    g.tensors["p"] = Tensor("p", (1, 2, 11, 8), "int8", None, "nhwc")
    g.ops.append(Op("pad", "Pad", ("x",), ("p",), {"pads": [0, 0, 2, 0, 0, 0, 1, 0], "value": 0.0}))
    g.tensors["r"] = Tensor("r", (1, 2, 22, 16), "int8", None, "nhwc")
    g.ops.append(Op("rs", "Resize", ("p",), ("r",), {"scales": [1, 1, 2, 2], "mode": "nearest"}))
    graph = g.graph(["r"])
    pad, rs = graph.ops
    assert input_rows(graph, pad, "x", (0, 4)) == (0, 2)  # rows 0-1 of the output are the top padding
    assert input_rows(graph, pad, "x", (5, 11)) == (3, 8)  # clipped below (row 10 is bottom padding)
    assert input_rows(graph, rs, "p", (6, 10)) == (2, 6)  # [6//2 - 1, ceil(10/2) + 1)
    plan = plan_memory(graph, 600, xip=True)
    assert check_plan(graph, plan) == [] and plan.units[0].tile_rows


def test_broadcast_operand_is_read_whole_by_every_tile():
    g = G()
    x = g.input("x", (1, 4, 16, 4))
    s = g.input("s", (1, 4, 1, 1))  # a per-channel operand with one row
    g.tensors["y"] = Tensor("y", (1, 4, 16, 4), "int8", None, "nhwc")
    g.ops.append(Op("mul", "Mul", ("x", "s"), ("y",), {}))
    graph = g.graph(["y"])
    assert input_rows(graph, graph.ops[0], "s", (3, 9)) == (0, 1)
    plan = plan_memory(graph, 96, xip=True)
    assert check_plan(graph, plan) == []
    unit = plan.units[0]
    assert unit.tiles > 1 and all(rows["s"] == (0, 1) for rows in unit.tile_rows)


def test_concat_along_h_is_not_tileable():
    g = G()
    a = g.input("a", (1, 2, 4, 4))
    b = g.input("b", (1, 2, 4, 4))
    g.tensors["c"] = Tensor("c", (1, 2, 8, 4), "int8", None, "nhwc")
    g.ops.append(Op("cat", "Concat", (a, b), ("c",), {"axis": 1}))
    graph = g.graph(["c"])
    assert untileable_reason(graph, graph.ops[0]) == "Concat along H"
    assert untileable_reason(graph, graph.ops[0].with_(attrs={"axis": 3})) is None
