"""Latency estimate: instructions per kernel call, from coefficients measured under QEMU.

The model (docs/cli.md "Latency estimate"):

* Every kernel call the executor makes (each op of each unit, once per tile whose band of the op's output is not
  empty) costs ``per_mac * MACs + per_tap * taps + per_position * positions + per_in_byte * input bytes +
  per_out_byte * output bytes + per_call`` instructions. *Taps* count the window gathers: for a convolution the
  output pixels times its kh x kw x input channels per group (the patch the kernel gathers once per pixel and reuses
  for every output channel, so a conv with few output channels pays more per MAC), for a depthwise conv or a pool
  the output elements times the window; *positions* count the kernel window positions visited (output pixels times
  kh x kw for a convolution, each with its own bounds check, so one input channel costs more per MAC than many),
  with coefficients per *cost key*: the kernel kind, the output dtype, and for ``conv`` whether the kernel is 1x1.
  MACs and bytes are those of the call's band, so halo recompute is priced where it happens.
* Everything else ``tgrs_run`` does costs ``per_op_visit`` per visited op record, ``per_moved_byte`` per byte copied
  (slow-memory reloads and spills, weight copies into the fast prefix, the caller's input and output buffers) and
  ``per_lz4_byte`` per byte LZ4-decompressed.
* Slow-memory traffic also takes ``bytes / --psram-bandwidth`` seconds when a bandwidth is given (QEMU runs every
  memory at core speed, so the coefficients above contain no wait states).

The coefficients live in one data file, ``tigris/cost_model.json``, which ``python bench/latency_model.py
--calibrate`` rewrites from fresh QEMU runs (kernel speed changes with the runtime; regenerate after changing a
kernel). Instructions become cycles through the target's ``cycles_per_instruction`` (1.0: QEMU counts
instructions, silicon adds pipeline and wait-state stalls the model does not know).
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from tigris.ir import AnalyzedGraph, TigrisError

DATA = Path(__file__).with_name("cost_model.json")
# TIGRIS_COST_MODEL names another coefficient file (the golden-output tests pin one, so recalibrating the shipped
# file does not change them).
ENV = "TIGRIS_COST_MODEL"
TARGETS = ("cortex-m4", "cortex-m55", "generic")
FEATURES = ("per_mac", "per_tap", "per_position", "per_in_byte", "per_out_byte", "per_call")


@dataclass(frozen=True)
class KernelCost:
    per_mac: float = 0.0
    per_tap: float = 0.0
    per_position: float = 0.0
    per_in_byte: float = 0.0
    per_out_byte: float = 0.0
    per_call: float = 0.0

    def instructions(self, macs: int, taps: int, positions: int, in_bytes: int, out_bytes: int) -> float:
        return (self.per_mac * macs + self.per_tap * taps + self.per_position * positions
                + self.per_in_byte * in_bytes + self.per_out_byte * out_bytes + self.per_call)


@dataclass(frozen=True)
class TargetCost:
    name: str
    kernels: dict[str, KernelCost]
    per_op_visit: float = 0.0
    per_moved_byte: float = 0.0
    per_lz4_byte: float = 0.0
    cycles_per_instruction: float = 1.0
    source: str = ""

    def kernel(self, key: str) -> KernelCost:
        """The coefficients of ``key``; a key never calibrated falls back to its kind and dtype, then its kind."""
        if key in self.kernels:
            return self.kernels[key]
        parts = key.split(".")
        for n in (2, 1):
            for k, v in sorted(self.kernels.items()):
                if k.split(".")[:n] == parts[:n]:
                    return v
        return self.kernels.get("default", KernelCost(per_out_byte=4.0, per_call=200.0))


@lru_cache(maxsize=4)
def _load(path: str) -> dict[str, Any]:
    return json.loads(Path(path).read_text())


def load_target(name: str, path: Path | None = None) -> TargetCost:
    """The calibrated coefficients of target ``name`` (one of :data:`TARGETS`)."""
    data = _load(str(path or os.environ.get(ENV) or DATA))
    targets = data["targets"]
    if name not in targets:
        raise TigrisError(f"unknown target {name!r}; use one of {', '.join(sorted(targets))}", "--target")
    t = targets[name]
    return TargetCost(
        name=name,
        kernels={k: KernelCost(**{f: float(v.get(f, 0.0)) for f in FEATURES}) for k, v in t["kernels"].items()},
        per_op_visit=float(t.get("per_op_visit", 0.0)),
        per_moved_byte=float(t.get("per_moved_byte", 0.0)),
        per_lz4_byte=float(t.get("per_lz4_byte", 0.0)),
        cycles_per_instruction=float(t.get("cycles_per_instruction", 1.0)),
        source=str(t.get("source", "")),
    )


def cost_key(graph: AnalyzedGraph, low: Any) -> str:
    """``kind.dtype`` (``conv.int8``), with ``.1x1`` for pointwise convolutions: their inner loop differs."""
    dtype = graph.tensors[low.outputs[0]].dtype if low.outputs and low.outputs[0] in graph.tensors else "float32"
    key = f"{low.kind}.{'int8' if dtype in ('int8', 'uint8') else dtype}"
    if low.kind == "conv":
        op = graph.op_by_name(low.op_name)
        w = op.inputs[1] if len(op.inputs) > 1 else None
        shape = graph.weights[w].shape if w in graph.weights else (graph.tensors[w].shape if w in graph.tensors else ())
        if len(shape) >= 3 and all(int(d) == 1 for d in shape[2:]):
            key += ".1x1"
    return key


@dataclass(frozen=True)
class Call:
    """One kernel call the executor makes: op index, unit, tile, output rows, and the call's features."""

    op: int
    unit: int
    tile: int
    rows: int
    macs: int
    taps: int
    positions: int
    in_bytes: int
    out_bytes: int


def calls(graph: AnalyzedGraph, plan: Any, lowered: list[Any]) -> Iterator[Call]:
    """The executor's kernel calls in order (``runtime_c/src/exec.c``: units, tiles, op records; an op whose band
    in a tile is empty is skipped; alias ops have no record)."""
    from tigris.plan.lifetime import tensor_rows
    from tigris.plan.spatial import fresh_rows, row_bytes

    root = lambda n: plan.alias_of.get(n, n)  # noqa: E731
    views = set(getattr(plan, "view_ops", ()))
    per_elem = [taps_per_output(graph, op) for op in graph.ops]
    for u, unit in enumerate(plan.units):
        tiles = unit.tile_rows or [None]
        rolling = set(getattr(unit, "rolling", ()))
        col_bands = getattr(unit, "tile_cols", None) or []
        for t, band in enumerate(tiles):
            before = tiles[t - 1] if t > 0 else None
            cband = col_bands[t] if col_bands else None
            for i in unit.ops:
                low = lowered[i]
                if low.alias or i in views:  # a view moves no bytes (docs/memory-planning.md "Views")
                    continue
                op = graph.ops[i]
                out = op.outputs[0]

                def rows_of(name: str) -> int:
                    if band is None:
                        return tensor_rows(graph.tensors[name])
                    r = band.get(root(name))
                    return tensor_rows(graph.tensors[name]) if r is None else r[1] - r[0]

                def share(name: str) -> tuple[int, int]:
                    # (columns of the tile, width) of a column-split unit's band (tigris.plan.cols); whole rows else
                    w = int(graph.tensors[name].shape[3]) if cband is not None else 1
                    c = cband.get(root(name)) if cband is not None else None
                    return (w, w) if c is None else (c[1] - c[0], w)

                rows = rows_of(out)
                if band is not None and root(out) in rolling:  # halo reuse: the kernel computes the fresh rows
                    lo, hi = fresh_rows(before.get(root(out)) if before else None, band[root(out)])
                    rows = hi - lo
                if rows <= 0:
                    continue
                full = tensor_rows(graph.tensors[out])
                cols, width = share(out)
                macs = int(low.macs) if rows >= full and cols >= width else \
                    int(low.macs) * rows * cols // max(1, full * width)
                if i in getattr(unit, "accumulate", ()):
                    # an accumulating GAP's output is whole in every tile; each call adds the tile's input band
                    src = low.inputs[0]
                    in_cols, in_width = share(src)
                    macs = int(low.macs) * rows_of(src) * in_cols // max(1, tensor_rows(graph.tensors[src]) * in_width)
                ins = [n for n in dict.fromkeys(low.inputs) if n in graph.tensors and n not in graph.weights]
                in_bytes = sum(rows_of(n) * row_bytes(graph, n) * share(n)[0] // share(n)[1] for n in ins)
                out_bytes = rows * row_bytes(graph, out) * cols // width
                elems = out_bytes // max(1, np.dtype(graph.tensors[out].dtype).itemsize)
                taps, positions = per_elem[i]
                yield Call(i, u, t, rows, macs, int(round(elems * taps)), int(round(elems * positions)), in_bytes,
                           out_bytes)


def taps_per_output(graph: AnalyzedGraph, op: Any) -> tuple[float, float]:
    """(taps, positions) per output element (see module docstring): a conv gathers a kh x kw x C_in/group patch at
    kh x kw positions per pixel, shared by the output channels of its group; a depthwise conv or a pool visits its
    window once per output element; every other op neither."""
    if op.op_type in ("Conv", "DepthwiseConv", "Conv1D") and len(op.inputs) > 1:
        w = op.inputs[1]
        shape = graph.weights[w].shape if w in graph.weights else graph.tensors[w].shape
        window = int(np.prod(shape[2:])) if len(shape) > 2 else 1
        if op.op_type == "DepthwiseConv":
            return float(window), float(window)
        groups = int(op.attrs.get("group", 1) or 1)
        per_group_out = max(1, int(shape[0]) // groups)
        return window * int(shape[1]) / per_group_out, window / per_group_out
    k = op.attrs.get("kernel_shape")
    if op.op_type in ("MaxPool", "AveragePool") and k:
        return float(np.prod(list(k))), float(np.prod(list(k)))
    return 0.0, 0.0


@dataclass
class Estimate:
    target: str
    instructions: int  # whole run
    kernel_instructions: int
    overhead_instructions: int  # executor, copies, decompression
    per_op: dict[int, int] = field(default_factory=dict)  # op index -> instructions of its calls
    cycles: int = 0
    slow_seconds: float | None = None  # slow traffic / bandwidth (None without a bandwidth)
    clock_hz: int | None = None
    ms: float | None = None  # None without a clock

    def json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "instructions": self.instructions,
            "kernel_instructions": self.kernel_instructions,
            "overhead_instructions": self.overhead_instructions,
            "cycles": self.cycles,
            "clock_hz": self.clock_hz,
            "slow_memory_ms": None if self.slow_seconds is None else round(self.slow_seconds * 1e3, 4),
            "ms": None if self.ms is None else round(self.ms, 4),
        }


def moved_bytes(graph: AnalyzedGraph, plan: Any, compression: str) -> tuple[int, int]:
    """(bytes copied, bytes LZ4-decoded) per inference outside the kernels."""
    from tigris.plan.lifetime import buffers

    from tigris.plan.spatial import carried_rows, row_bytes

    bufs = buffers(graph)
    io = sum(bufs.nbytes[bufs.root(n)] for n in list(graph.inputs) + list(graph.outputs) if bufs.root(n) in bufs.nbytes)
    weights = 0 if plan.xip else sum(u.weight_bytes for u in plan.units)
    lz4 = weights if compression == "lz4" else 0
    # halo reuse: every carried row is copied into its line buffer and back out, or moved once inside its band
    carry = sum((2 if n in getattr(u, "carry", {}) else 1) * carried_rows(a[n], b[n]) * row_bytes(graph, n)
                for u in plan.units for n in getattr(u, "rolling", ()) for a, b in zip(u.tile_rows, u.tile_rows[1:]))
    copied = plan.spill_bytes + plan.reload_bytes + io + (0 if lz4 else weights) + carry
    return copied, lz4


def estimate(
    graph: AnalyzedGraph,
    plan: Any,
    lowered: list[Any],
    target: str | TargetCost = "generic",
    compression: str = "none",
    clock_hz: int | None = None,
    psram_bandwidth: int | None = None,
) -> Estimate:
    """Instructions (and, with a clock, milliseconds) of one inference of ``plan`` on ``target``."""
    tc = target if isinstance(target, TargetCost) else load_target(target)
    keys = {i: cost_key(graph, low) for i, low in enumerate(lowered) if not low.alias}
    per_op: dict[int, float] = {}
    visits = 0
    for unit in plan.units:
        visits += max(1, len(unit.tile_rows)) * sum(1 for i in unit.ops
                                                    if not lowered[i].alias and i not in plan.view_ops)
    for c in calls(graph, plan, lowered):
        per_op[c.op] = per_op.get(c.op, 0.0) + tc.kernel(keys[c.op]).instructions(c.macs, c.taps, c.positions,
                                                                                  c.in_bytes, c.out_bytes)
    copied, lz4 = moved_bytes(graph, plan, compression)
    overhead = tc.per_op_visit * visits + tc.per_moved_byte * copied + tc.per_lz4_byte * lz4
    kernel = int(round(sum(per_op.values())))
    total = kernel + int(round(overhead))
    est = Estimate(tc.name, total, kernel, int(round(overhead)), {i: int(round(v)) for i, v in per_op.items()})
    est.cycles = int(round(total * tc.cycles_per_instruction))
    traffic = plan.spill_bytes + plan.reload_bytes
    if psram_bandwidth:
        est.slow_seconds = traffic / psram_bandwidth
    if clock_hz:
        est.clock_hz = clock_hz
        est.ms = est.cycles / clock_hz * 1e3 + (est.slow_seconds or 0.0) * 1e3
    return est


def recompute_weight(
    graph: AnalyzedGraph, lowered: list[Any], target: str | TargetCost, clock_hz: int | None = None,
    psram_bandwidth: int | None = None,
) -> float:
    """The planner's price of one recomputed MAC in bytes of slow traffic, for the latency objective: the model's
    MAC-weighted instructions per MAC over the instructions (or time) one byte of traffic costs."""
    tc = target if isinstance(target, TargetCost) else load_target(target)
    macs = [(tc.kernel(cost_key(graph, low)).per_mac, int(low.macs)) for low in lowered if not low.alias and low.macs]
    total = sum(m for _, m in macs)
    per_mac = sum(c * m for c, m in macs) / total if total else 1.0
    per_byte = tc.per_moved_byte * tc.cycles_per_instruction
    if psram_bandwidth and clock_hz:
        per_byte += clock_hz / psram_bandwidth
    return per_mac * tc.cycles_per_instruction / max(per_byte, 1e-3)
