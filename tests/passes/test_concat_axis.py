"""Pass 14, Concat axis normalize."""
from onnx import helper

from passes._build import F, assert_reference_matches_ort, assert_same_as_ort, load, model, run_pass


def _m(shape, axis):
    return model([helper.make_node("Concat", ["a", "b"], ["y"], axis=axis)], [("a", F, shape), ("b", F, shape)],
                 [("y", F, None)])


def test_axes_map_to_physical():
    for shape, axis, want in (([1, 2, 3, 4], 1, 3), ([1, 2, 3, 4], -2, 1), ([1, 2, 3, 4], 3, 2), ([1, 2, 5], 1, 2),
                              ([1, 2, 5], 2, 1), ([2, 3], 1, 1)):
        m = _m(shape, axis)
        r = run_pass(load(m), "concat_axis")
        op = r.graph.ops[0]
        assert r.rewritten == 1 and op.attrs["axis"] == want and op.attrs["axis_physical"], (shape, axis)
        assert_same_as_ort(m, r.graph, tol=0.0)
        assert run_pass(r.graph, "concat_axis").rewritten == 0  # marked, so not rewritten twice


def test_noop():
    m = model([helper.make_node("Relu", ["x"], ["y"])], [("x", F, [1, 4])], [("y", F, [1, 4])])
    assert run_pass(load(m), "concat_axis").rewritten == 0


def test_reference_executor_agrees_with_ort():
    assert_reference_matches_ort(_m([1, 2, 3, 4], 1))
