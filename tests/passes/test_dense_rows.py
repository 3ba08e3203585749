"""Dense ends as rows (tigris/passes/dense_rows.py, docs/memory-planning.md "Dense ends as rows"): an int8 Gemm that
reads a [1, C] graph input, or writes a [1, N] graph output, in row bands of the vector.

* the rewrite on a random int8 MLP with int8 boundary vectors: the input end (output groups of K groups summed in
  int32 over row Slices of the input) and the output end (output groups joined along the rows in bands), each
  shape of ``api.DENSE_ROWS_SHAPES``, planned at budgets below the plain graph's floor, proven by the offset checker,
  bit-identical to the untiled plan on the host runtime with the fast high-water mark at the plan's peak;
* ``analyze`` finds the rewrite's minimum (at most 0.8x the plain floor) and compiles at it, and 16 bytes below it
  nothing compiles; a plan that fits without the rewrite is what it was;
* the row-band Concat: each input supplies the output rows it covers; a Concat along H without ``row_bands`` still
  mixes rows;
* mlperf_tiny ad_autoencoder int8 (ONNX and TFLite): 768 bytes before, now 336 (0.44x).
"""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tigris import api
from tigris.ir import Op, TigrisError
from tigris.ops import kind
from tigris.passes import dense_rows
from tigris.plan import min_fast_budget
from tigris.plan.check import check_plan
from tigris_testing import compile_like_untiled, host_runtime

I8 = TensorProto.INT8


def _int8_mlp(rng, sizes=(320, 16, 16, 256)) -> onnx.ModelProto:
    """int8 x [1, C] -> (DQ -> MatMul -> Add bias -> [Relu] -> Q) per layer -> int8 y [1, N]: the form of a
    quantized TFLite/ONNX dense model with an int8 interface."""
    n = helper.make_node
    nodes, inits = [], []
    s_prev, z_prev = 0.05, 3
    cur = "x"
    inits += [numpy_helper.from_array(np.array(s_prev, np.float32), "s0"),
              numpy_helper.from_array(np.array(z_prev, np.int8), "z0")]
    for i, (k, m) in enumerate(zip(sizes[:-1], sizes[1:])):
        last = i == len(sizes) - 2
        sw = np.float32(rng.uniform(0.002, 0.01))
        w = rng.integers(-127, 128, (k, m)).astype(np.int8)
        b = rng.integers(-2000, 2000, m).astype(np.int32)
        s_out, z_out = np.float32(0.2 if not last else 0.3), np.int8(-5 if not last else 7)
        inits += [numpy_helper.from_array(w, f"w{i}"), numpy_helper.from_array(np.array(sw), f"sw{i}"),
                  numpy_helper.from_array(np.array(0, np.int8), f"zw{i}"), numpy_helper.from_array(b, f"b{i}"),
                  numpy_helper.from_array(np.array(np.float32(s_prev) * sw, np.float32), f"sb{i}"),
                  numpy_helper.from_array(np.array(0, np.int32), f"zb{i}"),
                  numpy_helper.from_array(np.array(s_out), f"s{i + 1}"),
                  numpy_helper.from_array(np.array(z_out), f"z{i + 1}")]
        nodes += [n("DequantizeLinear", [cur, f"s{i}", f"z{i}"], [f"xd{i}"]),
                  n("DequantizeLinear", [f"w{i}", f"sw{i}", f"zw{i}"], [f"wd{i}"]),
                  n("DequantizeLinear", [f"b{i}", f"sb{i}", f"zb{i}"], [f"bd{i}"]),
                  n("MatMul", [f"xd{i}", f"wd{i}"], [f"mm{i}"]),
                  n("Add", [f"mm{i}", f"bd{i}"], [f"ad{i}"])]
        pre = f"ad{i}"
        if not last:
            nodes.append(n("Relu", [pre], [f"r{i}"]))
            pre = f"r{i}"
        out = "y" if last else f"q{i}"
        nodes.append(n("QuantizeLinear", [pre, f"s{i + 1}", f"z{i + 1}"], [out]))
        cur, s_prev = out, float(s_out)
    g = helper.make_graph(nodes, "int8_mlp", [helper.make_tensor_value_info("x", I8, [1, sizes[0]])],
                          [helper.make_tensor_value_info("y", I8, [1, sizes[-1]])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


@pytest.fixture
def mlp(tmp_path):
    p = tmp_path / "int8_mlp.onnx"
    onnx.save(_int8_mlp(np.random.default_rng(7)), p)
    return p


def _floor(prep) -> int:
    return min_fast_budget(prep.graph, **{**api._plan_kwargs(prep, True), "col_tiles": False})


def test_both_ends_are_found_and_rewritten(mlp):
    prep = api.prepare(mlp)
    g = prep.graph
    first, last = dense_rows.input_gemm(g), dense_rows.output_gemm(g)
    assert first and last and first != last
    s = dense_rows.split_output(dense_rows.split_input(g, first, 2, 4), last, 4)
    x, y = g.inputs[0], g.outputs[0]
    assert s.tensors[x].shape == (1, 1, 320) and s.tensors[x].layout == "nwc"
    assert s.tensors[y].shape == (1, 1, 256) and s.tensors[y].layout == "nwc"
    types = [o.op_type for o in s.ops]
    assert types.count("Slice") == 8 and types.count("GemmAcc") == 8 and types.count("Requantize") == 2
    cat = next(o for o in s.ops if o.outputs[0] == y)
    assert cat.op_type == "Concat" and cat.attrs["row_bands"] and len(cat.inputs) == 4
    # every Slice reads a row range of the input; the weights are stored once, as slices
    assert all(o.inputs[0] == x for o in s.ops if o.op_type == "Slice")
    assert first + "/w" not in s.weights
    with pytest.raises(TigrisError):
        dense_rows.split_output(g, first, 2)  # not the Gemm writing a graph output
    with pytest.raises(TigrisError):
        dense_rows.split_input(g, last, 2, 4)


@pytest.mark.parametrize("shape", api.DENSE_ROWS_SHAPES)
def test_each_shape_is_bit_identical_below_the_plain_floor(mlp, shape):
    host_runtime()
    prep = api.prepare(mlp)
    floor = _floor(prep)
    graphs = api._dense_rows_graphs(prep)
    assert len(graphs) == len(api.DENSE_ROWS_SHAPES)
    split, records = graphs[api.DENSE_ROWS_SHAPES.index(shape)]
    assert {r["channels"] for r in records} == {"input rows", "output rows"}
    m = api._min_fast(split, None, True)
    assert m is not None and m < floor, (m, floor)
    res = api._plan(split, m, None, True)
    assert check_plan(split.graph, res.plan) == []
    from tigris.emit import emit_plan

    plan_bytes = emit_plan(split.graph, res.plan, split.lowered, xip=True)
    x = api.random_inputs(prep, 3)
    got = api.run_plan(plan_bytes, x)
    assert got.fast_peak == res.plan.fast_peak
    want = api.run_plan(api.compile_model(mlp, "16M", xip=True, prepared=prep).plan_bytes, x)
    for name, v in want.outputs.items():
        np.testing.assert_array_equal(got.outputs[name], v)


def test_analyze_compiles_at_the_rewrite_minimum(mlp):
    host_runtime()
    prep = api.prepare(mlp)
    floor = _floor(prep)
    a = api.analyze(mlp, 16, xip=True, prepared=prep, emit=False, groups_advice=True, tradeoff=False)
    budget = a.min_fast_budget
    assert budget <= 0.8 * floor, (budget, floor)
    c, _, _ = compile_like_untiled(mlp, prep, budget)
    assert {g["cause"] for g in c.analysis.json["weight_groups"]} == {"rows"}
    assert any("row bands" in n for n in c.analysis.notes)
    below = api.analyze(mlp, budget - 16, xip=True, prepared=prep, emit=False, tradeoff=False)
    assert below.plan is None
    # at the plain floor the plain plan is kept: the rewrite is only the last resort
    plain = api.analyze(mlp, floor, xip=True, prepared=prep, emit=False, tradeoff=False)
    assert plain.plan is not None and not plain.json["weight_groups"]


def test_row_band_concat_reads_the_rows_each_input_covers(mlp):
    prep = api.prepare(mlp)
    g = prep.graph
    s = dense_rows.split_output(g, dense_rows.output_gemm(g), 4)
    cat = next(o for o in s.ops if o.outputs[0] == g.outputs[0])
    k = kind("concat")
    ins = cat.inputs  # 4 groups of 64 rows
    assert k.mixes_rows(s, cat) is None
    assert k.input_rows_of(s, cat, ins[0], 60, 70) == (60, 64)
    assert k.input_rows_of(s, cat, ins[1], 60, 70) == (0, 6)
    assert k.input_rows_of(s, cat, ins[2], 60, 70) == (0, 0)  # nothing of it in the band
    assert k.input_rows_of(s, cat, ins[3], 192, 256) == (0, 64)
    plain = Op("c", "Concat", cat.inputs, cat.outputs, {k2: v for k2, v in cat.attrs.items() if k2 != "row_bands"})
    assert k.mixes_rows(s, plain) == "Concat along H" and k.input_rows_of(s, plain, ins[0], 0, 1) is None


@pytest.mark.shared
@pytest.mark.parametrize("rel", ["mlperf_tiny/ad_autoencoder_int8.onnx", "tflite/ad_autoencoder_int8.tflite"])
def test_ad_autoencoder_int8_reads_and_writes_its_vectors_in_rows(shared_models, rel):
    """768 bytes before (the first Gemm's whole 640-byte input, the last one's whole output), 720 with channel
    groups; with both ends in rows 336 (0.44x), bit-identical to the untiled plan, HWM at the peak."""
    host_runtime()
    path = shared_models / rel
    prep = api.prepare(path)
    assert _floor(prep) == 768
    a = api.analyze(path, 16, xip=True, prepared=prep, emit=False, groups_advice=True, tradeoff=False)
    assert a.min_fast_budget <= 336 <= 0.8 * 768
    compile_like_untiled(path, prep, a.min_fast_budget)
    assert api.analyze(path, a.min_fast_budget - 16, xip=True, prepared=prep, emit=False, tradeoff=False).plan is None


def test_readers_refuse_a_row_band_join_input_band_that_misses_rows(mlp):
    """The row-band join's tiles reload a band of each group: an input band one row short of the output rows it
    supplies is refused by both readers (the concat kind's band check, TGRS_ERR_TILE)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime"))
    import _rt_plans as P

    from tigris.emit import format as Fmt
    from tigris.emit.reader import read_plan
    from tigris.host.session import PlanError, Session

    host_runtime()
    prep = api.prepare(mlp)
    a = api.analyze(mlp, 16, xip=True, prepared=prep, emit=False, groups_advice=True, tradeoff=False)
    data = api.compile_model(mlp, a.min_fast_budget, xip=True, prepared=prep).plan_bytes
    pf = read_plan(data)
    Session(data)
    (op,) = [o for o in pf.ops if o.kind == "concat" and len(o.inputs) == 4]
    unit = next(u for u in pf.units if u.op_first <= op.index < u.op_first + u.op_count)
    assert unit.tiled and unit.tiles > 1
    pos = {pl.tensor: j for j, pl in enumerate(unit.placements)}
    out, x1 = pos[pf.tensors[op.output].root], pos[pf.tensors[op.inputs[1]].root]
    h0 = pf.tensors[op.inputs[0]].dims[1]
    # a tile whose output band lies inside input 1's rows: input 1's band is exactly those rows
    t = next(t for t in range(unit.tiles) if unit.tile_rows[t][out][0] >= h0
             and sum(unit.tile_rows[t][out]) <= h0 + pf.tensors[op.inputs[1]].dims[1])
    r0, n = unit.tile_rows[t][x1]
    o0, on = unit.tile_rows[t][out]
    assert (r0, n) == (o0 - h0, on) and n > 1
    u = Fmt.UNIT.unpack(data, P.unit_record_pos(data, unit.index))
    rec = P.section_offset(data, Fmt.SectionId.TILE_ROWS) + 8 * (int(u["rows_first"]) + t * len(pos) + x1)
    bad = P.set_field(data, rec + 4, n - 1, "<i")
    assert P.assert_readers_refuse(Session, PlanError, [("join input band one row short", bad, "ERR_TILE")]) == 1
