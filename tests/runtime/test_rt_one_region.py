"""One SRAM region (plan option ``one_region``, header flag ONE_REGION): the slow arena is the fast arena's memory and
every slow home lies above the buffers of each unit it is live across. On random conv chains at random budgets every
such plan passes the checker and runs on the host runtime in one block of ``max(fast_peak, slow_peak)`` bytes,
bit-identical to the untiled plan (float within the usual tolerance), with both high-water marks equal to the plan's
peaks; a plan that does not use it keeps its bytes. Then the refusals: both readers' for a home below a unit's
buffers or a buffer above its unit's peak, and the runtime's for two different arenas."""
from __future__ import annotations


import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tigris_testing import host_session
import _rt_plans as P
from tigris.emit import format as F
from tigris.emit import read_plan
from tigris.ir import DoesNotFitError
from tigris.plan import sram_bytes
from tigris.plan.check import check_plan


@pytest.fixture(scope="module")
def session_cls():
    return host_session()


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(layers=st.lists(P.chain_layers(), min_size=2, max_size=5), int8=st.booleans(), h=st.integers(12, 28),
       c=st.sampled_from([2, 4, 8]), frac=st.floats(0.05, 0.7), xip=st.booleans(), seed=st.integers(0, 9))
def test_one_region_plans_run_like_untiled(session_cls, layers, int8, h, c, frac, xip, seed):
    Session, _ = session_cls
    layers = [(kind, k, s, 1 if k == 1 else d) for kind, k, s, d in layers]
    g = P.chain_graph(layers, int8, h, c, seed)
    untiled, whole = P.compile_graph(g, 1 << 22, xip=xip)
    fast = max(256, int(whole.fast_peak * frac))
    try:
        data, plan = P.compile_graph(g, fast, xip=xip, one_region=True)
    except DoesNotFitError:
        return
    assert check_plan(g, plan) == []
    two = P.compile_graph(g, fast, xip=xip)
    if not plan.one_region:  # one unit, no slow arena: nothing to share, the same bytes
        assert data == two[0] and plan.slow_peak == 0
        return
    assert bool(read_plan(data).flags & F.Flag.ONE_REGION)
    x = P.random_input(g, seed)
    s = Session(data)
    assert s.one_region
    got = s.run(x)
    P.assert_close_to(got.outputs["y"], Session(untiled).run(x).outputs["y"], int8)
    assert (got.fast_peak, got.slow_peak) == (plan.fast_peak, plan.slow_peak)
    assert sram_bytes(plan) == max(plan.fast_peak, plan.slow_peak) <= two[1].fast_peak + two[1].slow_peak


def test_later_units_use_the_dead_input_bytes(session_cls):
    """x (24x24x8 int8) through four convs at 800 bytes: three units; with one region the last unit's output home
    takes bytes below the first units' buffers that x and its successors no longer need, so the region is smaller
    than the two arenas of the same partition (never larger: the packing may always put the homes above every
    unit's buffers)."""
    Session, _ = session_cls
    g = P.chain_graph([("conv", 3, 2, 1), ("conv", 3, 1, 1), ("conv", 1, 1, 1), ("conv", 3, 1, 1)], True, 24, 8, 2)
    untiled = P.compile_graph(g, 1 << 20, xip=True)[0]
    data, plan = P.compile_graph(g, 800, xip=True, one_region=True)
    _, two = P.compile_graph(g, 800, xip=True)
    assert plan.one_region and len(plan.units) > 1
    assert sram_bytes(plan) < two.fast_peak + two.slow_peak
    x = P.random_input(g, 4)
    got = Session(data).run(x)
    np.testing.assert_array_equal(got.outputs["y"], Session(untiled).run(x).outputs["y"])
    assert (got.fast_peak, got.slow_peak) == (plan.fast_peak, plan.slow_peak)


def region_mutants() -> list[tuple[str, bytes, str]]:
    g = P.overwrite_chain()
    data, plan = P.compile_graph(g, 1024, xip=True, one_region=True)
    assert plan.one_region
    t1 = P.tensor_record_pos(data, "t1") + F.TENSOR.offsets()["slow_offset"]
    peak = P.unit_record_pos(data, 0) + F.UNIT.offsets()["peak_bytes"]
    return [
        # t1's home moved to 0: below the buffers of both units it is live in
        ("a live home below a unit's buffers", P.set_field(data, t1, 0), "ERR_REGION"),
        # the first unit's peak said lower than its buffers reach: a home above it could collide with them
        ("a buffer above its unit's peak", P.set_field(data, peak, plan.units[0].peak_bytes - 16), "ERR_REGION"),
    ]


def test_refusals(session_cls):
    Session, PlanError = session_cls
    assert P.assert_readers_refuse(Session, PlanError, region_mutants()) == 2
    g = P.overwrite_chain()
    data, _ = P.compile_graph(g, 1024, xip=True, one_region=True)
    s = Session(data)
    s._slow = s._ffi.new("uint8_t[]", max(1, s.slow_size))  # two arenas for a one-region plan
    with pytest.raises(PlanError) as e:
        s.run(P.random_input(g, 0))
    assert e.value.name == "TGRS_ERR_REGION"
