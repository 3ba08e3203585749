"""Depthwise convs in place (docs/format.md "Window ops in place") on the emulated cores: plans whose depthwise convs
write their output over their input in row pieces (stride 1 and 2, kernels 3 and 5, channel tails; untiled and
tiled) run on the Cortex-M4F (DSP kernels) and the Cortex-M55 (Helium kernels) with the host runtime's int8 output,
byte for byte, which is the plan's without in place; and a runtime built with -DTGRS_NO_DW_PIECES refuses such a
plan at build (the generated file's #error) or, with that guard skipped, at init."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from cm_fixtures import board_objs, harness  # noqa: F401  (fixtures)

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
        d = tmp_path / f"p{n}"
        d.mkdir()
        elf = harness.build_plan_app(plan, board, d / "fw", obj_dir=board_objs[board] / "dwip")
        (d / "in0.bin").write_bytes(x)
        r = harness.run(board, elf, ["in0.bin", "out0.bin"], cwd=d, timeout_s=300)
        assert r.returncode == harness.EXIT_OK, r.console
        assert (d / "out0.bin").read_bytes() == want, f"plan {n} on {board}"


def test_no_dw_pieces_firmware_refuses_the_plan(harness, board_objs, tmp_path):
    from tigris.codegen import generate_c

    plan, x, _ = _plans()[0]
    with pytest.raises(harness.BuildError, match="DW_PIECES"):
        harness.build_plan_app(plan, "mps2-an386", tmp_path / "guard", obj_dir=board_objs["mps2-an386"] / "nodwip",
                               cflags="-DTGRS_NO_DW_PIECES")
    c_src, header = generate_c(plan, "model", "app")
    c_src = c_src.replace("#if defined(TGRS_NO_DW_PIECES)", "#if 0")  # the guard skipped: the loader must refuse
    d = tmp_path / "nodwip"
    d.mkdir()
    (d / "model.c").write_text(c_src)
    (d / "model.h").write_text(header)
    elf = harness.build("mps2-an386", d / "build", model_c=d / "model.c", obj_dir=board_objs["mps2-an386"] / "nodwip",
                        cflags="-DTGRS_NO_DW_PIECES")
    (d / "in0.bin").write_bytes(x)
    r = harness.run("mps2-an386", elf, ["in0.bin", "out0.bin"], cwd=d, timeout_s=120)
    assert r.returncode == harness.EXIT_RUNTIME, r.console
    assert "TGRS_ERR_UNSUPPORTED" in r.console, r.console
