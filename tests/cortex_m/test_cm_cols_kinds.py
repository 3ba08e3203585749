"""Op families newly column-split (tests/runtime/test_rt_cols_kinds.py) on an emulated core: the repository's
kws_dscnn_int8, whose AveragePool over the whole map is a GlobalAveragePool (tigris/passes/reducemean_gap.py rule 6),
at its smallest budget with column tiles (752 bytes; 8,064 before rule 6), where its depthwise blocks run as column
tiles and that GAP accumulates over the tiles of its input: the Cortex-M4F firmware's output
bytes are the host runtime's, which are the untiled plan's; likewise ShuffleNet-v2 int8 (tests/families), whose channel
shuffles are Gathers along the channels (tigris/passes/channel_shuffle.py) inside column-split units. A runtime built
with -DTGRS_NO_ACCUM refuses an ACCUM plan at init, and the plan's generated file stops such a build."""
from __future__ import annotations

from pathlib import Path

import pytest

from cm_fixtures import assert_feature_off_refuses, board_objs, harness  # noqa: F401  (fixtures)

KWS = Path(__file__).resolve().parents[1] / "models" / "kws_dscnn_int8.onnx"
BOARD = "mps2-an386"


def _cols_plan(path: Path):
    """(plan bytes, caller input bytes, untiled output bytes, plan, graph) of an int8 model at its smallest budget with
    column tiles."""
    from tigris import api
    from tigris.emit import emit_plan
    from tigris.host import Session
    from tigris.plan import min_fast_budget, plan_memory

    prep = api.prepare(path)
    kw = api._plan_kwargs(prep, True)
    budget = min_fast_budget(prep.graph, **kw)
    assert budget <= 0.8 * min_fast_budget(prep.graph, **{**kw, "col_tiles": False})
    plan = plan_memory(prep.graph, budget, None, **kw)
    assert any(u.tile_cols for u in plan.units)
    data = emit_plan(prep.graph, plan, prep.lowered, xip=True)
    inputs = api.random_inputs(prep, seed=3)
    s = Session(data)
    host = s.run(inputs)
    assert host.fast_peak == plan.fast_peak
    untiled = Session(api.compile_model(path, "8M", xip=True, prepared=prep).plan_bytes).run(inputs)
    name = s.outputs[0].name
    want = s._to_caller(s.outputs[0], host.outputs[name])
    assert want == s._to_caller(s.outputs[0], untiled.outputs[name])
    return data, s._to_caller(s.inputs[0], inputs[s.inputs[0].name]), want, plan, prep.graph


@pytest.fixture(scope="module")
def kws_cols():
    """kws_dscnn_int8 at its smallest budget with column tiles: column-split blocks, and the GAP accumulating over
    the tiles of its input (an AveragePool needed it whole)."""
    data, x, want, plan, _ = _cols_plan(KWS)
    assert any(u.accumulate for u in plan.units)
    return data, x, want


def test_shufflenet_v2_int8_cols_plan_on_qemu_matches_host(harness, board_objs, tmp_path):
    from tigris_testing import family_model

    data, x, want, plan, g = _cols_plan(family_model(tmp_path, "shufflenet_v2", True))
    assert any(g.ops[i].op_type == "Gather" for u in plan.units if u.tile_cols for i in u.ops)
    elf = harness.build_plan_app(data, BOARD, tmp_path / "fw", obj_dir=board_objs[BOARD] / "cols")
    (tmp_path / "in0.bin").write_bytes(x)
    r = harness.run(BOARD, elf, ["in0.bin", "out0.bin"], cwd=tmp_path, timeout_s=600)
    assert r.returncode == harness.EXIT_OK, r.console
    assert (tmp_path / "out0.bin").read_bytes() == want


def test_kws_dscnn_int8_cols_plan_on_qemu_matches_host(harness, board_objs, tmp_path, kws_cols):
    data, x, want = kws_cols
    elf = harness.build_plan_app(data, BOARD, tmp_path / "fw", obj_dir=board_objs[BOARD] / "cols")
    (tmp_path / "in0.bin").write_bytes(x)
    r = harness.run(BOARD, elf, ["in0.bin", "out0.bin"], cwd=tmp_path, timeout_s=600)
    assert r.returncode == harness.EXIT_OK, r.console
    assert (tmp_path / "out0.bin").read_bytes() == want


def test_no_accum_firmware_refuses_an_accum_plan(harness, board_objs, tmp_path, kws_cols):
    """The generated file of an ACCUM plan stops a -DTGRS_NO_ACCUM build; with that guard skipped, such a runtime
    refuses the plan at init (TGRS_ERR_UNSUPPORTED) instead of running it."""
    data, x, _ = kws_cols
    assert_feature_off_refuses(harness, board_objs, tmp_path, data, x, "TGRS_NO_ACCUM", "noaccum", build_match="ACCUM")
