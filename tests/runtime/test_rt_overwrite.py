"""Streaming overwrite (unit flag OVERWRITE, tigris.plan.overwrite) on the C runtime: a unit's spilled output takes
bytes of the slow home of an input dying in it. On random conv chains at random budgets every plan passes the
checker and, where a unit writes over its input, runs on the host runtime bit-identical to the untiled plan (float
within the usual tolerance) with both high-water marks equal to the plan's peaks; the slow arena is never larger than
with the overwrite off. Then both readers' refusals of broken overwrites, each with its code."""
from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tigris_testing import host_session
import _rt_plans as P
import tigris.plan as planner
from tigris.emit import format as F
from tigris.emit import read_plan
from tigris.ir import DoesNotFitError
from tigris.plan.check import check_plan


@pytest.fixture(scope="module")
def session_cls():
    return host_session()


def _without_overwrite(g, fast, xip):
    planner.OVERWRITE = False
    try:
        return P.compile_graph(g, fast, xip=xip)[1]
    finally:
        planner.OVERWRITE = True


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(layers=st.lists(P.chain_layers(), min_size=2, max_size=5), int8=st.booleans(), h=st.integers(12, 28),
       c=st.sampled_from([2, 4, 8]), frac=st.floats(0.05, 0.7), xip=st.booleans(), seed=st.integers(0, 9))
def test_overwriting_plans_run_like_untiled(session_cls, layers, int8, h, c, frac, xip, seed):
    Session, _ = session_cls
    layers = [(kind, k, s, 1 if k == 1 else d) for kind, k, s, d in layers]
    g = P.chain_graph(layers, int8, h, c, seed)
    untiled, whole = P.compile_graph(g, 1 << 22, xip=xip)
    fast = max(256, int(whole.fast_peak * frac))
    try:
        data, plan = P.compile_graph(g, fast, xip=xip)
    except DoesNotFitError:
        return
    assert check_plan(g, plan) == []
    assert plan.slow_peak <= _without_overwrite(g, fast, xip).slow_peak
    flagged = [bool(u.flags & F.UnitFlag.OVERWRITE) for u in read_plan(data).units]
    assert flagged == [bool(u.overwrite) for u in plan.units]
    if not any(flagged):
        return
    x = P.random_input(g, seed)
    got = Session(data).run(x)
    P.assert_close_to(got.outputs["y"], Session(untiled).run(x).outputs["y"], int8)
    assert (got.fast_peak, got.slow_peak) == (plan.fast_peak, plan.slow_peak)


def test_outputs_over_dying_inputs_shrink_the_slow_arena(session_cls):
    Session, _ = session_cls
    g = P.overwrite_chain()
    untiled = P.compile_graph(g, 1 << 20, xip=True)[0]
    for fast, pairs in ((1536, [{"y": "x"}]), (1024, [{"t1": "x"}, {"y": "t1"}])):
        data, plan = P.compile_graph(g, fast, xip=True)
        assert [u.overwrite for u in plan.units] == pairs
        assert plan.units[0].tiles > 1 and plan.units[0].rolling
        # the input's home holds everything: without the overwrite each output needs bytes of its own
        assert plan.slow_peak == g.tensors["x"].nbytes < _without_overwrite(g, fast, True).slow_peak
        assert read_plan(data).to_memory_plan().units[0].overwrite == pairs[0]
        from tigris.emit.inspect import inspect_plan

        assert [u["overwrites_input"] for u in inspect_plan(data)["units"]] == [True] * len(pairs)
        for seed in (0, 1):
            x = P.random_input(g, seed)
            got = Session(data).run(x)
            np.testing.assert_array_equal(got.outputs["y"], Session(untiled).run(x).outputs["y"])
            assert (got.fast_peak, got.slow_peak) == (plan.fast_peak, plan.slow_peak)


# --- refusals -------------------------------------------------------------------------------------------------------


def overwrite_mutants() -> list[tuple[str, bytes, str]]:
    """(what, plan bytes, status) of broken overwrites of ``_base``'s plans."""
    g = P.overwrite_chain()
    two = P.compile_graph(g, 1024, xip=True)[0]
    flags = P.unit_record_pos(two, 1) + F.UNIT.offsets()["flags"]
    flags0 = struct.unpack_from("<I", two, flags)[0]
    t1 = P.tensor_record_pos(two, "t1") + F.TENSOR.offsets()["slow_offset"]
    x_flags = P.tensor_record_pos(two, "x") + F.TENSOR.offsets()["flags"]
    return [
        # t1 moved onto the tail of x's home: the first tile's row of t1 lands on rows of x later tiles read
        ("intermediate over input rows still to be read", P.set_field(two, t1, g.tensors["x"].nbytes - g.tensors["t1"].nbytes), "ERR_OVERWRITE"),
        # x marked a graph output too: it does not die in unit 0, so nothing may be written over it
        ("output over a graph output", P.set_field(two, x_flags, struct.unpack_from("<I", two, x_flags)[0] | int(
            F.TensorFlag.OUTPUT)), "ERR_OVERWRITE"),
        ("OVERWRITE with COLS", P.set_field(two, flags, flags0 | int(F.UnitFlag.COLS) | int(F.UnitFlag.TILED)), "ERR_UNIT"),
    ]


def test_readers_refuse_broken_overwrites(session_cls):
    Session, PlanError = session_cls
    assert P.assert_readers_refuse(Session, PlanError, overwrite_mutants()) == 3
