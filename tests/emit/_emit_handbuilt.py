"""Small hand-built graphs, lowered ops and memory plans for the writer/reader tests.

The plans are built directly (no planner), so the format tests do not depend on stages 3-6. The parameters are
ones the kinds' checks accept (the loader runs them, docs/format.md step 17) for x [1,4,8,8] -conv 3x3 pad 1->
[1,8,8,8] -maxpool 2x2/2-> [1,8,4,4] -gap-> [1,8,1,1]; constant values are random, so a round trip that swapped or
dropped one would show.
"""
from __future__ import annotations

import struct

import numpy as np

from tigris.ir import AnalyzedGraph, Boundary, Op, QuantParam, Tensor
from tigris.ops import kind
from tigris.ops.base import Lowered
from tigris.plan.types import ExecUnit, MemoryPlan, Placement, StagePlan, align_up

__all__ = ["Lowered", "graph", "single_unit_plan", "two_unit_tiled_plan"]


def _f32_bits(v: float) -> int:
    return struct.unpack("<i", struct.pack("<f", v))[0]


def _params(kname: str, int8: bool) -> dict[str, int]:
    window = {"kh": 3, "kw": 3, "sh": 1, "sw": 1, "dh": 1, "dw": 1, "pt": 1, "pl": 1, "pb": 1, "pr": 1}
    if kname == "conv":
        return {**window, "group": 1, "act_min": -128, "act_max": 127, "fmin": _f32_bits(float("-inf")),
                "fmax": _f32_bits(float("inf")), "zp_in": -3 if int8 else 0, "zp_out": 2 if int8 else 0,
                "pack_nr": 1 if int8 else 8, "patch": 36, "numerics": 0}
    if kname == "maxpool":
        return {"KH": 2, "KW": 2, "SH": 2, "SW": 2, "DH": 1, "DW": 1, "PT": 0, "PL": 0, "PB": 0, "PR": 0,
                "COUNT_PAD": 0, "MULT": 1 << 30, "SHIFT": 1, "LO": -128, "HI": 127}
    return {"MULT": 1 << 30, "SHIFT": 1, "LO": -128, "HI": 127, "TFLM_AVG": 0}  # gap


def _lowered(kname: str, op: Op, seed: int, int8: bool) -> Lowered:
    k = kind(kname)
    rng = np.random.default_rng(seed)
    params = _params(kname, int8)
    # NUMERICS is checked against the header (onnx, 0) in every kind that has it; no weight zero points (wzp 0) and
    # float32 weights (wf16 0).
    params.update({p: 0 for p in k.PARAMS if p.lower() in ("numerics", "wzp", "wf16")})
    assert set(params) == set(k.PARAMS), (kname, k.PARAMS)
    cs = {}
    if kname == "conv":  # 8 output channels, patch 36: float packed in one panel of 8, int8 as OHWI rows
        if int8:
            cs = {"weight": rng.integers(-100, 100, size=288, dtype=np.int8),
                  "bias": rng.integers(-1000, 1000, size=8, dtype=np.int32),
                  "mult": rng.integers(1 << 30, (1 << 31) - 1, size=8, dtype=np.int32),
                  "shift": rng.integers(-8, 0, size=8, dtype=np.int32)}
        else:
            cs = {"weight": rng.standard_normal(288).astype(np.float32),
                  "bias": rng.standard_normal(8).astype(np.float32)}
    acts = [i for i in op.inputs if i and not i.startswith("w")]  # weights are consts, not inputs
    return Lowered(kname, op.name, acts, list(op.outputs), params, cs)


def graph(int8: bool = False) -> tuple[AnalyzedGraph, list[Lowered]]:
    """x -conv-> c1 -maxpool-> p1 -reshape(alias)-> r -gap-> y."""
    dt = "int8" if int8 else "float32"

    def q(s: float, z: int) -> QuantParam | None:
        return QuantParam(np.array([s], np.float32), np.array([z], np.int64)) if int8 else None

    tensors = {
        "x": Tensor("x", (1, 4, 8, 8), dt, q(0.05, -3), "nhwc"),
        "c1": Tensor("c1", (1, 8, 8, 8), dt, q(0.1, 2), "nhwc"),
        "p1": Tensor("p1", (1, 8, 4, 4), dt, q(0.1, 2), "nhwc"),
        "r": Tensor("r", (1, 8, 4, 4), dt, q(0.1, 2), "nhwc"),
        "y": Tensor("y", (1, 8, 1, 1), dt, q(0.02, 0), "nhwc"),
    }
    ops = [
        Op("conv0", "Conv", ("x", "w0"), ("c1",)),
        Op("pool0", "MaxPool", ("c1",), ("p1",)),
        Op("reshape0", "Reshape", ("p1",), ("r",)),
        Op("gap0", "GlobalAveragePool", ("r",), ("y",)),
    ]
    boundary = {}
    if int8:
        boundary["x"] = Boundary("x", (1, 4, 8, 8), "uint8", QuantParam(np.array([0.05]), np.array([125])))
        boundary["y"] = Boundary("y", (1, 8, 1, 1), "float32", None)
    g = AnalyzedGraph(
        "handbuilt", tensors, ops, ["x"], ["y"], {"w0": np.zeros((8, 4, 3, 3), np.float32)}, boundary
    )
    lowered = [
        _lowered("conv", ops[0], 1, int8),
        _lowered("maxpool", ops[1], 2, int8),
        Lowered("copy", "reshape0", ["p1"], ["r"], alias=True),
        _lowered("gap", ops[3], 3, int8),
    ]
    return g, lowered


def _prefix(lowered: list[Lowered], ops: list[int], xip: bool) -> int:
    if xip:
        return 0
    return sum(align_up(int(c.nbytes)) for i in ops for c in lowered[i].consts.values())


def single_unit_plan(lowered: list[Lowered], xip: bool = False) -> MemoryPlan:
    wb = _prefix(lowered, [0, 1, 2, 3], xip)
    fast = {
        "x": Placement("fast", wb, 1024),
        "c1": Placement("fast", wb + 1024, 2048),
        "p1": Placement("fast", wb, 512),  # x is dead once conv0 ran
        "y": Placement("fast", wb + 512, 32),
    }
    unit = ExecUnit(
        stages=[0], ops=[0, 1, 2, 3], reload=[], spill=[], fast=fast,
        scratch={0: Placement("fast", wb + 3072, 576)}, weight_bytes=wb, peak_bytes=wb + 3648,
    )
    stage = StagePlan(0, [0, 1, 2, 3], [], [], peak_bytes=wb + 3648, weight_bytes=wb)
    return MemoryPlan(
        fast_budget=64 * 1024, slow_budget=None, xip=xip, stages=[stage], units=[unit], slow={},
        alias_of={"r": "p1"}, unscheduled_peak=3648, fast_peak=wb + 3648, slow_peak=0,
    )


def two_unit_rolling_plan(lowered: list[Lowered], xip: bool = False) -> MemoryPlan:
    """two_unit_tiled_plan with halo reuse in unit 0 (unit flag ROLLING): x's bands (0, 5) and (3, 8) share rows 3-4,
    which tile 1 takes from x's 256-byte line buffer (2 rows of 128 B) and does not reload."""
    plan = two_unit_tiled_plan(lowered, xip)
    u0 = plan.units[0]
    u0.rolling = ["x"]
    u0.carry = {"x": Placement("fast", u0.weight_bytes + 2496, 256)}
    u0.peak_bytes += 256
    plan.stages[0].peak_bytes = u0.peak_bytes
    plan.fast_peak = max(u.peak_bytes for u in plan.units)
    plan.reload_bytes -= 256
    return plan


def two_unit_tiled_plan(lowered: list[Lowered], xip: bool = False) -> MemoryPlan:
    """Unit 0 runs conv+maxpool in two row tiles (x reloaded, p1 spilled per tile); unit 1 runs the alias and gap."""
    wb0 = _prefix(lowered, [0, 1], xip)
    wb1 = _prefix(lowered, [2, 3], xip)
    u0 = ExecUnit(
        stages=[0], ops=[0, 1], reload=["x"], spill=["p1"],
        fast={
            "x": Placement("fast", wb0, 5 * 8 * 4 * 4),  # 5-row band of [8 W, 4 C] float
            "c1": Placement("fast", wb0 + 640, 4 * 8 * 8 * 4),
            "p1": Placement("fast", wb0 + 1664, 2 * 4 * 8 * 4),
        },
        scratch={0: Placement("fast", wb0 + 1920, 576)},
        weight_bytes=wb0, tiles=2,
        tile_rows=[{"x": (0, 5), "c1": (0, 4), "p1": (0, 2)}, {"x": (3, 8), "c1": (4, 8), "p1": (2, 4)}],
        peak_bytes=wb0 + 2496,
    )
    u1 = ExecUnit(
        stages=[1], ops=[2, 3], reload=["p1"], spill=[],
        fast={"p1": Placement("fast", wb1, 512), "y": Placement("fast", wb1 + 512, 32)},
        weight_bytes=wb1, peak_bytes=wb1 + 544,
    )
    stages = [
        StagePlan(0, [0, 1], ["x"], ["p1"], wb0 + 2496, wb0, tiled=True, tile_h=2, tiles=2, halo=2, chain=None,
                  recompute_macs=1234),
        StagePlan(1, [2, 3], ["p1"], [], wb1 + 544, wb1),
    ]
    return MemoryPlan(
        fast_budget=4096, slow_budget=8192, xip=xip, stages=stages, units=[u0, u1],
        slow={"x": Placement("slow", 0, 1024), "p1": Placement("slow", 1024, 512)}, alias_of={"r": "p1"},
        unscheduled_peak=2000, fast_peak=max(wb0 + 2496, wb1 + 544), slow_peak=1536, spill_bytes=512,
        reload_bytes=1536, recompute_macs=1234,
    )


def two_unit_cols_plan(lowered: list[Lowered], xip: bool = False) -> MemoryPlan:
    """two_unit_tiled_plan with unit 0 cut in a 2 x 2 grid (unit flag COLS): p1's 4 x 4 output in quarters, c1's bands
    the 2x2/2 pool's windows over them, x's the 3x3 pad-1 conv's over those, clipped; every band buffer dense."""
    plan = two_unit_tiled_plan(lowered, xip)
    u0 = plan.units[0]
    wb0 = u0.weight_bytes
    halves = {"x": ((0, 5), (3, 8)), "c1": ((0, 4), (4, 8)), "p1": ((0, 2), (2, 4))}
    u0.tile_rows = [{n: b[r] for n, b in halves.items()} for r in (0, 1) for _c in (0, 1)]
    u0.tile_cols = [{n: b[c] for n, b in halves.items()} for _r in (0, 1) for c in (0, 1)]
    u0.tiles = 4
    u0.fast = {
        "x": Placement("fast", wb0, 5 * 5 * 4 * 4),  # a 5 x 5 band of 4 float channels, dense
        "c1": Placement("fast", wb0 + 400, 4 * 4 * 8 * 4),
        "p1": Placement("fast", wb0 + 912, 2 * 2 * 8 * 4),
    }
    u0.scratch = {0: Placement("fast", wb0 + 1040, 576)}
    u0.peak_bytes = wb0 + 1616
    plan.stages[0].peak_bytes = u0.peak_bytes
    plan.stages[0].tiles = 4
    plan.fast_peak = max(u.peak_bytes for u in plan.units)
    return plan
