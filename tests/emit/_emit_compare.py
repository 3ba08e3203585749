"""The lossless-round-trip oracle shared by the hand-built and the shared-model tests: a plan read back from the
bytes must state exactly what the writer was given (graph tensors, memory plan, lowered ops). Comparisons are exact;
nothing is recomputed, so there is no tolerance. Float quantization scales are compared after rounding to float32,
the format's storage type."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from tigris.emit import read_plan
from tigris.emit.reader import PlanFile
from tigris.emit.weights import const_bytes
from tigris.layout import view_dims
from tigris.ops import KIND_IDS, kind


def assert_lossless(graph, plan, lowered, data: bytes, xip: bool, compression: str) -> PlanFile:
    pf = read_plan(data)
    assert pf.xip == xip and pf.compression == compression
    back = pf.to_memory_plan()
    root = dict(back.alias_of)

    def r(n: str) -> str:
        return root.get(n, n)

    # Alias roots: the writer's table must agree with the plan's wherever the plan states one.
    for a, b in plan.alias_of.items():
        assert r(a) == r(b), (a, b)
    assert back.stages == plan.stages
    assert back.slow == {r(k): v for k, v in plan.slow.items()}
    for got, want in zip(back.units, plan.units, strict=True):
        assert got.fast == {r(k): v for k, v in want.fast.items()}
        assert got.scratch == {i: p for i, p in want.scratch.items() if not lowered[i].alias}
        assert (got.stages, got.ops, got.reload, got.spill) == (want.stages, want.ops, want.reload, want.spill)
        assert (got.weight_bytes, got.peak_bytes) == ((0 if xip else want.weight_bytes), want.peak_bytes)
        assert got.in_place == {r(y): r(x) for y, x in want.in_place.items()}
        assert got.in_place_rows == {r(y): n for y, n in want.in_place_rows.items()}
        if want.tile_rows:
            assert got.tiles == want.tiles == len(want.tile_rows)
            for gt, wt in zip(got.tile_rows, want.tile_rows, strict=True):
                for k, band in wt.items():
                    if r(k) in gt and (k == r(k) or r(k) not in wt):
                        assert gt[r(k)] == tuple(band), (k, band)
        else:
            assert got.tiles == 1 and got.tile_rows == []
    for f in ("fast_budget", "slow_budget", "xip", "unscheduled_peak", "fast_peak", "slow_peak", "spill_bytes",
              "reload_bytes", "recompute_macs"):
        assert getattr(back, f) == getattr(plan, f), f

    names = [t.name for t in graph.activations()]
    assert [t.name for t in pf.tensors] == names
    for t in pf.tensors:
        src = graph.tensors[t.name]
        assert (t.dtype, t.layout, t.shape) == (src.dtype, src.layout, tuple(src.shape))
        assert t.dims == view_dims(src.shape, src.layout)
        if src.quant is not None:
            assert t.scale == np.float32(src.quant.scale.reshape(-1)[0])
            assert t.zero_point == int(src.quant.zero_point.reshape(-1)[0])

    run = [i for u in plan.units for i in u.ops if not lowered[i].alias]
    assert [op.ir_index for op in pf.ops] == run
    # a window op run over its own input in pieces carries its temporary's rows (param ip_rows) from the plan
    ip_rows = {i: u.in_place_rows[lowered[i].outputs[0]] for u in plan.units for i in u.ops
               if lowered[i].outputs and lowered[i].outputs[0] in u.in_place_rows}
    for k, op in enumerate(pf.ops):
        low = lowered[op.ir_index]
        assert op.kind == low.kind and op.kind_id == KIND_IDS[low.kind]
        if op.ir_index in ip_rows:
            low = replace(low, params={**low.params, "ip_rows": ip_rows[op.ir_index]})
        assert list(op.params) == kind(low.kind).param_vector(low)
        assert [names[i] for i in op.inputs] == list(low.inputs) and names[op.output] == low.outputs[0]
        for slot, cname in enumerate(kind(low.kind).CONSTS):
            want = const_bytes(np.asarray(low.consts[cname])) if cname in low.consts else b""
            assert pf.const(k, slot) == want, (low.op_name, cname)

    assert [io.name for io in pf.inputs] == list(graph.inputs)
    assert [io.name for io in pf.outputs] == list(graph.outputs)
    for io in pf.inputs + pf.outputs:
        b = graph.boundary.get(io.name)
        t = graph.tensors[io.name]
        assert io.decl_dtype == (b.dtype if b else t.dtype)
        assert io.shape == tuple(b.shape if b else t.shape)
    return pf
