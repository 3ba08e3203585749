"""Extra pass channel_shuffle: a Reshape -> Transpose -> Reshape that only permutes channels becomes a Gather along
the channels (float against ONNX Runtime through the reference executor, int8 bit for bit against the chain it
replaces); chains that move pixels or requantize are left alone."""
import numpy as np
from onnx import helper

from passes._build import F, assert_reference_matches_ort, load, model, run_pass, upto
from tigris.passes import normalize

RNG = np.random.default_rng(4)


def _shuffle(groups: int = 2, c: int = 8, perm=(0, 2, 1, 3, 4), batch: int = 1):
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[1, 1]),
             helper.make_node("Reshape", ["c", "s5"], ["r"]),
             helper.make_node("Transpose", ["r"], ["t"], perm=list(perm)),
             helper.make_node("Reshape", ["t", "s4"], ["u"]),
             helper.make_node("Conv", ["u", "w2"], ["y"], kernel_shape=[1, 1])]
    inits = {"w": RNG.standard_normal((c, 3, 1, 1)).astype(np.float32),
             "w2": RNG.standard_normal((4, c, 1, 1)).astype(np.float32),
             "s5": np.array([batch, groups, c // groups, 5, 7], np.int64),
             "s4": np.array([batch, c, 5, 7], np.int64)}
    return model(nodes, [("x", F, [batch, 3, 5, 7])], [("y", F, [batch, 4, 5, 7])], inits)


def test_shuffle_becomes_a_channel_gather():
    for groups, c in ((2, 8), (3, 12), (4, 8)):
        g = upto(load(_shuffle(groups, c)), "channel_shuffle")
        r = run_pass(g, "channel_shuffle")
        assert r.rewritten == 1
        gather = next(op for op in r.graph.ops if op.op_type == "Gather")
        k = c // groups
        assert gather.attrs["axis"] == 1 and list(gather.attrs["indices"]) == [a * k + b for b in range(k)
                                                                               for a in range(groups)]
        assert not any(op.op_type in ("Transpose", "Reshape") for op in r.graph.ops)
        assert run_pass(r.graph, "channel_shuffle").rewritten == 0
        assert_reference_matches_ort(_shuffle(groups, c), tol=1e-6)


def test_chains_that_move_pixels_stay():
    g = upto(load(_shuffle(perm=(0, 1, 2, 4, 3))), "channel_shuffle")  # swaps H and W: not per pixel
    assert run_pass(g, "channel_shuffle").rewritten == 0


def test_int8_shuffle_is_the_transposes_bytes(tmp_path):
    """ORT-quantized (QDQ int8) shuffle: the normalized graph has the Gather, and the reference executor gives the
    codes the original chain gives (the chain kept by skipping the pass)."""
    import onnx

    from tigris.passes import PIPELINE
    from tigris.reference import run_reference
    from tigris_testing import saved_model

    m = onnx.load(str(saved_model(tmp_path, _shuffle(3, 12), "s", True)))
    g_new, _ = normalize(load(m), check=True)
    g_old, _ = normalize(load(m), check=True, passes=tuple(p for p in PIPELINE if p.name != "channel_shuffle"))
    assert "Gather" in [op.op_type for op in g_new.ops] and "Gather" not in [op.op_type for op in g_old.ops]
    for seed in range(3):
        x = {"x": np.random.default_rng(seed).standard_normal((1, 3, 5, 7)).astype(np.float32)}
        np.testing.assert_array_equal(run_reference(g_new, x)["y"], run_reference(g_old, x)["y"])
