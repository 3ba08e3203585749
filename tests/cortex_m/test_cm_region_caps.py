"""Unit budgets of one region on an emulated core (docs/memory-planning.md "Unit budgets of one region" and "Units
under the output written over the input"): a MobileNetV2-like head planned in one SRAM region whose head unit is cut
to what the input leaves of it, and the same head with the next block's expansion, whose units stay under the head's
output written over the input. The generated firmware passes its one arena as both arenas; on the Cortex-M4F and the
Cortex-M55 the int8 output is the host runtime's byte for byte, which is the untiled plan's."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from cm_fixtures import board_objs, harness, run_plan  # noqa: F401  (fixtures)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime"))

import _rt_plans as P  # noqa: E402

CASES = {
    # (layers, input side, fast budget, region)
    "head": (P.MBV2_HEAD, 32, 2864, 5536),
    "under_output": (P.MBV2_HEAD + [("conv", 1, 1, 1, 72), ("dw", 3, 1, 1), ("conv", 1, 1, 1, 12)], 48, 6448, 9296),
}


@pytest.mark.parametrize("board", ["mps2-an386", "mps3-an547"])
@pytest.mark.parametrize("key", list(CASES))
def test_region_caps_plans_on_qemu_match_host(harness, board_objs, tmp_path, key, board):
    from tigris.emit import format as F
    from tigris.emit.reader import read_plan
    from tigris.host import Session
    from tigris.plan import sram_bytes

    layers, side, fast, region = CASES[key]
    g = P.chain_graph(layers, True, side, 3, 1)
    untiled = Session(P.compile_graph(g, 1 << 22, xip=True)[0])
    data, plan = P.compile_graph(g, fast, slow=region, xip=True, one_region=True)
    assert plan.one_region and len(plan.units) > 1 and sram_bytes(plan) <= region
    assert read_plan(data).flags & F.Flag.ONE_REGION
    if key == "under_output":
        assert any(plan.units[0].overwrite.values())
    x = P.random_input(g, 5)
    hs = Session(data)
    want = untiled._to_caller(untiled.outputs[0], untiled.run(x).outputs["y"])
    assert hs._to_caller(hs.outputs[0], hs.run(x).outputs["y"]) == want
    got = run_plan(harness, board_objs, tmp_path / "p", data, board, hs._to_caller(hs.inputs[0], x["x"]), "regioncaps")
    assert got == want, f"{key} on {board}"
