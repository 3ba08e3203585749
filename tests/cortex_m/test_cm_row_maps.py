"""The row-floor work of tests/runtime/test_rt_row_maps.py on an emulated core: int8 plans at their smallest budget
with a reflect Pad on row bands (pad_modes), a 1-D conv on row bands of one pixel with its narrow scratch and a
sequence pool accumulating as a GAP (dscnn1d), and the int8 linear Resize computing its float island in one kernel
(lraspp), each built for the Cortex-M4F (DSP kernels), give the host runtime's output bytes, which are the untiled
plan's."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from cm_fixtures import board_objs, harness, run_plan  # noqa: F401  (fixtures)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime"))

import test_rt_row_maps as T  # noqa: E402
from tigris_testing import family_model  # noqa: E402


@pytest.mark.parametrize("fam", ["pad_modes", "dscnn1d", "lraspp"])
def test_row_floor_plans_on_qemu_match_host(harness, board_objs, tmp_path, monkeypatch, fam):
    from tigris import api
    from tigris.host import Session

    path = family_model(tmp_path, fam, True)
    prep, c, x, _ = T._below_earlier_floor(path, monkeypatch)
    s = Session(c.plan_bytes)
    name = s.inputs[0].name
    host = s.run(x)
    untiled = Session(api.compile_model(path, "8M", xip=True, prepared=prep).plan_bytes).run(x)
    want = s._to_caller(s.outputs[0], host.outputs[s.outputs[0].name])
    assert want == s._to_caller(s.outputs[0], untiled.outputs[s.outputs[0].name])
    got = run_plan(harness, board_objs, tmp_path / "fw", c.plan_bytes, "mps2-an386",
                   s._to_caller(s.inputs[0], x[name]), "rowmaps")
    assert got == want
