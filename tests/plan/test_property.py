"""Property: on random DAGs of conv, depthwise, pool, add, concat, reflect/edge/wrap Pad (and GAP, and a channel ArgMax
output) at random budgets, with halo reuse on and
off, every plan the planner accepts passes the checker and never exceeds the fast budget; a refusal is always a
DoesNotFitError. However recompute is priced, a plan moves no more through slow memory than the spec strategy's."""
from __future__ import annotations

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from plan_graphs import G

from tigris.ir import DoesNotFitError
from tigris.plan import plan_memory
from tigris.plan.check import check_plan


@st.composite
def dags(draw):
    g = G(dtype=draw(st.sampled_from(["int8", "float32"])))
    h = draw(st.integers(6, 20))
    x = g.input("x", (1, draw(st.integers(1, 4)), h, draw(st.integers(4, 12))))
    pool = [x]
    tails: list[str] = []
    for _ in range(draw(st.integers(1, 9))):
        kind = draw(st.sampled_from(["conv", "dw", "pool", "add", "concat", "relu", "gap", "pad", "argmax"]))
        a = draw(st.sampled_from(pool))
        same = [t for t in pool if g.shape(t)[2:] == g.shape(a)[2:]]
        if kind == "conv":
            k = draw(st.sampled_from([1, 3, 5]))
            out = g.conv(a, draw(st.integers(1, 6)), k=k, s=draw(st.sampled_from([1, 1, 2])),
                         d=draw(st.sampled_from([1, 1, 2])) if k > 1 else 1)
        elif kind == "dw":
            out = g.conv(a, 0, k=3, s=draw(st.sampled_from([1, 2])), dw=True)
        elif kind == "pool" and min(g.shape(a)[2:]) >= 2:
            out = g.pool(a, kind=draw(st.sampled_from(["MaxPool", "AveragePool"])))
        elif kind == "add":
            b = draw(st.sampled_from([t for t in same if g.shape(t) == g.shape(a)]))
            out = g.add(a, b)
        elif kind == "concat":
            out = g.concat([a, draw(st.sampled_from(same))])
        elif kind == "gap":
            out = g.gap(a)
        elif kind == "pad":  # a Pad of the rows by its mode's row map (tigris.ops.pad)
            mode = draw(st.sampled_from(["reflect", "edge", "wrap"]))
            h_a, w_a = g.shape(a)[2:]
            cap = (lambda d: min(2, d - 1)) if mode == "reflect" else (lambda d: min(2, d))
            out = g.pad(a, draw(st.integers(0, cap(h_a))), draw(st.integers(0, cap(h_a))),
                        draw(st.integers(0, cap(w_a))), draw(st.integers(0, cap(w_a))), mode)
        elif kind == "argmax":  # a per-pixel index output (int32): a graph output nothing reads
            tails.append(g.argmax(a))
            continue
        else:
            out = g.unary(a)
        pool.append(out)
    read = {t for op in g.ops for t in op.inputs}
    outputs = [t for t in pool[1:] if t not in read] + tails or [pool[-1]]
    return g.graph(outputs)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    graph=dags(),
    frac=st.floats(0.05, 1.2),
    xip=st.booleans(),
    strategy=st.sampled_from(["spec", "tigris"]),
    acc=st.booleans(),
    reuse=st.booleans(),
)
def test_accepted_plans_pass_the_checker(graph, frac, xip, strategy, acc, reuse):
    """Halo reuse (spatial rule 9) on or off: rolling units are proven like the rest (monotone bands, fresh rows
    covered, line buffers disjoint from everything live) and recompute nothing."""
    from tigris.plan.timeline import unscheduled_peak

    budget = max(64, int(unscheduled_peak(graph) * frac))
    try:
        plan = plan_memory(graph, budget, xip=xip, strategy=strategy, accumulate_gap=acc, halo_reuse=reuse)
    except DoesNotFitError as err:
        assert getattr(err, "need", 1) > 0
        return
    assert check_plan(graph, plan) == []
    assert plan.fast_peak <= budget
    assert all(u.peak_bytes >= u.timeline_peak for u in plan.units)
    assert not any(u.rolling for u in plan.units) if strategy == "spec" or not reuse else True
    for u in plan.units:
        if u.rolling:
            assert sum(plan.stages[s].recompute_macs for s in u.stages) == 0


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph=dags())
def test_incremental_stage_growth_matches_the_sweep(graph):
    """temporal.grow_stage (used by both partitioners) equals a fresh stage timeline and stage_io for every range."""
    from tigris.plan.lifetime import buffers
    from tigris.plan.temporal import Costs, grow_stage, stage_io, stage_timeline, uses

    bufs = buffers(graph)
    u = uses(bufs)
    costs = Costs(lambda i: 7 * i, lambda i, rows: 3 * rows if i % 2 else 0, False)
    n = len(graph.ops)
    for i in range(n):
        for stop, peak, traffic in grow_stage(graph, bufs, u, costs, i):
            ins, outs = stage_io(bufs, u, i, stop)
            expect = 0 if i == 0 and stop == n else sum(bufs.nbytes[t] for t in ins + outs)
            assert (peak, traffic) == (stage_timeline(graph, bufs, u, costs, i, stop).peak, expect)


def _pad_gap_graph():
    """A Pad -> GlobalAveragePool chain beside other readers of its input: halo reuse fits it at 3 tiles, the spec's
    recomputing layout at 2, and the accumulator's band is spilled at every tile (spatial rule 7), so the 3-tile
    layout moves a byte more than the spec's (a seed-57 failure once)."""
    g = G(dtype="int8")
    x = g.input("x", (1, 1, 6, 6))
    pad = g.pad(x, 0, 1, 0, 1, "reflect")
    outs = [g.conv(x, 0, k=3, dw=True), g.conv(x, 0, k=3, dw=True), g.gap(x), g.gap(pad)]
    return g.graph(outs)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph=dags(), frac=st.floats(0.05, 1.0), weight=st.sampled_from([0.0, 0.05, 1.0, 1e6]), acc=st.booleans())
@example(graph=_pad_gap_graph(), frac=0.4375, weight=0.0, acc=True)
def test_priced_plans_move_no_more_than_the_spec_strategy(graph, frac, weight, acc):
    """Whatever recompute is priced at (the default objective prices it), the chosen plan moves no more bytes
    through slow memory than the spec strategy's plan at the same budget."""
    from tigris.plan.timeline import unscheduled_peak

    budget = max(64, int(unscheduled_peak(graph) * frac))
    try:
        spec = plan_memory(graph, budget, xip=True, strategy="spec", accumulate_gap=acc)
    except DoesNotFitError:
        return
    ours = plan_memory(graph, budget, xip=True, accumulate_gap=acc, recompute_weight=weight)  # fits where spec does
    assert check_plan(graph, ours) == []
    assert ours.spill_bytes + ours.reload_bytes <= spec.spill_bytes + spec.reload_bytes
