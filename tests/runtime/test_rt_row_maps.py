"""Ops that set the row floor before issue 15's 1-D and Pad work, on the host runtime (docs/memory-planning.md
"Column tiles"): each family model is compiled by ``tigris.api.compile_model`` at its smallest budget today, at most
0.8x the smallest budget the planner found before (row tiles only, with the op's earlier rule), and gives the
untiled plan's output (int8 bit for bit; float within 1e-5 x max(1, max|ref|)), with the runtime's fast high-water
mark equal to the plan's peak; the float model agrees with ONNX Runtime.

* A reflect/edge/wrap Pad of the row axis runs on row bands: a band reads the hull of the rows the mode maps it to
  (pass pad_fold's ``row_src``; ``tigris.ops.pad.ROW_MAPS = False`` is the earlier rule, whole input).
* An AveragePool over a whole sequence (rank 3) is a GlobalAveragePool (pass reducemean_gap rule 6), which
  accumulates over row tiles; a 1-D conv's row band of fewer than CONV_MR output pixels reserves scratch for just
  them (``Conv.band_scratch_bytes``; int8 runs conv.c's conv_s8_narrow, so the generated file refuses a
  -DTGRS_NO_COLS build).
* An int8 linear Resize runs on the int8 resize kernel, which computes the float island's arithmetic
  (DequantizeLinear -> Resize -> QuantizeLinear) itself, so a band holds int8 rows (``tigris.ops.resize.INT8_INTERP
  = False`` is the earlier rule, the island, whose float output row set the floor).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tigris import api
from tigris_testing import compile_like_untiled, family_model, host_runtime, matches_ort
from tigris.ops import conv as conv_kind
from tigris.ops import pad as pad_kind
from tigris.ops import resize as resize_kind
from tigris.passes import reducemean_gap
from tigris.plan import min_fast_budget


FLOAT_TOL = 1e-5
ORT_TOL = 1e-4  # tigris.api.FLOAT_RTOL


@pytest.fixture(scope="module")
def session():
    host_runtime()


def _earlier_floor(path: Path, monkeypatch) -> int:
    """The smallest budget with row tiles only and the earlier rules (prepared again: the passes read them)."""
    with monkeypatch.context() as m:
        m.setattr(pad_kind, "ROW_MAPS", False)
        m.setattr(reducemean_gap, "SEQUENCES", False)
        m.setattr(conv_kind, "NARROW_ROWS", False)
        m.setattr(resize_kind, "INT8_INTERP", False)
        prep = api.prepare(path)
        return min_fast_budget(prep.graph, **{**api._plan_kwargs(prep, True), "col_tiles": False})


def _below_earlier_floor(path: Path, monkeypatch, ratio: float = 0.8):
    before = _earlier_floor(path, monkeypatch)
    prep = api.prepare(path)
    budget = min_fast_budget(prep.graph, **api._plan_kwargs(prep, True))
    assert budget <= ratio * before, (path.name, budget, before)
    c, x, outputs = compile_like_untiled(path, prep, budget, FLOAT_TOL)
    return prep, c, x, outputs


def _matches_ort(path: Path, x, outputs) -> None:
    matches_ort(path, x, outputs, ORT_TOL)


def _tiled_ops(prep, c) -> set[str]:
    """Names of the ops in tiled units."""
    return {prep.graph.ops[i].name for u in c.analysis.plan.units if len(u.tile_rows) > 1 for i in u.ops}


@pytest.mark.parametrize("int8", [False, True], ids=["f32", "int8"])
def test_reflect_pad_of_the_rows_runs_on_row_bands(session, tmp_path, monkeypatch, int8):
    path = family_model(tmp_path, "pad_modes", int8)
    prep, c, x, outputs = _below_earlier_floor(path, monkeypatch)
    pads = [op for op in prep.graph.ops if op.op_type == "Pad" and op.attrs.get("row_src")]
    assert pads and pads[0].attrs["mode"] == "reflect"
    assert pads[0].name in _tiled_ops(prep, c)
    if not int8:
        _matches_ort(path, x, outputs)


def _pad_chain_graph(mode: str, int8: bool, h: int = 12):
    """The conv chain of ``_rt_plans`` with a reflect/edge/wrap Pad of rows and columns between its 3x3 conv and
    its depthwise conv (as pass pad_fold lifts it, ``row_src`` included)."""
    import _rt_plans as P
    from tigris.ir import AnalyzedGraph, Op, Tensor
    from tigris.ops.pad import MODES, source_index

    g = P.conv_chain_graph(int8=int8, h=h)
    top, bottom, left, right = 2, 1, 1, 0
    c1 = g.tensors["c1"]
    n, c, hh, ww = c1.shape
    ph, pw = hh + top + bottom, ww + left + right
    oh, ow = (ph + 2 - 3) // 2 + 1, (pw + 2 - 3) // 2 + 1
    tensors = dict(g.tensors)
    tensors["p1"] = Tensor("p1", (n, c, ph, pw), c1.dtype, c1.quant, "nhwc")
    for name in ("d1", "y"):
        t = g.tensors[name]
        tensors[name] = Tensor(name, (1, t.shape[1], oh, ow), t.dtype, t.quant, "nhwc")
    attrs = dict(pads=[0, 0, top, left, 0, 0, bottom, right], value=0.0, mode=mode, lifted=True,
                 row_src=[int(v) for v in source_index(np.arange(ph) - top, hh, MODES[mode])])
    ops = [g.ops[0], Op("pad1", "Pad", ("c1",), ("p1",), attrs),
           g.ops[1].with_(inputs=("p1", *g.ops[1].inputs[1:])), g.ops[2]]
    return AnalyzedGraph("padchain", tensors, ops, ["x"], ["y"], g.weights, {})


@pytest.mark.parametrize("int8", [False, True], ids=["f32", "int8"])
@pytest.mark.parametrize("mode", ["reflect", "edge", "wrap"])
def test_pad_modes_on_row_bands_match_the_untiled_plan(session, mode, int8):
    """At budgets from the untiled peak down to the smallest, with halo reuse on and off: the Pad sits in tiled
    units (rolling ones too, when its bands never move backwards), the checker proves the plan, and the host
    runtime gives the reference's output and the untiled plan's bytes, its high-water mark at the plan's peak."""
    import _rt_plans as P
    from tigris.host.session import Session
    from tigris.ir import DoesNotFitError

    g = _pad_chain_graph(mode, int8)
    untiled, _ = P.compile_graph(g, 1 << 20)
    tiled = 0
    for budget in (3000, 2000, 1400, 1000, 700, 500):
        for reuse in (True, False):
            try:
                data, plan = P.compile_graph(g, budget, halo_reuse=reuse)
            except DoesNotFitError:
                continue
            tiled += any(len(u.tile_rows) > 1 and 1 in u.ops for u in plan.units)
            P.run_and_compare(Session, g, data, plan, untiled, int8)
    assert tiled


@pytest.mark.parametrize("int8", [False, True], ids=["f32", "int8"])
def test_dscnn1d_pool_and_convs_below_the_earlier_floor(session, tmp_path, monkeypatch, int8):
    from tigris.codegen.cgen import generate_c
    from tigris.codegen.planinfo import read_plan_info
    from tigris.ops.conv import CONV_MR

    path = family_model(tmp_path, "dscnn1d", int8)
    prep, c, x, outputs = _below_earlier_floor(path, monkeypatch)
    ops = [op.op_type for op in prep.graph.ops]
    assert "AveragePool" not in ops and "GlobalAveragePool" in ops
    plan = c.analysis.plan
    assert any(u.accumulate for u in plan.units)
    # a 1-D conv on row bands of fewer than CONV_MR pixels, with scratch for just them
    narrow = [i for u in plan.units if len(u.tile_rows) > 1 for i in u.ops
              if prep.graph.ops[i].op_type == "Conv1D" and i in u.scratch and
              u.scratch[i].size < CONV_MR * int(prep.graph.ops[i].attrs["kernel_shape"][0]) *
              int(prep.graph.tensors[prep.graph.ops[i].inputs[0]].shape[1]) * (2 if int8 else 4)]
    assert narrow
    info = read_plan_info(c.plan_bytes)
    assert info.narrow_conv == int8
    if int8:
        src, _ = generate_c(c.plan_bytes, "m")
        assert '#if defined(TGRS_NO_COLS)\n#error' in src
    else:
        _matches_ort(path, x, outputs)


@pytest.mark.shared
@pytest.mark.parametrize("rel", ["mlperf_tiny/streaming_wakeword_int8.onnx", "tflite/streaming_wakeword_int8.tflite"])
def test_streaming_wakeword_fits_below_its_row_floor_with_channel_groups(session, rel, monkeypatch):
    """streaming_wakeword's last depthwise conv reads its whole 15-row input for its one output row of a width-1
    tensor, so neither row nor column tiles cut it (the planner's floor, 2,048 B); its channels are independent, and
    analyze's minimum with channel groups (docs/memory-planning.md "Weights that do not fit") is at most 0.8x of it.
    The plan at that minimum runs on the host with the untiled plan's output bit for bit, its high-water mark at
    the plan's peak."""
    import _rt_plans as P

    path = P.shared_model(rel)
    before = _earlier_floor(path, monkeypatch)
    prep = api.prepare(path)
    a = api.analyze(path, 64, xip=True, prepared=prep, emit=False, groups_advice=True, tradeoff=False)
    budget = a.min_fast_budget
    assert budget is not None and budget <= 0.8 * before, (budget, before)
    c = api.compile_model(path, budget, xip=True, prepared=prep)
    assert any(n.startswith("op ") and "channel groups" in n for n in c.analysis.notes), c.analysis.notes
    x = api.random_inputs(prep, 0)
    got = api.run_plan(c.plan_bytes, x)
    assert got.fast_peak == c.analysis.plan.fast_peak <= budget
    want = api.run_plan(api.compile_model(path, "16M", xip=True, prepared=prep).plan_bytes, x)
    for name, y in want.outputs.items():
        np.testing.assert_array_equal(got.outputs[name], y)


@pytest.mark.parametrize("fam", ["lraspp", "bilinear_unet"])
def test_int8_linear_resize_without_its_float_island(session, tmp_path, monkeypatch, fam):
    path = family_model(tmp_path, fam, True)
    prep, c, x, outputs = _below_earlier_floor(path, monkeypatch)
    ups = [op for op in prep.graph.ops if op.op_type == "Resize" and op.attrs.get("mode") == "linear"]
    assert ups and all(prep.graph.tensors[op.outputs[0]].dtype == "int8" for op in ups)


def _conv1d_chain(int8: bool, length: int, c_in: int, layers, seed: int):
    """x [1, c_in, length] -> Conv1D (k, s, oc, grouped or not) ... -> a GlobalAveragePool over the sequence (what
    reducemean_gap makes of an AveragePool over it) -> y [1, C, 1], every activation nwc."""
    import _rt_plans as P
    from tigris.ir import AnalyzedGraph, Op, Tensor

    rng = np.random.default_rng(seed)
    dt = "int8" if int8 else "float32"
    tensors: dict = {}

    def act(name, shape, s, z):
        tensors[name] = Tensor(name, shape, dt, P._q(s, z) if int8 else None, "nwc")
        return name

    x = act("x", (1, c_in, length), 0.04, -3)
    ops, specs = [], []
    c, n, s_in = c_in, length, 0.04
    for i, (k, st, oc, grouped) in enumerate(layers):
        g = c if grouped else 1
        oc = c if grouped else oc
        p = k // 2
        n = (n + 2 * p - k) // st + 1
        y = act(f"c{i}", (1, oc, n), 0.05 + 0.01 * i, int(rng.integers(-20, 20)))
        specs.append((f"w{i}", f"b{i}", (oc, c // g, k), s_in))
        ops.append(Op(f"conv{i}", "Conv1D", (x, f"w{i}", f"b{i}"), (y,),
                      dict(kernel_shape=[k], strides=[st], dilations=[1], pads=[p, p], group=g,
                           fused_activation="relu" if i % 2 else None)))
        x, c, s_in = y, oc, 0.05 + 0.01 * i
    weights = P.conv_weights(rng, specs, int8, tensors)
    act("y", (1, c, 1), 0.03, 2)
    ops.append(Op("gap", "GlobalAveragePool", (x,), ("y",), {}))
    return AnalyzedGraph("conv1d", tensors, ops, ["x"], ["y"], weights, {})


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(int8=st.booleans(), length=st.integers(8, 40), c_in=st.integers(1, 6),
       layers=st.lists(st.tuples(st.sampled_from([1, 3, 5]), st.sampled_from([1, 1, 2]), st.integers(1, 8),
                                 st.booleans()), min_size=1, max_size=3),
       fracs=st.lists(st.floats(0.3, 1.0), min_size=2, max_size=3), seed=st.integers(0, 2**16))
def test_random_conv1d_chains_on_row_bands_match_the_untiled_plan(session, int8, length, c_in, layers, fracs, seed):
    """Property: random 1-D conv chains ending in a sequence GAP, at random budgets down to a few row bands of one
    pixel (the narrow conv scratch, the GAP accumulating over row tiles): every plan that fits is proven by the
    checker and gives on the host runtime the reference's output, the untiled plan's bytes and a high-water mark at
    its peak."""
    import _rt_plans as P
    from tigris.host.session import Session
    from tigris.ir import DoesNotFitError

    g = _conv1d_chain(int8, length, c_in, layers, seed)
    untiled, whole = P.compile_graph(g, 1 << 20)
    top = whole.fast_peak
    for frac in fracs:
        try:
            data, plan = P.compile_graph(g, max(64, int(top * frac) // 16 * 16))
        except DoesNotFitError:
            continue
        P.run_and_compare(Session, g, data, plan, untiled, int8)
