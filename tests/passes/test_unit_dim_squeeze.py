"""Unit dim squeeze: ShuffleNet's rank-5 channel shuffle runs at rank 4 (float and ORT-style int8 QDQ)."""
import numpy as np
from onnx import helper

from passes._build import F, load, model, run_pass, upto
from tigris import api
from tigris.passes import normalize, unsupported_nodes

RNG = np.random.default_rng(0)


def _shuffle(lead: int = 1, perm=(0, 2, 1, 3, 4)):
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[1, 1]),
             helper.make_node("Reshape", ["c", "s5"], ["r"]),
             helper.make_node("Transpose", ["r"], ["t"], perm=list(perm)),
             helper.make_node("Reshape", ["t", "s4"], ["y"])]
    inits = {"w": RNG.standard_normal((8, 3, 1, 1)).astype(np.float32),
             "s5": np.array([lead, 2 // lead if lead > 1 else 2, 4, 6, 6], np.int64),
             "s4": np.array([1, 8, 6, 6], np.int64)}
    return model(nodes, [("x", F, [1, 3, 6, 6])], [("y", F, [1, 8, 6, 6])], inits)


def test_channel_shuffle_squeezed_to_rank_4():
    r = run_pass(upto(load(_shuffle()), "unit_dim_squeeze"), "unit_dim_squeeze")
    assert r.rewritten == 1
    t = next(op for op in r.graph.ops if op.op_type == "Transpose")
    assert list(t.attrs["perm"]) == [1, 0, 2, 3] and r.graph.tensors[t.inputs[0]].shape == (2, 4, 6, 6)
    assert run_pass(r.graph, "unit_dim_squeeze").rewritten == 0


def test_channel_shuffle_runs_on_the_c_runtime(tmp_path):
    """Regression: the rank-5 tensors stopped lowering with "rank 5 tensors are not supported". Float within verify's
    1e-4 x max(1, max|ref|) of ONNX Runtime, at one stage and at a small budget."""
    p = tmp_path / "shuffle.onnx"
    p.write_bytes(_shuffle().SerializeToString())
    small = int(api.analyze(p, 64).min_fast_budget * 1.3)
    for budget in ("1M", small):
        r = api.verify(p, budget)
        assert r["pass"], r["outputs"]


def test_rank_5_left_over_is_reported_unsupported():
    """A rank-5 tensor the pass cannot squeeze (leading dim 2) is an unsupported node, never a lowering error (its
    transpose also swaps H and W, so it is no channel permutation that pass channel_shuffle would make a Gather)."""
    g, _ = normalize(load(_shuffle(lead=2, perm=(0, 2, 1, 4, 3))), check=True)
    bad = unsupported_nodes(g)
    assert bad and all("at most 4 dimensions" in b["reason"] for b in bad)
