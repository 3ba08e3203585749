"""Depthwise conv in place (lifetime rule 6, piecewise; docs/memory-planning.md "Window ops in place", docs/format.md
"Window ops in place"): the output takes its dying input's home and the C kernel writes it in row pieces through a
small temporary.

Oracles: the same graph planned with the piecewise rule off (``tigris.plan.lifetime.PIECEWISE``), whose outputs must
be identical (int8 and float: the kernel arithmetic per output element is the same) and whose peak must be higher;
the NumPy reference (int8 bit-exact); ONNX Runtime for float models built as ONNX files; the plan checker; the
runtime's fast high-water mark against the plan's peak (equal). Then the checker's and the loader's refusals."""
from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tigris_testing import host_session
import _rt_plans as P
from tigris.emit import format as F
from tigris.emit import read_plan
from tigris.emit.reader import PlanFormatError
from tigris.emit.writer import seal
from tigris.ir import AnalyzedGraph, DoesNotFitError, Op, QuantParam, Tensor
from tigris.ops import kind
from tigris.plan import lifetime
from tigris.plan.check import check_plan

FLOAT_TOL = P.FLOAT_TOL
IP_SLOT = kind("dwconv").PARAMS.index("ip_rows")


@pytest.fixture(scope="module")
def session_cls():
    return host_session()


def dw_graph(int8: bool, h: int, c: int, k: int, s: int, pads: tuple[int, int, int, int], seed: int = 0,
             w: int | None = None) -> AnalyzedGraph:
    """x (one channel) -Conv1x1(relu)-> e (c channels) -DepthwiseConv kxk/s-> d -Conv1x1-> y. The depthwise conv is
    e's last use, so d may take e's home; its step holds the most bytes, so sharing lowers the peak."""
    rng = np.random.default_rng(seed)
    dt = "int8" if int8 else "float32"
    w = w or h
    pt, pl, pb, pr = pads
    oh, ow = (h + pt + pb - k) // s + 1, (w + pl + pr - k) // s + 1

    def act(name: str, ch: int, hh: int, ww: int, sc: float, z: int) -> Tensor:
        q = QuantParam(np.array([sc], np.float32), np.array([z], np.int64)) if int8 else None
        return Tensor(name, (1, ch, hh, ww), dt, q, "nhwc")

    tensors = {"x": act("x", 1, h, w, 0.03, -5), "e": act("e", c, h, w, 0.05, -128),
               "d": act("d", c, oh, ow, 0.08, 10), "y": act("y", 4, oh, ow, 0.1, -2)}
    weights = P.conv_weights(rng, [("w1", "b1", (c, 1, 1, 1), 0.03), ("w2", "b2", (c, 1, k, k), 0.05),
                                   ("w3", "b3", (4, c, 1, 1), 0.08)], int8, tensors)

    def attrs(kk: int, ss: int, p: tuple[int, int, int, int], group: int, act_: str | None) -> dict:
        return dict(kernel_shape=[kk, kk], strides=[ss, ss], dilations=[1, 1], pads=[p[0], p[1], p[2], p[3]],
                    group=group, fused_activation=act_)

    ops = [
        Op("expand", "Conv", ("x", "w1", "b1"), ("e",), attrs(1, 1, (0, 0, 0, 0), 1, "relu")),
        Op("dw", "DepthwiseConv", ("e", "w2", "b2"), ("d",), attrs(k, s, pads, c, "relu")),
        Op("project", "Conv", ("d", "w3", "b3"), ("y",), attrs(1, 1, (0, 0, 0, 0), 1, None)),
    ]
    return AnalyzedGraph("dwchain", tensors, ops, ["x"], ["y"], weights, {})


def _plain(monkeypatch, g: AnalyzedGraph, fast: int, **kw):
    with monkeypatch.context() as m:
        m.setattr(lifetime, "PIECEWISE", False)
        return P.compile_graph(g, fast, **kw)


# (kernel, stride, pads top/left/bottom/right, channels: tails of the kernels' channel blocks, height)
CASES = [
    (3, 1, (1, 1, 1, 1), 8, 12),
    (3, 1, (1, 1, 1, 1), 19, 9),
    (3, 2, (1, 1, 1, 1), 24, 12),
    (3, 2, (0, 0, 1, 1), 9, 13),
    (5, 1, (2, 2, 2, 2), 17, 10),
    (5, 2, (2, 2, 2, 2), 33, 11),
    (3, 1, (0, 0, 0, 0), 6, 10),  # "valid": a smaller output at stride 1
    (5, 1, (1, 2, 3, 2), 7, 11),
]


@pytest.mark.parametrize("int8", [True, False], ids=["int8", "f32"])
@pytest.mark.parametrize("k,s,pads,c,h", CASES)
def test_untiled_dw_in_place_runs_like_the_plain_plan(session_cls, monkeypatch, int8, k, s, pads, c, h) -> None:
    Session, _ = session_cls
    g = dw_graph(int8, h, c, k, s, pads, w=h + 3)
    data, plan = P.compile_graph(g, 1 << 20, xip=True)
    plain_data, plain = _plain(monkeypatch, g, 1 << 20, xip=True)
    unit = plan.units[0]
    assert len(plan.units) == 1 and unit.in_place == {"d": "e"} and unit.in_place_rows["d"] >= 1
    assert unit.fast["d"].offset == unit.fast["e"].offset
    assert plain.units[0].in_place_rows == {} and plain.fast_peak > plan.fast_peak
    ops = read_plan(data).ops
    assert [op.params[IP_SLOT] for op in ops if op.kind == "dwconv"] == [unit.in_place_rows["d"]]
    P.run_and_compare(Session, g, data, plan, plain_data, int8)


def test_temporary_rows_follow_the_window() -> None:
    """Stride 1 with "same" padding p keeps p + 1 rows waiting; stride 2 stores every row at once."""
    for k, s, pads, rows in ((3, 1, (1, 1, 1, 1), 2), (5, 1, (2, 2, 2, 2), 3), (3, 2, (1, 1, 1, 1), 1)):
        g = dw_graph(True, 12, 8, k, s, pads)
        _, plan = P.compile_graph(g, 1 << 20, xip=True)
        assert plan.units[0].in_place_rows == {"d": rows}, (k, s)


@pytest.mark.parametrize("halo_reuse", [False, True], ids=["recompute", "rolling"])
def test_tiled_dw_in_place_runs_like_the_untiled_plan(session_cls, monkeypatch, halo_reuse) -> None:
    """At budgets that tile the chain, a depthwise conv whose input band does not carry rows still writes over it
    (the bands share their start), and the outputs equal the untiled plan's bit for bit."""
    Session, _ = session_cls
    seen = False
    for k, s, pads, c, h in CASES[:6]:
        g = dw_graph(True, 3 * h, c, k, s, pads)
        untiled, whole = P.compile_graph(g, 1 << 22, xip=True)
        for frac in (0.5, 0.3, 0.2):
            try:
                data, plan = P.compile_graph(g, max(512, int(whole.fast_peak * frac)), xip=True,
                                             halo_reuse=halo_reuse)
            except Exception:  # noqa: BLE001 - this fraction does not fit: the next case
                continue
            seen |= any(u.tile_rows and u.in_place_rows for u in plan.units)
            for u in plan.units:
                assert not any(x in u.rolling or y in u.rolling for y, x in u.in_place.items())
            P.run_and_compare(Session, g, data, plan, untiled, True)
    if not halo_reuse:
        assert seen, "no tiled unit ran a depthwise conv in place"


@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(k=st.sampled_from([3, 5]), s=st.sampled_from([1, 2]), p=st.integers(0, 2), c=st.integers(1, 40),
       h=st.integers(7, 30), int8=st.booleans(), frac=st.floats(0.1, 1.0), xip=st.booleans(), reuse=st.booleans())
def test_random_plans_run_like_untiled(session_cls, k, s, p, c, h, int8, frac, xip, reuse) -> None:
    """Any budget: the plan passes the checker, runs like the untiled plan (int8 bit for bit) and the runtime's fast
    high-water mark is the plan's peak."""
    Session, _ = session_cls
    p = min(p, k // 2)
    g = dw_graph(int8, h, c, k, s, (p, p, p, p), seed=c, w=h + 1)
    untiled, whole = P.compile_graph(g, 1 << 22, xip=xip)
    try:
        data, plan = P.compile_graph(g, max(256, int(whole.fast_peak * frac)), xip=xip, halo_reuse=reuse)
    except DoesNotFitError:
        return
    assert check_plan(g, plan) == []
    x = P.random_input(g, 0)
    got = Session(data).run(x)
    want = Session(untiled).run(x).outputs["y"]
    if int8:
        np.testing.assert_array_equal(got.outputs["y"], want)
    else:  # a tiled float conv may block its sums differently from the untiled one
        assert float(np.abs(got.outputs["y"] - want).max()) <= FLOAT_TOL * max(1.0, float(np.abs(want).max()))
    assert got.fast_peak == plan.fast_peak


def test_checker_refuses_unsafe_piecewise_pairs() -> None:
    g = dw_graph(True, 12, 8, 3, 1, (1, 1, 1, 1))
    _, plan = P.compile_graph(g, 1 << 20, xip=True)
    unit = plan.units[0]
    assert check_plan(g, plan) == []
    unit.in_place_rows["d"] = 1  # stride 1, pad 1: one row of temporary stalls (row j waits for row j + 1)
    assert any("stalls" in e for e in check_plan(g, plan))
    unit.in_place_rows.clear()  # an element-wise pair of different shapes
    assert any("may not run in place" in e for e in check_plan(g, plan))
    unit.in_place_rows["d"] = 2
    scratch = unit.scratch.pop(1)
    assert any("does not fit the scratch" in e for e in check_plan(g, plan))
    unit.scratch[1] = scratch
    unit.in_place_rows["y"] = 1
    assert any("takes no home" in e for e in check_plan(g, plan))


def _patch_param(data: bytes, value: int | None = None, scratch: int | None = None) -> bytes:
    """The plan with the dwconv record's ip_rows (and scratch size) replaced, sealed again."""
    buf = bytearray(data)
    ops_off = int(F.SECTION.unpack(data, F.DIR_OFFSET + (int(F.SectionId.OPS) - 1) * F.SECTION.size)["offset"])
    k = next(j for j, op in enumerate(read_plan(data).ops) if op.kind == "dwconv")
    rec = ops_off + k * F.OP.size
    if value is not None:
        struct.pack_into("<i", buf, rec + 40 + 4 * IP_SLOT, value)
    if scratch is not None:
        struct.pack_into("<I", buf, rec + 172, scratch)
    return seal(buf)


@pytest.mark.parametrize("patch,code", [
    (dict(value=1), "ERR_PARAM"),  # the schedule stalls with one row at stride 1
    (dict(value=-1), "ERR_PARAM"),
    (dict(value=10_000), "ERR_PARAM"),  # more rows than the band
    (dict(scratch=16), "ERR_SCRATCH"),  # the temporary does not fit
])
def test_loader_refuses_a_bad_piecewise_op(session_cls, patch, code) -> None:
    Session, PlanError = session_cls
    g = dw_graph(True, 12, 24, 3, 1, (1, 1, 1, 1))
    data, plan = P.compile_graph(g, 1 << 20, xip=True)
    assert plan.units[0].in_place_rows == {"d": 2}
    bad = _patch_param(data, **patch)
    with pytest.raises(PlanFormatError) as e:
        read_plan(bad)
    assert e.value.status == code
    with pytest.raises(PlanError):
        Session(bad)
