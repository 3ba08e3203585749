"""A structural Transpose in place (tests/runtime/test_rt_transpose_in_place.py) on an emulated core: the int8
detector grids at their smallest budget, each grid's Transposes permuting their input's buffer cycle by cycle and the float output's Dequantize growing over its
int8 input (backwards), built
for the Cortex-M4F (DSP kernels), give the host runtime's output bytes, which are the untiled plan's."""
from __future__ import annotations

import sys
from pathlib import Path

from cm_fixtures import board_objs, harness, run_plan  # noqa: F401  (fixtures)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime"))

import test_rt_transpose_in_place as T  # noqa: E402


def test_transposes_in_place_on_qemu_match_host(harness, board_objs, tmp_path, monkeypatch):
    from tigris import api
    from tigris.host import Session

    path = T.grids_model(tmp_path, True)
    prep, m = T.minimum_with_transposes_in_place(path, monkeypatch)
    c = api.compile_model(path, m, xip=True, prepared=prep)
    assert T._transposed(prep.graph, c.analysis.plan)
    assert T._transposed(prep.graph, c.analysis.plan, "DequantizeLinear")  # the float output over its int8 input
    s = Session(c.plan_bytes)
    x = api.random_inputs(prep, 0)
    name = s.inputs[0].name
    want = s._to_caller(s.outputs[0], s.run(x).outputs[s.outputs[0].name])
    untiled = Session(api.compile_model(path, "8M", xip=True, prepared=prep).plan_bytes).run(x)
    assert want == s._to_caller(s.outputs[0], untiled.outputs[s.outputs[0].name])
    got = run_plan(harness, board_objs, tmp_path / "fw", c.plan_bytes, "mps2-an386",
                   s._to_caller(s.inputs[0], x[name]), "rowmaps")
    assert got == want
