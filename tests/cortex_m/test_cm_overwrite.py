"""Streaming overwrite (unit flag OVERWRITE) and one SRAM region (header flag ONE_REGION) on an emulated core: plans
whose units write their spilled outputs over the slow homes of inputs dying in them (one rolling unit over its input;
two units, each over the one before), and the two-unit plan in one block of memory (the generated firmware passes
its one arena array as both arenas), run on the Cortex-M4F with the host runtime's int8 output, byte for byte, which
is the untiled plan's; a runtime built with -DTGRS_NO_OVERWRITE or -DTGRS_NO_REGION refuses the plans that need
those proofs, and their generated files stop such a build."""
from __future__ import annotations

import sys
from pathlib import Path

from cm_fixtures import assert_feature_off_refuses, board_objs, harness, run_plan  # noqa: F401  (fixtures)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime"))

import _rt_plans as P  # noqa: E402


def test_overwrite_plans_on_qemu_match_host(harness, board_objs, tmp_path):
    from tigris.emit.reader import read_plan
    from tigris.emit import format as F
    from tigris.host import Session

    g = P.overwrite_chain()
    untiled = Session(P.compile_graph(g, 1 << 20, xip=True)[0])
    for n, (fast, one) in enumerate(((1536, False), (1024, False), (1024, True))):
        data, plan = P.compile_graph(g, fast, xip=True, one_region=one)
        assert any(u.flags & F.UnitFlag.OVERWRITE for u in read_plan(data).units)
        assert bool(read_plan(data).flags & F.Flag.ONE_REGION) == one
        x = P.random_input(g, 7 + n)
        hs = Session(data)
        want = untiled._to_caller(untiled.outputs[0], untiled.run(x).outputs["y"])
        assert hs._to_caller(hs.outputs[0], hs.run(x).outputs["y"]) == want
        got = run_plan(harness, board_objs, tmp_path / f"p{n}", data, "mps2-an386", hs._to_caller(hs.inputs[0], x["x"]),
                       "overwrite")
        assert got == want, f"plan at {fast} B, one region {one}"


def test_no_overwrite_or_region_firmware_refuses_the_plans(harness, board_objs, tmp_path):
    from tigris.host import Session

    g = P.overwrite_chain()
    x = Session(P.compile_graph(g, 1 << 20, xip=True)[0])._to_caller(Session(P.compile_graph(g, 1 << 20, xip=True)[0])
                                                                      .inputs[0], P.random_input(g, 7)["x"])
    overwrite, _ = P.compile_graph(g, 1536, xip=True)
    assert_feature_off_refuses(harness, board_objs, tmp_path / "ow", overwrite, x, "TGRS_NO_OVERWRITE", "noow",
                               build_match="OVERWRITE")
    region, _ = P.compile_graph(g, 1024, xip=True, one_region=True)
    assert_feature_off_refuses(harness, board_objs, tmp_path / "region", region, x, "TGRS_NO_REGION", "noregion",
                               build_match="ONE_REGION")
