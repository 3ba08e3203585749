"""int8 input-channel groups with int32 partial sums (tests/passes/test_k_acc.py) on an emulated core: a 3x3 int8
conv split into three ConvAcc groups summed by AccAdds and requantized, in row tiles, runs on the Cortex-M4F with the
host runtime's output bytes, which are the unsplit plan's; a runtime built with -DTGRS_NO_ACC refuses the plan."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from cm_fixtures import assert_feature_off_refuses, board_objs, harness, run_plan  # noqa: F401  (fixtures)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "passes"))

import test_k_acc as T  # noqa: E402


def test_k_acc_plan_on_qemu_matches_host(harness, board_objs, tmp_path):
    from tigris import api
    from tigris.host import Session

    rng = np.random.default_rng(13)
    m, _x_shape = T._qdq_model(rng, "conv3x3", 13, 6, 5, "relu")
    path, prep = T._prepare(tmp_path, m)
    split = T._split(prep, 3)
    a = api.analyze(path, "1K", prepared=split, tradeoff=False)
    assert a.fits and any(u.tiles > 1 for u in a.plan.units)
    whole = api.analyze(path, "1M", prepared=prep, tradeoff=False).plan_bytes
    inputs = api.random_inputs(prep, seed=3)
    s = Session(a.plan_bytes)
    want = s._to_caller(s.outputs[0], s.run(inputs).outputs[s.outputs[0].name])
    assert want == s._to_caller(s.outputs[0], Session(whole).run(inputs).outputs[s.outputs[0].name])
    x = s._to_caller(s.inputs[0], inputs[s.inputs[0].name])
    assert run_plan(harness, board_objs, tmp_path / "fw", a.plan_bytes, "mps2-an386", x, "acc") == want
    assert_feature_off_refuses(harness, board_objs, tmp_path / "noacc", a.plan_bytes, x, "TGRS_NO_ACC", "noacc",
                               build_match="int32 accumulator")
