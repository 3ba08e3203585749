"""Pool concat: a MaxPool of a channel Concat becomes a Concat of MaxPools over the parts, bit for bit (float and
int8, the parts in encodings of their own), and only then."""
from __future__ import annotations

import logging
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper

from passes._build import F, assert_same_as_ort, load, model, random_feeds, run_pass, upto
from tigris.passes import PIPELINE, normalize

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "families"))
import builders  # noqa: E402
from tigris_testing import saved_model  # noqa: E402

POOL = dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])


def _cat_pool(axis: int = 1, ceil: int = 0, extra_reader: bool = False) -> onnx.ModelProto:
    nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Sigmoid", ["x"], ["b"]),
             helper.make_node("Neg", ["x"], ["c"]),
             helper.make_node("Concat", ["a", "b", "c"], ["cat"], axis=axis),
             helper.make_node("MaxPool", ["cat"], ["y"], ceil_mode=ceil, **POOL)]
    outs = [("y", F, None)]
    if extra_reader:
        nodes.append(helper.make_node("Relu", ["cat"], ["z"]))
        outs.append(("z", F, None))
    return model(nodes, [("x", F, [1, 3, 9, 11])], outs)


@pytest.mark.parametrize("axis", [1, -3])
@pytest.mark.parametrize("ceil", [0, 1])
def test_a_pool_of_a_channel_concat_pools_the_parts(axis, ceil):
    m = _cat_pool(axis, ceil)
    r = run_pass(upto(load(m), "pool_concat"), "pool_concat")
    assert r.rewritten == 1
    types = [o.op_type for o in r.graph.ops]
    assert types.count("MaxPool") == 3 and types[-1] == "Concat"
    assert_same_as_ort(m, r.graph, tol=0.0)


def test_other_concats_and_readers_are_left_alone():
    assert run_pass(upto(load(_cat_pool(axis=2)), "pool_concat"), "pool_concat").rewritten == 0  # along H
    r = run_pass(upto(load(_cat_pool(extra_reader=True)), "pool_concat"), "pool_concat")
    assert r.rewritten == 0 and r.declined


def _without_pass(g):
    return normalize(g, check=True, passes=tuple(p for p in PIPELINE if p.name != "pool_concat"))[0]


@pytest.mark.parametrize("int8", [False, True], ids=["float", "int8"])
def test_the_rewrite_is_bit_exact(tmp_path, int8):
    """A fire module (squeeze, two expands of their own encodings, Concat) and a MaxPool: the reference executor
    gives the same bytes with the rewrite as without it."""
    from tigris.reference import run_reference

    g = builders._new(4)
    s = g.op("Relu", [g.conv("x", 3, 4, 1)])
    cat = g.op("Concat", [g.op("Relu", [g.conv(s, 4, 6, 1)]), g.conv(s, 4, 5, 3)], axis=1)
    y = g.op("MaxPool", [cat], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)
    if int8:
        logging.getLogger().setLevel(logging.ERROR)
    path = saved_model(tmp_path, builders._finish(g, "fire_pool", [1, 3, 12, 13], g.conv(y, 11, 3, 1)), "m", int8)
    base = load(onnx.load(str(path)))
    with_pass, _ = normalize(base, check=True)
    assert [o.op_type for o in with_pass.ops].count("MaxPool") == 2
    without = _without_pass(base)
    assert [o.op_type for o in without.ops].count("MaxPool") == 1
    feeds = random_feeds(base, 3)
    a, b = run_reference(with_pass, feeds), run_reference(without, feeds)
    for k in b:
        np.testing.assert_array_equal(a[k], b[k])
