"""Column tiling (unit flag COLS, docs/format.md "COLS units") on the C runtime.

Hand-built COLS plans (tests/runtime/_cols_plans.py: a grid of row x column tiles over a chain of conv, depthwise,
pools and per-pixel ops, every band computed from the ops' window arithmetic) run on the host runtime and give the
untiled plan's output bit for bit, int8 and float; the float plan of an ONNX model agrees with ONNX Runtime; the
runtime's fast and slow high-water marks equal the plan's peaks; the reader round-trips the column bands. Then the
readers' refusals of malformed COLS units, each with its own code, from both the C loader and the Python reader."""
from __future__ import annotations


import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import _cols_plans as C
from tigris_testing import host_session
import _rt_plans as P
from tigris.emit import format as F
from tigris.emit import read_plan
from tigris.emit.reader import PlanFormatError
from tigris.ir import DoesNotFitError, TigrisError
from tigris.plan.check import check_plan

FLOAT_TOL = P.FLOAT_TOL

CHAINS = {
    "conv": [("conv", 3, 1, 1, 1)],
    "conv-relu-dw-pw": [("conv", 3, 1, 1, 1), ("relu",), ("dw", 3, 2, 1, 1), ("conv", 1, 1, 1, 0)],
    "dilated-strided-pools": [("dw", 5, 1, 2, 4), ("conv", 3, 2, 1, 1), ("maxpool", 3, 2, 1), ("avgpool", 3, 1, 1)],
    "unpadded-sigmoid": [("conv", 3, 2, 1, 0), ("sigmoid",), ("dw", 3, 1, 1, 1)],
    "prelu-per-channel": [("conv", 3, 1, 1, 1), ("prelu", False), ("dw", 3, 1, 1, 1)],
}
GRIDS = [(1, 2), (2, 3), (3, 5), (1, 7)]


@pytest.fixture(scope="module")
def session_cls():
    return host_session()


@pytest.mark.parametrize("int8", [True, False], ids=["int8", "float"])
@pytest.mark.parametrize("name", sorted(CHAINS))
def test_cols_plans_run_like_untiled(session_cls, name, int8):
    Session, _ = session_cls
    g = C.chain(CHAINS[name], int8, 17, 23, 8, 0)
    low = C.lower_all(g)
    untiled, _ = P.compile_graph(g, 1 << 22)
    x = P.random_input(g, 1)
    want = Session(untiled).run(x).outputs["y"]
    for xip, comp in ((False, "none"), (True, "none"), (False, "lz4")):
        for rt, ct in GRIDS:
            data, plan = C.emit_cols(g, low, rt, ct, xip=xip, compression=comp)
            pf = read_plan(data)
            assert [u.col_split for u in pf.units] == [True]
            assert pf.to_memory_plan().units[0].tile_cols == plan.units[0].tile_cols
            got = Session(data).run(x)
            # each output element is computed by the same kernel arithmetic on the same inputs: bit-identical, float too
            np.testing.assert_array_equal(got.outputs["y"], want, err_msg=f"{name} {rt}x{ct} xip={xip} {comp}")
            assert (got.fast_peak, got.slow_peak) == (plan.fast_peak, plan.slow_peak)


LAYER = st.one_of(
    st.tuples(st.sampled_from(["conv", "dw"]), st.sampled_from([1, 3, 3, 5]), st.sampled_from([1, 1, 2]),
              st.sampled_from([1, 1, 2]), st.sampled_from([0, 1, 2])),
    st.tuples(st.sampled_from(["maxpool", "avgpool"]), st.sampled_from([2, 3]), st.sampled_from([1, 2]),
              st.sampled_from([0, 1])),
    st.sampled_from([("relu",), ("sigmoid",), ("prelu", False)]),
)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(layers=st.lists(LAYER, min_size=1, max_size=4), int8=st.booleans(), h=st.integers(9, 20),
       w=st.integers(9, 28), c=st.sampled_from([3, 4, 8]), n=st.integers(2, 5), xip=st.booleans(),
       seed=st.integers(0, 9))
def test_planner_cols_plans_run_like_untiled(session_cls, layers, int8, h, w, c, n, xip, seed):
    """The planner's own COLS units (tigris.plan, force_cols: every tiled unit that can be split as n column tiles)
    pass the checker, run bit-exact against the untiled plan, int8 and float, and the high-water marks are the
    plan's peaks."""
    Session, _ = session_cls
    fixed, hh, ww = [], h, w
    for layer in layers:  # keep every window inside its (padded) input and its pad below the window
        if layer[0] in ("conv", "dw"):
            kind_, k, s, d, p = layer
            d = 1 if k == 1 else d
            eff = (k - 1) * d + 1
            p = min(p, (eff - 1) // 2)
            layer, span, s = (kind_, k, s, d, p), eff, s
        elif layer[0] in ("maxpool", "avgpool"):
            layer = (layer[0], layer[1], layer[2], min(layer[3], layer[1] // 2))
            span, s, p = layer[1], layer[2], layer[3]
        else:
            span, s, p = 1, 1, 0
        if min(hh, ww) + 2 * p < span:
            break
        hh, ww = (hh + 2 * p - span) // s + 1, (ww + 2 * p - span) // s + 1
        fixed.append(layer)
    if not fixed:
        return
    g = C.chain(fixed, int8, h, w, c, seed)
    try:
        untiled, whole = P.compile_graph(g, 1 << 22, xip=xip)
        data, plan = P.compile_graph(g, max(256, whole.unscheduled_peak // 2), xip=xip, col_tiles=True,
                                     force_cols=n)
    except DoesNotFitError:
        return
    assert check_plan(g, plan) == []
    x = P.random_input(g, seed)
    got = Session(data).run(x)
    want = Session(untiled).run(x).outputs["y"]
    np.testing.assert_array_equal(got.outputs["y"], want)
    assert (got.fast_peak, got.slow_peak) == (plan.fast_peak, plan.slow_peak)
    assert [bool(u.tile_cols) for u in plan.units] == [u.col_split for u in read_plan(data).units]


def test_the_planner_makes_cols_units_that_run(session_cls):
    """A fixed case of the above that must split: conv -> relu -> depthwise/2 -> pointwise, 3 column tiles."""
    Session, _ = session_cls
    g = C.chain(CHAINS["conv-relu-dw-pw"], True, 17, 23, 8, 0)
    untiled, whole = P.compile_graph(g, 1 << 22)
    x = P.random_input(g, 1)
    for xip in (True, False):
        data, plan = P.compile_graph(g, whole.unscheduled_peak // 2, xip=xip, col_tiles=True, force_cols=3)
        assert any(u.tile_cols for u in plan.units) and any(u.col_split for u in read_plan(data).units)
        got = Session(data).run(x)
        np.testing.assert_array_equal(got.outputs["y"], Session(untiled).run(x).outputs["y"])
        assert (got.fast_peak, got.slow_peak) == (plan.fast_peak, plan.slow_peak)


def test_column_bands_shrink_the_buffers():
    """Cutting the width cuts the buffers: the 1x4 grid's fast peak is well below the 1-row-band plan's."""
    g = C.chain(CHAINS["conv-relu-dw-pw"], True, 16, 64, 16, 0)
    low = C.lower_all(g)
    rows_only = C.cols_plan(g, low, 16, 1)
    grid = C.cols_plan(g, low, 16, 4)
    acts = lambda p: sum(pl.size for pl in p.units[0].fast.values())  # noqa: E731
    assert acts(grid) < 0.45 * acts(rows_only)


def _onnx_chain(path):
    """x [1,3,15,21] -Conv3x3 pad1-> -Relu-> -Conv3x3/2 depthwise-> -Conv1x1-> y, float, as an ONNX file."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(5)
    w1 = rng.standard_normal((8, 3, 3, 3)).astype(np.float32) * 0.3
    w2 = rng.standard_normal((8, 1, 3, 3)).astype(np.float32) * 0.3
    w3 = rng.standard_normal((6, 8, 1, 1)).astype(np.float32) * 0.3
    b1, b2, b3 = (rng.standard_normal(n).astype(np.float32) for n in (8, 8, 6))
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["d1"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                         group=8),
        helper.make_node("Conv", ["d1", "w3", "b3"], ["y"], kernel_shape=[1, 1]),
    ]
    inits = [numpy_helper.from_array(a, n) for a, n in ((w1, "w1"), (b1, "b1"), (w2, "w2"), (b2, "b2"),
                                                         (w3, "w3"), (b3, "b3"))]
    graph = helper.make_graph(nodes, "colsonnx", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 15, 21])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 6, 8, 11])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


def test_float_cols_plan_matches_onnxruntime(session_cls, tmp_path):
    pytest.importorskip("onnxruntime")
    from tigris import api

    Session, _ = session_cls
    path = tmp_path / "chain.onnx"
    _onnx_chain(path)
    prep = api.prepare(path)
    x = {"x": np.random.default_rng(2).standard_normal((1, 3, 15, 21)).astype(np.float32)}
    ref = api.run_onnxruntime(path, x)
    ref_y = ref["y"] if isinstance(ref, dict) else ref[0]
    for rt, ct in ((2, 3), (4, 4)):
        data, plan = C.emit_cols(prep.graph, prep.lowered, rt, ct)
        got = api.run_plan(data, x)
        y = got.outputs["y"]
        assert y.shape == ref_y.shape
        assert float(np.abs(y - ref_y).max()) <= FLOAT_TOL * max(1.0, float(np.abs(ref_y).max()))
        assert got.fast_peak == plan.fast_peak


# --- refusals -------------------------------------------------------------------------------------------------------


def _base() -> tuple[bytes, object]:
    g = C.chain(CHAINS["conv-relu-dw-pw"], True, 9, 13, 4, 0)
    return C.emit_cols(g, C.lower_all(g), 2, 3)


def _mutants(base: bytes):
    pf = read_plan(base)
    unit = pf.units[0]
    pc, tiles = len(unit.placements), unit.tiles
    uoff = P.section_offset(base, F.SectionId.UNITS)
    u = F.UNIT.unpack(base, uoff)
    flags = uoff + F.UNIT.offsets()["flags"]
    cols = F.UnitFlag.COLS | F.UnitFlag.TILED
    yield "COLS untiled", P.set_field(base, flags, int(F.UnitFlag.COLS)), "ERR_UNIT"
    yield "COLS with ROLLING", P.set_field(base, flags, int(cols | F.UnitFlag.ROLLING)), "ERR_UNIT"
    yield "COLS with ACCUM", P.set_field(base, flags, int(cols | F.UnitFlag.ACCUM)), "ERR_UNIT"
    yield "row records only", P.set_field(base, uoff + F.UNIT.offsets()["rows_count"], tiles * pc), "ERR_UNIT"
    yield "no COLS flag", P.set_field(base, flags, int(F.UnitFlag.TILED)), "ERR_UNIT"  # twice the records of a tiled unit

    rows = P.section_offset(base, F.SectionId.TILE_ROWS) + 8 * int(u["rows_first"])
    name = [t.name for t in pf.tensors]
    pos = {name[p.tensor]: j for j, p in enumerate(unit.placements)}

    def col_rec(t: int, tensor: str) -> int:
        return rows + 8 * ((tiles + t) * pc + pos[tensor])

    w = {n: pf.tensor(n).dims[2] for n in pos}
    yield "column band before 0", P.set_field(base, col_rec(0, "t0"), -1, "<i"), "ERR_TILE_COLS"
    yield "empty column band", P.set_field(base, col_rec(1, "y") + 4, 0, "<i"), "ERR_TILE_COLS"
    c0, n = unit.tile_cols[tiles - 1][pos["t1"]]
    yield "column band past W", P.set_field(base, col_rec(tiles - 1, "t1") + 4, w["t1"] - c0 + 1, "<i"), "ERR_TILE_COLS"
    # the buffer of x, 16 bytes short of its largest dense band
    px = unit.placements[pos["x"]]
    poff = P.section_offset(base, F.SectionId.PLACEMENTS) + F.PLACEMENT.size * pos["x"] + F.PLACEMENT.offsets()["size"]
    yield "band buffer too small", P.set_field(base, poff, px.size - 16), "ERR_TILE_COLS"
    # t1 feeds the depthwise conv: one column less than its window needs (a narrower band fits its buffer)
    c0, n = unit.tile_cols[0][pos["t1"]]
    yield "input band short of the window", P.set_field(base, col_rec(0, "t1") + 4, n - 1, "<i"), "ERR_TILE_COLS"
    yield "input band not at the need", P.set_field(base, col_rec(0, "t1"), c0 + 1, "<i") if c0 + n < w["t1"] else \
        P.set_field(base, col_rec(0, "t1") + 4, n - 1, "<i"), "ERR_TILE_COLS"
    # relu (t0 -> t1) per pixel: its input band one column narrower than its output band
    c0, n = unit.tile_cols[1][pos["t0"]]
    yield "per-pixel operand band differs", P.set_field(base, col_rec(1, "t0") + 4, n - 1, "<i"), "ERR_TILE_COLS"
    # the relu op record as a GlobalAveragePool: a kind that cannot run on column bands
    ops = P.section_offset(base, F.SectionId.OPS)
    relu = next(o.index for o in pf.ops if o.kind == "unary")
    yield "kind not column-local", P.set_field(base, ops + relu * F.OP.size, 6), "ERR_COLS_OP"


def test_readers_refuse_malformed_cols_units(session_cls):
    Session, PlanError = session_cls
    base, _ = _base()
    assert read_plan(base).units[0].col_split
    Session(base)
    assert P.assert_readers_refuse(Session, PlanError, _mutants(base)) == 13


def test_writer_refuses_what_a_cols_unit_cannot_say():
    g = C.chain(CHAINS["conv"], True, 9, 13, 4, 0)
    low = C.lower_all(g)
    plan = C.cols_plan(g, low, 2, 3)
    plan.units[0].tile_cols = plan.units[0].tile_cols[:-1]
    with pytest.raises(TigrisError, match="column tiles"):
        from tigris.emit import emit_plan

        emit_plan(g, plan, low, xip=False)
    plan = C.cols_plan(g, low, 2, 3)
    plan.units[0].rolling = ["x"]
    with pytest.raises(TigrisError, match="cannot also carry rows"):
        from tigris.emit import emit_plan

        emit_plan(g, plan, low, xip=False)


def test_inspect_shows_the_column_bands():
    from tigris.emit.inspect import inspect_plan
    from tigris.report import render_inspect

    g = C.chain(CHAINS["conv"], True, 9, 13, 4, 0)
    data, plan = C.emit_cols(g, C.lower_all(g), 2, 3)
    info = inspect_plan(data)
    (u,) = info["units"]
    assert u["column_split"] is True and u["tiles"] == 6
    assert u["tile_cols"] == [{n: list(b) for n, b in t.items()} for t in plan.units[0].tile_cols]
    assert u["tile_rows"][0] == {"x": [0, 5], "y": [0, 4]}
    assert "y 0-4 x cols 0-4" in render_inspect(info, width=200)


def test_codegen_says_whether_a_plan_needs_column_tiling(tmp_path):
    """The generated file of a COLS plan stops a -DTGRS_NO_COLS build; one without COLS units says it may use it.
    The guard itself is compiled (host gcc, -fsyntax-only) both ways."""
    import shutil
    import subprocess

    from tigris.codegen import generate_c
    from tigris.codegen.planinfo import read_plan_info as plan_info

    g = C.chain(CHAINS["conv"], True, 9, 13, 4, 0)
    cols, _ = C.emit_cols(g, C.lower_all(g), 2, 3)
    plain, _ = P.compile_graph(g, 1 << 20)
    assert plan_info(cols).cols and not plan_info(plain).cols
    c_cols, h_cols = generate_c(cols, "model")
    c_plain, h_plain = generate_c(plain, "model")
    assert '#error "this plan has COLS units' in c_cols and "TGRS_NO_COLS" in c_plain
    assert "#error \"this plan has COLS" not in c_plain
    gcc = shutil.which("gcc")
    if gcc is None:
        return
    inc = P._REPO / "runtime_c" / "include"
    for src, hdr, flag, ok in ((c_cols, h_cols, "-DTGRS_NO_COLS", False), (c_cols, h_cols, "", True),
                               (c_plain, h_plain, "-DTGRS_NO_COLS", True)):
        f = tmp_path / "m.c"
        f.write_text(src)
        (tmp_path / "model.h").write_text(hdr)
        r = subprocess.run([gcc, "-std=c99", "-fsyntax-only", f"-I{inc}", f"-I{tmp_path}", *([flag] if flag else []),
                            str(f)], capture_output=True, text=True)
        assert (r.returncode == 0) == ok and ("this plan has COLS units" in r.stderr) != ok, r.stderr


def test_a_table_indexed_by_the_full_column_is_refused(session_cls):
    """PRelu with a slope per position (param SW != 0) would read the full tensor's slope column in a band: the
    writer refuses to emit it, and both readers refuse a per-channel one whose SW was set (TGRS_ERR_COLS_OP)."""
    Session, PlanError = session_cls
    g = C.chain([("conv", 3, 1, 1, 1), ("prelu", True), ("dw", 3, 1, 1, 1)], True, 9, 13, 4, 0)
    with pytest.raises(TigrisError, match="TGRS_ERR_COLS_OP"):
        C.emit_cols(g, C.lower_all(g), 2, 3)
    g = C.chain(CHAINS["prelu-per-channel"], True, 9, 13, 4, 0)
    base, _ = C.emit_cols(g, C.lower_all(g), 2, 3)
    pf = read_plan(base)
    op = next(o for o in pf.ops if o.kind == "prelu")
    from tigris.ops import kind

    slot = [p.lower() for p in kind("prelu").PARAMS].index("sw")
    pos = P.section_offset(base, F.SectionId.OPS) + op.index * F.OP.size + F.OP.offsets()["params"] + 4 * slot
    bad = P.set_field(base, pos, 1, "<i")
    with pytest.raises(PlanFormatError) as py:
        read_plan(bad)
    assert py.value.status == "ERR_COLS_OP"
    with pytest.raises(PlanError) as c:
        Session(bad)
    assert c.value.name == "TGRS_ERR_COLS_OP"


def _shared_cols_plan(rel: str, budget: int, **kw):
    from tigris import api
    from tigris.emit import emit_plan
    from tigris.plan import plan_memory

    path = P.shared_model(rel)
    prep = api.prepare(path)
    plan = plan_memory(prep.graph, budget, None, **{**api._plan_kwargs(prep, True), "col_tiles": True, **kw})
    assert any(u.tile_cols for u in plan.units) and check_plan(prep.graph, plan) == []
    return path, prep, plan, emit_plan(prep.graph, plan, prep.lowered, xip=True)


@pytest.mark.shared
def test_mobilenet_v2_f32_runs_below_its_row_floor(session_cls):
    """mobilenet_v2_035_96_f32 needs 31.5K of fast memory with row tiles alone (one depthwise conv's three input rows);
    with column tiles it plans at 24K, and that plan runs on the host runtime with exactly the untiled plan's output
    and within the float tolerance of ONNX Runtime, its high-water marks the plan's peaks."""
    from tigris import api

    path, prep, plan, data = _shared_cols_plan("torchvision/mobilenet_v2_035_96_f32.onnx", 24 * 1024)
    assert plan.fast_peak <= 24 * 1024
    x = api.random_inputs(prep, 0)
    got = api.run_plan(data, x)
    assert (got.fast_peak, got.slow_peak) == (plan.fast_peak, plan.slow_peak)
    want = api.run_plan(api.compile_model(path, "8M", xip=True, prepared=prep).plan_bytes, x)
    ref = api.run_onnxruntime(path, x)
    for name, y in got.outputs.items():
        np.testing.assert_array_equal(y, want.outputs[name])
        r = ref[name] if isinstance(ref, dict) else ref[0]
        assert float(np.abs(y - r).max()) <= FLOAT_TOL * max(1.0, float(np.abs(r).max()))


@pytest.mark.shared
def test_mobilenet_v2_int8_cols_plan_is_bit_exact(session_cls):
    """mobilenet_v2_035_96_int8 with every column-splittable tiled unit cut in 3 column tiles: int8 output
    bit-identical to the untiled plan."""
    from tigris import api

    path, prep, plan, data = _shared_cols_plan("torchvision/mobilenet_v2_035_96_int8.onnx", 16 * 1024, force_cols=3)
    x = api.random_inputs(prep, 0)
    got = api.run_plan(data, x)
    assert (got.fast_peak, got.slow_peak) == (plan.fast_peak, plan.slow_peak)
    want = api.run_plan(api.compile_model(path, "8M", xip=True, prepared=prep).plan_bytes, x)
    for name, y in got.outputs.items():
        np.testing.assert_array_equal(y, want.outputs[name])


@pytest.mark.parametrize("int8", [True, False], ids=["int8", "float"])
def test_an_accumulating_gap_ends_a_cols_unit(session_cls, int8):
    """Unit flags COLS and ACCUM together (tigris.plan.cols rule 6): the grid cuts the GlobalAveragePool's input, its
    sums live across the tiles and the average is over the whole image; int8 bit-exact against the untiled plan (float
    within the tolerance: the float sum runs band by band). Then the
    readers' refusal of a grid that skips or repeats columns of the accumulated image."""
    Session, PlanError = session_cls
    g = C.chain([("conv", 3, 1, 1, 1), ("dw", 3, 1, 1, 1), ("gap",)], int8, 12, 17, 8, 0)
    untiled, whole = P.compile_graph(g, 1 << 22)
    data, plan = P.compile_graph(g, whole.unscheduled_peak // 3, xip=True, col_tiles=True, force_cols=3,
                                 layouts={})
    pf = read_plan(data)
    assert any(u.col_split and u.accumulates for u in pf.units)
    assert check_plan(g, plan) == []
    x = P.random_input(g, 3)
    got = Session(data).run(x)
    want = Session(untiled).run(x).outputs["y"]
    assert (got.fast_peak, got.slow_peak) == (plan.fast_peak, plan.slow_peak)
    if not int8:  # float sums the pixels band by band: another order than the untiled rows, within the tolerance
        assert float(np.abs(got.outputs["y"] - want).max()) <= FLOAT_TOL * max(1.0, float(np.abs(want).max()))
        return
    np.testing.assert_array_equal(got.outputs["y"], want)
    unit = next(u for u in pf.units if u.col_split and u.accumulates)
    u = F.UNIT.unpack(data, P.section_offset(data, F.SectionId.UNITS) + unit.index * F.UNIT.size)
    pc = len(unit.placements)
    gap = pf.ops[unit.op_first + unit.op_count - 1]
    j = next(k for k, p in enumerate(unit.placements) if p.tensor == pf.tensors[gap.inputs[0]].root)
    rows = P.section_offset(data, F.SectionId.TILE_ROWS) + 8 * int(u["rows_first"])
    t = next(t for t in range(1, unit.tiles) if unit.tile_cols[t][j][0] > 0)  # a tile continuing a piece of rows
    c0, n = unit.tile_cols[t][j]
    bad = P.set_field(data, rows + 8 * ((unit.tiles + t) * pc + j), c0 - 1, "<i")  # one column added twice
    assert P.assert_readers_refuse(Session, PlanError, [("a column accumulated twice", bad, "ERR_TILE_COLS")]) == 1


@pytest.mark.shared
def test_mobilenet_v2_int8_runs_below_its_row_floor(session_cls):
    """mobilenet_v2_035_96_int8 needs 10K of fast memory with row tiles (its GlobalAveragePool's input rows); with
    column tiles, the GAP accumulating over a grid, it plans at 7.5K and runs bit-exact against the untiled plan."""
    from tigris import api

    path, prep, plan, data = _shared_cols_plan("torchvision/mobilenet_v2_035_96_int8.onnx", 7680, layouts={})
    assert plan.fast_peak <= 7680 and any(u.tile_cols and u.accumulate for u in plan.units)
    x = api.random_inputs(prep, 0)
    got = api.run_plan(data, x)
    assert (got.fast_peak, got.slow_peak) == (plan.fast_peak, plan.slow_peak)
    want = api.run_plan(api.compile_model(path, "8M", xip=True, prepared=prep).plan_bytes, x)
    for name, y in got.outputs.items():
        np.testing.assert_array_equal(y, want.outputs[name])


def test_a_cols_unit_is_no_fast_interface_home(session_cls):
    """A caller writes an input's home (reads an output's) in the full layout, which a COLS unit's dense band
    buffers are not: an interface record naming a COLS placement as its FAST home is refused (TGRS_ERR_IO)."""
    Session, PlanError = session_cls
    g = C.chain(CHAINS["conv"], True, 9, 13, 4, 0)
    base, _ = C.emit_cols(g, C.lower_all(g), 1, 1)  # one tile: every buffer holds its whole tensor
    pf = read_plan(base)
    px = next(p for p in pf.units[0].placements if pf.tensors[p.tensor].name == "x")
    io = P.section_offset(base, F.SectionId.IO)
    bad = P.set_field(base, io + F.IO.offsets()["arena"], int(F.Arena.FAST))
    bad = P.set_field(bad, io + F.IO.offsets()["offset"], px.offset)
    with pytest.raises(PlanFormatError) as py:
        read_plan(bad)
    assert py.value.status == "ERR_IO"
    with pytest.raises(PlanError) as c:
        Session(bad)
    assert c.value.name == "TGRS_ERR_IO"
