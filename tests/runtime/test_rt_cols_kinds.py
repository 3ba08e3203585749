"""Op families that no longer set the row floor with column tiles (docs/memory-planning.md "Column tiles"), on the
host runtime: each model is compiled by ``tigris.api.compile_model`` at its smallest budget with column tiles, below
its smallest budget without them, and gives the untiled plan's output (int8 bit for bit; float within 1e-5 x
max(1, max|ref|), since a GlobalAveragePool accumulating over a grid adds its float sums band by band), with the
runtime's fast high-water mark equal to the plan's peak; one float model per family agrees with ONNX Runtime.

* An AveragePool over the whole image is a GlobalAveragePool (tigris/passes/reducemean_gap.py rule 6), which
  accumulates over the tiles of a column-split unit: the two kinds' C kernels give the same int8 codes, with the
  onnx numerics and (the GAP's TFLM_AVG) the tflm ones, untiled and accumulated over tiles.
* A channel shuffle (Reshape -> Transpose -> Reshape over the channels) is a Gather along the channels
  (tigris/passes/channel_shuffle.py), per pixel: shuffle, shufflenet_v2 and yolo_fastest_v2 cut through it.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tigris_testing import compile_like_untiled, family_model, host_session, matches_ort
import _rt_plans as P
from tigris import api
from tigris.plan import min_fast_budget


FLOAT_TOL = 1e-5
ORT_TOL = 1e-4  # tigris.api.FLOAT_RTOL


@pytest.fixture(scope="module")
def session():
    return host_session()[0]


def _below_row_floor(path: Path, ratio: float = 0.8, cols: bool = True):
    """Compile at the smallest budget with column tiles (the planner's) and check it against the untiled plan;
    (prep, compiled, inputs, outputs). ``cols``: the plan has column-split units (analyze may also fit that budget
    with channel groups, which it tries first)."""
    prep = api.prepare(path)
    kw = api._plan_kwargs(prep, True)
    rows = min_fast_budget(prep.graph, **{**kw, "col_tiles": False})
    budget = min_fast_budget(prep.graph, **kw)
    assert budget <= ratio * rows, (path.name, budget, rows)
    c, x, outputs = compile_like_untiled(path, prep, budget, FLOAT_TOL)
    assert not cols or any(u.tile_cols for u in c.analysis.plan.units)
    return prep, c, x, outputs


def _matches_ort(path: Path, x, outputs) -> None:
    matches_ort(path, x, outputs, ORT_TOL)


def test_whole_image_avgpool_and_gap_kernels_agree(session):
    """The C AveragePool and GAP kernels give the same int8 codes for a window over the whole image (the reference's
    half of this is tests/passes/test_reducemean_gap.py)."""
    from passes.test_reducemean_gap import _int8_pool_graphs

    rng = np.random.default_rng(3)
    for s_in, zp_in, s_out, zp_out, h, w in [(0.05, -3, 0.05, -3, 25, 5), (0.04, 7, 0.013, -20, 8, 8),
                                             (0.1, 0, 0.1, 0, 2, 2), (0.02, 100, 0.3, 1, 7, 3)]:
        pool, gap = _int8_pool_graphs("onnx", s_in, zp_in, s_out, zp_out, h, w)
        for _ in range(3):
            x = {"x": rng.integers(-128, 128, (1, 16, h, w), dtype=np.int8)}
            a = session(P.compile_graph(pool, 1 << 20)[0]).run(x).outputs["y"]
            b = session(P.compile_graph(gap, 1 << 20)[0]).run(x).outputs["y"]
            np.testing.assert_array_equal(a, b)
        pool, gap = _int8_pool_graphs("tflm", s_in, zp_in, s_in, zp_in, h, w, tflm_avgpool=True)
        x = {"x": rng.integers(-128, 128, (1, 16, h, w), dtype=np.int8)}
        a = session(P.compile_graph(pool, 1 << 20)[0]).run(x).outputs["y"]
        b = session(P.compile_graph(gap, 1 << 20)[0]).run(x).outputs["y"]
        np.testing.assert_array_equal(a, b)
        if h >= 4:  # accumulated over row tiles (unit flag ACCUM): a budget below the whole input
            data, plan = P.compile_graph(gap, 16 * w * 2 + 16 + 64 + 64)
            assert any(u.accumulate for u in plan.units), plan.units
            got = session(data).run(x)
            np.testing.assert_array_equal(got.outputs["y"], a)
            assert got.fast_peak == plan.fast_peak


@pytest.mark.parametrize("int8", [False, True], ids=["f32", "int8"])
def test_person_mbv1_whole_image_avgpool_accumulates_over_a_grid(session, tmp_path, int8):
    """person_mbv1 ends in an AveragePool over its 3x3 map: as a GAP it ends a column-split ACCUM unit."""
    path = family_model(tmp_path, "person_mbv1", int8)
    prep, c, x, outputs = _below_row_floor(path)
    assert "AveragePool" not in [op.op_type for op in prep.graph.ops]
    assert any(u.tile_cols and u.accumulate for u in c.analysis.plan.units)
    if not int8:
        _matches_ort(path, x, outputs)


@pytest.mark.shared
@pytest.mark.parametrize("rel", ["mlperf_tiny/kws_dscnn_int8.onnx", "mlperf_tiny/kws_dscnn_f32.onnx",
                                 "tflite/kws_dscnn_int8.tflite"])
def test_kws_dscnn_below_its_row_floor(session, rel):
    path = P.shared_model(rel)
    _, _, x, outputs = _below_row_floor(path, cols="int8" in rel)  # the tflite twin's GAP has TFLM_AVG
    if rel.endswith("f32.onnx"):
        _matches_ort(path, x, outputs)


@pytest.mark.parametrize("int8", [False, True], ids=["f32", "int8"])
@pytest.mark.parametrize("fam", ["shuffle", "shufflenet_v2", "yolo_fastest_v2"])
def test_channel_shuffles_run_per_pixel(session, tmp_path, fam, int8):
    path = family_model(tmp_path, fam, int8)
    prep, c, x, outputs = _below_row_floor(path)
    assert "Gather" in [op.op_type for op in prep.graph.ops]
    assert "Transpose" not in [op.op_type for op in prep.graph.ops]
    if not int8:
        _matches_ort(path, x, outputs)
