"""Channel groups (tigris/passes/weight_split.py, api._split_weights): a depthwise conv (or, with XIP, a conv)
whose activations do not fit even at one output row per tile runs as channel groups.

* ``split_op`` on a depthwise conv: one Slice of the input channels per group, each group a depthwise conv over its
  slice, the Concats joining them; channel counts that do not divide evenly (tails), depth multiplier 2, dilation;
  on the host runtime the split plan's int8 outputs are the unsplit plan's bytes and float within 1e-5 relative,
  and both match ONNX Runtime;
* ``analyze`` splits only below the budget where the model fits (no plan that fits changes), the split plan passes
  the offset checker, stays within the budget at run time and matches ONNX Runtime (int8: the unsplit plan's bytes);
* the minimum ``analyze`` reports with ``groups_advice`` is the lower one with groups, and compiles;
* LRASPP with a MobileNetV3-Large backbone at 128x128 (float32 and int8) fits 256K and MobileNetV2-1.0 at 144x144
  float32 fits 64K, both with ``--xip``, and pass ``tigris verify``.
"""
from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tigris import api
from tigris.ops import lower
from tigris.passes.weight_split import split_op, splittable
from tigris.plan import NoFit
from tigris.plan.check import check_plan

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "families"))
import builders  # noqa: E402
import fam_seg  # noqa: E402
from tigris_testing import saved_model  # noqa: E402


def _dw_model(c: int, h: int, k: int, dil: int, mult: int, seed: int) -> onnx.ModelProto:
    """x [1, 4, h, h] -> 1x1 conv to c channels + HardSwish -> depthwise k x k (dilation ``dil``, multiplier
    ``mult``) + Relu -> 1x1 conv to 6 channels."""
    g = builders._new(seed)
    e = g.op("HardSwish", [g.conv("x", 4, c, 1)])
    d = g.conv(e, c, c * mult, k, 1, pad=(k - 1) // 2 * dil, group=c)
    if dil > 1:
        g.nodes[-1].attribute.append(onnx.helper.make_attribute("dilations", [dil, dil]))
    y = g.conv(g.op("Relu", [d]), c * mult, 6, 1)
    return fam_seg.finish_typed(g, "dw", [1, 4, h, h], [(y, onnx.TensorProto.FLOAT, [1, 6, h, h])], opset=14)


def _ort(path: Path, x: dict) -> np.ndarray:
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, x)[0]


def _split(prep: api.Prepared, splits: dict[str, int]) -> api.Prepared:
    g = prep.graph
    for name, groups in splits.items():
        g = split_op(g, name, groups)
    return api.Prepared(g, prep.reports, [lower(g, op) for op in g.ops])


CASES = [  # (int8, channels, image, kernel, dilation, multiplier, groups)
    (False, 13, 6, 3, 1, 1, 4),   # 13 channels in 4 groups: 3/3/3/4
    (False, 24, 9, 5, 2, 1, 5),   # dilated 5x5, five groups (two Concats)
    (False, 7, 5, 3, 1, 2, 3),    # depth multiplier 2
    (True, 13, 6, 3, 1, 1, 4),
    (True, 24, 9, 5, 2, 1, 7),    # seven groups of 3-4 channels, int8 per-channel weights
    (True, 10, 4, 3, 1, 1, 10),   # one channel per group
]


@pytest.mark.parametrize("case", CASES, ids=[f"{'int8' if c[0] else 'f32'}-c{c[1]}-g{c[6]}" for c in CASES])
def test_depthwise_split_equals_unsplit(tmp_path, case):
    int8, c, h, k, dil, mult, groups = case
    path = saved_model(tmp_path, _dw_model(c, h, k, dil, mult, seed=c * 3 + k), "m", int8)
    prep = api.prepare(path)
    (dw,) = [op for op in prep.graph.ops if op.op_type == "DepthwiseConv"]
    assert splittable(prep.graph, dw) is not None  # not a weight group ...
    assert splittable(prep.graph, dw, channels=True) is None  # ... but a channel group
    split = _split(prep, {dw.name: groups})
    g = split.graph
    slices = [op for op in g.ops if op.op_type == "Slice" and op.attrs.get("weight_group", ("",))[0] == dw.name]
    subs = [op for op in g.ops if op.op_type == "DepthwiseConv"]
    cats = [op for op in g.ops if op.op_type == "Concat" and op.attrs.get("weight_group", ("", 0))[1] == -1]
    # every group slices its own channels of the op's input, in order, covering them once
    assert len(slices) == len(subs) == groups and all(s.inputs[0] == dw.inputs[0] for s in slices)
    starts = [s.attrs["starts"][1] for s in slices]
    widths = [g.tensors[s.outputs[0]].shape[1] for s in slices]
    assert starts == list(np.cumsum([0] + widths[:-1])) and sum(widths) == c and max(widths) - min(widths) <= 1
    assert [g.tensors[s.inputs[0]].shape[1] * mult for s in subs] == [g.tensors[o.outputs[0]].shape[1]
                                                                       for o in subs]
    assert cats and cats[-1].outputs == dw.outputs
    x = {"x": np.random.default_rng(c).standard_normal((1, 4, h, h)).astype(np.float32)}
    a = api.run_plan(api.analyze(path, "1M", xip=True, prepared=prep, tradeoff=False).plan_bytes, x).outputs
    b = api.run_plan(api.analyze(path, "1M", xip=True, prepared=split, tradeoff=False).plan_bytes, x).outputs
    (name,) = a
    if int8:
        assert a[name].tobytes() == b[name].tobytes()  # each channel: the same integer arithmetic on the same bytes
    else:
        assert np.max(np.abs(a[name] - b[name])) <= 1e-5 * max(1.0, float(np.abs(a[name]).max()))
    ref = _ort(path, x)
    tol = 1e-4 * max(1.0, float(np.abs(ref).max()))
    if int8:  # a few output LSBs of ORT's own rounding, as tigris verify allows
        tol = max(tol, 3 * float(np.max(np.abs(np.diff(np.unique(ref))))) if ref.size > 1 else tol)
    assert np.max(np.abs(b[name] - ref)) <= tol


@pytest.mark.parametrize("int8", [False, True], ids=["f32", "int8"])
def test_analyze_splits_below_the_floor_only(tmp_path, int8):
    """A 5x5 dilated depthwise conv on 96 x 12 x 12: below its one-row need, analyze runs it as channel groups; the
    plan is proven, within budget at run time, and matches the unsplit plan (int8: its bytes) and ONNX Runtime."""
    path = saved_model(tmp_path, _dw_model(96, 12, 5, 2, 1, seed=7), "m", int8)
    prep = api.prepare(path)
    plain_min = api._min_fast(replace(prep, col_tiles=False), None, True)  # rows only, no groups
    (dw,) = [i for i, op in enumerate(prep.graph.ops) if op.op_type == "DepthwiseConv"]
    budget = plain_min * 2 // 3 // 16 * 16
    assert isinstance(api._plan(replace(prep, col_tiles=False), budget, None, True), NoFit)
    a = api.analyze(path, budget, xip=True, tradeoff=False)
    assert a.fits, a.reason
    (rec,) = a.json["weight_groups"]
    assert rec["op"] == prep.graph.ops[dw].name and rec["cause"] == "activations" and rec["groups"] >= 2
    assert rec["max_group_need_bytes"] <= budget < rec["need_bytes"]
    assert any("channel groups" in n for n in a.notes)
    assert check_plan(a.prepared.graph, a.plan) == []
    x = {"x": np.random.default_rng(3).standard_normal((1, 4, 12, 12)).astype(np.float32)}
    run = api.run_plan(a.plan_bytes, x)
    assert run.fast_peak <= budget and run.fast_peak == a.plan.fast_peak
    whole = api.analyze(path, "1M", xip=True, prepared=prep, tradeoff=False)
    assert whole.json["weight_groups"] == [] and len(whole.prepared.graph.ops) == len(prep.graph.ops)
    (name,) = run.outputs
    ref_plan = api.run_plan(whole.plan_bytes, x).outputs[name]
    if int8:
        assert run.outputs[name].tobytes() == ref_plan.tobytes()
    else:
        assert np.max(np.abs(run.outputs[name] - ref_plan)) <= 1e-5 * max(1.0, float(np.abs(ref_plan).max()))
        ref = _ort(path, x)
        assert np.max(np.abs(run.outputs[name] - ref)) <= 1e-4 * max(1.0, float(np.abs(ref).max()))
    assert api.analyze(path, budget, xip=True, tradeoff=False).plan_bytes == a.plan_bytes  # deterministic
    # at the minimum without groups nothing is split: that plan is the planner's own
    at_min = api.analyze(path, plain_min, xip=True, prepared=prep, tradeoff=False)
    assert at_min.fits and at_min.json["weight_groups"] == []
    # and a budget below the smallest with groups (planned with column tiles too) is refused as before
    least = api.analyze(path, 16, xip=True, tradeoff=False, emit=False, groups_advice=True).min_fast_budget
    tiny = api.analyze(path, least // 2 // 16 * 16, xip=True, tradeoff=False)
    assert not tiny.fits and tiny.json["weight_groups"] == []


def test_minimum_with_channel_groups_compiles(tmp_path):
    """``groups_advice`` (the CLI's analyze and compile): the minimum reported is the one with channel groups, below
    the planner's own, and compile at it works; the library default reports the planner's."""
    path = saved_model(tmp_path, _dw_model(96, 12, 5, 2, 1, seed=7), "m", False)
    prep = api.prepare(path)
    plain_min = api._min_fast(prep, None, True)  # the planner's own (column tiles included), no groups
    low = api.analyze(path, 16, xip=True, tradeoff=False, emit=False, groups_advice=True)
    m = low.json["min_fast_budget_bytes"]
    assert low.json["min_fast_budget_without_groups_bytes"] == plain_min and m < plain_min
    assert low.min_fast_budget == m
    c = api.compile_model(path, m, xip=True)
    assert c.analysis.fits and c.analysis.json["weight_groups"]
    assert api.analyze(path, 16, xip=True, tradeoff=False, emit=False).json["min_fast_budget_bytes"] == plain_min


def _lraspp(tmp_path: Path, int8: bool) -> Path:
    return saved_model(tmp_path, fam_seg.lraspp_mobilenet_v3_large(), "lraspp_large", int8)


@pytest.mark.slow
@pytest.mark.parametrize("int8", [False, True], ids=["f32", "int8"])
def test_lraspp_mobilenet_v3_large_fits_256k(tmp_path, int8):
    path = _lraspp(tmp_path, int8)
    prep = api.prepare(path)
    rows = replace(prep, col_tiles=False)  # analyze tries channel groups before column tiles
    if not int8:  # the 5x5 dilated depthwise conv on 960 x 8 x 8 needs 276,480 bytes at one output row
        plain = api._plan(rows, 256 * 1024, None, True)
        assert isinstance(plain, NoFit) and plain.need_bytes == 276480 and plain.op_type == "DepthwiseConv"
    a = api.analyze(path, "256K", xip=True, prepared=prep, tradeoff=False)
    assert a.fits, a.reason
    if not int8:
        assert {g["cause"] for g in a.json["weight_groups"]} == {"activations"}
    v = api.verify(path, "256K", xip=True)
    assert v["pass"], v
    if int8:  # at 32K its depthwise convs run as channel groups: the output bytes are the untiled plan's
        small = api.compile_model(path, "32K", xip=True, prepared=prep)
        assert {g["cause"] for g in small.analysis.json["weight_groups"]} == {"activations"}
        whole = api.compile_model(path, "16M", xip=True, prepared=prep)
        assert len(whole.analysis.plan.units) == 1
        x = api.random_inputs(prep, seed=5)
        a, b = api.run_plan(small.plan_bytes, x), api.run_plan(whole.plan_bytes, x)
        assert a.fast_peak <= 32 * 1024
        for name in a.outputs:
            assert a.outputs[name].tobytes() == b.outputs[name].tobytes()
    if not int8:  # the minimum analyze reports (with groups) is far below, and compiles
        low = api.analyze(path, "16K", xip=True, prepared=prep, tradeoff=False, emit=False, groups_advice=True)
        m = low.json["min_fast_budget_bytes"]
        assert m <= 128 * 1024 < low.json["min_fast_budget_without_groups_bytes"]  # below column tiles' too
        assert api.compile_model(path, m, xip=True, prepared=prep).analysis.fits


@pytest.mark.slow
def test_mobilenet_v2_144_f32_fits_64k(tmp_path):
    path = tmp_path / "mbv2_144.onnx"
    onnx.save(builders.mobilenet_v2_224(size=144), path)
    prep = api.prepare(path)
    rows = replace(prep, col_tiles=False)  # analyze tries channel groups before column tiles
    assert isinstance(api._plan(rows, 64 * 1024, None, True), NoFit)
    a = api.analyze(path, "64K", xip=True, prepared=prep, tradeoff=False)
    assert a.fits and a.plan.fast_peak <= 64 * 1024, a.reason
    v = api.verify(path, "64K", xip=True)
    assert v["pass"], v
    low = api.analyze(path, "4K", xip=True, prepared=prep, tradeoff=False, emit=False, groups_advice=True)
    # the minimum is above the head's 5,120-byte pooled vector, which its joins in place hold beside one group
    assert not low.fits and low.json["min_fast_budget_bytes"] > 5120
    m = low.json["min_fast_budget_bytes"]
    # the smaller of channel groups' minimum (41,472 on rows) and column tiles' (when they are on)
    assert m <= 64 * 1024 and m <= low.json.get("min_fast_budget_without_groups_bytes", m)
    assert api.compile_model(path, m, xip=True, prepared=prep).analysis.fits


@settings(max_examples=10, deadline=None)
@given(int8=st.booleans(), c=st.integers(2, 20), h=st.integers(1, 7), k=st.sampled_from([1, 3, 5]),
       dil=st.sampled_from([1, 2]), mult=st.sampled_from([1, 2]), data=st.data())
def test_depthwise_split_reference_property(tmp_path_factory, int8, c, h, k, dil, mult, data):
    """Random depthwise shapes and group counts on the NumPy reference: int8 identical, float within 1e-5 relative."""
    from tigris.reference import run_reference

    groups = data.draw(st.integers(2, c), label="groups")
    path = saved_model(tmp_path_factory.mktemp("p"), _dw_model(c, h, k, dil, mult, seed=c * 31 + h), "m", int8)
    prep = api.prepare(path)
    (dw,) = [op for op in prep.graph.ops if op.op_type == "DepthwiseConv"]
    split = _split(prep, {dw.name: groups})
    x = {"x": np.random.default_rng(h).standard_normal((1, 4, h, h)).astype(np.float32)}
    (name,) = prep.graph.outputs
    a = np.asarray(run_reference(prep.graph, x, prep.lowered)[name])
    b = np.asarray(run_reference(split.graph, x, split.lowered)[name])
    if int8:
        assert a.tobytes() == b.tobytes()
    else:
        assert np.max(np.abs(a - b)) <= 1e-5 * max(1.0, float(np.abs(a).max()))


def _advice(path: Path, budget: str, xip: bool) -> dict:
    """What analyze reports about a budget that does not fit (the minima, the op limiting them, the groups)."""
    a = api.analyze(path, budget, xip=xip, tradeoff=False, emit=False, groups_advice=True)
    assert not a.fits
    keep = ("min_fast_budget_bytes", "min_fast_budget_without_groups_bytes", "min_fast_budget_xip_bytes",
            "limiting_op", "failed_op", "weight_groups_budget_bytes", "weight_groups")
    return {k: a.json.get(k) for k in keep}


def _refused(path: Path, xip: bool) -> int:
    """A budget at which analyze (groups and column tiles included) refuses the model: two thirds of the least it
    names (with weight groups when it names a budget for them), less while that still fits."""
    j = api.analyze(path, 16, xip=xip, tradeoff=False, emit=False, groups_advice=True).json
    budget = (j.get("weight_groups_budget_bytes") or j["min_fast_budget_bytes"]) * 2 // 3 // 16 * 16
    while api.analyze(path, budget, xip=xip, tradeoff=False, emit=False).fits:
        budget = budget * 2 // 3 // 16 * 16
    return budget


def _same_without_shortcuts(monkeypatch, path: Path, budget: str, xip: bool) -> None:
    fast = _advice(path, budget, xip)
    monkeypatch.setattr(api, "CHEAP_PROBES", False)  # full plans in the searches, no early refusal of a split
    slow = _advice(path, budget, xip)
    monkeypatch.setattr(api, "CHEAP_PROBES", True)
    assert fast == slow


@pytest.mark.parametrize("xip", [False, True], ids=["copied", "xip"])
def test_group_searches_shortcuts_change_no_answer(tmp_path, monkeypatch, xip):
    """The group searches' shortcuts (feasibility probes, the split attempt refusing before any bisection when an
    op over the budget is one no split helps) report the same minima, limiting op and groups as full plans do."""
    path = saved_model(tmp_path, _dw_model(96, 12, 5, 2, 1, seed=7), "m", False)
    top = _refused(path, xip)
    for budget in (top // 2 // 16 * 16, top):
        if budget != top and api.analyze(path, budget, xip=xip, tradeoff=False, emit=False).fits:
            continue  # input-channel groups (tried only where a panel does not fit) may fit below a refused budget
        _same_without_shortcuts(monkeypatch, path, str(budget), xip)


@pytest.mark.shared
@pytest.mark.parametrize("name", ["mlperf_tiny/vww_mbv1_025_96_int8.onnx", "mlperf_tiny/kws_dscnn_int8.onnx",
                                  "torchvision/mobilenet_v2_035_96_int8.onnx"])
def test_group_searches_shortcuts_change_no_answer_shared(monkeypatch, name):
    from tigris_testing import shared_model

    path = shared_model(name)
    _same_without_shortcuts(monkeypatch, path, str(_refused(path, False)), False)
