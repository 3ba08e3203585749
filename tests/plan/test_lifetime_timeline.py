"""Stages 3-4 on hand-built graphs: lifetimes (closed intervals, constants excluded, alias groups) and the timeline."""
from __future__ import annotations

from plan_graphs import G

from tigris.plan.lifetime import buffers, is_alias, lifetimes
from tigris.plan.timeline import sweep, unscheduled_peak


def small_chain():
    """x[1,1,4,4] -conv3x3(2ch)-> t0[1,2,4,4] -relu-> t1 -maxpool2-> t2[1,2,2,2]; int8, so 16/32/32/8 bytes."""
    g = G()
    x = g.input("x", (1, 1, 4, 4))
    t2 = g.pool(g.unary(g.conv(x, 2)))
    return g.graph([t2])


def test_lifetimes_closed_intervals_and_constants_excluded():
    graph = small_chain()
    bufs = buffers(graph)
    lives = {lt.name: lt for lt in lifetimes(bufs, range(3), bufs.inputs, bufs.outputs, inplace=False)}
    assert set(lives) == {"x", "t0", "t1", "t2"}  # the conv weight w0 is a constant: no lifetime
    assert (lives["x"].birth, lives["x"].death) == (0, 0)
    assert (lives["t0"].birth, lives["t0"].death) == (0, 1)
    assert (lives["t1"].birth, lives["t1"].death) == (1, 2)
    assert (lives["t2"].birth, lives["t2"].death) == (2, 2)
    # sizes are 16-byte aligned: t2 holds 8 bytes
    assert [lives[n].size for n in ("x", "t0", "t1", "t2")] == [16, 32, 32, 16]


def test_timeline_peak_frees_before_allocating():
    graph = small_chain()
    bufs = buffers(graph)
    tl = sweep(lifetimes(bufs, range(3), bufs.inputs, bufs.outputs, inplace=False), 3)
    # step 0: x + t0 = 48; step 1: x freed (died at 0) then t1 allocated: t0 + t1 = 64; step 2: t1 + t2 = 48
    assert tl.usage == (48, 64, 48)
    assert (tl.peak, tl.peak_step) == (64, 1)


def test_in_place_unary_takes_its_dying_input_home():
    """Rule 6: the relu's input t0 dies at the relu (its last use), so t1 takes its home: t0 ends a step early,
    t1 names it, and the timeline counts the two once."""
    graph = small_chain()
    bufs = buffers(graph)
    assert bufs.inplace == ((), ("t0",), ())
    lives = {lt.name: lt for lt in lifetimes(bufs, range(3), bufs.inputs, bufs.outputs)}
    assert (lives["t0"].birth, lives["t0"].death, lives["t0"].inplace_of) == (0, 0, None)
    assert (lives["t1"].birth, lives["t1"].death, lives["t1"].inplace_of) == (1, 2, "t0")
    assert sweep(list(lives.values()), 3).usage == (48, 32, 48)
    assert unscheduled_peak(graph) == 48
    # an input that leaves the sequence (spilled for a later unit) keeps its bytes: no in-place
    kept = {lt.name: lt for lt in lifetimes(bufs, range(3), bufs.inputs, ["t0", "t2"])}
    assert kept["t1"].inplace_of is None and kept["t0"].death == 2


def test_residual_keeps_skip_alive():
    g = G()
    x = g.input("x", (1, 1, 16, 16))  # 256 bytes each
    y = g.add(g.conv(g.conv(x, 1), 1), x)
    graph = g.graph([y])
    # step 0: x + t0; step 1: x + t0 + t1 (x still needed); step 2: x + t1 + t2
    assert sweep(lifetimes(buffers(graph), range(3), ["x"], [y], inplace=False), 3).usage == (512, 768, 768)
    # rule 6 does not apply: the Add's output is a graph output (and x a graph input), neither shares a home
    assert sweep(lifetimes(buffers(graph), range(3), ["x"], [y]), 3).usage == (512, 768, 768)
    g.conv(y, 1)
    graph = g.graph(["t3"])
    # with a conv after it, the Add (t1's last use) writes over t1: step 2 holds x + t2 only
    assert sweep(lifetimes(buffers(graph), range(4), ["x"], ["t3"]), 4).usage == (512, 768, 512, 512)


def test_alias_shares_the_buffer_and_extends_its_life():
    g = G()
    x = g.input("x", (1, 4, 1, 1))
    flat = g.flatten(g.gap(g.conv(x, 4, k=1)))
    y = g.gemm(flat, 3)
    graph = g.graph([y])
    flatten_op = graph.ops[2]
    assert is_alias(graph, flatten_op)  # [1,4,1,1] nhwc and [1,4] plain hold the same bytes in the same order
    bufs = buffers(graph)
    assert bufs.alias_of == {"t2": "t1"}
    assert bufs.writes[2] == ()  # the alias op writes no new buffer
    lives = {lt.name: lt for lt in lifetimes(bufs, range(4), bufs.inputs, bufs.outputs)}
    assert "t2" not in lives and (lives["t1"].birth, lives["t1"].death) == (1, 3)


def test_flatten_that_moves_bytes_is_not_an_alias():
    g = G()
    x = g.input("x", (1, 2, 2, 2))
    flat = g.flatten(x)
    y = g.unary(flat, "Relu")  # not a Gemm: the NHWC -> NCHW-order flatten would really move bytes
    graph = g.graph([y])
    assert not is_alias(graph, graph.ops[0])
    # ... and the planner reads the layout pass's record: a Flatten feeding only Gemms is an alias once that pass
    # permuted the Gemm's weight columns and recorded it, whatever the byte orders say
    g2 = G()
    x2 = g2.input("x", (1, 2, 2, 2))
    graph2 = g2.graph([g2.gemm(g2.flatten(x2), 3)])
    assert not is_alias(graph2, graph2.ops[0])
    recorded = graph2.ops[0].with_(attrs={"alias": True, "nhwc_order": True})
    assert is_alias(graph2, recorded)
    assert not is_alias(graph, graph.ops[0].with_(attrs={"alias": False}))
