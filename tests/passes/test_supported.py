"""check_supported lists every node the runtime cannot run, at once."""
import numpy as np
import pytest
from onnx import helper

from passes._build import F, I8, load, model
from tigris.ir import UnsupportedModelError
from tigris.passes import check_supported, normalize, unsupported_nodes


def test_every_unsupported_node_listed():
    nodes = [helper.make_node("Cos", ["x"], ["a"], name="e1"), helper.make_node("Relu", ["a"], ["b"], name="ok"),
             helper.make_node("Sin", ["b"], ["c"], name="e2"),
             helper.make_node("Mod", ["c", "x2"], ["y"], name="mm", fmod=1)]
    m = model(nodes, [("x", F, [2, 2]), ("x2", F, [2, 2])], [("y", F, None)])
    g, _ = normalize(load(m), check=True)
    bad = unsupported_nodes(g)
    assert [(b["node"], b["op"]) for b in bad] == [("e1", "Cos"), ("e2", "Sin"), ("mm", "Mod")]
    assert all(b["reason"] for b in bad)
    with pytest.raises(UnsupportedModelError) as e:
        check_supported(g)
    assert len(e.value.nodes) == 3 and e.value.exit_code == 2


def test_float_op_after_dq_runs_in_float():
    # Sigmoid reads int8 through DQ and its float output feeds a float graph output consumed by nobody quantized:
    # QDQ fold keeps the DQ (rule 4b), so Sigmoid runs in float; only Cos (no kernel) is reported
    nodes = [helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["x"]),
             helper.make_node("Sigmoid", ["x"], ["a"], name="sig"),
             helper.make_node("Cos", ["a"], ["y"], name="erf")]
    m = model(nodes, [("xq", I8, [1, 4])], [("y", F, None)], {"s": np.float32(0.1), "z": np.int8(0)})
    g, _ = normalize(load(m), check=True)
    bad = {b["node"]: b["reason"] for b in unsupported_nodes(g)}
    assert "sig" not in bad and "no runtime kernel" in bad["erf"]


def test_supported_graph_passes():
    m = model([helper.make_node("Relu", ["x"], ["y"])], [("x", F, [1, 4])], [("y", F, [1, 4])])
    g, _ = normalize(load(m), check=True)
    check_supported(g)


def test_one_d_pools_run_on_the_c_runtime(tmp_path):
    """1-D MaxPool/AveragePool on [N, C, L] (a KWS model's pooling over time) are supported like Conv1D (regression:
    they were refused as "only 2-D pooling"). Float output
    within verify's tolerance of ONNX Runtime (1e-4 x max(1, max|ref|)), at one stage and tiled."""
    from tigris import api

    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[3], pads=[1, 1]),
             helper.make_node("MaxPool", ["c"], ["p"], kernel_shape=[3], strides=[2], pads=[1, 1]),
             helper.make_node("AveragePool", ["p"], ["y"], kernel_shape=[4], strides=[2], pads=[1, 1],
                              count_include_pad=1)]
    w = np.random.default_rng(0).standard_normal((6, 4, 3)).astype(np.float32)
    m = model(nodes, [("x", F, [1, 4, 40])], [("y", F, [1, 6, 10])], {"w": w})
    p = tmp_path / "pool1d.onnx"
    p.write_bytes(m.SerializeToString())
    g, _ = normalize(load(m), check=True)
    assert unsupported_nodes(g) == []
    for budget in ("1M", 900):
        r = api.verify(p, budget)
        assert r["pass"], r["outputs"]



def test_resize_without_kernel_reported_unsupported():
    """A tf_crop_and_resize that crops the channels has no kernel (float or int8): an unsupported node, exit 2,
    rather than a lowering error after the report. (An int8 linear Resize runs as a float island:
    tests/passes/test_float_tail.py.)"""
    nodes = [helper.make_node("Resize", ["x", "roi", "", "sz"], ["y"], name="up", mode="linear",
                              coordinate_transformation_mode="tf_crop_and_resize")]
    m = model(nodes, [("x", F, [1, 4, 4, 4])], [("y", F, [1, 2, 8, 8])],
              {"roi": np.float32([0, 0, 0, 0, 1, 0.5, 1, 1]), "sz": np.array([1, 2, 8, 8], np.int64)})
    g, _ = normalize(load(m), check=True)
    bad = {b["node"]: b["reason"] for b in unsupported_nodes(g)}
    assert "up" in bad and "crops the batch or channel axis" in bad["up"], bad
    with pytest.raises(UnsupportedModelError) as e:
        check_supported(g)
    assert e.value.exit_code == 2


def test_reflect_pad_is_supported():
    """A reflect Pad keeps its mode through pad_fold (lifted, not folded) and runs on the Pad kernel (was refused)."""
    nodes = [helper.make_node("Pad", ["x", "pads"], ["y"], name="pad", mode="reflect")]
    m = model(nodes, [("x", F, [1, 2, 4, 4])], [("y", F, [1, 2, 6, 6])],
              {"pads": np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64)})
    g, _ = normalize(load(m), check=True)
    assert unsupported_nodes(g) == []
    assert [op.attrs.get("mode") for op in g.ops if op.op_type == "Pad"] == ["reflect"]
