"""The memory-aware operator order (tigris.plan.order): on random branched DAGs the order found is a topological
order of every op, its peak is what the planner's own sweep measures on the reordered graph, it is never above the
loader's order, and on small graphs it equals the best order a brute force finds over every topological order.
Plans made with it pass the checker and never move more slow-memory bytes than the baseline order's plan."""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from plan_graphs import G
from test_property import dags

from tigris.plan import Fit, plan
from tigris.plan.check import check_plan
from tigris.plan.order import order_peak, reorder, search_order
from tigris.plan.timeline import unscheduled_peak


@st.composite
def branched(draw, max_ops: int = 10):
    """DAGs with several live branches: each op reads one or two earlier tensors (any of them, not the last one),
    some branches end in a GAP + Flatten (an alias) + Gemm head, and every unread tensor is a graph output."""
    g = G(dtype=draw(st.sampled_from(["int8", "float32"])))
    h = draw(st.integers(4, 10))
    x = g.input("x", (1, draw(st.integers(1, 4)), h, draw(st.integers(2, 8))))
    pool = [x]
    heads = []
    target = draw(st.integers(2, max_ops))
    while len(g.ops) < target:  # a head is three ops: the graph has at most max_ops + 2
        kind = draw(st.sampled_from(["conv", "conv", "dw", "add", "concat", "relu", "head"]))
        a = draw(st.sampled_from(pool))
        if kind == "conv":
            out = g.conv(a, draw(st.integers(1, 8)), k=draw(st.sampled_from([1, 3])))
        elif kind == "dw":
            out = g.conv(a, 0, k=3, dw=True)
        elif kind == "add":
            b = draw(st.sampled_from([t for t in pool if g.shape(t) == g.shape(a)]))
            out = g.add(a, b)
        elif kind == "concat":
            b = draw(st.sampled_from([t for t in pool if g.shape(t)[2:] == g.shape(a)[2:]]))
            out = g.concat([a, b])
        elif kind == "head":
            heads.append(g.gemm(g.flatten(g.gap(a)), draw(st.integers(1, 6))))
            continue
        else:
            out = g.unary(a)
        pool.append(out)
    read = {t for op in g.ops for t in op.inputs}
    outputs = [t for t in pool[1:] + heads if t not in read] or [pool[-1]]
    return g.graph(outputs)


def is_topological(graph, order) -> bool:
    if sorted(order) != list(range(len(graph.ops))):
        return False
    made = set(graph.inputs) | set(graph.weights)
    for i in order:
        op = graph.ops[i]
        if any(t and t not in made for t in op.inputs):
            return False
        made |= {t for t in op.outputs if t}
    return True


def brute_force_peak(graph) -> int:
    """The least peak over every topological order, by exhaustive enumeration (small graphs only). It walks every
    order with the search's step costs, which test_search_is_a_better_topological_order ties to the planner's sweep."""
    from tigris.plan.lifetime import buffers
    from tigris.plan.order import _Graph

    g = _Graph(graph, buffers(graph))
    n = len(graph.ops)
    producer = {t: i for i, op in enumerate(graph.ops) for t in op.outputs if t}
    preds = [{producer[t] for t in op.inputs if t in producer} for op in graph.ops]
    best = [None]

    def walk(done: set[int], mask: int, mem: int, peak: int):
        if best[0] is not None and peak >= best[0]:
            return  # this prefix cannot beat an order already found
        if len(done) == n:
            best[0] = peak
            return
        for i in range(n):
            if i not in done and preds[i] <= done:
                cost, after = g.step(mask, mem, i)
                done.add(i)
                walk(done, mask | (1 << i), after, max(peak, cost))
                done.discard(i)

    walk(set(), 0, g.start_mem, 0 if n else g.start_mem + g.unread_inputs)
    return best[0]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph=st.one_of(branched(), dags()))
def test_search_is_a_better_topological_order(graph):
    res = search_order(graph)
    assert is_topological(graph, res.order)
    assert res.baseline_peak == unscheduled_peak(graph)
    assert res.peak == order_peak(graph, res.order) == unscheduled_peak(reorder(graph, res.order))
    assert res.peak <= res.baseline_peak
    assert search_order(graph) == res  # deterministic
    if res.order == tuple(range(len(graph.ops))):
        assert res.peak == res.baseline_peak


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph=branched(max_ops=7))
def test_search_equals_brute_force_on_small_graphs(graph):
    res = search_order(graph)
    assert res.exact
    assert res.peak == brute_force_peak(graph)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph=branched(max_ops=12))
def test_a_cut_search_stays_valid_and_never_worse(graph):
    """With almost no work allowed (the beam keeps one state per layer besides the baseline's) the result is a
    heuristic, still a topological order and never above the baseline."""
    import tigris.plan.order as order_mod

    old = order_mod.MIN_BEAM
    order_mod.MIN_BEAM = 1
    try:
        res = search_order(graph, work=1)
    finally:
        order_mod.MIN_BEAM = old
    assert is_topological(graph, res.order)
    assert res.peak == order_peak(graph, res.order) <= res.baseline_peak


def test_a_chain_keeps_its_order():
    g = G()
    t = g.input("x", (1, 4, 8, 8))
    for _ in range(6):
        t = g.unary(g.conv(t, 4))
    res = search_order(g.graph([t]))
    assert res.order == tuple(range(12)) and res.exact


def test_branch_order_lowers_the_peak():
    """Two heads on one trunk: the baseline runs both wide branches before reducing either; the search finishes
    one head (its wide tensor dies into a small GAP output) before starting the other."""
    g = G()
    x = g.input("x", (1, 2, 16, 16))
    a = g.conv(x, 16, k=1)
    b = g.conv(x, 16, k=1)
    ha = g.gap(a)
    hb = g.gap(b)
    graph = g.graph([ha, hb])
    res = search_order(graph)
    assert res.exact and res.peak < res.baseline_peak
    assert res.order in ((0, 2, 1, 3), (1, 3, 0, 2))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph=branched(), frac=st.floats(0.05, 1.2), xip=st.booleans(), acc=st.booleans(),
       weight=st.sampled_from([0.0, 0.1]))
def test_reordered_plans_are_valid_and_never_cost_more(graph, frac, xip, acc, weight):
    budget = max(64, int(unscheduled_peak(graph) * frac))
    kw = dict(xip=xip, accumulate_gap=acc, recompute_weight=weight)
    base = plan(graph, budget, op_order="spec", **kw)
    new = plan(graph, budget, **kw)
    if isinstance(base, Fit):
        assert isinstance(new, Fit)
        assert new.plan.spill_bytes + new.plan.reload_bytes <= base.plan.spill_bytes + base.plan.reload_bytes
    else:
        assert new == base or isinstance(new, Fit)
    if isinstance(new, Fit):
        assert check_plan(graph, new.plan) == []
        assert new.plan.fast_peak <= budget
