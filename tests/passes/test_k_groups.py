"""Input-channel (K) groups (tigris/passes/weight_split.py split_k, api._split_weights): a float op whose
output-channel groups cannot fit (one panel of every input channel is over the budget) runs as partial ops over
slices of its input channels summed by Adds.

* on random float Conv (1x1 and 3x3 with padding and stride, a fused Relu6), 1-D Conv, Gemm and MatMul (constant B,
  with transA, transB, alpha) models the split
  graph's host-runtime outputs match ONNX Runtime at the float tolerance (only the summation order changes), the
  plan passes the offset checker and the runtime's fast high-water mark equals the plan's peak;
* ``analyze`` picks K groups only where output-channel groups cannot fit, and its plan is deterministic;
* int8 Conv/Gemm ops split along K into exact int32 partial sums (ConvAcc/GemmAcc adding into one accumulator, one
  Requantize; their
  bit-exactness is tests/passes/test_k_acc.py's).
"""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from tigris import api
from tigris.ir import TigrisError
from tigris.ops import lower
from tigris.passes.weight_split import input_channels, k_splittable, split_k
from tigris.plan.check import check_plan

from passes._build import xy_model
from tigris_testing import shared_model

F = TensorProto.FLOAT


def _models(rng) -> dict[str, tuple[onnx.ModelProto, tuple[int, ...]]]:
    n = helper.make_node
    r = lambda *s: (rng.standard_normal(s) * 0.2).astype(np.float32)  # noqa: E731
    six = {"lo": np.float32(0), "hi": np.float32(6)}
    return {
        # 1x1 conv with a fused Relu6: the activation must follow the last Add, not each partial conv
        "conv1x1_relu6": (xy_model([n("Conv", ["x", "w", "b"], ["c"], kernel_shape=[1, 1]),
                                    n("Clip", ["c", "lo", "hi"], ["y"])],
                                   {"w": r(20, 37, 1, 1), "b": r(20), **six}, [1, 37, 3, 3], [1, 20, 3, 3]),
                          (1, 37, 3, 3)),
        "conv3x3_s2": (xy_model([n("Conv", ["x", "w", "b"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                                   strides=[2, 2])],
                                {"w": r(11, 19, 3, 3), "b": r(11)}, [1, 19, 7, 7], [1, 11, 4, 4]), (1, 19, 7, 7)),
        "conv_nobias": (xy_model([n("Conv", ["x", "w"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])],
                                 {"w": r(9, 13, 3, 3)}, [1, 13, 5, 4], [1, 9, 5, 4]), (1, 13, 5, 4)),
        "conv1d": (xy_model([n("Conv", ["x", "w", "b"], ["y"], kernel_shape=[3], pads=[1, 1])],
                            {"w": r(21, 17, 3), "b": r(21)}, [1, 17, 9], [1, 21, 9]), (1, 17, 9)),
        # Gemms with transA stay MatMuls with a constant B (A is [K, M]); alpha scales every partial product
        "matmul": (xy_model([n("Gemm", ["x", "B", "C"], ["y"], transA=1, alpha=0.5)], {"B": r(16, 27), "C": r(27)},
                            [16, 5], [5, 27]), (16, 5)),
        "matmul_tb": (xy_model([n("Gemm", ["x", "B", "C"], ["y"], transA=1, transB=1)], {"B": r(27, 16), "C": r(1, 27)},
                               [16, 5], [5, 27]), (16, 5)),
        "gemm": (xy_model([n("Gemm", ["x", "w", "b"], ["g"], transB=1), n("Relu", ["g"], ["y"])],
                          {"w": r(10, 45), "b": r(10)}, [1, 45], [1, 10]), (1, 45)),
    }


def _mac(prep: api.Prepared):
    (op,) = [o for o in prep.graph.ops if o.op_type in ("Conv", "Conv1D", "Gemm", "MatMul")]
    return op


def _ort(m: onnx.ModelProto, x: dict) -> np.ndarray:
    return ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, x)[0]


@pytest.mark.parametrize("name", ["conv1x1_relu6", "conv3x3_s2", "conv_nobias", "conv1d", "gemm", "matmul",
                                  "matmul_tb"])
@pytest.mark.parametrize("groups", [2, 5])
def test_k_split_matches_onnxruntime(tmp_path, name, groups):
    rng = np.random.default_rng(len(name) * 10 + groups)
    m, x_shape = _models(rng)[name]
    path = tmp_path / f"{name}.onnx"
    onnx.save(m, path)
    prep = api.prepare(path)
    op = _mac(prep)
    assert k_splittable(prep.graph, op) is None
    g = split_k(prep.graph, op.name, groups)
    kinds = [o.op_type for o in g.ops]
    assert kinds.count("Slice") == groups and kinds.count("Add") == groups - 1
    assert kinds.count(op.op_type) == groups
    # the activation and the bias once: only the last Add activates, only group 0 adds the bias
    adds = [o for o in g.ops if o.op_type == "Add"]
    assert all(o.attrs["fused_activation"] is None for o in adds[:-1])
    assert adds[-1].attrs["fused_activation"] == op.attrs.get("fused_activation")
    parts = [o for o in g.ops if o.op_type == op.op_type]
    assert all(o.attrs.get("fused_activation") is None for o in parts)
    assert [len([i for i in o.inputs if i]) for o in parts[1:]] == [2] * (groups - 1)
    split = api.Prepared(g, prep.reports, [lower(g, o) for o in g.ops])
    x = {"x": rng.standard_normal(x_shape).astype(np.float32)}
    ref = _ort(m, x)
    for budget in ("1M", "4K"):
        a = api.analyze(path, budget, prepared=split, tradeoff=False)
        assert a.fits, a.reason
        assert check_plan(a.prepared.graph, a.plan) == []
        run = api.run_plan(a.plan_bytes, x)
        assert run.fast_peak == a.plan.fast_peak
        got = run.outputs["y"]
        assert np.max(np.abs(got - ref)) <= 1e-5 * max(1.0, float(np.abs(ref).max()))


def _wide_model(rng) -> onnx.ModelProto:
    """A 1x1 conv over 600 channels to 20 (48,000 bytes of weights; one panel of 8 output channels over every
    input channel is 19,200) with a fused Relu6, on a 2x2 image."""
    n = helper.make_node
    return xy_model([n("Conv", ["x", "w", "b"], ["c"], kernel_shape=[1, 1]), n("Clip", ["c", "lo", "hi"], ["y"])],
                    {"w": (rng.standard_normal((20, 600, 1, 1)) * 0.05).astype(np.float32),
                     "b": rng.standard_normal(20).astype(np.float32), "lo": np.float32(0), "hi": np.float32(6)},
                    [1, 600, 2, 2], [1, 20, 2, 2])


@pytest.mark.parametrize("comp", ["none", "lz4"])
def test_analyze_uses_k_groups_only_when_panels_do_not_fit(tmp_path, comp):
    rng = np.random.default_rng(3)
    m = _wide_model(rng)
    path = tmp_path / "wide.onnx"
    onnx.save(m, path)
    x = {"x": rng.standard_normal((1, 600, 2, 2)).astype(np.float32)}
    ref = _ort(m, x)
    # 32K: output-channel groups (a panel is 19,200 bytes) fit, as before
    a = api.analyze(path, "32K", compression=comp, tradeoff=False)
    assert a.fits and [g["channels"] for g in a.json["weight_groups"]] == ["output"]
    assert not any(o.op_type == "Add" for o in a.prepared.graph.ops)
    # 16K: a panel does not fit; the conv runs as input-channel groups
    b = api.analyze(path, "16K", compression=comp, tradeoff=False)
    assert b.fits, b.reason
    (rec,) = b.json["weight_groups"]
    assert rec["channels"] == "input" and rec["groups"] >= 3 and rec["max_group_bytes"] < 16 * 1024
    assert any("input-channel weight groups" in note for note in b.notes)
    assert check_plan(b.prepared.graph, b.plan) == []
    run = api.run_plan(b.plan_bytes, x)
    assert run.fast_peak == b.plan.fast_peak <= 16 * 1024
    assert np.max(np.abs(run.outputs["y"] - ref)) <= 1e-5 * max(1.0, float(np.abs(ref).max()))
    assert api.analyze(path, "16K", compression=comp, tradeoff=False).plan_bytes == b.plan_bytes
    # with XIP nothing is split
    assert api.analyze(path, "16K", xip=True, tradeoff=False).json["weight_groups"] == []


def test_k_split_refuses(tmp_path):
    rng = np.random.default_rng(4)
    path = tmp_path / "wide.onnx"
    onnx.save(_wide_model(rng), path)
    g = api.prepare(path).graph
    conv = _mac(api.prepare(path))
    assert input_channels(g, conv) == 600
    with pytest.raises(TigrisError, match="cannot split"):
        split_k(g, conv.name, 601)
    with pytest.raises(TigrisError, match="cannot split"):
        split_k(g, conv.name, 1)
    with pytest.raises(TigrisError, match="no such op"):
        split_k(g, "nope", 2)
    before = list(g.ops)
    split_k(g, conv.name, 3)
    assert g.ops == before  # the input graph is unchanged


@pytest.mark.shared
def test_int8_splits_along_k_into_int32_partial_sums():
    path = shared_model("torchvision/efficientnet_lite0_128_int8.onnx")
    prep = api.prepare(path)
    conv = next(o for o in prep.graph.ops if o.op_type == "Conv")
    assert k_splittable(prep.graph, conv) is None
    kinds = [o.op_type for o in split_k(prep.graph, conv.name, 3).ops]
    assert kinds.count("ConvAcc") == 3 and kinds.count("Requantize") == 1 and "AccAdd" not in kinds


@pytest.mark.shared
def test_efficientnet_f32_compiles_at_32k_with_copied_weights():
    """The 1x1 projections from 1152 channels (a panel of 8 output channels over them: 36,864 bytes) and the head
    run as input-channel groups; the plan is proven, stays in 32K on the host runtime and matches ONNX Runtime."""
    path = shared_model("torchvision/efficientnet_lite0_128_f32.onnx")
    prep = api.prepare(path)
    a = api.analyze(path, "32K", prepared=prep, tradeoff=False)
    assert a.fits, a.reason
    k_ops = {g["op"] for g in a.json["weight_groups"] if g["channels"] == "input"}
    assert "/blocks/blocks.6/blocks.6.0/conv_pwl/Conv" in k_ops
    assert check_plan(a.prepared.graph, a.plan) == []
    x = api.random_inputs(prep, seed=1)
    run = api.run_plan(a.plan_bytes, x)
    assert run.fast_peak == a.plan.fast_peak <= 32 * 1024
    m = onnx.load(str(path))
    ref = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, x)[0]
    (got,) = run.outputs.values()
    assert np.max(np.abs(got - ref)) <= 1e-4 * max(1.0, float(np.abs(ref).max()))


def test_minimum_advice_counts_k_groups_and_compiles_there():
    """mnist-8 at 1K without XIP: its 16-channel conv's weights (12,864 B) need input-channel groups below 12K, and
    the minimum analyze names counts them (it was the planner's 14,528 B, or output-channel groups' 12,768 B, while
    2K compiled); compile at the named budget fits, as the advice says (it probes analyze's own sequence)."""
    from pathlib import Path

    mnist = Path(__file__).resolve().parents[2] / "examples" / "mnist-8.onnx"
    low = api.analyze(mnist, "1K", tradeoff=False, emit=False, groups_advice=True)
    assert not low.fits
    m = low.json["min_fast_budget_bytes"]
    assert m == low.json["weight_groups_budget_bytes"] <= 2048 < low.json["min_fast_budget_without_groups_bytes"]
    assert low.json["limiting_op"]["op"] == "Convolution110"
    there = api.analyze(mnist, m, tradeoff=False, emit=False)
    assert there.fits and any(g["channels"] == "input" for g in there.json["weight_groups"])
