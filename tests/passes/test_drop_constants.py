"""Pass 17, unreferenced constant drop."""
import numpy as np
from onnx import helper

from passes._build import F, load, model, run_pass, upto, assert_reference_matches_ort


def test_leftover_constants_dropped():
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"]),
             helper.make_node("BatchNormalization", ["c", "g", "b", "m", "v"], ["y"])]
    ones = np.ones(2, np.float32)
    m = model(nodes, [("x", F, [1, 2, 3, 3])], [("y", F, None)],
              {"w": np.ones((2, 2, 1, 1), np.float32), "g": ones, "b": ones, "m": ones, "v": ones})
    g = upto(load(m), "drop_constants")
    assert len(g.weights) > 2  # BatchNorm parameters and the unfolded weight are left behind
    r = run_pass(g, "drop_constants")
    read = {t for op in r.graph.ops for t in op.inputs}
    assert set(r.graph.weights) == read & set(g.weights) and r.rewritten == len(g.weights) - len(r.graph.weights)
    assert run_pass(r.graph, "drop_constants").rewritten == 0


def test_reference_executor_agrees_with_ort():
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"]),
             helper.make_node("BatchNormalization", ["c", "g", "b", "m", "v"], ["y"])]
    ones = np.ones(2, np.float32)
    assert_reference_matches_ort(model(nodes, [("x", F, [1, 2, 3, 3])], [("y", F, None)],
                                       {"w": np.ones((2, 2, 1, 1), np.float32), "g": ones, "b": ones, "m": ones,
                                        "v": ones * 2}))
