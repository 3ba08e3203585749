"""Pass 9, Clip to Relu6."""
import numpy as np
from onnx import helper

from passes._build import F, assert_reference_matches_ort, assert_same_as_ort, load, model, run_pass


def _clip(lo, hi, opset=17):
    if opset < 11:
        attrs = {k: v for k, v in (("min", lo), ("max", hi)) if v is not None}
        return model([helper.make_node("Clip", ["x"], ["y"], name="clip", **attrs)], [("x", F, [1, 8])],
                     [("y", F, [1, 8])], opset=opset)
    ins, inits = ["x"], {}
    for k, v in (("lo", lo), ("hi", hi)):
        ins.append(k if v is not None else "")
        if v is not None:
            inits[k] = np.float32(v)
    return model([helper.make_node("Clip", ins, ["y"], name="clip")], [("x", F, [1, 8])], [("y", F, [1, 8])], inits)


def test_clip_0_6_becomes_relu6_both_opsets():
    for m in (_clip(0, 6), _clip(0.0, 6.0, opset=10)):
        r = run_pass(load(m), "clip_relu6")
        assert r.rewritten == 1 and r.graph.ops[0].op_type == "Relu6" and r.graph.ops[0].inputs == ("x",)
        assert_same_as_ort(m, r.graph, tol=0.0, seed=3)
        assert run_pass(r.graph, "clip_relu6").rewritten == 0


def test_clip_0_inf_is_relu_and_others_get_attributes():
    assert run_pass(load(_clip(0, None)), "clip_relu6").graph.ops[0].op_type == "Relu"
    m = _clip(-1, 1)
    g = run_pass(load(m), "clip_relu6").graph
    assert g.ops[0].op_type == "Clip" and g.ops[0].attrs == {"min": -1.0, "max": 1.0}
    assert_same_as_ort(m, g, tol=0.0)
    assert run_pass(g, "clip_relu6").rewritten == 0


def test_declined_runtime_bound():
    m = model([helper.make_node("Clip", ["x", "lo"], ["y"], name="clip")], [("x", F, [1, 8]), ("lo", F, [])],
              [("y", F, [1, 8])])
    r = run_pass(load(m), "clip_relu6")
    assert r.rewritten == 0 and r.declined[0].node == "clip" and "rule 5" in r.declined[0].reason


def test_reference_executor_agrees_with_ort():
    assert_reference_matches_ort(_clip(0, 6))
