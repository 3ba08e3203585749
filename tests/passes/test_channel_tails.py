"""Channel tails (tigris/passes/weight_split.py ``channel_tail``, api._split_weights; docs/memory-planning.md
"Channel tails"): a classifier head (a 1x1 conv to many channels, maybe an activation, then a GlobalAveragePool or
a pool over the whole image) whose pooling op does not fit runs as channel groups of the conv, each group pooling
its own channels, joined by Concats of the small pooled vectors.

* ``channel_tail`` takes the channel-local ops after a splittable op up to the last that reduces; nothing when no op
  reduces or a tensor has a second reader;
* ``split_op`` with a tail: every group runs its copy of the tail, the full conv output is never made, and the split
  plan's int8 outputs are the unsplit plan's bytes (float within 1e-5 relative), both matching ONNX Runtime;
* ``analyze`` below the pooling op's floor splits the conv with its tail; the plan is proven, its run-time
  high-water mark is its peak, and its output is the untiled plan's;
* MobileNetV2-0.35 96 int8 with ``--xip``: the minimum drops below the 7,680 bytes its accumulating GAP needed,
  and the plan there runs like the untiled plan.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tigris import api
from tigris.ops import lower
from tigris.passes.weight_split import channel_step, channel_tail, group_bounds, joins_in_place, max_groups, split_op
from tigris.plan import op_lower_bounds
from tigris.plan.check import check_plan

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "families"))
import builders  # noqa: E402
import fam_seg  # noqa: E402
from tigris_testing import saved_model  # noqa: E402


def _head_model(c: int, h: int, act: str | None, pool: str, seed: int, k: int | None = None) -> onnx.ModelProto:
    """x [1, 4, h, h] -> 3x3 conv to 12 channels + Relu -> 1x1 conv to ``c`` channels (+ ``act``) -> ``pool``
    (GlobalAveragePool, or an AveragePool / MaxPool with a ``k`` x ``k`` window of stride ``k``, over the whole
    image when ``k`` is None) -> Flatten -> Gemm to 10."""
    g = builders._new(seed)
    e = g.op("Relu", [g.conv("x", 4, 12, 3)])
    y = g.conv(e, 12, c, 1)
    if act:
        y = g.op(act, [y])
    if pool == "GlobalAveragePool":
        p = g.op(pool, [y])
    else:
        k = k or h
        p = g.op(pool, [y], kernel_shape=[k, k], strides=[k, k], pads=[0, 0, 0, 0])
    f = g.op("Flatten", [p])
    n = c * (h // (k or h)) ** 2
    w = (g.rng.standard_normal((10, n)) / np.sqrt(n)).astype(np.float32)
    z = g.op("Gemm", [f, g.const(w), g.const((g.rng.standard_normal(10) * 0.1).astype(np.float32), "b")],
             transB=1)
    return fam_seg.finish_typed(g, "head", [1, 4, h, h], [(z, onnx.TensorProto.FLOAT, [1, 10])], opset=14)


def _input(h: int, seed: int) -> dict[str, np.ndarray]:
    return {"x": np.random.default_rng(seed).standard_normal((1, 4, h, h)).astype(np.float32)}


def _head(prep: api.Prepared):
    """The 1x1 conv of the head (the second conv)."""
    return [op for op in prep.graph.ops if op.op_type == "Conv"][1]


def test_channel_tail_is_the_reducing_chain(tmp_path):
    m = saved_model(tmp_path, _head_model(40, 5, "HardSwish", "GlobalAveragePool", 1), "m", False)
    prep = api.prepare(m)
    g = prep.graph
    tail = channel_tail(g, _head(prep).name)
    assert [g.op_by_name(n).op_type for n in tail] == ["HardSwish", "GlobalAveragePool"]
    # the first conv feeds the head conv, which is not channel-local: no tail
    assert channel_tail(g, [op for op in g.ops if op.op_type == "Conv"][0].name) == ()
    # a chain that reduces nothing is no tail (an activation alone would only move the join)
    m2 = tmp_path / "noreduce.onnx"
    gb = builders._new(2)
    y = gb.op("Sigmoid", [gb.conv("x", 4, 8, 1)])
    onnx.save(fam_seg.finish_typed(gb, "n", [1, 4, 4, 4], [(y, onnx.TensorProto.FLOAT, [1, 8, 4, 4])]), m2)
    p2 = api.prepare(m2)
    assert channel_tail(p2.graph, p2.graph.ops[0].name) == ()
    # a tensor read twice (a squeeze-excite block's input) stops the tail
    m3 = tmp_path / "se.onnx"
    gb = builders._new(3)
    x = gb.conv("x", 4, 8, 1)
    y = gb.op("Mul", [x, gb.op("Sigmoid", [gb.op("GlobalAveragePool", [x])])])
    onnx.save(fam_seg.finish_typed(gb, "s", [1, 4, 4, 4], [(y, onnx.TensorProto.FLOAT, [1, 8, 4, 4])]), m3)
    p3 = api.prepare(m3)
    assert channel_tail(p3.graph, p3.graph.ops[0].name) == ()


CASES = [  # (int8, channels, image, activation, pooling op, its window (None: the image), groups)
    (False, 40, 5, "HardSwish", "GlobalAveragePool", None, 3),
    (False, 37, 4, None, "AveragePool", 2, 5),
    (True, 40, 5, "HardSwish", "GlobalAveragePool", None, 3),
    (True, 37, 4, None, "AveragePool", 2, 5),    # 37 channels in 5 groups: two Concats, uneven; 2x2 pooled rows
    (True, 24, 3, "Sigmoid", "MaxPool", None, 24),  # one channel per group
]


@pytest.mark.parametrize("case", CASES, ids=[f"{'int8' if c[0] else 'f32'}-{c[4]}-g{c[6]}" for c in CASES])
def test_split_with_tail_equals_unsplit(tmp_path, case):
    int8, c, h, act, pool, k, groups = case
    path = saved_model(tmp_path, _head_model(c, h, act, pool, seed=c + h, k=k), "m", int8)
    prep = api.prepare(path)
    conv = _head(prep)
    tail = channel_tail(prep.graph, conv.name)
    assert tail and prep.graph.op_by_name(tail[-1]).op_type == pool
    g = split_op(prep.graph, conv.name, groups, tail)
    pooled = prep.graph.op_by_name(tail[-1]).outputs[0]
    # every group pools its own channels; the full conv output is not made, the Concats write the pooled tensor
    subs = [op for op in g.ops if op.attrs.get("weight_group", ("", -1))[1] >= 0]
    assert [op.op_type for op in subs] == [o for _ in range(groups) for o in
                                           ["Conv"] + [prep.graph.op_by_name(n).op_type for n in tail]]
    assert conv.outputs[0] not in g.tensors and all(n not in {o.name for o in g.ops} for n in tail)
    cats = [op for op in g.ops if op.op_type == "Concat"]
    if joins_in_place(prep.graph, pooled, 1):  # a pooled vector: each Concat adds one group to the joined prefix
        assert h // (k or h) == 1 and len(cats) == groups - 1 and all(len(op.inputs) == 2 for op in cats)
        assert [op.inputs[0] for op in cats[1:]] == [op.outputs[0] for op in cats[:-1]]
    else:
        assert len(cats) == (1 if groups <= 4 else 1 + -(-(groups - 4) // 3))
    assert cats[-1].outputs == (pooled,)
    widths = [g.tensors[op.outputs[0]].shape[1] for op in subs if op.op_type == pool]
    assert widths == [b - a for a, b in group_bounds(c, groups, channel_step(prep.graph, conv))]
    split = api.Prepared(g, prep.reports, [lower(g, op) for op in g.ops])
    x = _input(h, c)
    a = api.run_plan(api.analyze(path, "1M", xip=True, prepared=prep, tradeoff=False).plan_bytes, x).outputs
    b = api.run_plan(api.analyze(path, "1M", xip=True, prepared=split, tradeoff=False).plan_bytes, x).outputs
    (name,) = a
    if int8:
        assert a[name].tobytes() == b[name].tobytes()
    else:
        assert np.max(np.abs(a[name] - b[name])) <= 1e-5 * max(1.0, float(np.abs(a[name]).max()))
    ref = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, x)[0]
    tol = 1e-4 * max(1.0, float(np.abs(ref).max()))
    if int8:  # a few output LSBs of ORT's own rounding, as tigris verify allows
        tol = max(tol, 3 * float(np.max(np.abs(np.diff(np.unique(ref))))))
    assert np.max(np.abs(b[name] - ref)) <= tol


@pytest.mark.parametrize("pool", ["GlobalAveragePool", "MaxPool"])
def test_analyze_splits_the_head_below_the_pool_floor(tmp_path, pool):
    """256 channels on 6x6 int8: the pooling op alone needs more than the budget (with column tiles too); analyze
    splits the 1x1 conv with its pooling tail, and the plan runs like the untiled one."""
    h = 6
    path = saved_model(tmp_path, _head_model(256, h, None, pool, seed=5), "m", True)
    prep = api.prepare(path)
    conv = _head(prep)
    pool_op = prep.graph.op_by_name(channel_tail(prep.graph, conv.name)[-1])
    plain_min = api._min_fast(prep, None, True)  # the planner's own minimum, column tiles included, no groups
    bounds = dict(zip([o.name for o in prep.graph.ops], op_lower_bounds(prep.graph, **api._plan_kwargs(prep, True))))
    assert bounds[pool_op.name] == plain_min  # the pooling op is what limits
    budget = plain_min * 3 // 5 // 16 * 16
    a = api.analyze(path, budget, xip=True, tradeoff=False)
    assert a.fits, a.reason
    (rec,) = [r for r in a.json["weight_groups"] if r["op"] == conv.name]
    assert rec["cause"] == "activations" and rec["groups"] >= 2
    g = a.prepared.graph
    assert conv.outputs[0] not in g.tensors  # the conv's whole output is never made
    assert sum(op.op_type == pool_op.op_type for op in g.ops) == rec["groups"]
    assert check_plan(g, a.plan) == []
    x = _input(h, 4)
    run = api.run_plan(a.plan_bytes, x)
    assert run.fast_peak <= budget and run.fast_peak == a.plan.fast_peak
    whole = api.analyze(path, "1M", xip=True, prepared=prep, tradeoff=False)
    (name,) = run.outputs
    assert run.outputs[name].tobytes() == api.run_plan(whole.plan_bytes, x).outputs[name].tobytes()
    # groups_advice reports the minimum with the split, and compile works there
    low = api.analyze(path, "256", xip=True, tradeoff=False, emit=False, groups_advice=True)
    m = low.json["min_fast_budget_bytes"]
    assert m <= budget < plain_min == low.json["min_fast_budget_without_groups_bytes"]
    c = api.compile_model(path, m, xip=True)
    assert c.analysis.fits and any(r["op"] == conv.name for r in c.analysis.json["weight_groups"])


@pytest.mark.shared
def test_mobilenet_v2_int8_head_in_channel_groups():
    """MobileNetV2-0.35 96 int8 with --xip: its accumulating GAP (1280 channels; 7,680 bytes with column tiles) no
    longer sets the minimum: the 1x1 conv 112 -> 1280 runs as channel groups each pooling its own channels, and
    the plan at the new minimum is proven and gives the untiled plan's bytes with its high-water mark at its
    peak."""
    from tigris_testing import shared_model

    path = shared_model("torchvision/mobilenet_v2_035_96_int8.onnx")
    prep = api.prepare(path)
    a = api.analyze(path, "1K", xip=True, tradeoff=False, emit=False, groups_advice=True, prepared=prep)
    m = a.json["min_fast_budget_bytes"]
    # at most 0.8x of the closest peer's 4K (issue 15), with column tiles and groups together
    assert a.json["min_fast_budget_without_groups_bytes"] == 7680 and m <= 0.8 * 4096
    c = api.compile_model(path, m, xip=True, prepared=prep)
    assert c.analysis.fits
    head = "/features/features.18/features.18.0/Conv"
    assert any(r["op"] == head for r in c.analysis.json["weight_groups"])
    g = c.analysis.prepared.graph
    assert not any(op.op_type == "GlobalAveragePool" and g.tensors[op.inputs[0]].shape[1] == 1280 for op in g.ops)
    assert check_plan(g, c.analysis.plan) == []
    x = api.random_inputs(prep, seed=1)
    run = api.run_plan(c.plan_bytes, x)
    assert run.fast_peak == c.analysis.plan.fast_peak <= m
    untiled = api.run_plan(api.compile_model(path, "8M", xip=True, prepared=prep).plan_bytes, x)
    (name,) = run.outputs
    assert run.outputs[name].tobytes() == untiled.outputs[name].tobytes()


@settings(max_examples=6, deadline=None)
@given(data=st.data())
def test_split_with_tail_property(tmp_path_factory, data):
    """Random heads (channels, image, activation, pooling op, group count): the split plan gives the unsplit plan's
    int8 bytes on the host runtime (float: within 1e-5 relative)."""
    int8 = data.draw(st.booleans(), "int8")
    c = data.draw(st.integers(2, 40), "channels")
    h = data.draw(st.integers(2, 6), "image")
    act = data.draw(st.sampled_from([None, "HardSwish", "Sigmoid"]), "act")  # float islands in int8 too
    pool, k = data.draw(st.sampled_from([("GlobalAveragePool", None), ("MaxPool", None)] +
                                        ([("AveragePool", 2), ("MaxPool", 2)] if h % 2 == 0 else [])), "pool")
    tmp = tmp_path_factory.mktemp("tail")
    path = saved_model(tmp, _head_model(c, h, act, pool, seed=c * 7 + h, k=k), "m", int8)
    prep = api.prepare(path)
    conv = _head(prep)
    tail = channel_tail(prep.graph, conv.name)
    assert tail
    most = max_groups(prep.graph, conv)  # float convs split in whole 8-channel panels
    assume(most >= 2)
    groups = data.draw(st.integers(2, most), "groups")
    g = split_op(prep.graph, conv.name, groups, tail)
    split = api.Prepared(g, prep.reports, [lower(g, op) for op in g.ops])
    x = _input(h, c + h)
    a = api.run_plan(api.analyze(path, "1M", xip=True, prepared=prep, tradeoff=False).plan_bytes, x).outputs
    b = api.run_plan(api.analyze(path, "1M", xip=True, prepared=split, tradeoff=False).plan_bytes, x).outputs
    (name,) = a
    if int8:
        assert a[name].tobytes() == b[name].tobytes()
    else:
        assert np.max(np.abs(a[name] - b[name])) <= 1e-5 * max(1.0, float(np.abs(a[name]).max()))


def test_group_searches_shortcuts_change_no_answer_with_tails(tmp_path, monkeypatch):
    """The split attempt's early refusal (``can_grow``) and the searches' feasibility probes answer for a pool
    over the budget as full plans do: the same minima, limiting op and groups."""
    path = saved_model(tmp_path, _head_model(256, 6, None, "GlobalAveragePool", seed=5), "m", True)

    def advice(budget: int) -> dict:
        a = api.analyze(path, budget, xip=True, tradeoff=False, emit=False, groups_advice=True)
        keep = ("fits", "min_fast_budget_bytes", "min_fast_budget_without_groups_bytes", "limiting_op",
                "failed_op", "weight_groups")
        return {k: a.json.get(k) for k in keep}

    for budget in (256, 1024, 2048):
        fast = advice(budget)
        monkeypatch.setattr(api, "CHEAP_PROBES", False)
        slow = advice(budget)
        monkeypatch.setattr(api, "CHEAP_PROBES", True)
        assert fast == slow, budget
