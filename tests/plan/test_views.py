"""Views (lifetime rule 7, docs/memory-planning.md "Views"): a Concat whose inputs are contiguous runs of its output
and a Slice whose output is a contiguous run of its input run without a kernel, their tensors sharing one buffer.

The rule's choices on small graphs (which Concats and Slices become views, at which offsets, and which do not), the
checker's proof of them (each property broken on its own), and, on random DAGs of convs, row-axis Concats, pooled
vector Concats and row Slices at random budgets: every accepted plan passes the checker, and a plan with views
never needs more fast memory, moves more through slow memory or fits fewer budgets than the same graph without
them."""
from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from plan_graphs import G

import tigris.plan as planner
from tigris.ir import DoesNotFitError, Op
from tigris.plan import min_fast_budget, plan_memory
from tigris.plan.check import check_plan
from tigris.plan.lifetime import buffers


def concat(g: G, xs: list[str], axis: int) -> str:
    """Concat along physical NHWC axis ``axis`` (1: rows, 3: channels)."""
    shapes = [g.shape(x) for x in xs]
    logical = {1: 2, 2: 3, 3: 1}[axis]
    out = list(shapes[0])
    out[logical] = sum(s[logical] for s in shapes)
    i = len(g.ops)
    y = g._t(f"t{i}", tuple(out))
    g.ops.append(Op(f"op{i}", "Concat", tuple(xs), (y,), {"axis": axis, "axis_physical": True}))
    return y


def rows(g: G, x: str, start: int, stop: int) -> str:
    """Slice of rows [start, stop) (logical axis 2) of an NCHW tensor."""
    n, c, h, w = g.shape(x)
    i = len(g.ops)
    y = g._t(f"t{i}", (n, c, stop - start, w))
    g.ops.append(Op(f"op{i}", "Slice", (x,), (y,), {"starts": [0, 0, start, 0], "ends": [n, c, stop, w],
                                                      "axes": [0, 1, 2, 3], "steps": [1, 1, 1, 1],
                                                      "normalized": True}))
    return y


def _head() -> tuple[G, list[str]]:
    """x [1,4,8,8] -> two 3x3 convs -> row Concat [1,4,16,8] -> conv -> two GAPs -> channel Concat [1,8,1,1]."""
    g = G("int8")
    x = g.input("x", (1, 4, 8, 8))
    a, b = g.conv(x, 4), g.conv(x, 4)
    h = concat(g, [a, b], 1)
    d = g.conv(h, 4, s=2)
    v = concat(g, [g.gap(g.conv(d, 16, k=1)), g.gap(g.conv(d, 16, k=1))], 3)
    return g, [g.conv(v, 4, k=1)]


def test_rule_joins_contiguous_runs():
    g, outs = _head()
    graph = g.graph(outs)
    b = buffers(graph, views=True)
    ops = {op.op_type + str(i): i for i, op in enumerate(graph.ops)}
    cats = [i for i, op in enumerate(graph.ops) if op.op_type == "Concat"]
    assert set(cats) == set(b.view_ops)
    rc, vc = (graph.ops[i] for i in cats)
    # the row Concat's inputs are its output's first and second halves; the GAP vectors its two 16-byte runs
    assert [b.offset[x] for x in rc.inputs] == [0, 4 * 8 * 8]
    assert all(b.root(x) == rc.outputs[0] for x in rc.inputs)
    assert [b.offset[x] for x in vc.inputs] == [0, 16]
    # producers write the joined buffer; the second reads it too (the bytes of the first survive it)
    first, second = (graph.ops.index(next(op for op in graph.ops if op.outputs[0] == x)) for x in rc.inputs)
    assert b.writes[first] == b.writes[second] == (rc.outputs[0],)
    assert rc.outputs[0] not in b.reads[first] and rc.outputs[0] in b.reads[second]
    assert b.writes[cats[0]] == () and ops  # the Concat itself writes nothing
    assert buffers(graph).view_ops == frozenset() and buffers(graph).offset == {}


def test_rule_declines_what_is_not_a_run():
    g = G("int8")
    x = g.input("x", (1, 4, 8, 8))
    a, b = g.conv(x, 4), g.conv(x, 4)
    ch = concat(g, [a, b], 3)  # channels of an 8x8 image: strided, not a run
    twice = concat(g, [a, a], 1)  # one tensor at two offsets
    odd = rows(g, g.conv(x, 3), 1, 5)  # 1 row of 8 pixels x 3 channels: offset 24, not 16-aligned
    gin = concat(g, [x, b], 1)  # a graph input cannot live inside another buffer
    graph = g.graph([ch, twice, odd, gin])
    assert buffers(graph, views=True).view_ops == frozenset()


def test_slice_of_rows_is_a_run_and_split_shares_one_buffer():
    g = G("int8")
    x = g.input("x", (1, 1, 8, 8))
    a = g.conv(x, 4)
    top, bottom = rows(g, a, 0, 4), rows(g, a, 4, 8)
    outs = [g.conv(top, 1), g.conv(bottom, 1)]
    graph = g.graph(outs)
    b = buffers(graph, views=True)
    assert b.root(top) == b.root(bottom) == a and (b.offset[top], b.offset[bottom]) == (0, 4 * 8 * 4)
    p = plan_memory(graph, 1 << 20, None, xip=True)
    assert check_plan(graph, p) == [] and set(p.view_ops) == set(b.view_ops)
    planner.VIEWS = False
    try:
        copy = plan_memory(graph, 1 << 20, None, xip=True)
    finally:
        planner.VIEWS = True
    assert p.fast_peak < copy.fast_peak and not copy.view_ops


def test_views_lower_the_minimum_and_the_checker_proves_them():
    g, outs = _head()
    graph = g.graph(outs)
    planner.VIEWS = False
    try:
        before = min_fast_budget(graph, xip=True)
    finally:
        planner.VIEWS = True
    after = min_fast_budget(graph, xip=True)
    assert after < before
    p = plan_memory(graph, after, None, xip=True)
    assert p.view_ops and check_plan(graph, p) == []


def _broken(graph, p):
    """(what, plan) with one property of a valid plan with views broken."""
    x = next(n for n, o in p.view_offset.items() if o)
    yield "offset moved", replace(p, view_offset={**p.view_offset, x: p.view_offset[x] + 16})
    yield "misaligned", replace(p, view_offset={**p.view_offset, x: p.view_offset[x] - 8})
    yield "no view op", replace(p, view_ops=p.view_ops[1:])
    y = next(iter(p.view_offset))
    yield "a view without a root", replace(p, alias_of={k: v for k, v in p.alias_of.items() if k != y})


@pytest.mark.parametrize("case", ["offset moved", "misaligned", "no view op", "a view without a root"])
def test_checker_refuses_broken_views(case):
    g, outs = _head()
    graph = g.graph(outs)
    p = plan_memory(graph, 1 << 20, None, xip=True)
    assert check_plan(graph, p) == []
    bad = dict(_broken(graph, p))[case]
    assert check_plan(graph, bad) != []


def test_checker_refuses_a_view_op_whose_runs_do_not_hold_its_bytes():
    g, outs = _head()
    graph = g.graph(outs)
    p = plan_memory(graph, 1 << 20, None, xip=True)
    rc = next(op for i, op in enumerate(graph.ops) if i in p.view_ops and op.op_type == "Concat")
    a, b = rc.inputs
    # swapping the two runs keeps every run inside the root and aligned, but the Concat would put them the other way
    swapped = replace(p, view_offset={**p.view_offset, a: p.view_offset[b], b: p.view_offset[a]})
    errs = check_plan(graph, swapped)
    assert any("not where its view runs put it" in e for e in errs), errs


@st.composite
def dags(draw):
    g = G(dtype=draw(st.sampled_from(["int8", "float32"])))
    w = draw(st.sampled_from([4, 8]))
    x = g.input("x", (1, 4, draw(st.integers(4, 12)), w))
    pool = [x]
    vecs: list[str] = []
    for _ in range(draw(st.integers(2, 9))):
        kind = draw(st.sampled_from(["conv", "rows", "slice", "gap", "vec", "relu"]))
        a = draw(st.sampled_from(pool))
        n, c, h, ww = g.shape(a)
        if kind == "conv":
            out = g.conv(a, 4, k=draw(st.sampled_from([1, 3])), s=draw(st.sampled_from([1, 1, 2])))
        elif kind == "rows":
            same = [t for t in pool if g.shape(t)[1] == c and g.shape(t)[3] == ww]
            out = concat(g, [a, *draw(st.lists(st.sampled_from(same), min_size=1, max_size=2))], 1)
        elif kind == "slice" and h >= 2:
            cut = draw(st.integers(1, h - 1))
            out = rows(g, a, *draw(st.sampled_from([(0, cut), (cut, h)])))
        elif kind == "gap":
            out = g.conv(g.gap(a), 4 * draw(st.integers(1, 4)), k=1)
            vecs.append(out)
        elif kind == "vec" and len(vecs) >= 2:
            out = concat(g, draw(st.lists(st.sampled_from(vecs), min_size=2, max_size=3, unique=True)), 3)
        else:
            out = g.unary(a)
        pool.append(out)
    read = {t for op in g.ops for t in op.inputs}
    outputs = [t for t in pool[1:] if t not in read] or [pool[-1]]
    return g.graph(outputs)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph=dags(), frac=st.floats(0.05, 1.0), xip=st.booleans())
def test_plans_with_views_are_proven_and_never_worse(graph, frac, xip):
    planner.VIEWS = False
    try:
        whole = plan_memory(graph, 1 << 24, None, xip=xip)
        budget = max(64, int(whole.fast_peak * frac))
        try:
            copy = plan_memory(graph, budget, None, xip=xip)
        except DoesNotFitError:
            copy = None
    finally:
        planner.VIEWS = True
    try:
        p = plan_memory(graph, budget, None, xip=xip)
    except DoesNotFitError:
        assert copy is None  # views never lose a fit
        return
    assert check_plan(graph, p) == []
    assert p.fast_peak <= budget
    if copy is not None:
        assert p.fast_peak <= copy.fast_peak
        assert p.spill_bytes + p.reload_bytes <= copy.spill_bytes + copy.reload_bytes


def test_running_order_decides_which_producer_reads_the_joined_buffer():
    """The memory-aware operator order runs the second producer of a pooled-vector Concat first: the checker follows
    the running order (that producer writes first; the other reads the root), as the planner does (a case the
    property test found)."""
    g = G("float32")
    x = g.input("x", (1, 4, 4, 4))
    t0 = g.unary(x)
    t2 = g.conv(g.gap(x), 12, k=1)
    t3 = g.unary(x)
    t5 = g.conv(g.gap(x), 8, k=1)
    t7 = g.conv(g.gap(t0), 4, k=1)
    t8 = g.conv(x, 4, k=1)
    t9 = concat(g, [t2, t5], 3)
    graph = g.graph([t3, t7, t8, t9])
    planner.VIEWS = False
    try:
        whole = plan_memory(graph, 1 << 24, None, xip=False)
    finally:
        planner.VIEWS = True
    p = plan_memory(graph, int(whole.fast_peak * 0.96875), None, xip=False)
    assert p.view_ops and check_plan(graph, p) == []
