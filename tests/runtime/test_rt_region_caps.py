"""One region with a slow budget (plan(one_region=True, slow_budget=R)): each unit's fast budget is what the region
leaves beside the graph inputs and outputs live across it (``Costs.caps``, ``tigris.plan.REGION_CAPS``), so the head
unit is cut to the region while later units keep the fast budget; and an output may start above the dying input it
overwrites (``overwrite.pinned_offsets(safe=)``) where the next unit's buffers are larger than the head's. The plans
pass the checker and run on the host runtime bit-identical to the untiled plan with the high-water marks at their
peaks; the caps never lose a plan the fast budget alone finds. The seeded MobileNetV2-1.0 224 int8 (issue 15's
target) reaches 178,080 bytes as one region at 9.27% recompute (``REGION_RELAX``: at half the latency weight)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import _rt_plans as P
import tigris.plan as TP
from tigris.ir import DoesNotFitError
from tigris.plan import Fit, NoFit, plan, sram_bytes
from tigris.plan.check import check_plan
from tigris_testing import host_session

HEAD = P.MBV2_HEAD


def test_caps_cut_the_head_to_the_region(monkeypatch):
    Session, _ = host_session()
    g = P.chain_graph(HEAD, True, 32, 3, 1)
    untiled = P.compile_graph(g, 1 << 22, xip=True)[0]
    monkeypatch.setattr(TP, "REGION_CAPS", False)
    assert isinstance(plan(g, 2864, 5536, xip=True, one_region=True), NoFit)  # every unit within 2,864 bytes
    monkeypatch.setattr(TP, "REGION_CAPS", True)
    data, p = P.compile_graph(g, 2864, slow=5536, xip=True, one_region=True)
    assert p.one_region and len(p.units) > 1 and sram_bytes(p) <= 5536
    assert check_plan(g, p) == []
    x = P.random_input(g, 5)
    got = Session(data).run(x)
    np.testing.assert_array_equal(got.outputs["y"], Session(untiled).run(x).outputs["y"])
    assert (got.fast_peak, got.slow_peak) == (p.fast_peak, p.slow_peak)


def test_units_under_the_output_over_the_input(monkeypatch):
    """The head's output written over the input keeps the next unit under its home (``_overwrite_caps``): a
    MobileNetV2 head and the next block's 72-channel expansion at 48x48, where the region of 9,296 bytes fits only
    so (the caps alone and the fast budget alone need 10,896), proven and bit-identical to the untiled plan with
    the high-water marks at the plan's peaks."""
    Session, _ = host_session()
    g = P.chain_graph(HEAD + [("conv", 1, 1, 1, 72), ("dw", 3, 1, 1), ("conv", 1, 1, 1, 12)], True, 48, 3, 1)
    untiled = P.compile_graph(g, 1 << 22, xip=True)[0]
    with monkeypatch.context() as m:
        m.setattr(TP, "_overwrite_caps", lambda *a: None)
        with pytest.raises(DoesNotFitError):
            P.compile_graph(g, 6448, slow=9296, xip=True, one_region=True)
    data, p = P.compile_graph(g, 6448, slow=9296, xip=True, one_region=True)
    assert p.one_region and len(p.units) > 2 and sram_bytes(p) <= 9296
    assert any(p.units[0].overwrite.values()) and check_plan(g, p) == []
    x = P.random_input(g, 5)
    got = Session(data).run(x)
    np.testing.assert_array_equal(got.outputs["y"], Session(untiled).run(x).outputs["y"])
    assert (got.fast_peak, got.slow_peak) == (p.fast_peak, p.slow_peak)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(layers=st.lists(P.chain_layers(), min_size=2, max_size=5), h=st.integers(12, 28), c=st.sampled_from([2, 4, 8]),
       frac=st.floats(0.05, 0.7), seed=st.integers(0, 9))
def test_caps_never_lose_a_plan(layers, h, c, frac, seed):
    """At the region the fast budget alone reaches, the plan with caps fits too, in no more region, proven."""
    layers = [(kind, k, s, 1 if k == 1 else d) for kind, k, s, d in layers]
    g = P.chain_graph(layers, True, h, c, seed)
    fast = max(256, int(plan(g, 1 << 22, xip=True).plan.fast_peak * frac)) // 16 * 16
    TP.REGION_CAPS = False
    try:
        free = plan(g, fast, xip=True, one_region=True, least_sram=True)
        if not isinstance(free, Fit):
            return
        region = sram_bytes(free.plan)
        before = plan(g, fast, region, xip=True, one_region=True)
    finally:
        TP.REGION_CAPS = True
    after = plan(g, fast, region, xip=True, one_region=True)
    if isinstance(before, Fit):
        assert isinstance(after, Fit)
    if isinstance(after, Fit):
        assert sram_bytes(after.plan) <= region and check_plan(g, after.plan) == []


# the issue-15 figure (docs/benchmarks.md plan_sram_only): -m 47392 -s REGION --one-region with the 56x56 expansions
# in groups too (api.EXPANSION_SHARES)
REGION = 178080


@pytest.mark.slow
def test_mobilenet_v2_224_int8_region(tmp_path):
    """Issue 15's model with block 2's and the 56x56 blocks' expansions in groups (``_expansion_split`` at the
    smaller share): one region of ``REGION`` bytes at ``-m 47392`` within 10% recompute. The head unit is cut to
    what the input leaves; the next units are held under the head's output written over the input
    (``_overwrite_caps``: neither the caps nor the fast budget alone fit there). The plan passes the checker and
    runs bit-identical to the untiled plan with the high-water marks at its peaks."""
    pytest.importorskip("onnxruntime")
    import sys
    from pathlib import Path

    from tigris import api
    from tigris.plan.spatial import op_macs

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from plan_quality import _mbv2_224_int8

    Session, _ = host_session()
    path = _mbv2_224_int8(tmp_path)
    prep = api.prepare(path)
    macs = sum(op_macs(prep.graph, op) for op in prep.graph.ops)
    split = api._expansion_split(prep, api.EXPANSION_SHARES[-1])
    assert split is not None and len(split.graph.ops) > len(api._expansion_split(prep).graph.ops)
    a = api.analyze(path, 47392, REGION, xip=True, prepared=split, one_region=True)
    assert a.fits and a.plan.one_region and sram_bytes(a.plan) <= REGION
    assert a.plan.recompute_macs * 10 <= macs
    assert check_plan(a.prepared.graph, a.plan) == []
    untiled = api.analyze(path, 1 << 22, xip=True, prepared=prep)
    x = P.random_input(prep.graph, 3)
    want = Session(untiled.plan_bytes).run(x).outputs
    got = Session(a.plan_bytes).run(x)
    for name, value in want.items():
        np.testing.assert_array_equal(got.outputs[name], value)
    assert (got.fast_peak, got.slow_peak) == (a.plan.fast_peak, a.plan.slow_peak)
