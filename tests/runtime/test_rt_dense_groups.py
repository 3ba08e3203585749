"""Dense chains (MLPs, autoencoders) below their row floor, on the host runtime (docs/memory-planning.md "Channel
tails"): a Gemm on a vector needs its whole input and output vector as a unit of its own, which no row or column tile
cuts; ``tigris analyze --xip`` (channel groups) runs it as output-feature groups, each reading the whole input and
writing its slice, joined in place, and takes the element-wise ops after it along (a folded BatchNorm's Add with a
constant vector, sliced per group) when the chain ends in a graph output. Each model's minimum is at most 0.8x its
row-tile floor; the plan at it (``compile_model``, so proven by the offset checker) gives the untiled plan's output
(int8 bit for bit, float within 1e-5 x max(1, max|ref|)) and ONNX Runtime's (float within 1e-4), with the runtime's
fast high-water mark at the plan's peak, and a budget 16 bytes below it does not compile."""
from __future__ import annotations

import numpy as np
import pytest

from tigris import api
from tigris.ir import AnalyzedGraph, Op, Tensor
from tigris.passes.weight_split import channel_tail, split_op
from tigris.plan import min_fast_budget
from tigris_testing import compile_like_untiled, family_model, host_runtime, matches_ort

TARGET = 0.8  # issue 15


def _grouped_minimum(path):
    """(prepared, row-tile floor, analyze's minimum with groups)."""
    prep = api.prepare(path)
    floor = min_fast_budget(prep.graph, **{**api._plan_kwargs(prep, True), "col_tiles": False})
    a = api.analyze(path, 16, xip=True, prepared=prep, emit=False, groups_advice=True, tradeoff=False)
    return prep, floor, a.min_fast_budget


def _runs_at_minimum(path, float_model: bool):
    host_runtime()
    prep, floor, budget = _grouped_minimum(path)
    assert budget <= TARGET * floor, (path.name, budget, floor)
    c, x, outputs = compile_like_untiled(path, prep, budget)
    split = c.analysis.prepared.graph
    assert any(op.attrs.get("weight_group") for op in split.ops), "no groups at the minimum"
    if float_model:
        matches_ort(path, x, outputs)
    below = api.analyze(path, budget - 16, xip=True, prepared=prep, emit=False, tradeoff=False)
    assert below.plan is None
    return c


@pytest.mark.parametrize("fam,int8", [("mlp", False), ("mlp", True), ("dense_ae", False)])
def test_family_dense_chain_runs_below_its_row_floor(tmp_path, fam, int8):
    _runs_at_minimum(family_model(tmp_path, fam, int8), not int8)


@pytest.mark.shared
def test_ad_autoencoder_f32_tail_add_runs_in_groups(shared_models):
    """The autoencoder's last Gemm (128 -> 640) and the Add after it, whose output is the graph output, set 5,120
    bytes (the Add's whole input and output vectors); the Add rides along with the Gemm's groups."""
    c = _runs_at_minimum(shared_models / "mlperf_tiny/ad_autoencoder_f32.onnx", True)
    assert c.analysis.plan.fast_peak <= 4096


def _dense_graph(const_shape, graph_output: bool = True) -> AnalyzedGraph:
    """x[1,8] -> Gemm(6) -> Add(constant of ``const_shape``) -> y (graph output, or read by two Relus)."""
    rng = np.random.default_rng(0)
    g = AnalyzedGraph("dense", {}, [], [], [])
    for n, s in (("x", (1, 8)), ("h", (1, 6)), ("y", (1, 6)), ("z", (1, 6)), ("z2", (1, 6))):
        g.tensors[n] = Tensor(n, s, "float32", None, "plain")
    g.weights["w"] = rng.standard_normal((6, 8)).astype(np.float32)
    g.weights["b"] = rng.standard_normal(6).astype(np.float32)
    g.weights["k"] = rng.standard_normal(const_shape).astype(np.float32)
    for n in ("w", "b", "k"):
        g.tensors[n] = Tensor(n, g.weights[n].shape, "float32", None, "plain")
    g.ops = [Op("gemm", "Gemm", ("x", "w", "b"), ("h",), {"transB": 1}), Op("add", "Add", ("h", "k"), ("y",), {})]
    g.inputs, g.outputs = ["x"], ["y"]
    if not graph_output:
        g.ops += [Op("relu", "Relu", ("y",), ("z",), {}), Op("relu2", "Relu", ("y",), ("z2",), {})]
        g.outputs = ["z", "z2"]
    return g


def test_dense_tail_takes_a_constant_vector_add_before_a_graph_output():
    g = _dense_graph((6,))
    assert channel_tail(g, "gemm") == ("add",)
    s = split_op(g, "gemm", 3, ("add",))
    adds = [op for op in s.ops if op.op_type == "Add"]
    assert len(adds) == 3 and "k" not in s.weights
    # each group's Add reads its features' slice of the constant
    got = np.concatenate([s.weights[op.inputs[1]] for op in adds])
    np.testing.assert_array_equal(got, g.weights["k"])
    assert s.ops[-1].op_type == "Concat" and s.ops[-1].outputs == ("y",)


def test_dense_tail_rules():
    assert channel_tail(_dense_graph((1,)), "gemm") == ("add",)  # one value is shared
    assert channel_tail(_dense_graph((1, 6)), "gemm") == ("add",)
    assert channel_tail(_dense_graph((3, 6)), "gemm") == ()  # not a vector along the features
    # reduces nothing and ends in no graph output: the join stays after the Gemm
    assert channel_tail(_dense_graph((6,), graph_output=False), "gemm") == ()
