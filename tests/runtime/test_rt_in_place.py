"""In-place element-wise ops (lifetime rule 6, docs/memory-planning.md "In-place ops"): a residual Add and a Relu
write over their dying input, which lowers the plan's peak; the C runtime runs such plans bit-exactly.

Oracles: the NumPy reference executor on the same graph (int8 bit-exact, float32 within 1e-5 x max(1, max|ref|));
the same graph planned with in-place disabled (the kinds' ``in_place`` flag cleared), whose outputs must be
identical and whose peak must be higher; the plan checker; the runtime's fast high-water mark against the plan's
peak (equal)."""
from __future__ import annotations

import numpy as np
import pytest

from tigris_testing import host_session
import _rt_plans as P
from tigris.ir import AnalyzedGraph, Op, QuantParam, Tensor
from tigris.ops.binary import _Binary
from tigris.ops.unary import Unary
from tigris.plan.check import check_plan

FLOAT_TOL = P.FLOAT_TOL


@pytest.fixture(scope="module")
def session_cls():
    return host_session()[0]


def residual_graph(int8: bool, h: int = 12, c: int = 8, seed: int = 3) -> AnalyzedGraph:
    """x -Conv3x3-> a -Conv1x1-> b;  (b, a) -Add-> s;  s -Relu-> r -Conv1x1-> y.  The Add is the last use of b (and
    of a), so s may take b's home; the Relu is the last use of s, so r may take s's."""
    rng = np.random.default_rng(seed)
    dt = "int8" if int8 else "float32"

    def q(s: float, z: int):
        return QuantParam(np.array([s], np.float32), np.array([z], np.int64)) if int8 else None

    tensors = {n: Tensor(n, (1, ch, h, h), dt, q(sc, z), "nhwc")
               for n, ch, sc, z in [("x", 3, 0.03, -5), ("a", c, 0.05, -10), ("b", c, 0.06, 4),
                                    ("s", c, 0.09, -2), ("r", c, 0.09, -2), ("y", 4, 0.1, 1)]}
    weights = P.conv_weights(rng, [("w1", "b1", (c, 3, 3, 3), 0.03), ("w2", "b2", (c, c, 1, 1), 0.05),
                                   ("w3", "b3", (4, c, 1, 1), 0.09)], int8, tensors)

    def conv(k: int) -> dict:
        p = k // 2
        return dict(kernel_shape=[k, k], strides=[1, 1], dilations=[1, 1], pads=[p, p, p, p], group=1,
                    fused_activation=None)

    ops = [
        Op("conv1", "Conv", ("x", "w1", "b1"), ("a",), conv(3)),
        Op("conv2", "Conv", ("a", "w2", "b2"), ("b",), conv(1)),
        Op("add", "Add", ("b", "a"), ("s",), {"fused_activation": None}),
        Op("relu", "Relu", ("s",), ("r",)),
        Op("conv3", "Conv", ("r", "w3", "b3"), ("y",), conv(1)),
    ]
    return AnalyzedGraph("residual", tensors, ops, ["x"], ["y"], weights, {})


def _without_in_place(monkeypatch, g: AnalyzedGraph, fast: int, **plan_kw):
    with monkeypatch.context() as m:
        m.setattr(_Binary, "in_place", False)
        m.setattr(Unary, "in_place", False)
        return P.compile_graph(g, fast, **plan_kw)


@pytest.mark.parametrize("int8", [True, False], ids=["int8", "f32"])
def test_in_place_residual_add_lowers_the_peak_and_runs_bit_exact(session_cls, monkeypatch, int8: bool) -> None:
    g = residual_graph(int8)
    data, plan = P.compile_graph(g, 1 << 20)
    before_data, before = _without_in_place(monkeypatch, g, 1 << 20)
    assert len(plan.units) == 1 and plan.units[0].in_place == {"s": "b", "r": "s"}
    assert before.units[0].in_place == {}
    unit = plan.units[0]
    assert unit.fast["s"] == unit.fast["b"] and unit.fast["r"] == unit.fast["b"]
    # before: a, b and s live at the Add; after: s shares b's bytes, so one tensor less at the peak
    elem = 1 if int8 else 4
    assert before.unscheduled_peak - plan.unscheduled_peak == 8 * 12 * 12 * elem
    assert plan.fast_peak < before.fast_peak
    P.run_and_compare(session_cls, g, data, plan, before_data, int8)


def test_in_place_in_tiled_bands_runs_bit_exact(session_cls, monkeypatch) -> None:
    """At a budget that tiles the graph, the pointwise Add and Relu still take their input's band (same rows in
    every tile) and the tiled plan matches the untiled one bit for bit. In recomputing units (no halo reuse) in-place
    never raises the peak; with halo reuse a carrying buffer takes no part in a pair, and the plans match too."""
    g = residual_graph(True, h=24)
    untiled, _ = P.compile_graph(g, 1 << 20)
    seen = False
    for fast in (2000, 1600, 1200):
        data, plan = P.compile_graph(g, fast, halo_reuse=False)
        tiled = [u for u in plan.units if u.tiles > 1]
        assert tiled, f"no tiled unit at {fast}"
        seen |= any(u.in_place for u in tiled)
        _, before = _without_in_place(monkeypatch, g, fast, halo_reuse=False)
        assert plan.fast_peak <= before.fast_peak
        P.run_and_compare(session_cls, g, data, plan, untiled, True)
        data, plan = P.compile_graph(g, fast)
        assert not any(x in u.rolling or y in u.rolling for u in plan.units for y, x in u.in_place.items())
        P.run_and_compare(session_cls, g, data, plan, untiled, True)
    assert seen, "no tiled unit ran an op in place"


def test_checker_refuses_an_undeclared_or_unsafe_in_place_pair() -> None:
    g = residual_graph(True)
    _, plan = P.compile_graph(g, 1 << 20)
    unit = plan.units[0]
    declared = dict(unit.in_place)
    unit.in_place = {}  # the shared bytes are no longer declared: plain overlap
    assert any("live together" in e for e in check_plan(g, plan))
    unit.in_place = {**declared, "y": "r"}  # conv3 is no in-place kind (and r lives on in y's place)
    assert any("may not run in place" in e for e in check_plan(g, plan))
    unit.in_place = {"s": "a", "r": "s"}  # a does not share s's placement
    assert any("does not take a's placement" in e for e in check_plan(g, plan))
