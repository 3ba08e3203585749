"""The index-op row-floor work of tests/runtime/test_rt_index_bands.py on an emulated core, each plan at its smallest
budget built for the Cortex-M4F gives the host runtime's output bytes, which are the untiled plan's: seg_argmax int8
(its channel ArgMax per pixel on row bands, index.c's PIXEL form) and ssd_nms f32 (one NonMaxSuppression per class,
each keeping the rows of the one before)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from cm_fixtures import board_objs, harness, run_plan  # noqa: F401  (fixtures)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime"))


def _stored(s, y) -> bytes:
    """The output bytes the C API gives: a row-counted output's valid rows padded with rows of -1 to its size."""
    import numpy as np

    spec = s.outputs[0]
    if y.shape != spec.shape:
        y = np.concatenate([y, np.full((spec.shape[0] - len(y), *y.shape[1:]), -1, y.dtype)])
    return s._to_caller(spec, y)


@pytest.mark.parametrize("fam,int8,op", [("seg_argmax", True, "ArgMax"), ("ssd_nms", False, "NonMaxSuppression")])
def test_index_plans_on_qemu_match_host(harness, board_objs, tmp_path, fam, int8, op):
    from tigris import api
    from tigris.host import Session
    from tigris.plan import min_fast_budget
    from tigris_testing import family_model

    path = family_model(tmp_path, fam, int8)
    prep = api.prepare(path)
    budget = min_fast_budget(prep.graph, **api._plan_kwargs(prep, True))
    c = api.compile_model(path, budget, xip=True, prepared=prep)
    if op == "ArgMax":
        i = next(k for k, o in enumerate(prep.graph.ops) if o.op_type == op)
        assert any(len(u.tile_rows) > 1 and i in u.ops for u in c.analysis.plan.units)
    x = api.random_inputs(prep, 0)
    s = Session(c.plan_bytes)
    name = s.inputs[0].name
    host = s.run(x)
    untiled = Session(api.compile_model(path, "8M", xip=True, prepared=prep).plan_bytes).run(x)
    want = _stored(s, host.outputs[s.outputs[0].name])
    assert want == _stored(s, untiled.outputs[s.outputs[0].name])
    got = run_plan(harness, board_objs, tmp_path / "fw", c.plan_bytes, "mps2-an386",
                   s._to_caller(s.inputs[0], x[name]), "index")
    assert got == want
