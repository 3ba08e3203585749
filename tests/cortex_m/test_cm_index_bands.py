"""The index-op row-floor work of tests/runtime/test_rt_index_bands.py on an emulated core: seg_argmax int8 at its
smallest budget, its channel ArgMax per pixel on row bands (index.c's PIXEL form), built for the Cortex-M4F, gives
the host runtime's output bytes, which are the untiled plan's."""
from __future__ import annotations

import sys
from pathlib import Path

from cm_fixtures import board_objs, harness, run_plan  # noqa: F401  (fixtures)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime"))


def test_channel_argmax_bands_on_qemu_match_host(harness, board_objs, tmp_path):
    from tigris import api
    from tigris.host import Session
    from tigris.plan import min_fast_budget
    from tigris_testing import family_model

    path = family_model(tmp_path, "seg_argmax", True)
    prep = api.prepare(path)
    budget = min_fast_budget(prep.graph, **api._plan_kwargs(prep, True))
    c = api.compile_model(path, budget, xip=True, prepared=prep)
    i = next(k for k, op in enumerate(prep.graph.ops) if op.op_type == "ArgMax")
    assert any(len(u.tile_rows) > 1 and i in u.ops for u in c.analysis.plan.units)
    x = api.random_inputs(prep, 0)
    s = Session(c.plan_bytes)
    name = s.inputs[0].name
    host = s.run(x)
    untiled = Session(api.compile_model(path, "8M", xip=True, prepared=prep).plan_bytes).run(x)
    want = s._to_caller(s.outputs[0], host.outputs[s.outputs[0].name])
    assert want == s._to_caller(s.outputs[0], untiled.outputs[s.outputs[0].name])
    got = run_plan(harness, board_objs, tmp_path / "fw", c.plan_bytes, "mps2-an386",
                   s._to_caller(s.inputs[0], x[name]), "argmax")
    assert got == want
