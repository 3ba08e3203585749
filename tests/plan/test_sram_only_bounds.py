"""bench/sram_only_bounds.py computes what any plan of a given shape needs when a board has no PSRAM. Its row-tile
figures must be lower bounds of the plans the planner really makes: on random conv chains planned as one tiled unit
in one SRAM region, and on a small seeded MobileNetV2 int8 whose least region the planner searches, the region is
never below the bound of its shape (rolling or recomputing); and the head's output fits over the input it has read
in row order (the span is the input's bytes) but not in column-strip order."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "runtime"))
from _rt_plans import chain_graph, chain_layers  # noqa: E402

from tigris.plan import Fit, plan, sram_bytes  # noqa: E402


def _bench():
    spec = importlib.util.spec_from_file_location("sram_only_bounds", HERE.parents[1] / "bench" / "sram_only_bounds.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["sram_only_bounds"] = mod  # its dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


SB = _bench()
ROWS, ROWS_RECOMPUTE = SB.schemes()[:2]


def _bound(graph, rolling: bool) -> int:
    ops, tensors, macs = SB.head_chain(graph, graph.outputs[0])
    return SB.evaluate(ops, tensors, ROWS if rolling else ROWS_RECOMPUTE, max(1, macs))["bound"]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(layers=st.lists(chain_layers(), min_size=1, max_size=5), h=st.integers(10, 28), c=st.sampled_from([2, 4, 8]),
       frac=st.floats(0.05, 0.9), seed=st.integers(0, 9))
def test_one_unit_plans_are_never_below_the_row_bound(layers, h, c, frac, seed):
    layers = [(kind, k, s, 1 if k == 1 else d) for kind, k, s, d in layers]
    g = chain_graph(layers, True, h, c, seed)
    if any(g.tensors[op.outputs[0]].shape[2] < 1 for op in g.ops):
        return
    whole = plan(g, 1 << 22, xip=True)
    res = plan(g, max(256, int(whole.plan.fast_peak * frac)), xip=True, one_region=True)
    if not isinstance(res, Fit) or len(res.plan.units) != 1 or not res.plan.units[0].tile_rows:
        return
    unit = res.plan.units[0]
    if unit.tile_cols:
        return  # a column-split unit is another shape
    assert sram_bytes(res.plan) >= _bound(g, bool(unit.rolling))


def test_small_mobilenet_v2_region_is_not_below_the_bound(tmp_path):
    onnx = pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    sys.path.insert(0, str(HERE.parent / "families"))
    from builders import int8_input, mobilenet_v2_224, quantize

    from tigris import api
    from tigris.plan import min_sram_only_budget

    onnx.save(mobilenet_v2_224(width=1.0, size=64), str(tmp_path / "f.onnx"))
    quantize(tmp_path / "f.onnx", tmp_path / "q.onnx", "int8", per_channel=True)
    onnx.save(int8_input(onnx.load(str(tmp_path / "q.onnx"))), str(tmp_path / "m.onnx"))
    prep = api.prepare(tmp_path / "m.onnx")
    g = prep.graph
    kw = api._plan_kwargs(prep, True, 1.0)
    kw.pop("one_region")
    r = min_sram_only_budget(g, one_region=True, **kw)
    # the head to the first inverted-residual block's projection (16x16x24 here): every plan holds it in one unit
    # (the boundaries before it are larger than the input), so the region is at least the head's bound
    ops, tensors, macs = SB.head_chain(g, g.ops[5].outputs[0])
    x = tensors[0]
    assert all(t.h * t.w * t.c > x.h * x.w * x.c for t in tensors[1:-1])
    rows = SB.evaluate(ops, tensors, ROWS, macs)
    again = SB.evaluate(ops, tensors, ROWS_RECOMPUTE, macs)
    assert r.total_bytes >= min(rows["bound"], again["bound"])
    assert rows["span"] == x.h * x.w * x.c  # row order: the output is written over input already read
    strips = SB.evaluate(ops, tensors, SB.Scheme("strips", "strips", n=4), macs)
    assert strips["span"] > x.h * x.w * x.c  # strip-major: it is not
