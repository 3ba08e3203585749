"""Pass 11, shape op fold (what survives loading: built directly in the IR)."""
import numpy as np

from tigris.ir import AnalyzedGraph, Op, Tensor
from passes._build import run_pass


def _graph():
    T = {
        "x": Tensor("x", (1, 2, 3, 4)), "r": Tensor("r", (1, 2, 3, 4)), "s": Tensor("s", (4,), "int64"),
        "i0": Tensor("i0", (), "int64"), "n": Tensor("n", (), "int64"), "ax": Tensor("ax", (1,), "int64"),
        "nu": Tensor("nu", (1,), "int64"), "m1": Tensor("m1", (1,), "int64"), "shp": Tensor("shp", (2,), "int64"),
        "y": Tensor("y", (1, 24)),
    }
    W = {"i0": np.array(0, np.int64), "ax": np.array([0], np.int64), "m1": np.array([-1], np.int64)}
    ops = [Op("relu", "Relu", ("x",), ("r",)), Op("shape", "Shape", ("r",), ("s",)),
           Op("gather", "Gather", ("s", "i0"), ("n",), {"axis": 0}), Op("unsq", "Unsqueeze", ("n", "ax"), ("nu",)),
           Op("concat", "Concat", ("nu", "m1"), ("shp",), {"axis": 0}), Op("reshape", "Reshape", ("r", "shp"), ("y",))]
    return AnalyzedGraph("t", T, ops, ["x"], ["y"], W)


def test_chain_folds_and_reshape_target_is_constant():
    r = run_pass(_graph(), "shape_op_fold")
    assert [op.op_type for op in r.graph.ops] == ["Relu", "Reshape"]
    target = r.graph.ops[1].inputs[1]
    assert np.array_equal(r.graph.weights[target], [1, -1])
    assert r.rewritten >= 4
    again = run_pass(r.graph, "shape_op_fold")
    assert again.rewritten == 0


def test_reshape_with_runtime_target_gets_static_target():
    g = _graph()
    g = g.replace(ops=[g.ops[0], Op("reshape", "Reshape", ("r", "dyn"), ("y",))], inputs=["x", "dyn"])
    g.tensors["dyn"] = Tensor("dyn", (2,), "int64")
    for k in ("s", "n", "nu", "shp"):
        del g.tensors[k]
    r = run_pass(g.replace(weights={}, tensors={k: v for k, v in g.tensors.items() if k not in ("i0", "ax", "m1")}),
                 "shape_op_fold")
    assert np.array_equal(r.graph.weights[r.graph.ops[1].inputs[1]], [1, 24])


def test_noop():
    g = _graph()
    g = g.replace(ops=[g.ops[0]], outputs=["r"], weights={},
                  tensors={k: v for k, v in g.tensors.items() if k in ("x", "r")})
    assert run_pass(g, "shape_op_fold").rewritten == 0
