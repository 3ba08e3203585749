"""Expansion groups with recomputed overlaps (spatial rule 10: line-buffer entries "never carries") on an emulated
core: the split inverted-residual block's one rolling unit, each group's expansion recomputed every tile, runs on
the Cortex-M4F with the host runtime's int8 output byte for byte, which is the unsplit untiled plan's."""
from __future__ import annotations

import sys
from pathlib import Path

from cm_fixtures import board_objs, harness, run_plan  # noqa: F401  (fixtures)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime"))

import _rt_plans as P  # noqa: E402


def test_expansion_groups_on_qemu_match_host(harness, board_objs, tmp_path):
    from tigris.host import Session
    from tigris.passes.weight_split import split_expansion

    g = P.chain_graph([("conv", 3, 1, 1), ("conv", 1, 1, 1, 48), ("dw", 3, 2, 1), ("conv", 1, 1, 1, 8)], True, 24, 8,
                      0)
    untiled = Session(P.compile_graph(g, 1 << 20, xip=True)[0])
    data, plan = P.compile_graph(split_expansion(g, "op1", 5), 2320, slow=5248, xip=True)
    assert [len(u.recompute) for u in plan.units] == [5]
    x = P.random_input(g, 3)
    hs = Session(data)
    want = untiled._to_caller(untiled.outputs[0], untiled.run(x).outputs["y"])
    assert hs._to_caller(hs.outputs[0], hs.run(x).outputs["y"]) == want
    got = run_plan(harness, board_objs, tmp_path / "p", data, "mps2-an386", hs._to_caller(hs.inputs[0], x["x"]),
                   "expansion")
    assert got == want
