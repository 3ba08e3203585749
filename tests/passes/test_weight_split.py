"""Weight groups (tigris/passes/weight_split.py, api._split_weights): an op whose copied weights do not fit the fast
budget runs as output-channel groups.

* the group bounds cover the channels exactly and evenly, in whole panels for float convs;
* on random Conv/Gemm models (float and per-channel int8; channel counts not divisible by the group count, 1x1
  images, 1x1 and 3x3 kernels) the split graph's host-runtime outputs equal the unsplit plan's at a budget where both
  fit: int8 byte for byte, float within 1e-5 relative (the kernels block channels, so a channel's summation order
  may depend on where its group starts);
* ``analyze`` splits only when a plan does not fit (plans that fit are unchanged), the split plan matches ONNX
  Runtime, passes the offset checker, stays within the budget at run time and is deterministic;
* the shared MobileNetV2-0.35 f32 with ``-c lz4`` compiles at 256K (its 1x1 conv to 1280 channels has 578,560 bytes
  of weights) and verifies.
"""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper

from tigris import api
from tigris.ir import TigrisError
from tigris.ops import lower
from tigris.passes.weight_split import group_bounds, split_op, splittable
from tigris.plan import NoFit
from tigris.plan.check import check_plan

from passes._build import model, xy_model
from tigris_testing import shared_model

F, I8 = TensorProto.FLOAT, TensorProto.INT8


def test_group_bounds_cover_exactly():
    rng = np.random.default_rng(0)
    for _ in range(300):
        step = int(rng.choice([1, 8]))
        oc = int(rng.integers(1, 300))
        units = -(-oc // step)
        g = int(rng.integers(1, units + 1))
        b = group_bounds(oc, g, step)
        assert len(b) == g and b[0][0] == 0 and b[-1][1] == oc
        assert all(b[i][1] == b[i + 1][0] for i in range(g - 1))
        assert all(a < c for a, c in b)
        assert all(a % step == 0 for a, _ in b)
        sizes = [-(-(c - a) // step) for a, c in b]
        assert max(sizes) - min(sizes) <= 1
    with pytest.raises(ValueError):
        group_bounds(10, 11)
    with pytest.raises(ValueError):
        group_bounds(16, 3, 8)


def _model(rng, int8: bool, c: int, oc: int, h: int, k: int, nf: int, per_tensor: bool = False) -> onnx.ModelProto:
    """x [1,c,h,h] -> Conv k x k (pad k//2) to oc channels -> Relu -> Flatten -> Gemm to nf -> y; int8 as QDQ with
    per-channel int8 weights (axis 0; ``per_tensor``: one scale per weight) and int32 biases."""
    n = helper.make_node
    w1 = rng.standard_normal((oc, c, k, k)).astype(np.float32) * 0.3
    b1 = rng.standard_normal(oc).astype(np.float32) * 0.1
    kf = oc * h * h
    w2 = rng.standard_normal((nf, kf)).astype(np.float32) * 0.05
    b2 = rng.standard_normal(nf).astype(np.float32) * 0.1
    conv_attrs = dict(kernel_shape=[k, k], pads=[k // 2] * 4)
    if not int8:
        inits = {"w1": w1, "b1": b1, "w2": w2, "b2": b2}
        nodes = [n("Conv", ["x", "w1", "b1"], ["c"], **conv_attrs), n("Relu", ["c"], ["r"]),
                 n("Flatten", ["r"], ["f"]), n("Gemm", ["f", "w2", "b2"], ["y"], transB=1)]
    else:
        sx, sa, sy = np.float32(0.05), np.float32(0.04), np.float32(0.08)
        s1 = rng.uniform(0.002, 0.01, 1 if per_tensor else oc).astype(np.float32)
        s2 = rng.uniform(0.001, 0.004, 1 if per_tensor else nf).astype(np.float32)
        inits = {
            "sx": sx, "zx": np.int8(3), "sa": sa, "za": np.int8(-5), "sy": sy, "zy": np.int8(7),
            "w1": rng.integers(-127, 128, (oc, c, k, k)).astype(np.int8), "s1": s1, "z1": np.zeros(s1.size, np.int8),
            "b1": rng.integers(-3000, 3000, oc).astype(np.int32), "sb1": (sx * s1).astype(np.float32),
            "zb1": np.zeros(s1.size, np.int32),
            "w2": rng.integers(-127, 128, (nf, kf)).astype(np.int8), "s2": s2, "z2": np.zeros(s2.size, np.int8),
            "b2": rng.integers(-3000, 3000, nf).astype(np.int32), "sb2": (sa * s2).astype(np.float32),
            "zb2": np.zeros(s2.size, np.int32),
        }
        if per_tensor:  # scalars, as a per-tensor QDQ model writes them
            for key in ("s1", "z1", "sb1", "zb1", "s2", "z2", "sb2", "zb2"):
                inits[key] = inits[key].reshape(())
        nodes = [
            n("QuantizeLinear", ["x", "sx", "zx"], ["xq"]), n("DequantizeLinear", ["xq", "sx", "zx"], ["xd"]),
            n("DequantizeLinear", ["w1", "s1", "z1"], ["w1d"], axis=0),
            n("DequantizeLinear", ["b1", "sb1", "zb1"], ["b1d"], axis=0),
            n("Conv", ["xd", "w1d", "b1d"], ["c"], **conv_attrs), n("Relu", ["c"], ["r"]),
            n("QuantizeLinear", ["r", "sa", "za"], ["rq"]), n("DequantizeLinear", ["rq", "sa", "za"], ["rd"]),
            n("Flatten", ["rd"], ["f"]),
            n("DequantizeLinear", ["w2", "s2", "z2"], ["w2d"], axis=0),
            n("DequantizeLinear", ["b2", "sb2", "zb2"], ["b2d"], axis=0),
            n("Gemm", ["f", "w2d", "b2d"], ["g"], transB=1),
            n("QuantizeLinear", ["g", "sy", "zy"], ["yq"]), n("DequantizeLinear", ["yq", "sy", "zy"], ["y"]),
        ]
    return model(nodes, [("x", F, [1, c, h, h])], [("y", F, [1, nf])], inits)


def _split(prep: api.Prepared, splits: dict[str, int]) -> api.Prepared:
    g = prep.graph
    for name, groups in splits.items():
        g = split_op(g, name, groups)
    return api.Prepared(g, prep.reports, [lower(g, op) for op in g.ops])


def _mac_ops(prep: api.Prepared) -> list:
    return [op for op in prep.graph.ops if splittable(prep.graph, op) is None]


CASES = [  # (int8, c, oc, h, k, nf, conv groups, gemm groups)
    (False, 3, 13, 5, 3, 7, 2, 3),
    (False, 4, 37, 1, 1, 11, 4, 5),  # 1x1 image, 37 channels: float panels of 8 -> groups of 8/8/8/13
    (False, 2, 64, 3, 1, 9, 5, 9),
    (True, 3, 13, 5, 3, 7, 3, 2),
    (True, 5, 29, 1, 1, 10, 7, 4),  # 1x1 image, per-channel int8, 29 channels in 7 groups
    (True, 2, 40, 4, 3, 6, 6, 6),
    (True, 3, 19, 2, 3, 5, 4, 3, True),  # per-tensor int8 weights: every group shares the scale
]


@pytest.mark.parametrize("case", CASES, ids=[f"{'int8' if c[0] else 'f32'}-oc{c[2]}-h{c[3]}" for c in CASES])
def test_split_plan_equals_unsplit_plan(tmp_path, case):
    int8, c, oc, h, k, nf, gc, gg = case[:8]
    rng = np.random.default_rng(oc * 7 + h)
    m = _model(rng, int8, c, oc, h, k, nf, *case[8:])
    path = tmp_path / "m.onnx"
    onnx.save(m, path)
    prep = api.prepare(path)
    conv, gemm = _mac_ops(prep)
    split = _split(prep, {conv.name: gc, gemm.name: gg})
    assert sum(op.op_type == "Concat" for op in split.graph.ops) >= 2
    x = {"x": rng.standard_normal((1, c, h, h)).astype(np.float32)}
    for budget, comp in (("1M", "none"), ("1M", "lz4")):
        plain = api.analyze(path, budget, compression=comp, prepared=prep, tradeoff=False)
        grouped = api.analyze(path, budget, compression=comp, prepared=split, tradeoff=False)
        assert plain.fits and grouped.fits and plain.json["weight_groups"] == []
        a = api.run_plan(plain.plan_bytes, x).outputs["y"]
        b = api.run_plan(grouped.plan_bytes, x).outputs["y"]
        if int8:
            assert a.tobytes() == b.tobytes()  # each channel is the same integer arithmetic on the same bytes
        else:  # the float kernels' blocking (channels per micro-kernel) may change a channel's summation order
            assert np.max(np.abs(a - b)) <= 1e-5 * max(1.0, float(np.abs(a).max()))
    # and both agree with ONNX Runtime on the model as written
    ref = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, x)[0]
    step = 0.08 if int8 else 0.0
    assert np.max(np.abs(b - ref)) <= max(1e-4 * max(1.0, float(np.abs(ref).max())), 1.01 * step)


def _big_conv_model(tmp_path, int8: bool):
    """A conv whose weights (oc=96, 3x3 over 32 channels: 110,592 bytes float, 27,648 int8) are most of what it needs
    on a 3x3 image."""
    rng = np.random.default_rng(5)
    m = _model(rng, int8, 32, 96, 3, 3, 10)
    path = tmp_path / ("big8.onnx" if int8 else "big.onnx")
    onnx.save(m, path)
    return path, m


@pytest.mark.parametrize("int8", [False, True], ids=["f32", "int8"])
@pytest.mark.parametrize("comp", ["none", "lz4"])
def test_analyze_splits_only_what_does_not_fit(tmp_path, int8, comp):
    path, m = _big_conv_model(tmp_path, int8)
    prep = api.prepare(path)
    wbytes = api._const_bytes(prep.lowered[[i for i, op in enumerate(prep.graph.ops) if op.op_type == "Conv"][0]])
    budget = wbytes // 2 + 8192
    plain = api._plan(prep, budget, None, False)
    assert isinstance(plain, NoFit)  # what the planner alone says: the conv's weights do not fit
    a = api.analyze(path, budget, compression=comp, tradeoff=False)
    assert a.fits, a.reason
    groups = a.json["weight_groups"]
    assert [g["op"] for g in groups][0].endswith("Conv") or groups
    conv_g = next(g for g in groups if g["weight_bytes"] == wbytes)
    assert conv_g["groups"] >= 2 and conv_g["max_group_bytes"] < budget
    assert any("weight groups" in note for note in a.notes)
    assert check_plan(a.prepared.graph, a.plan) == []
    x = {"x": np.random.default_rng(1).standard_normal((1, 32, 3, 3)).astype(np.float32)}
    run = api.run_plan(a.plan_bytes, x)
    assert run.fast_peak <= budget and run.fast_peak == a.plan.fast_peak
    ref = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, x)[0]
    tol = 0.08 * 1.01 if int8 else 1e-4 * max(1.0, float(np.abs(ref).max()))
    assert np.max(np.abs(run.outputs["y"] - ref)) <= tol
    # the same bytes on every compile
    again = api.analyze(path, budget, compression=comp, tradeoff=False)
    assert again.plan_bytes == a.plan_bytes
    # at a budget that fits without groups, nothing is split and the plan is the planner's own
    big = api.analyze(path, "1M", compression=comp, tradeoff=False)
    assert big.json["weight_groups"] == [] and len(big.prepared.graph.ops) == len(prep.graph.ops)


def test_xip_and_hopeless_budgets_are_not_split(tmp_path):
    path, _ = _big_conv_model(tmp_path, False)
    tiny = api.analyze(path, "2K", tradeoff=False, groups_advice=True)  # the activations alone do not fit
    assert not tiny.fits and tiny.json["weight_groups"] == []
    assert len(tiny.prepared.graph.ops) == len(api.prepare(path).graph.ops)
    # the advice names a budget where weight groups make it compile, below the minimum without them
    m = tiny.json["weight_groups_budget_bytes"]
    # (it is then the minimum reported; the planner's own without groups is kept beside it)
    assert m is not None and m == tiny.json["min_fast_budget_bytes"] < tiny.json["min_fast_budget_without_groups_bytes"]
    there = api.analyze(path, m, tradeoff=False)
    assert there.fits and there.json["weight_groups"]
    with pytest.raises(api.DoesNotFitError, match=f"with weight groups it compiles at -m {api.format_size(m)}"):
        api.compile_model(path, "2K")
    xip = api.analyze(path, "16K", xip=True, tradeoff=False)
    assert xip.json["weight_groups"] == []


def test_split_refuses_what_it_cannot_split(tmp_path):
    path, _ = _big_conv_model(tmp_path, False)
    g = api.prepare(path).graph
    relu = next(op for op in g.ops if op.op_type not in ("Conv", "Gemm"))
    conv = next(op for op in g.ops if op.op_type == "Conv")
    with pytest.raises(TigrisError, match="cannot split"):
        split_op(g, relu.name, 2)
    with pytest.raises(TigrisError, match="cannot split"):
        split_op(g, conv.name, 97)
    with pytest.raises(TigrisError, match="no such op"):
        split_op(g, "nope", 2)
    before = list(g.ops)
    split_op(g, conv.name, 3)
    assert g.ops == before  # the input graph is unchanged


@pytest.mark.shared
def test_mobilenet_v2_f32_lz4_fits_256k():
    path = shared_model("torchvision/mobilenet_v2_035_96_f32.onnx")
    prep = api.prepare(path)
    assert isinstance(api._plan(prep, 256 * 1024, None, False), NoFit)
    a = api.analyze(path, "256K", compression="lz4", prepared=prep, tradeoff=False)
    assert a.fits, a.reason
    (g,) = a.json["weight_groups"]
    assert g["op"] == "/features/features.18/features.18.0/Conv" and g["groups"] == 3
    # (at 16K it compiles: the head conv in channel groups, each pooling its own channels, "Channel tails")
    low = api.analyze(path, "8K", compression="lz4", prepared=prep, tradeoff=False, emit=False, groups_advice=True)
    # the planner's own minimum (column tiles included) is set by that conv's 578,560 bytes of weights
    assert not low.fits
    assert low.json["min_fast_budget_without_groups_bytes"] == api._min_fast(prep, None, False) > 578560
    assert low.json["min_fast_budget_bytes"] == low.json["weight_groups_budget_bytes"] < 64 * 1024
    v = api.verify(path, "256K", compression="lz4")
    assert v["pass"], v


def _other_kinds(rng) -> dict[str, tuple[onnx.ModelProto, tuple[int, ...]]]:
    """A 1-D conv (NWC, 21 channels) and MatMuls with a constant B (a Gemm with transA, which stays a MatMul), with
    and without transB, the bias a vector or broadcast [1, N]."""
    n = helper.make_node
    r = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    return {
        "conv1d": (xy_model([n("Conv", ["x", "w", "b"], ["y"], kernel_shape=[3], pads=[1, 1])],
                            {"w": r(21, 6, 3), "b": r(21)}, [1, 6, 9], [1, 21, 9]), (1, 6, 9)),
        "matmul": (xy_model([n("Gemm", ["x", "B", "C"], ["y"], transA=1, alpha=0.5)], {"B": r(16, 27), "C": r(27)},
                            [16, 5], [5, 27]), (16, 5)),
        "matmul_tb": (xy_model([n("Gemm", ["x", "B", "C"], ["y"], transA=1, transB=1)], {"B": r(27, 16), "C": r(1, 27)},
                               [16, 5], [5, 27]), (16, 5)),
    }


@pytest.mark.parametrize("name", ["conv1d", "matmul", "matmul_tb"])
def test_other_kinds_split_equal_unsplit(tmp_path, name):
    rng = np.random.default_rng(11)
    m, x_shape = _other_kinds(rng)[name]
    path = tmp_path / f"{name}.onnx"
    onnx.save(m, path)
    prep = api.prepare(path)
    (op,) = _mac_ops(prep)
    assert op.op_type == ("Conv1D" if name == "conv1d" else "MatMul")
    groups = 3 if name == "conv1d" else 4  # 21 float conv channels are 3 panels of 8
    split = _split(prep, {op.name: groups})
    assert sum(o.attrs.get("weight_group", ("", -1))[1] >= 0 for o in split.graph.ops) == groups
    x = {"x": rng.standard_normal(x_shape).astype(np.float32)}
    a = api.run_plan(api.analyze(path, "1M", prepared=prep, tradeoff=False).plan_bytes, x).outputs["y"]
    b = api.run_plan(api.analyze(path, "1M", prepared=split, tradeoff=False).plan_bytes, x).outputs["y"]
    ref = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, x)[0]
    tol = 1e-5 * max(1.0, float(np.abs(ref).max()))
    assert np.max(np.abs(a - b)) <= tol and np.max(np.abs(b - ref)) <= 10 * tol


def test_fp16_weights_split(tmp_path):
    """``--weights fp16``: every group stores its slice as halves and widens only that slice in its scratch."""
    path, m = _big_conv_model(tmp_path, False)
    prep = api.prepare(path, weights="fp16")
    conv = next(i for i, op in enumerate(prep.graph.ops) if op.op_type == "Conv")
    budget = api._const_bytes(prep.lowered[conv]) // 2 + 16384
    a = api.analyze(path, budget, compression="lz4", weights="fp16", tradeoff=False)
    assert a.fits and a.json["weight_groups"], a.reason
    x = {"x": np.random.default_rng(2).standard_normal((1, 32, 3, 3)).astype(np.float32)}
    got = api.run_plan(a.plan_bytes, x).outputs["y"]
    whole = api.run_plan(api.analyze(path, "1M", weights="fp16", prepared=prep, tradeoff=False).plan_bytes, x)
    assert np.max(np.abs(got - whole.outputs["y"])) <= 1e-5 * max(1.0, float(np.abs(got).max()))


@settings(max_examples=12, deadline=None)
@given(int8=st.booleans(), c=st.integers(1, 4), oc=st.integers(2, 40), h=st.integers(1, 5), k=st.sampled_from([1, 3]),
       nf=st.integers(2, 12), per_tensor=st.booleans(), data=st.data())
def test_split_reference_property(tmp_path_factory, int8, c, oc, h, k, nf, per_tensor, data):
    """Random shapes and group counts on the NumPy reference: int8 (per-channel or per-tensor weights) identical,
    float within 1e-5 relative."""
    from tigris.passes.weight_split import max_groups
    from tigris.reference import run_reference

    rng = np.random.default_rng(oc * 100 + h * 10 + c)
    path = tmp_path_factory.mktemp("p") / "m.onnx"
    onnx.save(_model(rng, int8, c, oc, h, k, nf, per_tensor), path)
    prep = api.prepare(path)
    conv, gemm = _mac_ops(prep)
    gc = data.draw(st.integers(1, max_groups(prep.graph, conv)), label="conv groups")  # 1: left whole
    gg = data.draw(st.integers(2, nf), label="gemm groups")
    split = _split(prep, {conv.name: gc, gemm.name: gg} if gc > 1 else {gemm.name: gg})
    x = {"x": rng.standard_normal((1, c, h, h)).astype(np.float32)}
    a = np.asarray(run_reference(prep.graph, x, prep.lowered)["y"])
    b = np.asarray(run_reference(split.graph, x, split.lowered)["y"])
    if int8:
        assert a.tobytes() == b.tobytes()
    else:
        assert np.max(np.abs(a - b)) <= 1e-5 * max(1.0, float(np.abs(a).max()))


@pytest.mark.shared
def test_mobilenet_v2_int8_groups_bytes_equal_unsplit():
    """MobileNetV2-0.35 int8 with LZ4 weights: at 64K its last conv runs as weight groups; the output bytes on the
    host runtime are those of the unsplit plan at 256K."""
    path = shared_model("torchvision/mobilenet_v2_035_96_int8.onnx")
    prep = api.prepare(path)
    grouped = api.compile_model(path, "64K", compression="lz4", prepared=prep)
    whole = api.compile_model(path, "256K", compression="lz4", prepared=prep)
    assert grouped.analysis.json["weight_groups"] and not whole.analysis.json["weight_groups"]
    x = api.random_inputs(prep, seed=3)
    a, b = api.run_plan(grouped.plan_bytes, x), api.run_plan(whole.plan_bytes, x)
    assert a.fast_peak <= 64 * 1024
    for name in a.outputs:
        assert a.outputs[name].tobytes() == b.outputs[name].tobytes()
