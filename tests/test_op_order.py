"""Plans in the planner's memory-aware operator order (tigris.plan.order) compute exactly what the loader's order
computes: on branched family models (detector heads, an LRASPP head with an SE-style gate) at budgets where the
reordered plan is the one chosen, the host C runtime's outputs are byte-identical to those of the baseline order's
plan, int8 and float, and the runtime's fast high-water mark is the plan's peak. Writes only to pytest's tmp dirs."""
from __future__ import annotations

import logging
from pathlib import Path

import pytest

from tigris import api
from tigris.plan.order import search_order

from tigris_testing import family_model

logging.getLogger().setLevel(logging.ERROR)  # ORT's quantizer advice


@pytest.mark.parametrize("family,variant", [("det_head", "f32"), ("lraspp", "f32"), ("lraspp", "int8")])
def test_reordered_plans_compute_what_the_baseline_computes(tmp_path, monkeypatch, family, variant):
    if variant == "int8":
        # LRASPP int8's order gain is its float islands' tensors (DQ -> Resize -> Q): with the int8 resize kernel
        # (tigris.ops.resize) the loader's order is already the best one, so the island form is planned here
        from tigris.ops import resize

        monkeypatch.setattr(resize, "INT8_INTERP", False)
    path = family_model(tmp_path, family, variant == "int8")
    prep = api.prepare(path)
    found = search_order(prep.graph)
    assert found.peak < found.baseline_peak  # the order lowers the untiled peak of this model
    budget = (found.peak + found.baseline_peak) // 2 // 16 * 16  # untiled in the new order, not in the baseline's
    new = api.compile_model(path, budget, xip=True, prepared=prep)
    base = api.compile_model(path, budget, xip=True, prepared=prep, op_order="spec")
    run_order = [i for unit in new.analysis.plan.units for i in unit.ops]
    assert run_order != sorted(run_order)  # the reordered plan is the one chosen here ...
    p, q = new.analysis.plan, base.analysis.plan
    assert p.spill_bytes + p.reload_bytes < q.spill_bytes + q.reload_bytes  # ... because it moves fewer bytes
    for seed in range(2):
        inputs = api.random_inputs(prep, seed)
        a, b = api.run_plan(new.plan_bytes, inputs), api.run_plan(base.plan_bytes, inputs)
        assert set(a.outputs) == set(b.outputs)
        for name in a.outputs:
            assert a.outputs[name].dtype == b.outputs[name].dtype
            assert a.outputs[name].tobytes() == b.outputs[name].tobytes(), name
        assert int(a.fast_peak) == p.fast_peak


def test_unknown_order_is_refused():
    with pytest.raises(api.TigrisError, match="unknown operator order"):
        api.analyze(Path(__file__).parents[1] / "examples" / "mnist-8.onnx", "64K", op_order="bfs")
