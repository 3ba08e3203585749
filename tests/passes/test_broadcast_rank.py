"""Broadcast rank: an element-wise op between activations of different ranks (NumPy broadcasting) runs on the C
runtime. Regression: ``[1, 3, 4, 5] + [4, 5]`` and ``[3, 4, 5] + [5]`` compiled and then failed in the runtime with
TGRS_ERR_SHAPE."""
import numpy as np
import pytest
from onnx import helper

from passes._build import F, load, model, run_pass, upto
from tigris import api

SHAPES = [((3, 4, 5), (5,)), ((1, 3, 4, 5), (4, 5)), ((1, 3, 4, 5), (5,)), ((1, 3, 4, 5), (3, 1, 1)),
          ((1, 3, 4, 5), (4, 1)), ((4, 5), (1, 3, 4, 5)), ((2, 3), (3,))]


def _binary(op: str, xs, ys, quantized: bool = False):
    out = tuple(np.broadcast_shapes(xs, ys))
    inits = {}
    if not quantized:
        nodes = [helper.make_node(op, ["x", "y"], ["z"])]
    else:
        # ORT-style QDQ: each activation on its own scale, the result on a third
        inits = {"sx": np.float32(0.02), "zx": np.int8(3), "sy": np.float32(0.013), "zy": np.int8(-5),
                 "sz": np.float32(0.03), "zz": np.int8(1)}
        nodes = [helper.make_node("QuantizeLinear", ["x", "sx", "zx"], ["xq"]),
                 helper.make_node("DequantizeLinear", ["xq", "sx", "zx"], ["xd"]),
                 helper.make_node("QuantizeLinear", ["y", "sy", "zy"], ["yq"]),
                 helper.make_node("DequantizeLinear", ["yq", "sy", "zy"], ["yd"]),
                 helper.make_node(op, ["xd", "yd"], ["zf"]),
                 helper.make_node("QuantizeLinear", ["zf", "sz", "zz"], ["zq"]),
                 helper.make_node("DequantizeLinear", ["zq", "sz", "zz"], ["z"])]
    return model(nodes, [("x", F, list(xs)), ("y", F, list(ys))], [("z", F, list(out))], inits)


def test_short_operand_gets_a_reshape_to_the_output_rank():
    g = upto(load(_binary("Add", (1, 3, 4, 5), (4, 5))), "broadcast_rank")
    r = run_pass(g, "broadcast_rank")
    assert r.rewritten == 1
    add = next(op for op in r.graph.ops if op.op_type == "Add")
    assert [r.graph.tensors[i].shape for i in add.inputs] == [(1, 3, 4, 5), (1, 1, 4, 5)]
    assert run_pass(r.graph, "broadcast_rank").rewritten == 0


def test_equal_ranks_are_left_alone():
    g = upto(load(_binary("Mul", (1, 3, 4, 5), (1, 3, 1, 1))), "broadcast_rank")
    assert run_pass(g, "broadcast_rank").rewritten == 0


@pytest.mark.parametrize("xs,ys", SHAPES)
@pytest.mark.parametrize("op", ["Add", "Sub", "Mul"])
@pytest.mark.parametrize("quantized", [False, True])
def test_broadcast_between_activations_verifies(tmp_path, op, xs, ys, quantized):
    """Float within 1e-4 x max(1, max|ref|) of ONNX Runtime; int8 bit-exact against the reference and within
    1 LSB of ONNX Runtime (verify's criteria)."""
    p = tmp_path / "m.onnx"
    p.write_bytes(_binary(op, xs, ys, quantized).SerializeToString())
    for seed in range(2):
        r = api.verify(p, "1M", seed=seed)
        assert r["pass"], r["outputs"]
