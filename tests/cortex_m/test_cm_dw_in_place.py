"""Depthwise convs in place (docs/format.md "Window ops in place") on the emulated cores: plans whose depthwise convs
write their output over their input in row pieces (stride 1 and 2, kernels 3 and 5, channel tails; untiled and
tiled) run on the Cortex-M4F (DSP kernels) and the Cortex-M55 (Helium kernels) with the host runtime's int8 output,
byte for byte, which is the plan's without in place; and a runtime built with -DTGRS_NO_DW_PIECES refuses such a
plan at build (the generated file's #error) or, with that guard skipped, at init."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from cm_fixtures import assert_feature_off_refuses, board_objs, harness, run_plan  # noqa: F401  (fixtures)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime"))

import _rt_plans as P  # noqa: E402
from test_rt_dw_in_place import dw_graph  # noqa: E402


def _plans():
    """Plans of three int8 depthwise blocks with pieces (two untiled, one tiled), the caller's input bytes and the
    output bytes of the same graph planned without in place."""
    from tigris.emit.reader import read_plan
    from tigris.host import Session
    from tigris.plan import lifetime

    out = []
    for (k, s, pads, c, h), frac in (((3, 1, (1, 1, 1, 1), 19, 12), None), ((5, 2, (2, 2, 2, 2), 33, 11), None),
                                     ((3, 1, (1, 1, 1, 1), 24, 36), 0.3)):
        g = dw_graph(True, h, c, k, s, pads, seed=c, w=h + 3)
        _, whole = P.compile_graph(g, 1 << 22, xip=True)
        budget = 1 << 22 if frac is None else int(whole.fast_peak * frac)
        data, plan = P.compile_graph(g, budget, xip=True, halo_reuse=False)
        assert any(u.in_place_rows and (frac is None or u.tile_rows) for u in plan.units)
        ip = read_plan(data).ops
        assert any(op.kind == "dwconv" and op.params[op_slot()] for op in ip)
        lifetime.PIECEWISE = False
        try:
            plain, _ = P.compile_graph(g, budget, xip=True, halo_reuse=False)
        finally:
            lifetime.PIECEWISE = True
        x = P.random_input(g, 5)
        hs, ps = Session(data), Session(plain)
        want = ps._to_caller(ps.outputs[0], ps.run(x).outputs["y"])
        assert hs._to_caller(hs.outputs[0], hs.run(x).outputs["y"]) == want
        out.append((data, hs._to_caller(hs.inputs[0], x["x"]), want))
    return out


def op_slot() -> int:
    from tigris.ops import kind

    return kind("dwconv").PARAMS.index("ip_rows")


@pytest.mark.parametrize("board", ["mps2-an386", "mps3-an547"])
def test_dw_in_place_plans_on_qemu_match_host(harness, board_objs, tmp_path, board):
    for n, (plan, x, want) in enumerate(_plans()):
        assert run_plan(harness, board_objs, tmp_path / f"p{n}", plan, board, x, "dwip") == want, f"plan {n} on {board}"


def test_no_dw_pieces_firmware_refuses_the_plan(harness, board_objs, tmp_path):
    plan, x, _ = _plans()[0]
    assert_feature_off_refuses(harness, board_objs, tmp_path, plan, x, "TGRS_NO_DW_PIECES", "nodwip",
                               build_match="DW_PIECES")
