"""Views (tensor flag VIEW; tests/runtime/test_rt_views.py) on an emulated core: the int8 plan whose row Concat's
producers write straight into their halves of its output, whose pooled vectors are written into one buffer and whose
Slice is read in place, and the plan whose units cut between two producers of one joined buffer (the later unit
reloads it, writes its run, spills it), run on the Cortex-M4F (DSP kernels) with the host runtime's output bytes,
which are the plan without views'; a runtime built with -DTGRS_NO_VIEWS refuses them."""
from __future__ import annotations

import sys
from pathlib import Path

from cm_fixtures import assert_feature_off_refuses, board_objs, harness, run_plan  # noqa: F401  (fixtures)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime"))

import test_rt_views as T  # noqa: E402


def test_view_plans_on_qemu_match_host(harness, board_objs, tmp_path):
    from tigris import api
    from tigris.emit import emit_plan
    from tigris.host import Session

    plans = []
    for model, budget in ((None, 1 << 22), (T.cross_model(), None)):
        d = tmp_path / f"m{len(plans)}"
        d.mkdir()
        _, prep = T._prepared(d, True, model)
        copy = T._plan(prep, 1 << 22, False)
        if budget is None:  # the first plan with views alone whose units cut between two producers
            p = next(p for b in range(copy.fast_peak, copy.fast_peak // 4, -16)
                     if (p := _try(prep, b)) is not None and T._crossing(prep, p))
        else:
            p = T._plan(prep, budget, True)
        assert p.view_ops
        plans.append((prep, emit_plan(prep.graph, p, prep.lowered, xip=True),
                      emit_plan(prep.graph, copy, prep.lowered, xip=True)))
    xs = []
    for k, (prep, data, copy) in enumerate(plans):
        inputs = api.random_inputs(prep, seed=3)
        s = Session(data)
        want = s._to_caller(s.outputs[0], s.run(inputs).outputs[s.outputs[0].name])
        assert want == s._to_caller(s.outputs[0], Session(copy).run(inputs).outputs[s.outputs[0].name])
        x = s._to_caller(s.inputs[0], inputs[s.inputs[0].name])
        xs.append(x)
        assert run_plan(harness, board_objs, tmp_path / f"fw{k}", data, "mps2-an386", x, "views") == want
    assert_feature_off_refuses(harness, board_objs, tmp_path / "noviews", plans[0][1], xs[0], "TGRS_NO_VIEWS", "noviews",
                               build_match="VIEW")


def _try(prep, budget):
    from tigris.ir import DoesNotFitError

    try:
        return T._plan(prep, budget, "only")
    except DoesNotFitError:
        return None
