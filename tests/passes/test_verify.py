"""The IR verifier reports every broken invariant (and passes on a good graph)."""
import numpy as np
import pytest

from tigris.ir import AnalyzedGraph, Op, QuantParam, Tensor
from tigris.passes.verify import IRVerifyError, problems, verify


def _good():
    T = {"x": Tensor("x", (1, 4)), "w": Tensor("w", (3, 4)), "y": Tensor("y", (1, 3)), "z": Tensor("z", (1, 3))}
    ops = [Op("fc", "Gemm", ("x", "w"), ("y",), {"fused_activation": None}), Op("r", "Relu", ("y",), ("z",))]
    return AnalyzedGraph("g", T, ops, ["x"], ["z"], {"w": np.ones((3, 4), np.float32)})


def test_good_graph_passes():
    verify(_good())


def test_order_and_production_errors():
    g = _good()
    g = g.replace(ops=g.ops[::-1])
    assert any("not a graph input, a constant, or produced earlier" in p for p in problems(g))
    g = _good()
    g = g.replace(ops=g.ops + [Op("fc", "Relu", ("y",), ("z",))])
    ps = problems(g)
    assert any("used more than once" in p for p in ps) and any("produced twice" in p for p in ps)


def test_dangling_and_dead():
    g = _good()
    g.tensors["orphan"] = Tensor("orphan", (2,))
    g = g.replace(ops=g.ops + [Op("dead", "Relu", ("y",), ("d",))])
    g.tensors["d"] = Tensor("d", (1, 3))
    ps = problems(g)
    assert any("'orphan' is dangling" in p for p in ps) and any("dead op" in p for p in ps)


def test_shape_and_constant_mismatch():
    g = _good()
    g.tensors["z"] = Tensor("z", (1, 4))
    g.weights["w"] = np.ones((3, 4), np.int8)
    ps = problems(g)
    assert any("Relu" in p and "output shape" in p for p in ps)
    assert any("array dtype int8" in p for p in ps)


def test_bad_quantization():
    g = _good()
    g.tensors["y"] = Tensor("y", (1, 3), "int8", QuantParam(np.float32([0.0]), np.int64([200])))
    g.tensors["w"] = Tensor("w", (3, 4), "float32", QuantParam(np.float32([1, 1]), np.int64([0, 0]), 0))
    ps = problems(g)
    assert any("positive" in p for p in ps) and any("zero point outside" in p for p in ps)
    assert any("2 scales for axis 0" in p for p in ps)
    with pytest.raises(IRVerifyError) as e:
        verify(g, "in pass x")
    assert str(e.value).startswith("in pass x") and len(e.value.problems) >= 3
