"""Branch points and channel Concats inside column-split units (tests/runtime/test_rt_cols_concat.py) on an
emulated core: the int8 fire model's plan, whose COLS units hold a squeeze output read by a 1x1 expand (row by row,
on sub-band views of the 3x3 expand's hull) and the Concat joining the expands, runs on the Cortex-M4F (DSP
kernels) with the host runtime's output bytes, which are the untiled plan's."""
from __future__ import annotations

import sys
from pathlib import Path

from cm_fixtures import board_objs, harness, run_plan  # noqa: F401  (fixtures)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime"))

import test_rt_cols_concat as T  # noqa: E402


def test_branched_cols_plan_on_qemu_matches_host(harness, board_objs, tmp_path):
    from tigris import api
    from tigris.emit import emit_plan
    from tigris.host import Session
    from tigris.plan import min_fast_budget, plan_memory

    path = T._paths(tmp_path, True)
    prep = api.prepare(path)
    kw = api._plan_kwargs(prep, True)
    floor = min_fast_budget(prep.graph, **{**kw, "col_tiles": False})
    # just below the row floor, where two column bands are enough (far below it, the smallest plans split more)
    plan = plan_memory(prep.graph, floor // 16 * 16 - 16, None, **{**kw, "col_tiles": True, "force_cols": 2})
    assert T._branched_cols(prep, plan) and T._concat_in_cols(prep, plan)
    data = emit_plan(prep.graph, plan, prep.lowered, xip=True)
    inputs = api.random_inputs(prep, seed=2)
    s = Session(data)
    name = s.inputs[0].name
    host = s.run(inputs)
    untiled = Session(api.compile_model(path, "8M", xip=True, prepared=prep).plan_bytes).run(inputs)
    want = s._to_caller(s.outputs[0], host.outputs[s.outputs[0].name])
    assert want == s._to_caller(s.outputs[0], untiled.outputs[s.outputs[0].name])
    got = run_plan(harness, board_objs, tmp_path / "fw", data, "mps2-an386", s._to_caller(s.inputs[0], inputs[name]),
                   "cols")
    assert got == want
