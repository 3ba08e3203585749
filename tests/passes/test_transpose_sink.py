"""Extra pass transpose_sink (docs/passes.md): the Transposes of an NHWC island (onnx2tf / TensorFlow exports) move
past the element-wise, reducing and gathering ops between them and cancel. Float graphs against ONNX Runtime through
the reference executor; int8 (ORT QDQ, whose Transposes requantize) bit for bit against the graph normalized
without the pass; the plans below the old Transpose floor on the host runtime, bit for bit against the untiled plan
with the high-water mark at the plan's peak; declines; random islands (hypothesis)."""
from __future__ import annotations

import logging
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import helper

from passes._build import F, assert_reference_matches_ort, load, model, run_pass, upto
from tigris import api
from tigris.passes import PIPELINE, normalize
from tigris.plan.check import check_plan
from tigris.reference import run_reference

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "families"))
import builders  # noqa: E402
from tigris_testing import family_model  # noqa: E402

logging.getLogger().setLevel(logging.ERROR)  # ORT's quantizer advice
RNG = np.random.default_rng(11)
NCHW, NHWC = [0, 3, 1, 2], [0, 2, 3, 1]
WITHOUT = tuple(p for p in PIPELINE if p.name != "transpose_sink")


def _transposes(g) -> list:
    return [op for op in g.ops if op.op_type == "Transpose"]


def _moving(g) -> list:
    """Transposes that move elements (not an identity permutation)."""
    return [op for op in _transposes(g) if list(op.attrs["perm"]) != list(range(len(op.attrs["perm"])))]


@pytest.mark.parametrize("fam", ["mcunet_nhwc", "onnx2tf_moves"])
def test_float_islands_lose_every_transpose(fam):
    m = builders.FAMILIES[fam]()
    g, _ = normalize(load(m), check=True)
    assert _transposes(g) == []
    g0, _ = normalize(load(m), check=True, passes=WITHOUT)
    assert len(_moving(g0)) >= 2
    assert_reference_matches_ort(m, tol=1e-5)


@pytest.mark.parametrize("fam", ["mcunet_nhwc", "onnx2tf_moves"])
def test_int8_requantizing_transposes_keep_their_codes(tmp_path, fam):
    """ORT's Transposes after a Conv carry a removed Clip's grid: they leave an identity permutation that
    requantizes (pointwise), and the codes are those of the graph normalized without the pass."""
    m = onnx.load(str(family_model(tmp_path, fam, True)))
    g, _ = normalize(load(m), check=True)
    g0, _ = normalize(load(m), check=True, passes=WITHOUT)
    assert _moving(g) == [] and len(_moving(g0)) >= 2
    for op in _transposes(g):  # what is left requantizes: another encoding, same shape
        x, y = g.tensors[op.inputs[0]], g.tensors[op.outputs[0]]
        assert x.shape == y.shape and x.quant != y.quant
    for seed in range(3):
        x = {"x": np.random.default_rng(seed).standard_normal(builders.input_shape(m)).astype(np.float32)}
        a, b = run_reference(g, x), run_reference(g0, x)
        for k in a:
            np.testing.assert_array_equal(a[k], b[k])


@pytest.mark.parametrize("int8", [True, False], ids=["int8", "float"])
@pytest.mark.parametrize("fam,old", [("mcunet_nhwc", (16384, 65536)), ("onnx2tf_moves", (8192, 32768))])
def test_plans_below_the_transpose_floor(tmp_path, fam, old, int8):
    """The smallest fast budget with --xip drops to at most 0.8x of the Transpose's (the figure before the pass);
    the plan there is proven, runs on the host like the untiled plan (int8 bit for bit; float within 1e-5 of it and
    within 1e-4 of ONNX Runtime), with the high-water mark at the plan's peak."""
    import onnxruntime as ort

    path = family_model(tmp_path, fam, int8)
    prep = api.prepare(path)
    a = api.analyze(path, "64", xip=True, tradeoff=False, emit=False, prepared=prep)
    m = a.json["min_fast_budget_bytes"]
    assert m <= 0.8 * old[0 if int8 else 1], m
    c = api.compile_model(path, m, xip=True, prepared=prep)
    assert c.analysis.fits and check_plan(c.analysis.prepared.graph, c.analysis.plan) == []
    assert any(len(u.tile_rows) > 1 for u in c.analysis.plan.units)
    x = api.random_inputs(prep, seed=3)
    run = api.run_plan(c.plan_bytes, x)
    assert run.fast_peak == c.analysis.plan.fast_peak <= m
    whole = api.run_plan(api.compile_model(path, "8M", xip=True, prepared=prep).plan_bytes, x)
    ref = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, x)[0]
    (name,) = run.outputs
    if int8 or run.outputs[name].dtype != np.float32:
        assert run.outputs[name].tobytes() == whole.outputs[name].tobytes()
    else:
        np.testing.assert_allclose(run.outputs[name], whole.outputs[name], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(run.outputs[name], ref, rtol=1e-4, atol=1e-4 * max(1.0, float(np.abs(ref).max())))


def _island(ops: list[tuple], c: int = 6, h: int = 5, w: int = 7) -> onnx.ModelProto:
    """Conv -> Transpose to NHWC -> ``ops`` on the channels-last tensor -> Transpose back -> Conv."""
    inits = {"w0": RNG.standard_normal((c, 3, 1, 1)).astype(np.float32),
             "w1": RNG.standard_normal((4, c, 1, 1)).astype(np.float32)}
    nodes = [helper.make_node("Conv", ["x", "w0"], ["c0"], kernel_shape=[1, 1]),
             helper.make_node("Transpose", ["c0"], ["t0"], perm=NHWC)]
    cur, shape, k = "t0", [1, h, w, c], 0
    for spec in ops:
        k += 1
        out = f"v{k}"
        if spec[0] in ("Relu", "Sigmoid", "Tanh"):
            nodes.append(helper.make_node(spec[0], [cur], [out]))
        elif spec[0] in ("Add", "Mul", "Max"):
            cs = [shape[4 - len(spec[1]) + i] if keep else 1 for i, keep in enumerate(spec[1])]
            inits[f"k{k}"] = (RNG.standard_normal(cs) * 0.5 + 1.0).astype(np.float32)
            nodes.append(helper.make_node(spec[0], [cur, f"k{k}"], [out]))
        elif spec[0] == "branch":  # a second NHWC tensor from its own Transpose, combined element-wise
            inits[f"wb{k}"] = RNG.standard_normal((c, 3, 1, 1)).astype(np.float32)
            nodes += [helper.make_node("Conv", ["x", f"wb{k}"], [f"b{k}"], kernel_shape=[1, 1]),
                      helper.make_node("Transpose", [f"b{k}"], [f"bt{k}"], perm=NHWC),
                      helper.make_node("Sigmoid", [f"bt{k}"], [f"bs{k}"]),
                      helper.make_node(spec[1], [cur, f"bs{k}"], [out])]
        elif spec[0] == "se":  # squeeze-excite over NHWC axes [1, 2], keepdims
            nodes += [helper.make_node("ReduceMean", [cur], [f"m{k}"], axes=[1, 2], keepdims=1),
                      helper.make_node("Sigmoid", [f"m{k}"], [f"g{k}"]),
                      helper.make_node("Mul", [cur, f"g{k}"], [out])]
        elif spec[0] == "gather":
            idx = RNG.permutation(shape[spec[1]]).astype(np.int64)  # keeps the shape for a later branch
            inits[f"i{k}"] = idx
            nodes.append(helper.make_node("Gather", [cur, f"i{k}"], [out], axis=spec[1]))
            shape[spec[1]] = len(idx)
        cur = out
    nodes += [helper.make_node("Transpose", [cur], ["back"], perm=NCHW)]
    inits["w1"] = RNG.standard_normal((4, shape[3], 1, 1)).astype(np.float32)
    nodes.append(helper.make_node("Conv", ["back", "w1"], ["y"], kernel_shape=[1, 1]))
    return model(nodes, [("x", F, [1, 3, h, w])], [("y", F, [1, 4, shape[1], shape[2]])], inits, opset=13)


OPS = st.one_of(
    st.sampled_from([("Relu",), ("Sigmoid",), ("Tanh",), ("se",), ("branch", "Add"), ("branch", "Mul")]),
    st.tuples(st.sampled_from(["Add", "Mul", "Max"]),
              st.sampled_from([(), (False, False, False, True), (True,), (False, True, True, False),
                               (True, True, True)])),
    st.tuples(st.just("gather"), st.sampled_from([1, 2, 3])),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(OPS, min_size=1, max_size=5))
def test_random_islands_match_ort(ops):
    m = _island(ops)
    g, _ = normalize(load(m), check=True)
    assert _moving(g) == [], [op.name for op in _moving(g)]
    assert_reference_matches_ort(m, tol=1e-5)


def test_declines_leave_the_graph():
    # an NHWC tensor combined with an activation that no Transpose produces: moving the Transpose would add one
    inits = {"w0": RNG.standard_normal((6, 3, 1, 1)).astype(np.float32)}
    nodes = [helper.make_node("Conv", ["x", "w0"], ["c0"], kernel_shape=[1, 1]),
             helper.make_node("Transpose", ["c0"], ["t0"], perm=NHWC),
             helper.make_node("Add", ["t0", "z"], ["y"])]
    m = model(nodes, [("x", F, [1, 3, 5, 7]), ("z", F, [1, 5, 7, 6])], [("y", F, [1, 5, 7, 6])], inits, opset=13)
    g = upto(load(m), "transpose_sink")
    assert run_pass(g, "transpose_sink").rewritten == 0
    # a fan-out whose readers absorb it but do not cancel: two Transposes instead of one is no gain
    nodes = [helper.make_node("Conv", ["x", "w0"], ["c0"], kernel_shape=[1, 1]),
             helper.make_node("Transpose", ["c0"], ["t0"], perm=NHWC),
             helper.make_node("Relu", ["t0"], ["y"]), helper.make_node("Sigmoid", ["t0"], ["y2"])]
    m = model(nodes, [("x", F, [1, 3, 5, 7])], [("y", F, [1, 5, 7, 6]), ("y2", F, [1, 5, 7, 6])], inits, opset=13)
    g = upto(load(m), "transpose_sink")
    r = run_pass(g, "transpose_sink")
    assert r.rewritten == 0 and r.declined and len(_transposes(r.graph)) == 1
    assert_reference_matches_ort(m, tol=1e-6)


def test_head_mean_without_keepdims_needs_no_transpose():
    inits = {"w0": RNG.standard_normal((6, 3, 1, 1)).astype(np.float32),
             "fc": RNG.standard_normal((6, 4)).astype(np.float32)}
    nodes = [helper.make_node("Conv", ["x", "w0"], ["c0"], kernel_shape=[1, 1]),
             helper.make_node("Transpose", ["c0"], ["t0"], perm=NHWC),
             helper.make_node("Relu", ["t0"], ["r"]),
             helper.make_node("ReduceMean", ["r"], ["m"], axes=[1, 2], keepdims=0),
             helper.make_node("MatMul", ["m", "fc"], ["y"])]
    m = model(nodes, [("x", F, [1, 3, 5, 7])], [("y", F, [1, 4])], inits, opset=13)
    g, _ = normalize(load(m), check=True)
    assert _transposes(g) == [] and "GlobalAveragePool" in [op.op_type for op in g.ops]
    assert_reference_matches_ort(m, tol=1e-5)


@pytest.mark.parametrize("int8", [False, True], ids=["float", "int8"])
def test_row_local_transpose_tiles(tmp_path, int8):
    """A Transpose that keeps the row axis (logical [N, C, H, W] -> [N, W, H, C]: each row's W and C swapped) runs on
    row bands: the planner tiles it, and the tiled plan gives the untiled plan's bytes on the host."""
    c, h, w = 6, 24, 5
    inits = {"w0": RNG.standard_normal((c, 3, 3, 3)).astype(np.float32),
             "w1": RNG.standard_normal((4, w, 3, 3)).astype(np.float32)}
    nodes = [helper.make_node("Conv", ["x", "w0"], ["c0"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Transpose", ["c0"], ["t0"], perm=[0, 3, 2, 1]),
             helper.make_node("Conv", ["t0", "w1"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])]
    m = model(nodes, [("x", F, [1, 3, h, w])], [("y", F, [1, 4, h, c])], inits, opset=13)
    path = tmp_path / "t.onnx"
    onnx.save(m, str(path))
    if int8:
        q = tmp_path / "t8.onnx"
        builders.quantize(path, q, "int8", True)
        path = q
    prep = api.prepare(path)
    (t,) = [op for op in prep.graph.ops if op.op_type == "Transpose"]
    from tigris.ops import kind_for

    assert kind_for("Transpose").tiling(prep.graph, t) == "pointwise"
    whole_plan = api.compile_model(path, "8M", xip=True, prepared=prep)
    budget = whole_plan.analysis.plan.fast_peak // 3 // 16 * 16
    cm = api.compile_model(path, budget, xip=True, prepared=prep)
    assert cm.analysis.fits and check_plan(cm.analysis.prepared.graph, cm.analysis.plan) == []
    ti = next(i for i, op in enumerate(cm.analysis.prepared.graph.ops) if op.op_type == "Transpose")
    unit = next(u for u in cm.analysis.plan.units if ti in u.ops)
    assert len(unit.tile_rows) > 1  # the Transpose runs on row bands
    x = api.random_inputs(prep, seed=2)
    run = api.run_plan(cm.plan_bytes, x)
    assert run.fast_peak == cm.analysis.plan.fast_peak
    want = api.run_plan(whole_plan.plan_bytes, x).outputs["y"]
    assert run.outputs["y"].tobytes() == want.tobytes()
    if not int8:
        assert_reference_matches_ort(m, tol=1e-5)
