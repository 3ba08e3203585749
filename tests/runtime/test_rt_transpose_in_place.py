"""A structural Transpose in place (docs/memory-planning.md "In-place ops"): a detector's grids, each a conv whose
output is transposed to channels-last and reshaped to ``[1, cells * anchors, k]`` (EfficientDet's head), then joined
along the boxes. Every such grid is a whole-tensor layout change; with ``tigris.ops.transpose.IN_PLACE`` each of its
Transposes permutes its dying input's buffer (transpose.c follows the permutation cycle by cycle), so a grid needs
one buffer instead of two, even over a reload. The int8 model's float output Dequantize grows over its dying int8
input (``tigris.ops.quant.WIDEN_IN_PLACE``; quant.c runs from the last element down).

Oracles: the same model planned with the rule off (a higher minimum), the untiled plan (int8 bit for bit, float
within its tolerance), ONNX Runtime (float), the plan checker and the runtime's fast high-water mark (the plan's
peak)."""
from __future__ import annotations

import copy
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import onnx
import pytest

from tigris import api
from tigris.ops import transpose
from tigris.plan.check import check_plan

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "families"))
import builders  # noqa: E402
import fam_seg  # noqa: E402
from tigris_testing import compile_like_untiled, matches_ort  # noqa: E402


def grids_model(tmp_path: Path, int8: bool) -> Path:
    """x [1, 4, 16, 16] -> 3x3 conv to 8 + Relu -> two grids (3x3 conv to 3 anchors x 4 on 16x16, stride 2 on
    8x8), each Transpose [0, 2, 3, 1] + Reshape [1, -1, 4], joined along the boxes."""
    g = builders._new(11)
    f = g.op("Relu", [g.conv("x", 4, 8, 3)])
    grids = []
    for stride in (1, 2):
        t = g.op("Transpose", [g.conv(f, 8, 12, 3, stride)], perm=[0, 2, 3, 1])
        grids.append(g.op("Reshape", [t, g.const(np.array([1, -1, 4], np.int64), "shape")]))
    y = g.op("Concat", grids, axis=1)
    m = fam_seg.finish_typed(g, "grids", [1, 4, 16, 16], [(y, onnx.TensorProto.FLOAT, [1, 960, 4])], opset=14)
    fp = tmp_path / "grids.onnx"
    onnx.save(m, fp)
    if not int8:
        return fp
    qp = tmp_path / "grids_int8.onnx"
    builders.quantize(fp, qp, "int8", True)
    return qp


def minimum_with_transposes_in_place(path: Path, monkeypatch):
    """(prepared, minimum, compiled plan at it): asserts the plan permutes a Transpose in place and that the rule
    off needs more."""
    prep = api.prepare(path)
    kw = api._plan_kwargs(prep, True)
    from tigris.plan import min_fast_budget

    m = min_fast_budget(prep.graph, **kw)
    with monkeypatch.context() as mp:
        mp.setattr(transpose, "IN_PLACE", False)
        off = api.prepare(path)
        assert min_fast_budget(off.graph, **api._plan_kwargs(off, True)) > m
    return prep, m


def _transposed(graph, plan, op_type: str = "Transpose") -> list[tuple[str, str]]:
    return [(y, x) for u in plan.units for y, x in u.in_place.items()
            if next(op for op in graph.ops if op.outputs[0] == y).op_type == op_type]


@pytest.mark.parametrize("int8", [False, True], ids=["f32", "int8"])
def test_grids_transposed_in_place_run_like_the_untiled_plan(tmp_path, monkeypatch, int8):
    try:
        from tigris.host.build import runtime

        runtime()
    except Exception as e:  # noqa: BLE001 - no compiler: say so and skip
        pytest.skip(f"host runtime_c not available: {type(e).__name__}: {e}")
    path = grids_model(tmp_path, int8)
    prep, m = minimum_with_transposes_in_place(path, monkeypatch)
    c, x, outs = compile_like_untiled(path, prep, m)
    plan = c.analysis.plan
    assert check_plan(prep.graph, plan) == []
    assert _transposed(prep.graph, plan), "no Transpose in place at the minimum"
    if int8:  # the float output grows over its int8 input (quant.c runs backwards)
        assert _transposed(prep.graph, plan, "DequantizeLinear"), "no Dequantize in place at the minimum"
    else:
        matches_ort(path, x, outs)


def test_checker_refuses_a_transpose_in_place_apart_from_its_input(tmp_path, monkeypatch):
    path = grids_model(tmp_path, False)
    prep, m = minimum_with_transposes_in_place(path, monkeypatch)
    from tigris.plan import plan as plan_graph

    res = plan_graph(prep.graph, m, **api._plan_kwargs(prep, True))
    (y, x), *_ = _transposed(prep.graph, res.plan)
    bad = copy.deepcopy(res.plan)
    u = next(u for u in bad.units if y in u.in_place)
    u.fast[y] = replace(u.fast[y], offset=u.fast[y].offset + 16)
    assert any(f"{y} does not take {x}'s placement" in e for e in check_plan(prep.graph, bad))
