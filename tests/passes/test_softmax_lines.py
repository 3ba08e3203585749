"""Extra pass, Softmax lines across rows: an output Softmax over the last axis of a rank-3 tensor runs transposed."""
import numpy as np
import pytest
from onnx import helper

from passes._build import F, assert_same_as_ort, load, model, run_pass, upto
from tigris import api
from tigris.passes import normalize, softmax_lines
from tigris_testing import compile_like_untiled, family_model, matches_ort


def _head(extra_reader: bool = False):
    """Conv -> NHWC Transpose -> Reshape [1, boxes, 3] -> Softmax(-1), the SSD class-score head."""
    w = np.random.default_rng(0).standard_normal((6, 3, 1, 1)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"]),
             helper.make_node("Transpose", ["c"], ["t"], perm=[0, 2, 3, 1]),
             helper.make_node("Reshape", ["t", "shape"], ["r"]),
             helper.make_node("Softmax", ["r"], ["y"], axis=-1, name="sm")]
    outputs = [("y", F, None)]
    if extra_reader:
        nodes.append(helper.make_node("Relu", ["y"], ["z"]))
        outputs.append(("z", F, None))
    return model(nodes, [("x", F, [1, 3, 2, 5])], outputs,
                 {"w": w, "shape": np.array([1, -1, 3], np.int64)})


def test_output_softmax_runs_over_the_transposed_tensor():
    m = _head()
    r = run_pass(upto(load(m), "softmax_lines"), "softmax_lines")
    assert r.rewritten == 1
    sm = [op for op in r.graph.ops if op.op_type == "Softmax"]
    assert len(sm) == 1 and sm[0].attrs["axis"] == 1 and r.graph.tensors[sm[0].inputs[0]].shape == (1, 3, 20)
    assert_same_as_ort(m, r.graph, tol=1e-6)
    # the Transpose after it is pass 15's to remove: the Softmax writes the output, stored rows = boxes
    g, _ = normalize(load(m))
    last = [op for op in g.ops if "y" in op.outputs][0]
    assert last.op_type == "Softmax" and g.tensors["y"].shape == (1, 3, 20) and g.tensors["y"].layout == "nwc"
    assert g.boundary["y"].shape == (1, 20, 3)


def test_declined_with_other_readers_or_one_box():
    r = run_pass(upto(load(_head(extra_reader=True)), "softmax_lines"), "softmax_lines")
    assert r.rewritten == 0 and r.declined[0].node == "sm" and "rule 3" in r.declined[0].reason
    one = model([helper.make_node("Softmax", ["x"], ["y"], axis=-1, name="sm")], [("x", F, [1, 1, 5])],
                [("y", F, None)])
    r = run_pass(upto(load(one), "softmax_lines"), "softmax_lines")
    assert r.rewritten == 0 and "rule 1" in r.declined[0].reason


def _min_budget(path):
    return api.analyze(path, 16, xip=True, emit=False).min_fast_budget


@pytest.mark.parametrize("int8", [False, True], ids=["f32", "int8"])
def test_det_head_fits_in_half_and_computes_the_same(tmp_path, monkeypatch, int8):
    """det_head's smallest fast budget halves (its Softmax was the floor: whole input and output); the plan at the
    new minimum computes what the untiled plan without the pass computes, int8 through the dequantize bit for bit."""
    path = family_model(tmp_path, "det_head", int8)
    with monkeypatch.context() as mp:
        mp.setattr(softmax_lines, "ENABLED", False)
        before_prep = api.prepare(path)
        before = _min_budget(path)
        x = api.random_inputs(before_prep, 0)
        untiled_before = api.run_plan(api.compile_model(path, "16M", xip=True, prepared=before_prep).plan_bytes, x)
    after = _min_budget(path)
    assert after <= 0.5 * before, (before, after)
    prep = api.prepare(path)
    c, x2, outs = compile_like_untiled(path, prep, after, float_tol=0.0)
    assert any(u.tile_rows for u in c.analysis.plan.units)
    for k in x:
        np.testing.assert_array_equal(x[k], x2[k])
    for name, y in untiled_before.outputs.items():
        if int8:
            np.testing.assert_array_equal(outs[name], y)
        else:
            assert float(np.abs(outs[name] - y).max()) <= 1e-6
    if not int8:
        matches_ort(path, x2, outs)
