"""Stage 1 (tigris.load): input shape binding, shape-subgraph folding, inference, weights, ordering, errors."""
from __future__ import annotations


import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from tigris.ir import TigrisError
from tigris.load import load_model, load_onnx_model
from tigris.passes.verify import verify

F = TensorProto.FLOAT


from tigris_testing import SHARED_FLOAT, SHARED_INT8, shared_model  # noqa: E402


def _model(nodes, inputs, outputs, inits=None, opset=17):
    g = helper.make_graph(nodes, "t", inputs, outputs,
                          [numpy_helper.from_array(np.asarray(v), k) for k, v in (inits or {}).items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def _branched():
    """x -> A1 -> A2 -> a ; x -> B -> b ; Add(a, b) -> y."""
    nodes = [
        helper.make_node("Relu", ["x"], ["a1"], name="A1"),
        helper.make_node("Sigmoid", ["a1"], ["a"], name="A2"),
        helper.make_node("Tanh", ["x"], ["b"], name="B"),
        helper.make_node("Add", ["a", "b"], ["y"], name="Add"),
    ]
    return _model(nodes, [helper.make_tensor_value_info("x", F, [1, 4])], [helper.make_tensor_value_info("y", F, None)])


def test_order_is_dfs_postorder_with_reversed_children():
    g = load_onnx_model(_branched())
    # Add's children are [A2 (input 0), B (input 1)]; reversed, B's branch is emitted first, then A1, A2.
    assert [op.name for op in g.ops] == ["B", "A1", "A2", "Add"]
    verify(g)


def test_order_drops_dead_nodes_with_a_note():
    m = _branched()
    m.graph.node.append(helper.make_node("Relu", ["x"], ["dead"], name="Dead"))
    g = load_onnx_model(m)
    assert "Dead" not in [op.name for op in g.ops]
    assert any("1 node(s)" in n for n in g.notes)


def test_free_dimension_bound_to_one_and_noted():
    m = _model([helper.make_node("Relu", ["x"], ["y"])],
               [helper.make_tensor_value_info("x", F, ["N", 3, 8, 8])], [helper.make_tensor_value_info("y", F, None)])
    g = load_onnx_model(m)
    assert g.tensors["x"].shape == (1, 3, 8, 8)
    assert g.tensors["y"].shape == (1, 3, 8, 8)
    assert any("input x axis 0" in n and "bound to 1" in n for n in g.notes)


def test_input_shapes_override_and_errors():
    m = _model([helper.make_node("Relu", ["x"], ["y"])],
               [helper.make_tensor_value_info("x", F, ["N", 3, "H", "W"])],
               [helper.make_tensor_value_info("y", F, None)])
    g = load_onnx_model(m, {"x": (2, 3, 16, 12)})
    assert g.tensors["y"].shape == (2, 3, 16, 12) and not g.notes
    assert g.boundary["x"].shape == (2, 3, 16, 12)
    with pytest.raises(TigrisError, match="unknown input"):
        load_onnx_model(m, {"nope": (1, 3, 4, 4)})
    with pytest.raises(TigrisError, match="rank"):
        load_onnx_model(m, {"x": (1, 3, 4)})
    with pytest.raises(TigrisError, match="fixes it to 3"):
        load_onnx_model(m, {"x": (1, 4, 4, 4)})


def test_shape_subgraph_is_folded():
    # Flatten written the exporter way: Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [-1]))
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"]),
        helper.make_node("Shape", ["c"], ["s"]),
        helper.make_node("Gather", ["s", "i0"], ["n"], axis=0),
        helper.make_node("Unsqueeze", ["n", "ax0"], ["nu"]),
        helper.make_node("Concat", ["nu", "m1"], ["shp"], axis=0),
        helper.make_node("Reshape", ["c", "shp"], ["y"]),
    ]
    inits = {"w": np.ones((4, 3, 3, 3), np.float32), "i0": np.array(0, np.int64), "ax0": np.array([0], np.int64),
             "m1": np.array([-1], np.int64)}
    m = _model(nodes, [helper.make_tensor_value_info("x", F, ["N", 3, 8, 8])],
               [helper.make_tensor_value_info("y", F, None)], inits)
    g = load_onnx_model(m)
    assert [op.op_type for op in g.ops] == ["Conv", "Reshape"]
    assert g.tensors["y"].shape == (1, 144)
    assert np.array_equal(g.weights[g.ops[1].inputs[1]], [1, -1])
    verify(g)


def test_unresolvable_dimension_names_the_tensor():
    # The reshape target comes from a run-time int64 input: nothing can fold it.
    m = _model([helper.make_node("Reshape", ["x", "shape"], ["y"])],
               [helper.make_tensor_value_info("x", F, [1, 12]),
                helper.make_tensor_value_info("shape", TensorProto.INT64, [2])],
               [helper.make_tensor_value_info("y", F, None)])
    with pytest.raises(TigrisError) as e:
        load_onnx_model(m)
    assert e.value.where == "y"


def test_weights_and_constant_ops():
    nodes = [helper.make_node("Constant", [], ["k"], value=numpy_helper.from_array(np.float32([2.0]), "k")),
             helper.make_node("Mul", ["x", "k"], ["m"]),
             helper.make_node("Add", ["m", "b"], ["y"])]
    m = _model(nodes, [helper.make_tensor_value_info("x", F, [1, 3])], [helper.make_tensor_value_info("y", F, None)],
               {"b": np.float32([1, 2, 3]), "unused": np.zeros(5, np.float32)})
    g = load_onnx_model(m)
    assert set(g.weights) == {"b"}  # the unread initializer is not a weight
    assert g.weights["b"].dtype == np.float32
    assert [op.op_type for op in g.ops] == ["Constant", "Mul", "Add"]  # pass 1 folds Constant, not the loader
    assert g.boundary["x"].dtype == "float32" and g.boundary["y"].shape == (1, 3)


def test_legacy_softmax_axis(tmp_path):
    m = _model([helper.make_node("Softmax", ["x"], ["y"])], [helper.make_tensor_value_info("x", F, [1, 10])],
               [helper.make_tensor_value_info("y", F, None)], opset=11)
    g = load_onnx_model(m)
    assert g.ops[0].attrs["axis"] == 1 and "coerce_2d" not in g.ops[0].attrs
    m = _model([helper.make_node("Softmax", ["x"], ["y"])], [helper.make_tensor_value_info("x", F, [1, 2, 5])],
               [helper.make_tensor_value_info("y", F, None)], opset=11)
    assert load_onnx_model(m).ops[0].attrs.get("coerce_2d")


def test_unreadable_files_name_the_file(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x00\x01 this is not protobuf \xff" * 10)
    with pytest.raises(TigrisError) as e:
        load_model(bad)
    assert e.value.where == str(bad)
    with pytest.raises(TigrisError) as e:
        load_model(tmp_path / "missing.onnx")
    assert "missing.onnx" in e.value.where


def test_mnist8_opset8():
    g = load_model(shared_model("onnx_zoo/mnist-8.onnx"))
    assert g.tensors["Input3"].shape == (1, 1, 28, 28)
    assert g.tensors["Plus214_Output_0"].shape == (1, 10)
    assert all(all(d > 0 for d in t.shape) or t.shape == () for t in g.tensors.values())
    verify(g)


@pytest.mark.parametrize("rel", SHARED_FLOAT + SHARED_INT8)
def test_every_shared_model_loads(rel):
    g = load_model(shared_model(rel))
    verify(g)
    for name in g.inputs + g.outputs:
        assert name in g.boundary
    assert g.ops


def test_custom_domain_operators_are_unsupported_nodes():
    """Operators of another domain whose shapes ONNX cannot infer are each reported as unsupported (exit 2), not as
    an unresolvable tensor shape naming one of them (regression). (ORT's QOperator ops are rewritten to QDQ first:
    tests/test_qoperator.py.)"""
    from tigris.ir import UnsupportedModelError

    nodes = [helper.make_node("Relu", ["x"], ["a"], name="ok"),
             helper.make_node("Frobnicate", ["a", "s", "z"], ["b"], name="qadd", domain="com.example"),
             helper.make_node("Twiddle", ["b", "s", "z", "s", "z"], ["y"], name="qsig", domain="com.example")]
    m = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 4])],
               [helper.make_tensor_value_info("y", TensorProto.UINT8, None)],
               {"s": np.float32(0.1), "z": np.uint8(128)})
    m.opset_import.append(helper.make_opsetid("com.example", 1))
    with pytest.raises(UnsupportedModelError) as e:
        load_onnx_model(m)
    assert [n["node"] for n in e.value.nodes] == ["qadd", "qsig"] and e.value.exit_code == 2
    assert all("com.example" in n["reason"] for n in e.value.nodes)


# --- validation and limits (tigris/load/validate.py) -----------------------------------------------------------
def _relu(in_shape=(1, 8), out_shape=(1, 8)):
    return _model([helper.make_node("Relu", ["x"], ["y"], name="r")], [helper.make_tensor_value_info("x", F, in_shape)],
                  [helper.make_tensor_value_info("y", F, out_shape)])


def _refused(m, *, shapes=None) -> TigrisError:
    with pytest.raises(TigrisError) as e:
        load_onnx_model(m, shapes)
    assert e.value.exit_code == 2
    return e.value


def test_limits_name_the_tensor_before_anything_is_allocated():
    assert _refused(_relu((1, 2**31), (1, 2**31))).where == "x"  # above the i32 dims of the format
    assert _refused(_relu((1, 2**30 + 1), (1, 2**30 + 1))).where == "x"  # 4 GiB + 4 bytes: above u32 sizes
    e = _refused(_relu((1, "n"), (1, "n")), shapes={"x": (1, 2**40)})
    assert e.where == "x" and "too large" in e.what
    conv = _model([helper.make_node("Conv", ["x", "w"], ["y"], name="c", kernel_shape=[1, 1], pads=[2**30] * 4)],
                  [helper.make_tensor_value_info("x", F, [1, 1, 4, 4])], [helper.make_tensor_value_info("y", F, None)],
                  {"w": np.ones((1, 1, 1, 1), np.float32)})
    conv.graph.output[0].type.tensor_type.shape.SetInParent()
    del conv.graph.output[0].type.tensor_type.shape.dim[:]
    for _ in range(4):
        conv.graph.output[0].type.tensor_type.shape.dim.add().dim_param = "d"
    assert _refused(conv).where == "y"


def test_model_validation():
    assert _refused(_relu((1, -1), (1, 8))).where == "x"  # negative dim_value
    m = _relu()
    m.opset_import[0].version = 99
    assert "opset 99" in _refused(m).what
    bogus = _model([helper.make_node("MaxPool", ["x"], ["y"], name="pool", kernel_shape=[2, 2], auto_pad="BOGUS")],
                   [helper.make_tensor_value_info("x", F, [1, 1, 4, 4])],
                   [helper.make_tensor_value_info("y", F, [1, 1, 2, 2])])
    assert _refused(bogus).where == "pool"
    none = _model([helper.make_node("Relu", ["x"], ["y"])], [helper.make_tensor_value_info("x", F, [1, 8])], [])
    assert "no graph outputs" in _refused(none).what
    same = _model([], [helper.make_tensor_value_info("x", F, [1, 8])], [helper.make_tensor_value_info("x", F, [1, 8])])
    assert _refused(same).where == "x"


def test_declared_output_shape_must_match_the_computed_one():
    assert _refused(_relu((1, 8), (1, 5))).where == "y"
    assert _refused(_relu((1, 8), (8,))).where == "y"
    g = load_onnx_model(_relu((1, 8), (1, "n")))  # a symbolic declared dim is not a disagreement
    assert g.tensors["y"].shape == (1, 8)


def test_non_finite_weights_warn_once_naming_the_initializer():
    from tigris.ir import TigrisWarning

    m = _model([helper.make_node("Add", ["x", "b"], ["y"], name="add")],
               [helper.make_tensor_value_info("x", F, [1, 2])], [helper.make_tensor_value_info("y", F, [1, 2])], {"b": np.array([[np.nan, np.inf]], np.float32)})
    with pytest.warns(TigrisWarning, match="initializer b holds 2 non-finite"):
        load_onnx_model(m)
