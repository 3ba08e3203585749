"""Vector inputs as rows (tigris/passes/vector_rows.py, docs/passes.md "Vector inputs as rows"): a float ``[1, C]``
graph input read only by its boundary QuantizeLinear is stored as ``nwc [1, 1, C]`` (C rows), so the quantize runs on
row bands. The dense_ae int8 family, whose minimum that QuantizeLinear set at 160 bytes (the whole float input and
its int8 copy), then fits 128 with ``--xip`` (0.80x); the plan at 128 is proven, runs on the host runtime bit for bit
as the untiled plan and as the plan without the pass, with the high-water mark at the plan's peak, and 16 bytes less
does not fit."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from tigris import api
from tigris.ir import DoesNotFitError
from tigris.plan import min_fast_budget
from tigris.plan.check import check_plan
import tigris.passes.vector_rows as vector_rows

from passes._build import F, load, model, run_pass, upto
from tigris_testing import compile_like_untiled, family_model, host_runtime, matches_ort


def _quantized_input(c: int = 8, readers: int = 1, shape=None):
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"])]
    if readers > 1:
        nodes.append(helper.make_node("Relu", ["x"], ["r"]))
    outs = [("y", F, shape or [1, c])] + ([("r", F, shape or [1, c])] if readers > 1 else [])
    return model(nodes, [("x", F, shape or [1, c])], outs,
                 {"s": np.array(0.05, np.float32), "z": np.array(3, np.int8)})


def test_rule_stores_the_input_as_rows():
    g = upto(load(_quantized_input()), "vector_rows")
    res = run_pass(g, "vector_rows")
    assert res.rewritten == 1
    out = res.graph
    assert out.tensors["x"].shape == (1, 1, 8) and out.tensors["x"].layout == "nwc"
    q = next(op for op in out.ops if op.op_type == "QuantizeLinear")
    assert out.tensors[q.outputs[0]].shape == (1, 1, 8)
    r = next(op for op in out.ops if op.op_type == "Reshape")
    assert r.inputs == q.outputs and r.outputs == ("q",) and out.tensors["q"].shape == (1, 8)
    assert out.boundary["x"].shape == (1, 8)  # the declared interface is unchanged


@pytest.mark.parametrize("kw", [dict(readers=2), dict(shape=[2, 8]), dict(c=1)])
def test_rule_declines(kw):
    g = upto(load(_quantized_input(**kw)), "vector_rows")
    assert run_pass(g, "vector_rows").rewritten == 0


def test_dense_ae_int8_below_its_quantize(tmp_path, monkeypatch):
    host_runtime()
    path = family_model(tmp_path, "dense_ae", True)
    prep = api.prepare(path)
    assert prep.graph.tensors["x"].layout == "nwc"
    kw = api._plan_kwargs(prep, True)
    assert min_fast_budget(prep.graph, **kw) == 128
    c, x, outputs = compile_like_untiled(path, prep, 128)
    plan = c.analysis.plan
    assert check_plan(prep.graph, plan) == []
    q = next(i for i, op in enumerate(prep.graph.ops) if op.op_type == "QuantizeLinear")
    assert any(q in u.ops and u.tiles > 1 for u in plan.units), "the QuantizeLinear runs untiled"
    with pytest.raises(DoesNotFitError):
        api.compile_model(path, 112, xip=True, prepared=prep)
    # the plan without the pass: 160 bytes, the same outputs
    monkeypatch.setattr(vector_rows, "ENABLED", False)
    before = api.prepare(path)
    assert before.graph.tensors["x"].layout == "plain"
    assert min_fast_budget(before.graph, **api._plan_kwargs(before, True)) == 160
    want = api.run_plan(api.compile_model(path, 160, xip=True, prepared=before).plan_bytes, x).outputs
    for name, y in want.items():
        np.testing.assert_array_equal(outputs[name], y)
    # ONNX Runtime: the int8 graph's outputs differ from ORT's by what the plan without the pass differs
    ref = api.run_onnxruntime(path, x)
    ref = ref if isinstance(ref, dict) else dict(zip(outputs, ref))
    for name, r in ref.items():
        err = float(np.abs(outputs[name] - np.asarray(r)).max())
        assert err == float(np.abs(want[name] - np.asarray(r)).max())
        assert err <= 0.1 * max(1.0, float(np.abs(np.asarray(r)).max()))


def test_float_model_matches_ort(tmp_path):
    """A float model whose input is quantized and dequantized at the boundary (the rule's shape), on the host runtime
    at its smallest budget (the QuantizeLinear on row bands), against ONNX Runtime."""
    host_runtime()
    import onnx

    m = _quantized_input(c=64)
    path = tmp_path / "q.onnx"
    onnx.save(m, path)
    prep = api.prepare(path)
    budget = min_fast_budget(prep.graph, **api._plan_kwargs(prep, True))
    c, x, outputs = compile_like_untiled(path, prep, budget)
    assert check_plan(prep.graph, c.analysis.plan) == []
    assert any(u.tiles > 1 for u in c.analysis.plan.units), budget
    matches_ort(path, x, outputs, 1e-6)
