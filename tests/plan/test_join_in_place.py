"""Joins in place (lifetime rule 8; docs/memory-planning.md "Joins in place"): a Concat whose first input is its
output's prefix (one row, nothing before the joined axis: a pooled vector) takes that input's home, so the joined
part is held once. Random graphs of pooled branches joined by chains of Concats, at random budgets, plan with such
pairs that the checker accepts, within the budget; the whole-graph timeline with the rule is never above it without
and counts the joined vector once; the checker refuses a pair that does not take the input's placement and one over
an input that is not the prefix. The runtime side (outputs against ONNX Runtime and the plan without the rule, the
high-water mark at the peak) is tests/runtime/test_rt_join_in_place.py."""
from __future__ import annotations

import copy
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from plan_graphs import G

from tigris.ir import DoesNotFitError
from tigris.plan import lifetime, plan_memory
from tigris.plan.check import check_plan
from tigris.plan.lifetime import buffers
from tigris.plan.timeline import unscheduled_peak
from tigris.plan.types import align_up


def _pooled_head(dtype: str, c: int, h: int, widths: list[int], fan: int, oc: int):
    """x [1, c, h, h] -> one 1x1 conv + GAP per width -> Concats of at most ``fan`` inputs, each the joined part
    so far and the next branches -> Flatten -> Gemm to ``oc``."""
    g = G(dtype=dtype)
    x = g.input("x", (1, c, h, h))
    pooled = [g.gap(g.conv(x, w, k=1)) for w in widths]
    acc = pooled[0]
    rest = pooled[1:]
    while rest:
        acc, rest = g.concat([acc] + rest[:fan - 1]), rest[fan - 1:]
    out = g.gemm(g.flatten(acc), oc)
    # as pass concat_axis leaves a Concat (the checker lowers the ops it proves as views)
    g.ops = [op.with_(attrs={**op.attrs, "logical_axis": 1, "axis_physical": True}) if op.op_type == "Concat" else op
             for op in g.ops]
    return g.graph([out]), pooled


@st.composite
def heads(draw):
    widths = draw(st.lists(st.integers(1, 48), min_size=2, max_size=6))
    return _pooled_head("float32", draw(st.integers(1, 8)), draw(st.integers(1, 6)),
                        widths, draw(st.integers(2, 4)), draw(st.integers(1, 24)))


def test_the_rule_takes_only_a_prefix():
    graph, pooled = _pooled_head("float32", 4, 3, [16, 8, 24], 2, 4)
    bufs = buffers(graph)
    cats = [i for i, op in enumerate(graph.ops) if op.op_type == "Concat"]
    assert set(cats) <= bufs.prefix
    assert [bufs.inplace[i] for i in cats] == [(pooled[0],), (graph.ops[cats[0]].outputs[0],)]
    # a Concat of tensors with more than one pixel: its first input is not its output's prefix
    g = G(dtype="float32")
    x = g.input("x", (1, 2, 4, 4))
    wide = g.graph([g.concat([g.conv(x, 3, k=1), g.conv(x, 5, k=1)])])
    assert not buffers(wide).prefix and all(not c for c in buffers(wide).inplace)


def test_the_joined_vector_is_counted_once(monkeypatch):
    graph, pooled = _pooled_head("float32", 4, 1, [64, 64, 64, 64], 2, 4)
    on = unscheduled_peak(graph)
    monkeypatch.setattr(lifetime, "PREFIX", False)
    off = unscheduled_peak(graph)
    # without the rule the last join holds the 768 bytes joined before it beside the last pooled vector and its
    # 1,024-byte output; with it each join holds its output and the pooled vectors still to join (1,280 bytes)
    assert off == 768 + 256 + 1024 and on == 1024 + 256


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=heads(), frac=st.floats(0.0, 1.0))
def test_random_joins_plan_and_prove(case, frac):
    graph, _ = case
    peak = unscheduled_peak(graph)
    budget = align_up(int(peak * (0.3 + 0.7 * frac)))
    try:
        plan = plan_memory(graph, budget, xip=True)
    except DoesNotFitError:
        return
    assert check_plan(graph, plan) == []
    assert all(u.peak_bytes <= budget for u in plan.units)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(lifetime, "PREFIX", False)
        assert unscheduled_peak(graph) >= peak


def _plan_with_join():
    graph, pooled = _pooled_head("float32", 4, 3, [32, 16], 2, 4)
    plan = plan_memory(graph, 4096, xip=True)
    (unit,) = [u for u in plan.units if u.in_place]
    (y, x), = unit.in_place.items()
    assert x == pooled[0] and unit.fast[x].offset == unit.fast[y].offset and check_plan(graph, plan) == []
    return graph, plan, plan.units.index(unit), x, y


def test_checker_refuses_a_join_apart_from_its_prefix():
    graph, plan, k, x, y = _plan_with_join()
    bad = copy.deepcopy(plan)
    u = bad.units[k]
    u.fast[y] = replace(u.fast[y], offset=u.fast[y].offset + 1024)
    assert any(f"{y} does not take {x}'s placement" in e for e in check_plan(graph, bad))


def test_checker_refuses_a_join_over_a_later_input():
    graph, plan, k, x, y = _plan_with_join()
    cat = next(op for op in graph.ops if op.outputs[0] == y)
    other = cat.inputs[1]
    bad = copy.deepcopy(plan)
    u = bad.units[k]
    u.in_place = {y: other}
    u.fast[other] = replace(u.fast[other], offset=u.fast[y].offset)
    assert any(f"{other} is not the prefix" in e for e in check_plan(graph, bad))
