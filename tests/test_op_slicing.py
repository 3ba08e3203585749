"""Slicing and joining end to end: small models with Slice, Split, constant-index Gather, DepthToSpace and
SpaceToDepth through ``api.verify`` (compile, C runtime, NumPy reference, ONNX Runtime) at a generous budget and at
one that tiles; float within verify's tolerance of ONNX Runtime, int8 QDQ bit-exact against the reference and within
1 LSB of ONNX Runtime evaluated as written."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tigris import api

F = TensorProto.FLOAT


def _model(nodes, x_shape, outputs, inits=None, opset=18):
    g = helper.make_graph(nodes, "m", [helper.make_tensor_value_info("x", F, x_shape)],
                          [helper.make_tensor_value_info(n, F, None) for n in outputs],
                          initializer=[numpy_helper.from_array(np.asarray(v), k) for k, v in (inits or {}).items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 9
    m = onnx.shape_inference.infer_shapes(m, strict_mode=True)
    onnx.checker.check_model(m)
    return m


def _conv(name, x, cin, cout, inits, k=3, rng=None):
    rng = rng or np.random.default_rng(len(inits))
    inits[f"{name}_w"] = (rng.standard_normal((cout, cin, k, k)) * 0.3).astype(np.float32)
    inits[f"{name}_b"] = (rng.standard_normal(cout) * 0.1).astype(np.float32)
    return helper.make_node("Conv", [x, f"{name}_w", f"{name}_b"], [name], pads=[k // 2] * 4)


def _qdq(model: onnx.ModelProto, tmp_path, activation="int8"):
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    fp, qp = tmp_path / "f.onnx", tmp_path / "q.onnx"
    onnx.save(model, str(fp))
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]

    class R(CalibrationDataReader):
        def __init__(self):
            rng = np.random.default_rng(3)
            self.it = iter([{"x": rng.standard_normal(shape).astype(np.float32)} for _ in range(4)])

        def get_next(self):
            return next(self.it, None)

    quantize_static(str(fp), str(qp), R(), quant_format=QuantFormat.QDQ,
                    activation_type=QuantType.QInt8 if activation == "int8" else QuantType.QUInt8,
                    weight_type=QuantType.QInt8, per_channel=True)
    return qp


def _verify_both_budgets(path, tiles=True):
    r = api.verify(path, "1M")
    assert r["pass"], r["outputs"]
    probe = api.analyze(path, 64, emit=False)
    small = int(probe.min_fast_budget * 1.3)
    r = api.verify(path, small)
    assert r["pass"], r["outputs"]
    if tiles:
        assert len(r["plan"]["stages"]) > 1 or r["plan"]["tiling"]["tiled_stages"] > 0
    return r


def _split_concat(split_form: str, opset: int):
    """conv -> Split into three (channel sizes 2, 3, 3) -> conv on one part -> Concat; a Slice of rows with a step
    and a Gather permuting channels on the way."""
    inits: dict = {}
    nodes = [_conv("c0", "x", 3, 8, inits)]
    outs = ["a", "b", "c"]
    if split_form == "input":
        inits["sizes"] = np.array([2, 3, 3], np.int64)
        nodes.append(helper.make_node("Split", ["c0", "sizes"], outs, axis=1))
    elif split_form == "attr":
        nodes.append(helper.make_node("Split", ["c0"], outs, axis=1, split=[2, 3, 3]))
    else:  # opset 18 num_outputs: ceil(8 / 3) = 3, 3, 2
        nodes.append(helper.make_node("Split", ["c0"], outs, axis=-3, num_outputs=3))
    cb = 3
    nodes.append(_conv("cb", "b", cb, 4, inits))
    inits["perm"] = np.array([2, 0, 1] if split_form != "num" else [1, 0], np.int64)
    nodes.append(helper.make_node("Gather", ["c", "perm"], ["cg"], axis=1))
    nodes.append(helper.make_node("Concat", ["a", "cb", "cg"], ["cat"], axis=1))
    nodes.append(helper.make_node("Relu", ["cat"], ["r"]))
    for k, v in (("st", [1]), ("en", [100]), ("ax", [-2]), ("sp", [2])):
        inits[k] = np.array(v, np.int64)
    nodes.append(helper.make_node("Slice", ["r", "st", "en", "ax", "sp"], ["s"]))
    nodes.append(_conv("y", "s", 9, 4, inits))
    return _model(nodes, [1, 3, 16, 16], ["y"], inits, opset)


@pytest.mark.parametrize("form,opset", [("input", 13), ("attr", 11), ("num", 18)])
def test_split_gather_slice_float(tmp_path, form, opset):
    p = tmp_path / "m.onnx"
    onnx.save(_split_concat(form, opset), str(p))
    _verify_both_budgets(p)


@pytest.mark.parametrize("activation", ["int8", "uint8"])
def test_split_gather_slice_int8(tmp_path, activation):
    qp = _qdq(_split_concat("input", 13), tmp_path, activation)
    _verify_both_budgets(qp)


def test_negative_steps_and_scalar_gather(tmp_path):
    """A reversed Slice of channels and rows, a scalar Gather dropping an axis, a 2-D index Gather (rank grows)."""
    inits = {"st": np.array([-1, 7], np.int64), "en": np.array([-100, 0], np.int64),
             "ax": np.array([1, 2], np.int64), "sp": np.array([-1, -3], np.int64),
             "i0": np.array(1, np.int64), "i2": np.array([[0, 2], [1, 1]], np.int64)}
    nodes = [helper.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["s"]),
             helper.make_node("Gather", ["x", "i0"], ["g0"], axis=1),
             helper.make_node("Gather", ["g0", "i2"], ["g2"], axis=-1)]
    p = tmp_path / "m.onnx"
    onnx.save(_model(nodes, [1, 4, 8, 3], ["s", "g0", "g2"], inits), str(p))
    for seed in range(2):
        r = api.verify(p, "1M", seed=seed)
        assert r["pass"], r["outputs"]


def test_int8_gather_and_transpose_without_their_own_qdq_inherit_the_quantization(tmp_path):
    """onnx2tf writes a Gather or Transpose between int8 tensors with no QDQ of its own: the tensors they write take
    their producer's quantization (qdq_fold rule 6), the plan runs them on int8 and verifies."""
    s, z = np.float32(0.05), np.int8(3)
    inits = {"s": s, "z": z, "perm": np.array([3, 1, 2, 0, 5, 4], np.int64)}
    w = (np.random.default_rng(0).standard_normal((4, 6, 1, 1)) * 0.3).astype(np.float32)
    inits["w_q"] = np.clip(np.round(w / 0.01), -127, 127).astype(np.int8)
    inits["w_s"] = np.float32(0.01)
    inits["w_z"] = np.int8(0)
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"]),
             helper.make_node("Gather", ["xq", "perm"], ["gq"], axis=1),
             helper.make_node("Transpose", ["gq"], ["tq"], perm=[0, 1, 3, 2]),
             helper.make_node("DequantizeLinear", ["tq", "s", "z"], ["td"]),
             helper.make_node("DequantizeLinear", ["w_q", "w_s", "w_z"], ["w"]),
             helper.make_node("Conv", ["td", "w"], ["c"]),
             helper.make_node("QuantizeLinear", ["c", "s", "z"], ["cq"]),
             helper.make_node("DequantizeLinear", ["cq", "s", "z"], ["y"])]
    p = tmp_path / "m.onnx"
    onnx.save(_model(nodes, [1, 6, 5, 7], ["y"], inits, opset=13), str(p))
    compiled = api.compile_model(p, "1M")
    assert compiled.plan_bytes
    r = api.verify(p, "1M")
    assert r["pass"], r["outputs"]
    from tigris.load import load_model
    from tigris.passes import normalize

    g, _ = normalize(load_model(p))
    gathers = [op for op in g.ops if op.op_type == "Gather"]
    assert gathers and all(g.tensors[n].dtype == "int8" and g.tensors[n].quant is not None
                           for op in gathers for n in (*op.inputs, *op.outputs))


def test_rank5_unsqueeze_output_and_zero_ratio_training_dropout(tmp_path):
    """An Unsqueeze to rank 5 before a graph output is an alias of its rank-3 input's plain bytes (the copy kind
    takes it); a Dropout in training mode with ratio 0 drops nothing and is removed. A rank-5 tensor some other op
    reads stays unsupported, with its reason."""
    inits = {"axes": np.array([1, 3], np.int64), "ratio": np.float32(0.0), "train": np.array(True)}
    nodes = [helper.make_node("Dropout", ["x", "ratio", "train"], ["d"]),
             helper.make_node("Relu", ["d"], ["r"]),
             helper.make_node("Unsqueeze", ["r", "axes"], ["y"])]
    p = tmp_path / "m.onnx"
    onnx.save(_model(nodes, [2, 3, 4], ["y"], inits), str(p))
    r = api.verify(p, "1M")
    assert r["pass"], r["outputs"]
    nodes.append(helper.make_node("Relu", ["y"], ["z"]))
    onnx.save(_model(nodes, [2, 3, 4], ["z"], inits), str(p))
    from tigris.ir import UnsupportedModelError

    with pytest.raises(UnsupportedModelError) as ei:
        api.compile_model(p, "1M")
    assert [n["op"] for n in ei.value.nodes] == ["Relu"] and "rank-5" in ei.value.nodes[0]["reason"]


def _depth_space(mode: str):
    """conv -> DepthToSpace (2x) -> conv -> SpaceToDepth (2x) -> conv: sub-pixel up-sampling and its inverse."""
    inits: dict = {}
    nodes = [_conv("c0", "x", 3, 8, inits),
             helper.make_node("DepthToSpace", ["c0"], ["d"], blocksize=2, mode=mode),
             _conv("c1", "d", 2, 4, inits),
             helper.make_node("SpaceToDepth", ["c1"], ["s"], blocksize=2),
             _conv("y", "s", 16, 4, inits)]
    return _model(nodes, [1, 3, 12, 12], ["y"], inits, opset=13)


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_depth_to_space_and_back_float(tmp_path, mode):
    p = tmp_path / "m.onnx"
    onnx.save(_depth_space(mode), str(p))
    _verify_both_budgets(p)


def test_depth_to_space_and_back_int8(tmp_path):
    _verify_both_budgets(_qdq(_depth_space("DCR"), tmp_path, "uint8"))


def test_training_dropout_with_a_ratio_is_reported_with_its_reason(tmp_path):
    """A Dropout in training mode with a non-zero ratio draws a random mask: exit 2 naming the node, and the reason
    says so (not "no runtime kernel")."""
    from tigris.ir import UnsupportedModelError

    inits = {"ratio": np.float32(0.5), "train": np.array(True)}
    p = tmp_path / "m.onnx"
    onnx.save(_model([helper.make_node("Dropout", ["x", "ratio", "train"], ["y"], seed=0)], [1, 4], ["y"], inits),
              str(p))
    with pytest.raises(UnsupportedModelError) as ei:
        api.compile_model(p, "1M")
    assert [n["op"] for n in ei.value.nodes] == ["Dropout"] and "training mode" in ei.value.nodes[0]["reason"]
