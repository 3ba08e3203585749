"""Products below the row floor (docs/memory-planning.md "Products and dense layers over tokens"): an attention
MatMul ``[1, H, M, K] x [1, H, K, N]`` runs on row bands of its queries with the keys whole (``matmul.ROW_BANDS``,
``OpKind.whole_inputs``), and a dense layer over tokens stays the strided MatMul (matmul_relabel rule 6b). The ViT
families' smallest fast budget drops to at most 0.8x of the earlier figure; plans there and at random budgets are
proven, run on the host runtime like the untiled plan (bit for bit, float too: each output element is the same
dot product), agree with ONNX Runtime, and reach the plan's peak. (vit_block_decomposed int8's float island of
means over each token's features runs as sequence GAPs, pass reducemean_gap rule 1, accumulating over row tiles.)"""
from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from tigris import api
from tigris.plan.check import check_plan

from tigris_testing import family_model, saved_model  # noqa: E402

logging.getLogger().setLevel(logging.ERROR)  # ORT's quantizer advice

# the --xip figure of each family before these rules (docs/benchmarks.md plan_col_tiles, row tiles)
EARLIER = {("vit_block", False): 4096, ("vit_block", True): 1024, ("vit_cls", False): 4496, ("vit_cls", True): 1136,
           ("vit_block_decomposed", False): 4096, ("vit_block_decomposed", True): 1088}


def _run_like_untiled(path: Path, budget: int, seed: int = 1):
    prep = api.prepare(path)
    c = api.compile_model(path, budget, xip=True, prepared=prep)
    assert c.analysis.fits, c.analysis.reason
    g = c.analysis.prepared.graph
    assert check_plan(g, c.analysis.plan) == []
    x = api.random_inputs(prep, seed=seed)
    run = api.run_plan(c.plan_bytes, x)
    assert run.fast_peak == c.analysis.plan.fast_peak <= budget
    whole = api.run_plan(api.compile_model(path, "8M", xip=True, prepared=prep).plan_bytes, x)
    for k, v in run.outputs.items():
        assert v.tobytes() == whole.outputs[k].tobytes(), k
    ref = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, x)
    for v, r in zip(run.outputs.values(), ref):
        np.testing.assert_allclose(v, r, rtol=0, atol=(0.05 if "int8" in path.name else 1e-4) *
                                   max(1.0, float(np.abs(r).max())))
    return c


@pytest.mark.parametrize("fam,int8", sorted(EARLIER))
def test_vit_families_below_the_earlier_figure(tmp_path, fam, int8):
    path = family_model(tmp_path, fam, int8)
    a = api.analyze(path, "64", xip=True, tradeoff=False, emit=False)
    m = a.json["min_fast_budget_bytes"]
    assert m <= 0.8 * EARLIER[(fam, int8)], m
    c = _run_like_untiled(path, m)
    g = c.analysis.prepared.graph
    if fam != "vit_block_decomposed":  # its single-head product is rank 3 (M is not a row axis): structural
        attn = [i for i, op in enumerate(g.ops) if op.op_type == "MatMul" and len(g.tensors[op.outputs[0]].shape) == 4]
        assert attn and any(len(u.tile_rows) > 1 and set(attn) & set(u.ops) for u in c.analysis.plan.units)


def _attention(heads: int, m: int, k: int, seed: int) -> onnx.ModelProto:
    """Queries times keys transposed, both made from the input by 1x1 convs (so the quantizer calibrates their
    grids), then an element-wise tail: ``[1, H, M, K] x [1, H, K, M]``."""
    rng = np.random.default_rng(seed)
    nodes = [helper.make_node("Conv", ["x", "wq"], ["q"], kernel_shape=[1, 1]),
             helper.make_node("Conv", ["x", "wk"], ["kk"], kernel_shape=[1, 1]),
             helper.make_node("Transpose", ["kk"], ["kt"], perm=[0, 1, 3, 2]),
             helper.make_node("MatMul", ["q", "kt"], ["s"]),
             helper.make_node("Sigmoid", ["s"], ["y"])]
    inits = [numpy_helper.from_array((rng.standard_normal((heads, 3, 1, 1)) * 0.5).astype(np.float32), "wq"),
             numpy_helper.from_array((rng.standard_normal((heads, 3, 1, 1)) * 0.5).astype(np.float32), "wk")]
    g = helper.make_graph(nodes, "attn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, m, k])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, heads, m, m])], inits)
    mod = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    mod.ir_version = 8
    return mod


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(heads=st.integers(1, 3), m=st.integers(4, 20), k=st.integers(1, 9), frac=st.floats(0.2, 0.9),
       int8=st.booleans(), seed=st.integers(0, 99))
def test_random_products_on_row_bands(tmp_path_factory, heads, m, k, frac, int8, seed):
    from tigris.plan import min_fast_budget

    tmp = tmp_path_factory.mktemp("mm")
    path = saved_model(tmp, _attention(heads, m, k, seed), "m", int8)
    prep = api.prepare(path)
    (mm,) = [i for i, op in enumerate(prep.graph.ops) if op.op_type == "MatMul"]
    from tigris.ops import kind_for

    op = prep.graph.ops[mm]
    assert kind_for("MatMul").tiling(prep.graph, op) == "pointwise"
    assert kind_for("MatMul").whole_inputs(prep.graph, op) == (1,)
    peak = api.compile_model(path, "8M", xip=True, prepared=prep).analysis.plan.fast_peak
    low = min_fast_budget(prep.graph, **api._plan_kwargs(prep, True))
    budget = max(low, int(peak * frac) // 16 * 16)
    c = _run_like_untiled(path, budget, seed)
    if budget < peak:
        assert any(len(u.tile_rows) > 1 for u in c.analysis.plan.units)


def test_products_that_do_not_tile_stay_structural(tmp_path):
    """A rank-3 product (M is a channel axis of nwc) and one whose first operand is constant read whole."""
    from tigris.ops import kind_for

    path = family_model(tmp_path, "vit_block_decomposed", False)
    prep = api.prepare(path)
    g = prep.graph
    prods = [op for op in g.ops if op.op_type == "MatMul" and not g.is_const(op.inputs[1])]
    assert prods and all(kind_for("MatMul").tiling(g, op) == "structural" for op in prods)
    assert all(kind_for("MatMul").whole_inputs(g, op) == () for op in prods)
