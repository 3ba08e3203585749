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


def test_wide_concat_becomes_a_chain():
    # EfficientDet concatenates five grids; an op takes at most four inputs (rule 3)
    names = [f"i{k}" for k in range(6)]
    m = model([helper.make_node("Concat", names, ["y"], axis=1)], [(n, F, [1, k + 1, 4]) for k, n in enumerate(names)],
              [("y", F, None)])
    r = run_pass(load(m), "concat_axis")
    cats = [op for op in r.graph.ops if op.op_type == "Concat"]
    assert len(cats) == 2 and all(len(op.inputs) <= 4 for op in cats)
    assert cats[0].inputs == tuple(names[:4]) and cats[1].inputs == (cats[0].outputs[0], *names[4:])
    assert r.graph.tensors[cats[0].outputs[0]].shape == (1, 10, 4)
    assert_same_as_ort(m, r.graph, tol=0.0)
    assert_reference_matches_ort(m)
