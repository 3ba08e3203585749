"""Pass 10, ReduceMean to GlobalAveragePool."""
import numpy as np
from onnx import helper

from passes._build import F, assert_same_as_ort, load, model, run_pass, upto, assert_reference_matches_ort


def test_keepdims_and_not():
    for keep in (1, 0):
        m = model([helper.make_node("ReduceMean", ["x"], ["y"], axes=[-1, -2], keepdims=keep)],
                  [("x", F, [1, 3, 4, 5])], [("y", F, None)], opset=13)
        r = run_pass(load(m), "reducemean_gap")
        assert r.rewritten == 1
        assert [op.op_type for op in r.graph.ops] == (["GlobalAveragePool"] if keep else
                                                      ["GlobalAveragePool", "Reshape"])
        assert_same_as_ort(m, r.graph, tol=1e-6)
        assert run_pass(r.graph, "reducemean_gap").rewritten == 0


def test_axes_operand_opset18_and_declined_channel_mean():
    m = model([helper.make_node("ReduceMean", ["x", "ax"], ["y"])], [("x", F, [1, 3, 4, 5])], [("y", F, None)],
              {"ax": np.array([2, 3], np.int64)}, opset=18)
    assert run_pass(load(m), "reducemean_gap").rewritten == 1
    m = model([helper.make_node("ReduceMean", ["x"], ["y"], axes=[1], name="rm")], [("x", F, [1, 3, 4, 5])],
              [("y", F, None)], opset=13)
    r = run_pass(load(m), "reducemean_gap")
    assert r.rewritten == 0 and r.declined[0].node == "rm"


def test_reference_executor_agrees_with_ort():
    for keep in (1, 0):
        assert_reference_matches_ort(model([helper.make_node("ReduceMean", ["x"], ["y"], axes=[2, 3], keepdims=keep)],
                                           [("x", F, [1, 3, 4, 5])], [("y", F, None)], opset=13))


def test_global_max_pool_becomes_whole_image_max_pool(tmp_path):
    """Rule 5 (regression: GlobalMaxPool had no kernel and was refused). Float within verify's 1e-4 x max(1, max|ref|)
    of ONNX Runtime, on the C runtime."""
    from tigris import api

    w = np.random.default_rng(0).standard_normal((4, 3, 3, 3)).astype(np.float32)
    m = model([helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
               helper.make_node("GlobalMaxPool", ["c"], ["y"])],
              [("x", F, [1, 3, 6, 5])], [("y", F, [1, 4, 1, 1])], {"w": w})
    g = run_pass(upto(load(m), "reducemean_gap"), "reducemean_gap").graph
    mp = next(op for op in g.ops if op.op_type == "MaxPool")
    assert list(mp.attrs["kernel_shape"]) == [6, 5]
    assert_same_as_ort(m, g, tol=1e-6)
    p = tmp_path / "gmp.onnx"
    p.write_bytes(m.SerializeToString())
    assert api.verify(p, "1M")["pass"]


def _avgpool_model(kernel, pads=(0, 0, 0, 0), hw=(6, 5)):
    w = np.random.default_rng(1).standard_normal((4, 3, 3, 3)).astype(np.float32)
    return model([helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
                  helper.make_node("AveragePool", ["c"], ["y"], kernel_shape=list(kernel), strides=list(kernel),
                                   pads=list(pads), name="avg")],
                 [("x", F, [1, 3, *hw])], [("y", F, None)], {"w": w})


def test_average_pool_over_the_whole_image_becomes_gap():
    """Rule 6: the float result is ONNX Runtime's; a smaller window, a padded one and a second run are left alone."""
    m = _avgpool_model((6, 5))
    g = run_pass(upto(load(m), "reducemean_gap"), "reducemean_gap")
    assert g.rewritten == 1 and [op.op_type for op in g.graph.ops] == ["Conv", "GlobalAveragePool"]
    assert_same_as_ort(m, g.graph, tol=1e-6)
    assert run_pass(g.graph, "reducemean_gap").rewritten == 0
    for kernel, pads in (((3, 5), (0, 0, 0, 0)), ((6, 5), (1, 0, 1, 0))):
        r = run_pass(upto(load(_avgpool_model(kernel, pads)), "reducemean_gap"), "reducemean_gap")
        assert r.rewritten == 0 and "AveragePool" in [op.op_type for op in r.graph.ops]


def _int8_pool_graphs(numerics: str, s_in: float, zp_in: int, s_out: float, zp_out: int, h: int, w: int,
                      tflm_avgpool: bool = False):
    """The same int8 average over a whole [h, w] image as an AveragePool and as a GlobalAveragePool (marked
    ``tflm_avgpool`` as rule 6 marks it under the tflm numerics, or not)."""
    from tigris.ir import AnalyzedGraph, Op, QuantParam, Tensor

    q = lambda s, z: QuantParam(np.array([s], np.float32), np.array([z], np.int64))  # noqa: E731
    out = []
    for op in (Op("p", "AveragePool", ("x",), ("y",), {"kernel_shape": [h, w], "strides": [h, w], "dilations": [1, 1],
                                                         "pads": [0, 0, 0, 0], "ceil_mode": 0,
                                                         "count_include_pad": 0}),
               Op("p", "GlobalAveragePool", ("x",), ("y",), {"tflm_avgpool": 1} if tflm_avgpool else {})):
        tensors = {"x": Tensor("x", (1, 16, h, w), "int8", q(s_in, zp_in), "nhwc"),
                   "y": Tensor("y", (1, 16, 1, 1), "int8", q(s_out, zp_out), "nhwc")}
        out.append(AnalyzedGraph("avg", tensors, [op], ["x"], ["y"], {}, {}, numerics=numerics))
    return out


def test_int8_whole_image_average_pool_and_gap_agree_bit_for_bit():
    """Why rule 6 may rewrite int8 pools (ONNX numerics): the AveragePool kind and the GAP kind compute the same codes,
    also where averages land on halves (equal scales: every odd multiple of count/2), in the NumPy reference (the C
    kernels: tests/runtime/test_rt_cols_kinds.py). Under the tflm numerics a plain GAP does not (TFLM's
    AVERAGE_POOL_2D rounds the raw codes' average halves away from zero, its MEAN requantizes), so rule 6 marks the
    GAP ``tflm_avgpool`` there, which gives the pool's codes; and only with equal encodings (TFLM's rule)."""
    from tigris.passes import reducemean_gap
    from tigris.reference import run_reference

    rng = np.random.default_rng(5)
    cases = [(0.05, -3, 0.05, -3, 25, 5), (0.04, 7, 0.013, -20, 8, 8), (0.1, 0, 0.1, 0, 2, 2), (0.02, 100, 0.3, 1, 7, 3)]
    for s_in, zp_in, s_out, zp_out, h, w in cases:
        pool, gap = _int8_pool_graphs("onnx", s_in, zp_in, s_out, zp_out, h, w)
        for seed in range(4):
            x = {"x": rng.integers(-128, 128, (1, 16, h, w), dtype=np.int8)}
            np.testing.assert_array_equal(run_reference(pool, x)["y"], run_reference(gap, x)["y"])
    ties = 0
    for seed in range(20):  # tflm: raw codes halves away from zero vs MEAN's requantization
        pool, gap = _int8_pool_graphs("tflm", 0.05, -3, 0.05, -3, 2, 2)
        marked = _int8_pool_graphs("tflm", 0.05, -3, 0.05, -3, 2, 2, tflm_avgpool=True)[1]
        x = {"x": np.random.default_rng(seed).integers(-128, 128, (1, 16, 2, 2), dtype=np.int8)}
        ties += int(np.any(run_reference(pool, x)["y"] != run_reference(gap, x)["y"]))
        np.testing.assert_array_equal(run_reference(pool, x)["y"], run_reference(marked, x)["y"])
    assert ties > 0
    tflm_pool = _int8_pool_graphs("tflm", 0.05, -3, 0.05, -3, 4, 4)[0]
    r = run_pass(tflm_pool, "reducemean_gap")
    assert r.rewritten == 1 and r.graph.ops[0].attrs == {"tflm_avgpool": 1}
    other = _int8_pool_graphs("tflm", 0.05, -3, 0.04, -3, 4, 4)[0]  # unequal encodings: the pool's lowering refuses
    assert not reducemean_gap._whole_image(other, other.ops[0])


def test_average_pool_over_the_whole_sequence_becomes_gap():
    """Rule 6 on a rank-3 tensor: an AveragePool whose window is the whole sequence is a GAP over the view
    ``[N, L, 1, C]``: float ONNX Runtime's result, int8 the pool kind's codes (onnx numerics); a shorter window is left
    alone."""
    from tigris.ir import AnalyzedGraph, Op, QuantParam, Tensor
    from tigris.reference import run_reference

    w = np.random.default_rng(2).standard_normal((4, 3, 3)).astype(np.float32)
    for kernel, rewritten in ((12, 1), (6, 0)):
        m = model([helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1]),
                   helper.make_node("AveragePool", ["c"], ["y"], kernel_shape=[kernel], strides=[kernel], name="avg")],
                  [("x", F, [1, 3, 12])], [("y", F, None)], {"w": w})
        g = run_pass(upto(load(m), "reducemean_gap"), "reducemean_gap")
        assert g.rewritten == rewritten
        if rewritten:
            assert [op.op_type for op in g.graph.ops][-1] == "GlobalAveragePool"
            assert_same_as_ort(m, g.graph, tol=1e-6)
    q = lambda s, z: QuantParam(np.array([s], np.float32), np.array([z], np.int64))  # noqa: E731
    rng = np.random.default_rng(7)
    for s_in, zp_in, s_out, zp_out, n in [(0.05, -3, 0.05, -3, 24), (0.04, 7, 0.013, -20, 9), (0.1, 0, 0.1, 0, 2)]:
        tensors = {"x": Tensor("x", (1, 16, n), "int8", q(s_in, zp_in), "nwc"),
                   "y": Tensor("y", (1, 16, 1), "int8", q(s_out, zp_out), "nwc")}
        pool = AnalyzedGraph("avg", tensors, [Op("p", "AveragePool", ("x",), ("y",), {
            "kernel_shape": [n], "strides": [n], "dilations": [1], "pads": [0, 0], "ceil_mode": 0,
            "count_include_pad": 0})], ["x"], ["y"], {}, {})
        r = run_pass(pool, "reducemean_gap")
        assert r.rewritten == 1 and r.graph.ops[0].op_type == "GlobalAveragePool"
        for _ in range(4):
            x = {"x": rng.integers(-128, 128, (1, 16, n), dtype=np.int8)}
            np.testing.assert_array_equal(run_reference(pool, x)["y"], run_reference(r.graph, x)["y"])


def test_mean_over_the_last_axis_of_a_sequence_becomes_gap():
    """Rule 1 on rank 3: a mean over the features of each token ([1, T, D] -> [1, T, 1], a decomposed LayerNorm's
    first step) is the GAP of the nwc view (it averages the rows), with or without keepdims; against ONNX Runtime."""
    for keep in (1, 0):
        m = model([helper.make_node("Relu", ["x"], ["r"]),
                   helper.make_node("ReduceMean", ["r"], ["y"], axes=[-1], keepdims=keep)],
                  [("x", F, [1, 6, 5])], [("y", F, [1, 6, 1] if keep else [1, 6])], opset=13)
        g = upto(load(m), "reducemean_gap")
        r = run_pass(g, "reducemean_gap")
        assert r.rewritten == 1 and "GlobalAveragePool" in [op.op_type for op in r.graph.ops]
        assert "ReduceMean" not in [op.op_type for op in r.graph.ops]
        assert_same_as_ort(m, r.graph, tol=1e-6)
        assert_reference_matches_ort(m)
    # a mean over the tokens (axis 1) is no GAP of the view: left alone
    m = model([helper.make_node("ReduceMean", ["x"], ["y"], axes=[1], keepdims=1)], [("x", F, [1, 6, 5])],
              [("y", F, [1, 1, 5])], opset=13)
    assert run_pass(upto(load(m), "reducemean_gap"), "reducemean_gap").rewritten == 0
