"""Column-split (unit flag COLS) plans built by hand, for the runtime and format tests.

The planner does not make COLS units yet, so these tests make them: one tiled unit over a linear chain of column-local
ops (conv, depthwise, pools, per-pixel ops), its tiles a grid of row bands x column bands of the output, every
other tensor's bands computed backwards from the ops' own window arithmetic (the lowered parameters), clipped to the
tensor, exactly as docs/format.md "COLS units" requires. Buffers get simple disjoint offsets after the weight prefix,
sized for the largest dense band; the graph input and output live in the slow arena (reloaded / spilled per tile).
"""
from __future__ import annotations

import numpy as np

from tigris.ir import AnalyzedGraph, Op, QuantParam, Tensor
from tigris.layout import view_dims
from tigris.ops import kind
from tigris.ops.base import Lowered
from tigris.ops.base import _align16 as align16
from tigris.plan.types import ExecUnit, MemoryPlan, Placement, StagePlan

# The row-axis twin of each W-window parameter name (conv/dwconv lower case, pools upper case).
_ROW_OF = {"kw": "kh", "sw": "sh", "dw": "dh", "pl": "pt", "pr": "pb"}


def _dims(g: AnalyzedGraph, name: str) -> tuple[int, int, int, int]:
    t = g.tensors[name]
    return view_dims(t.shape, t.layout)


def _window(low: Lowered, axis: str) -> tuple[int, int, int, int] | None:
    """(k, stride, dilation, leading pad) of a windowed op along 'rows' or 'cols', from its lowered parameters."""
    k = kind(low.kind)
    if k.COLS != "window":
        return None
    names = k.COL_WINDOW[:4]
    if axis == "rows":
        names = tuple(_ROW_OF[n.lower()].upper() if n.isupper() else _ROW_OF[n] for n in names)
    return tuple(int(low.params.get(n, 0)) for n in names)  # type: ignore[return-value]


def _need(win: tuple[int, int, int, int] | None, a: int, b: int, n: int) -> tuple[int, int]:
    """Input positions [lo, hi) output positions [a, b) read, clipped to [0, n)."""
    if win is None:
        return a, b
    k, s, d, p = win
    return max(0, a * s - p), min(n, (b - 1) * s - p + (k - 1) * d + 1)


def _cuts(n: int, parts: int) -> list[tuple[int, int]]:
    edges = [round(i * n / parts) for i in range(parts + 1)]
    return [(a, b) for a, b in zip(edges, edges[1:]) if b > a]


def cols_plan(g: AnalyzedGraph, lowered: list[Lowered], row_tiles: int, col_tiles: int, *, xip: bool = False,
              gap: int = 0) -> MemoryPlan:
    """One COLS unit running every op of the linear chain ``g`` (op i reads op i-1's output) in a grid of
    ``row_tiles`` x ``col_tiles`` tiles of the output, row-band-major. ``gap`` leaves that many bytes between
    buffers (0: packed)."""
    x, y = g.inputs[0], g.outputs[0]
    order = [x] + [low.outputs[0] for low in lowered]
    assert order[-1] == y and all(low.inputs[0] == order[i] for i, low in enumerate(lowered))
    _, hy, wy, _ = _dims(g, y)
    tile_rows: list[dict[str, tuple[int, int]]] = []
    tile_cols: list[dict[str, tuple[int, int]]] = []
    for r in _cuts(hy, row_tiles):
        for c in _cuts(wy, col_tiles):
            rows, cols = {y: r}, {y: c}
            for low in reversed(lowered):
                src, out = low.inputs[0], low.outputs[0]
                _, h, w, _ = _dims(g, src)
                rows[src] = _need(_window(low, "rows"), *rows[out], h)
                cols[src] = _need(_window(low, "cols"), *cols[out], w)
            tile_rows.append(rows)
            tile_cols.append(cols)

    wb = 0 if xip else sum(align16(int(c.nbytes)) for low in lowered for c in low.consts.values())
    fast: dict[str, Placement] = {}
    off = wb
    for name in order:
        n, _, _, c = _dims(g, name)
        elem = g.tensors[name].nbytes // int(np.prod(_dims(g, name)))
        size = max((b[name][1] - b[name][0]) * (cb[name][1] - cb[name][0]) * n * c * elem
                   for b, cb in zip(tile_rows, tile_cols))
        fast[name] = Placement("fast", off, align16(size))
        off += align16(size) + gap
    scratch: dict[int, Placement] = {}
    for i, low in enumerate(lowered):
        out_rows = max(b[low.outputs[0]][1] - b[low.outputs[0]][0] for b in tile_rows)
        s = int(kind(low.kind).scratch_bytes(low, g, out_rows))
        if s:
            scratch[i] = Placement("fast", off, align16(s))
            off += align16(s) + gap
    peak = off - gap if gap and off > wb else off
    ops = list(range(len(lowered)))
    unit = ExecUnit(stages=[0], ops=ops, reload=[x], spill=[y], fast=fast, scratch=scratch, weight_bytes=wb,
                    tiles=len(tile_rows), tile_rows=tile_rows, peak_bytes=peak)
    unit.tile_cols = tile_cols
    slow = {x: Placement("slow", 0, align16(g.tensors[x].nbytes))}
    slow[y] = Placement("slow", slow[x].end, align16(g.tensors[y].nbytes))
    stage = StagePlan(0, ops, [x], [y], peak, wb, tiled=True, tile_h=max(b[1] - b[0] for b in _cuts(hy, row_tiles)),
                      tiles=len(tile_rows))
    reload = sum((b[x][1] - b[x][0]) * (cb[x][1] - cb[x][0]) for b, cb in zip(tile_rows, tile_cols))
    return MemoryPlan(
        fast_budget=peak, slow_budget=None, xip=xip, stages=[stage], units=[unit], slow=slow, unscheduled_peak=0,
        fast_peak=peak, slow_peak=slow[y].end, spill_bytes=g.tensors[y].nbytes,
        reload_bytes=reload * g.tensors[x].nbytes // (_dims(g, x)[1] * _dims(g, x)[2]),
    )


def emit_cols(g: AnalyzedGraph, lowered: list[Lowered], row_tiles: int, col_tiles: int, *, xip: bool = False,
              compression: str = "none") -> tuple[bytes, MemoryPlan]:
    from tigris.emit import emit_plan

    plan = cols_plan(g, lowered, row_tiles, col_tiles, xip=xip)
    return emit_plan(g, plan, lowered, xip=xip, compression=compression), plan


def _q(s: float, z: int) -> QuantParam:
    return QuantParam(np.array([s], np.float32), np.array([z], np.int64))


def chain(layers: list[tuple], int8: bool, h: int, w: int, c: int, seed: int) -> AnalyzedGraph:
    """x [1, c, h, w] -> one op per layer -> y. A layer is ("conv"|"dw", k, stride, dilation, pad) (a conv keeps c
    channels), ("maxpool"|"avgpool", k, stride, pad), ("prelu", per_position) (a slope per channel, or per channel
    and position), ("gap",) (GlobalAveragePool), ("shuffle",) (a channel shuffle in two groups: the Gather along the
    channels pass channel_shuffle makes of one), or ("relu",) / ("sigmoid",); int8 ops each with their own output
    quantization."""
    from _rt_plans import conv_weights

    rng = np.random.default_rng(seed)
    dt = "int8" if int8 else "float32"

    def act(name: str, hh: int, ww: int, s: float, z: int) -> Tensor:
        return Tensor(name, (1, c, hh, ww), dt, _q(s, z) if int8 else None, "nhwc")

    tensors = {"x": act("x", h, w, 0.05, -3)}
    specs, ops, prev, hh, ww, s_prev, z_prev = [], [], "x", h, w, 0.05, -3
    weights_extra: dict[str, np.ndarray] = {}
    for i, layer in enumerate(layers):
        out = "y" if i == len(layers) - 1 else f"t{i}"
        s_out, z_out = float(rng.uniform(0.04, 0.12)), int(rng.integers(-20, 20))
        op_kind = layer[0]
        if op_kind in ("conv", "dw"):
            _, k, s, d, p = layer
            eff = (k - 1) * d + 1
            hh, ww = (hh + 2 * p - eff) // s + 1, (ww + 2 * p - eff) // s + 1
            specs.append((f"w{i}", f"b{i}", (c, 1 if op_kind == "dw" else c, k, k), s_prev))
            attrs = dict(kernel_shape=[k, k], strides=[s, s], dilations=[d, d], pads=[p, p, p, p],
                         group=c if op_kind == "dw" else 1, fused_activation="relu" if i % 2 == 0 else None)
            ops.append(Op(f"op{i}", "DepthwiseConv" if op_kind == "dw" else "Conv", (prev, f"w{i}", f"b{i}"), (out,),
                          attrs))
        elif op_kind in ("maxpool", "avgpool"):
            _, k, s, p = layer
            hh, ww = (hh + 2 * p - k) // s + 1, (ww + 2 * p - k) // s + 1
            if op_kind == "maxpool":
                s_out, z_out = s_prev, z_prev  # int8 MaxPool keeps its input's quantization
            attrs = dict(kernel_shape=[k, k], strides=[s, s], pads=[p, p, p, p], count_include_pad=0)
            ops.append(Op(f"op{i}", "MaxPool" if op_kind == "maxpool" else "AveragePool", (prev,), (out,), attrs))
        elif op_kind == "shuffle":
            k = c // 2
            idx = [a * k + b for b in range(k) for a in range(2)] + list(range(2 * k, c))
            ops.append(Op(f"op{i}", "Gather", (prev,), (out,), {"axis": 1, "indices": idx, "normalized": True}))
        elif op_kind == "gap":
            hh = ww = 1
            ops.append(Op(f"op{i}", "GlobalAveragePool", (prev,), (out,), {}))
        elif op_kind == "prelu":
            shape = (c, hh, ww) if layer[1] else (c, 1, 1)
            weights_extra[f"s{i}"] = (rng.uniform(-0.5, 0.5, shape)).astype(np.float32)
            tensors[f"s{i}"] = Tensor(f"s{i}", shape)
            ops.append(Op(f"op{i}", "PRelu", (prev, f"s{i}"), (out,), {}))
        else:
            if layer[0] == "relu":
                s_out, z_out = s_prev, z_prev
            ops.append(Op(f"op{i}", layer[0].capitalize(), (prev,), (out,), {}))
        tensors[out] = act(out, hh, ww, s_out, z_out)
        prev, s_prev, z_prev = out, s_out, z_out
    weights = {**conv_weights(rng, specs, int8, tensors), **weights_extra}
    return AnalyzedGraph("colchain", tensors, ops, ["x"], ["y"], weights, {})


def lower_all(g: AnalyzedGraph) -> list[Lowered]:
    from tigris.ops import lower

    return [lower(g, op) for op in g.ops]
