"""Extra pass: Pad folded into the following Conv / AveragePool; other Pads lifted to attributes."""
import numpy as np
from onnx import helper

from passes._build import F, assert_reference_matches_ort, assert_same_as_ort, load, model, run_pass, upto

RNG = np.random.default_rng(0)


def _m(value=0.0, reader="Conv"):
    nodes = [helper.make_node("Pad", ["x", "pads", "v"], ["p"], name="pad")]
    inits = {"pads": np.array([0, 0, 1, 2, 0, 0, 1, 0], np.int64), "v": np.float32(value)}
    if reader == "Conv":
        nodes.append(helper.make_node("Conv", ["p", "w"], ["y"], name="conv", pads=[1, 1, 1, 1]))
        inits["w"] = RNG.standard_normal((2, 3, 3, 3)).astype(np.float32)
    else:
        nodes.append(helper.make_node(reader, ["p"], ["y"], name="pool", kernel_shape=[3, 3]))
    return model(nodes, [("x", F, [1, 3, 5, 5])], [("y", F, None)], inits)


def test_pad_into_conv():
    m = _m()
    r = run_pass(upto(load(m), "pad_fold"), "pad_fold")
    assert r.rewritten == 1 and [op.op_type for op in r.graph.ops] == ["Conv"]
    assert r.graph.ops[0].attrs["pads"] == [2, 3, 2, 1]
    assert_same_as_ort(m, r.graph, tol=1e-6)
    assert run_pass(r.graph, "pad_fold").rewritten == 0


def test_pad_into_average_pool_counts_pad():
    m = _m(reader="AveragePool")
    g = run_pass(upto(load(m), "pad_fold"), "pad_fold").graph
    assert g.ops[0].attrs["count_include_pad"] == 1
    assert_same_as_ort(m, g, tol=1e-6)


def test_declined_nonzero_value_and_maxpool_then_lifted():
    r = run_pass(upto(load(_m(value=1.0)), "pad_fold"), "pad_fold")
    assert r.rewritten == 0 and "rule 2" in r.declined[0].reason
    pad = r.graph.ops[0]
    assert pad.attrs["pads"] == [0, 0, 1, 2, 0, 0, 1, 0] and pad.attrs["value"] == 1.0
    r = run_pass(upto(load(_m(reader="MaxPool")), "pad_fold"), "pad_fold")
    assert r.rewritten == 0 and r.declined[0].node == "pad" and "MaxPool" in r.declined[0].reason


def test_noop():
    m = model([helper.make_node("Relu", ["x"], ["y"])], [("x", F, [1, 4])], [("y", F, [1, 4])])
    assert run_pass(load(m), "pad_fold").rewritten == 0


def test_reference_executor_agrees_with_ort():
    assert_reference_matches_ort(_m())


def test_int8_pad_with_zero_point_value_folds():
    """tf2onnx style: the Pad runs on int8 with the zero point as its value, between a Q and a DQ."""
    from passes._build import I8

    nodes = [helper.make_node("Pad", ["xq", "pads", "v"], ["p"], name="pad"),
             helper.make_node("DequantizeLinear", ["p", "s", "z"], ["pd"]),
             helper.make_node("DequantizeLinear", ["wq", "sw", "zw"], ["w"], axis=0),
             helper.make_node("Conv", ["pd", "w"], ["c"], strides=[2, 2]),
             helper.make_node("QuantizeLinear", ["c", "sy", "zy"], ["y"])]
    inits = {"pads": np.array([0, 0, 0, 0, 0, 0, 1, 1], np.int64), "v": np.int8(-7), "s": np.float32(0.05),
             "z": np.int8(-7), "wq": RNG.integers(-127, 128, (4, 3, 3, 3)).astype(np.int8),
             "sw": np.full(4, 0.01, np.float32), "zw": np.zeros(4, np.int8), "sy": np.float32(0.1), "zy": np.int8(0)}
    m = model(nodes, [("xq", I8, [1, 3, 6, 6])], [("y", I8, None)], inits)
    g = run_pass(upto(load(m), "pad_fold"), "pad_fold").graph
    assert [op.op_type for op in g.ops] == ["Conv"] and g.ops[0].attrs["pads"] == [0, 0, 1, 1]
    assert_same_as_ort(m, g, tol=0.0)
    assert_reference_matches_ort(m, lsb=1)


def test_mode_pad_of_the_rows_states_its_row_map():
    """Rule 5: a reflect/edge/wrap Pad of logical axis 2 is lifted with ``row_src``, the input row each output row
    copies; a Pad of the columns only, or a constant one, has none."""
    for mode, pads, want in [
        ("reflect", [0, 0, 2, 1, 0, 0, 1, 0], [2, 1, 0, 1, 2, 3, 4, 3]),
        ("edge", [0, 0, 2, 0, 0, 0, 1, 1], [0, 0, 0, 1, 2, 3, 4, 4]),
        ("wrap", [0, 0, 1, 0, 0, 0, 2, 0], [4, 0, 1, 2, 3, 4, 0, 1]),
        ("reflect", [0, 0, 0, 1, 0, 0, 0, 1], None),
        ("constant", [0, 0, 2, 0, 0, 0, 1, 0], None),
    ]:
        nodes = [helper.make_node("Pad", ["x", "pads"], ["p"], name="pad", mode=mode),
                 helper.make_node("MaxPool", ["p"], ["y"], name="pool", kernel_shape=[1, 1])]
        m = model(nodes, [("x", F, [1, 3, 5, 5])], [("y", F, None)], {"pads": np.array(pads, np.int64)})
        pad = run_pass(upto(load(m), "pad_fold"), "pad_fold").graph.ops[0]
        assert pad.op_type == "Pad" and pad.attrs.get("row_src") == want, (mode, pads)
