"""Column tiling (unit flag COLS, docs/format.md "COLS units") on the emulated cores: a plan whose tiles cut the width
too runs on the Cortex-M4F (DSP kernels) and the Cortex-M55 (Helium kernels) with the host runtime's int8 output,
byte for byte, which is the untiled plan's (tests/runtime/test_rt_cols.py). The bands are narrow (a few columns
each), so the kernels' per-row tails and border pixels are what runs; and a runtime built with -DTGRS_NO_COLS
refuses the plan at init."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from cm_fixtures import assert_feature_off_refuses, board_objs, harness, run_plan  # noqa: F401  (fixtures)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime"))

import _cols_plans as C  # noqa: E402
import _rt_plans as P  # noqa: E402

LAYERS = [("conv", 3, 1, 1, 1), ("relu",), ("dw", 3, 2, 1, 1), ("conv", 1, 1, 1, 0), ("avgpool", 3, 1, 1)]


def _plans():
    """The planner's COLS plan and a hand-built XIP grid of one int8 chain, its input in the caller's bytes, and the
    untiled plan's output bytes."""
    from tigris.emit.reader import read_plan
    from tigris.host import Session

    g = C.chain(LAYERS, True, 15, 22, 8, 0)
    untiled, whole = P.compile_graph(g, 1 << 22)
    planned, _ = P.compile_graph(g, whole.unscheduled_peak // 2, col_tiles=True, force_cols=3)
    assert any(u.col_split for u in read_plan(planned).units)
    hand, _ = C.emit_cols(g, C.lower_all(g), 2, 5, xip=True)
    x = P.random_input(g, 4)
    s = Session(untiled)
    want = s._to_caller(s.outputs[0], s.run(x).outputs["y"])
    plans = {"planner": planned, "hand-xip": hand}
    for label, plan in plans.items():  # the host runs each with the untiled plan's bytes
        h = Session(plan)
        assert h._to_caller(h.outputs[0], h.run(x).outputs["y"]) == want, label
    return plans, s._to_caller(s.inputs[0], x["x"]), want


@pytest.mark.parametrize("board", ["mps2-an386", "mps3-an547"])
def test_cols_plans_on_qemu_match_host(harness, board_objs, tmp_path, board):
    plans, x, want = _plans()
    for label, plan in plans.items():
        assert run_plan(harness, board_objs, tmp_path / label, plan, board, x, "cols") == want, f"{label} on {board}"


def test_no_cols_firmware_refuses_a_cols_plan(harness, board_objs, tmp_path):
    """The generated file of a COLS plan stops a -DTGRS_NO_COLS build; with that guard skipped, such a runtime
    refuses the plan at init (TGRS_ERR_UNSUPPORTED) instead of running it."""
    plans, x, _ = _plans()
    assert_feature_off_refuses(harness, board_objs, tmp_path, plans["planner"], x, "TGRS_NO_COLS", "nocols",
                               build_match="COLS")


@pytest.mark.shared
@pytest.mark.parametrize("board", ["mps2-an386", "mps3-an547"])
def test_mobilenet_v2_int8_cols_plan_on_qemu_matches_host(harness, board_objs, tmp_path, board):
    """mobilenet_v2_035_96_int8 at 7.5K of fast memory (10K with row tiles alone): column tiles, the last one's
    GlobalAveragePool accumulating over its grid; the firmware's output bytes are the host runtime's, which are the
    untiled plan's."""
    from tigris import api
    from tigris.emit import emit_plan
    from tigris.host import Session
    from tigris.plan import plan_memory

    path = P.shared_model("torchvision/mobilenet_v2_035_96_int8.onnx")
    prep = api.prepare(path)
    plan = plan_memory(prep.graph, 7680, None, **{**api._plan_kwargs(prep, True), "col_tiles": True, "layouts": {}})
    assert any(u.tile_cols and u.accumulate for u in plan.units)
    data = emit_plan(prep.graph, plan, prep.lowered, xip=True)
    inputs = api.random_inputs(prep, seed=2)
    s = Session(data)
    host = s.run(inputs)
    untiled = Session(api.compile_model(path, "8M", xip=True, prepared=prep).plan_bytes).run(inputs)
    got = run_plan(harness, board_objs, tmp_path, data, board, s._to_caller(s.inputs[0], inputs[s.inputs[0].name]),
                   "cols", timeout_s=900)
    name = s.outputs[0].name
    assert got == s._to_caller(s.outputs[0], host.outputs[name]) == \
        s._to_caller(s.outputs[0], untiled.outputs[name])


@pytest.mark.shared
def test_mobilenet_v2_int8_head_groups_on_qemu_matches_host(harness, board_objs, tmp_path):
    """mobilenet_v2_035_96_int8 at the minimum analyze reports with --xip (at most 0.8x of the peer's 4K): the head
    conv 112 -> 1280 in channel groups each pooling its own channels ("Channel tails"), depthwise and pointwise convs
    in channel groups, column tiles; on the Cortex-M4F the firmware's output bytes are the host runtime's, which are
    the untiled plan's."""
    from tigris import api
    from tigris.host import Session

    board = "mps2-an386"
    path = P.shared_model("torchvision/mobilenet_v2_035_96_int8.onnx")
    prep = api.prepare(path)
    m = api.analyze(path, "1K", xip=True, prepared=prep, emit=False, tradeoff=False,
                    groups_advice=True).json["min_fast_budget_bytes"]
    assert m <= 0.8 * 4096
    c = api.compile_model(path, m, xip=True, prepared=prep)
    g = c.analysis.prepared.graph
    assert any(op.op_type == "GlobalAveragePool" and op.attrs.get("weight_group") for op in g.ops)
    assert any(u.tile_cols for u in c.analysis.plan.units)
    inputs = api.random_inputs(prep, seed=3)
    s = Session(c.plan_bytes)
    host = s.run(inputs)
    untiled = Session(api.compile_model(path, "8M", xip=True, prepared=prep).plan_bytes).run(inputs)
    elf = harness.build_plan_app(c.plan_bytes, board, tmp_path / "fw", obj_dir=board_objs[board] / "cols")
    (tmp_path / "in0.bin").write_bytes(s._to_caller(s.inputs[0], inputs[s.inputs[0].name]))
    r = harness.run(board, elf, ["in0.bin", "out0.bin"], cwd=tmp_path, timeout_s=900)
    assert r.returncode == harness.EXIT_OK, r.console
    name = s.outputs[0].name
    assert (tmp_path / "out0.bin").read_bytes() == s._to_caller(s.outputs[0], host.outputs[name]) == \
        s._to_caller(s.outputs[0], untiled.outputs[name])
