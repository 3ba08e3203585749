"""The PIPELINE: spec order, extra passes documented, reports for `analyze -v`."""
import importlib

from onnx import helper

from passes._build import F, load, model
from tigris.passes import PIPELINE, normalize

SPEC = ["constant_fold", "qdq_fold", "matmul_relabel", "bn_fold", "bias_fold", "silu_decompose", "depthwise_relabel",
        "conv1d_relabel", "clip_relu6", "reducemean_gap", "shape_op_fold", "resize_scales", "strip_operands",
        "concat_axis", "output_transpose", "activation_fuse", "drop_constants"]


def test_spec_passes_in_spec_order_and_layout_last():
    names = [p.name for p in PIPELINE if p.spec is not None]
    assert names == SPEC
    assert [p.spec for p in PIPELINE if p.spec is not None] == list(range(1, 18))
    assert PIPELINE[-1].name == "layout"


def test_every_pass_module_documents_rules_and_postcondition():
    for p in PIPELINE:
        doc = p.module.__doc__ or ""
        assert "Rules" in doc and "Postcondition" in doc and "Why" in doc, p.name
        assert importlib.import_module(p.module.__name__).run is p.run


def test_reports_name_every_pass_and_count_rewrites():
    m = model([helper.make_node("Clip", ["x", "lo", "hi"], ["y"])], [("x", F, [1, 4])], [("y", F, [1, 4])],
              {"lo": __import__("numpy").float32(0), "hi": __import__("numpy").float32(6)})
    g, reports = normalize(load(m), check=True)
    assert [r.name for r in reports] == [p.name for p in PIPELINE]
    fired = {r.name: r.rewritten for r in reports if r.fired}
    assert fired["clip_relu6"] == 1 and fired["drop_constants"] == 2


def test_ordering_constraints_hold_and_are_enforced():
    from tigris.passes import ORDER_CONSTRAINTS, _check_order

    pos = {p.name: i for i, p in enumerate(PIPELINE)}
    assert all(pos[a] < pos[b] for a, b in ORDER_CONSTRAINTS)
    import tigris.passes as tp

    saved = tp.PIPELINE
    try:
        swapped = list(saved)
        i, j = pos["clip_relu6"], pos["hard_activations"]
        swapped[i], swapped[j] = swapped[j], swapped[i]
        tp.PIPELINE = tuple(swapped)
        try:
            _check_order()
        except RuntimeError as e:
            assert "clip_relu6 must run before hard_activations" in str(e) or "spec order" in str(e)
        else:
            raise AssertionError("a misordered PIPELINE was accepted")
    finally:
        tp.PIPELINE = saved
