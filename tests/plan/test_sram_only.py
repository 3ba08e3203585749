"""The SRAM-only figure (``min_sram_only_budget``): the least SRAM holding both arenas when a board has no PSRAM.

On random DAGs it is a plan the planner really makes at the reported budgets, proven by the checker, never above the
untiled plan; on a shared model the runtime runs that plan within exactly those two arenas, its int8 outputs
bit-identical to the untiled plan's, and analyze reports it when the slow budget is 0."""
from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_property import dags

from tigris.ir import DoesNotFitError
from tigris.plan import Fit, min_sram_only_budget, plan, unscheduled_peak
from tigris.plan.check import check_plan
from tigris_testing import host_runtime, shared_model


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph=dags(), xip=st.booleans())
def test_sram_only_is_a_real_plan_no_larger_than_untiled(graph, xip):
    r = min_sram_only_budget(graph, xip=xip)
    untiled = plan(graph, 2**30, xip=xip)
    assert isinstance(untiled, Fit) and r is not None
    assert r.total_bytes <= untiled.plan.fast_peak + untiled.plan.slow_peak
    res = plan(graph, r.fast_budget, r.slow_bytes, xip=xip)  # the suggestion as the user would pass it
    assert isinstance(res, Fit)
    p = res.plan
    assert (p.fast_peak, p.slow_peak, p.fast_peak + p.slow_peak) == (r.fast_bytes, r.slow_bytes, r.total_bytes)
    assert p.fast_peak <= r.fast_budget and p.recompute_macs == r.recompute_macs
    assert check_plan(graph, p) == []
    cap = min_sram_only_budget(graph, max_recompute_macs=0, xip=xip)  # no halo recompute at all: still a real plan
    if cap is not None:
        assert cap.recompute_macs == 0
        p0 = plan(graph, cap.fast_budget, cap.slow_bytes, xip=xip).plan
        assert (p0.fast_peak + p0.slow_peak, p0.recompute_macs) == (cap.total_bytes, 0) and check_plan(graph, p0) == []


@pytest.fixture(scope="module")
def host():
    host_runtime()


def test_vww_sram_only_plan_runs_bit_identical(host):
    from click.testing import CliRunner

    from tigris.api import compile_model, prepare, random_inputs, run_plan
    from tigris.cli import main

    path = shared_model("mlperf_tiny/vww_mbv1_025_96_int8.onnx")
    res = CliRunner().invoke(main, ["analyze", str(path), "-m", "16K", "-s", "0", "--xip", "--json"])
    assert res.exit_code == 1
    j = json.loads(res.stdout)
    so = j["sram_only"]
    untiled_need = j["model"]["unscheduled_peak_bytes"]
    assert so["total_bytes"] == so["fast_bytes"] + so["slow_bytes"] < untiled_need
    text = CliRunner().invoke(main, ["analyze", str(path), "-m", "16K", "-s", "0", "--xip"]).stdout
    assert f"{so['total_bytes']} bytes of SRAM, -m {so['fast_budget']} -s {so['slow_bytes']}" in text
    prep = prepare(path)
    with pytest.raises(DoesNotFitError, match=f"without PSRAM: -m {so['fast_budget']} -s {so['slow_bytes']} "):
        compile_model(path, "16K", 0, xip=True, prepared=prep)
    comp = compile_model(path, so["fast_budget"], so["slow_bytes"], xip=True, prepared=prep)
    p = comp.analysis.plan
    assert (p.fast_peak, p.slow_peak) == (so["fast_bytes"], so["slow_bytes"])
    assert check_plan(prep.graph, p) == []
    inp = random_inputs(prep, seed=3)
    got = run_plan(comp.plan_bytes, inp)
    assert (got.fast_peak, got.slow_peak) == (p.fast_peak, p.slow_peak)  # the runtime's high-water marks
    untiled = run_plan(compile_model(path, "8M", xip=True, prepared=prep).plan_bytes, inp)
    assert untiled.slow_peak == 0
    for k, v in untiled.outputs.items():
        np.testing.assert_array_equal(got.outputs[k], v)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph=dags(), frac=st.floats(0.05, 1.2), xip=st.booleans())
def test_slow_budget_zero_plans_have_no_slow_arena(graph, frac, xip):
    """With -s 0 a plan fits only within a zero slow arena (so as one untiled unit) and passes the checker."""
    budget = max(64, int(unscheduled_peak(graph) * frac))
    res = plan(graph, budget, 0, xip=xip)
    if isinstance(res, Fit):
        p = res.plan
        assert p.slow_peak == 0 and p.fast_peak <= budget and check_plan(graph, p) == []
    else:
        assert res.cause in ("slow_memory", "untileable", "one_row", "packing")
