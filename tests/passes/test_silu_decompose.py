"""Pass 6, SiLU decompose."""
from onnx import helper

from passes._build import F, load, model, run_pass, assert_reference_matches_ort


def test_silu_becomes_sigmoid_mul():
    m = model([helper.make_node("Silu", ["x"], ["y"], name="silu", domain="com.example")], [("x", F, [1, 4])],
              [("y", F, [1, 4])], opset=17)
    m.opset_import.append(helper.make_opsetid("com.example", 1))
    g = load(m)
    r = run_pass(g, "silu_decompose")
    assert r.rewritten == 1
    sig, mul = r.graph.ops
    assert (sig.op_type, mul.op_type) == ("Sigmoid", "Mul")
    assert mul.inputs == ("x", sig.outputs[0]) and mul.outputs == ("y",)
    assert run_pass(r.graph, "silu_decompose").rewritten == 0  # idempotent


def test_noop_and_declined_alpha():
    m = model([helper.make_node("Relu", ["x"], ["y"])], [("x", F, [1, 4])], [("y", F, [1, 4])])
    assert run_pass(load(m), "silu_decompose").rewritten == 0
    m = model([helper.make_node("Swish", ["x"], ["y"], alpha=2.0, domain="com.example")], [("x", F, [1, 4])],
              [("y", F, [1, 4])])
    m.opset_import.append(helper.make_opsetid("com.example", 1))
    assert run_pass(load(m), "silu_decompose").rewritten == 0  # Swish with beta != 1 is not SiLU


def test_reference_executor_agrees_with_ort():
    # ONNX Runtime has no standard-domain Silu, so the reference is checked on the decomposed form it produces
    m = model([helper.make_node("Sigmoid", ["x"], ["s"]), helper.make_node("Mul", ["x", "s"], ["y"])],
              [("x", F, [1, 4])], [("y", F, [1, 4])])
    assert_reference_matches_ort(m)
