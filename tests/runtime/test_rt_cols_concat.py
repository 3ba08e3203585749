"""Channel Concat (and, later, branch points) inside column-split units (unit flag COLS; tigris/plan/cols.py).

A SqueezeNet fire module is squeeze 1x1 -> (expand 1x1, expand 3x3) -> Concat along channels: the Concat is per
pixel along W, so a column-split unit may hold it. These tests plan small fire-module models (float, and int8 by
ONNX Runtime's QDQ quantizer) with column tiles, prove each plan with the checker, and run it on the host runtime
against the untiled plan of the same model: outputs bit for bit, the runtime's fast high-water mark the plan's
peak."""
from __future__ import annotations

import logging
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "families"))
import builders  # noqa: E402

from tigris_testing import host_runtime, saved_model  # noqa: E402
from tigris.ir import DoesNotFitError  # noqa: E402
from tigris.plan.check import check_plan  # noqa: E402


@pytest.fixture(scope="module")
def runtime_ok():
    host_runtime()


def fire_model(size: int = 25, fires=((8, 16), "pool", (8, 16)), seed: int = 3) -> onnx.ModelProto:
    """x [1,3,size,size] -> conv 3x3/2 -> ReLU -> fire modules (squeeze 1x1, expand 1x1 and 3x3, channel Concat,
    ReLUs; "pool": a ceil-mode 3x3/2 MaxPool, which pass pool_concat moves onto the Concat's inputs) -> conv 1x1
    -> y."""
    g = builders._new(seed)
    x = g.op("Relu", [g.conv("x", 3, 16, 3, 2, pad=0)])
    cin = 16
    for fire in fires:
        if fire == "pool":
            x = g.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)
            continue
        sq, ex = fire
        s = g.op("Relu", [g.conv(x, cin, sq, 1)])
        x = g.op("Concat", [g.op("Relu", [g.conv(s, sq, ex, 1)]), g.op("Relu", [g.conv(s, sq, ex, 3)])], axis=1)
        cin = 2 * ex
    return builders._finish(g, "fires", [1, 3, size, size], g.conv(x, cin, 8, 1))


def _paths(tmp: Path, int8: bool) -> Path:
    if int8:
        logging.getLogger().setLevel(logging.ERROR)
    return saved_model(tmp, fire_model(), "fires", int8)


def _concat_in_cols(prep, plan) -> int:
    """Column-split units holding a Concat."""
    g = prep.graph
    return sum(1 for u in plan.units if u.tile_cols and any(g.ops[i].op_type == "Concat" for i in u.ops))


def _branched_cols(prep, plan) -> int:
    """Column-split units in which some buffer has several consumers (a branch point)."""
    from tigris.plan.lifetime import buffers

    bufs = buffers(prep.graph)
    n = 0
    for u in plan.units:
        if not u.tile_cols:
            continue
        readers: dict[str, set[int]] = {}
        for i in u.ops:
            for x in bufs.reads[i]:
                readers.setdefault(x, set()).add(i)
        n += any(len(r) > 1 for r in readers.values())
    return n


def _run_against_untiled(path: Path, budgets) -> tuple[int, int]:
    """Plan ``path`` at each (budget, force_cols), prove, run against the untiled plan; (units holding a Concat,
    branched units) over all plans. A forced grid that fits nowhere is skipped; the unforced minimum must fit."""
    from tigris import api
    from tigris.emit import emit_plan
    from tigris.plan import plan_memory

    prep = api.prepare(path)
    x = api.random_inputs(prep, 0)
    want = api.run_plan(api.compile_model(path, "8M", xip=True, prepared=prep).plan_bytes, x)
    kw = api._plan_kwargs(prep, True)
    cats = branched = 0
    for budget, n in budgets(prep, kw):
        try:
            plan = plan_memory(prep.graph, budget, None, **{**kw, "col_tiles": True, "force_cols": n})
        except DoesNotFitError:
            assert n is not None  # the minimum fits
            continue
        assert check_plan(prep.graph, plan) == []
        cats += _concat_in_cols(prep, plan)
        branched += _branched_cols(prep, plan)
        data = emit_plan(prep.graph, plan, prep.lowered, xip=True)
        got = api.run_plan(data, x)
        assert got.fast_peak == plan.fast_peak
        for name, y in want.outputs.items():
            np.testing.assert_array_equal(got.outputs[name], y, err_msg=f"{budget} B, {n} column tiles")
    return cats, branched


def _budgets(prep, kw):
    from tigris.plan import min_fast_budget

    floor = min_fast_budget(prep.graph, **{**kw, "col_tiles": False})  # one output row per tile
    least = min_fast_budget(prep.graph, **kw)
    assert least < floor
    mid = (least + floor) // 32 * 16
    return ((least, None), *((b, n) for b in (floor, mid) for n in (2, 3, 5)))


@pytest.mark.parametrize("int8", [False, True], ids=["float", "int8"])
def test_fire_modules_with_concat_in_cols_units_run_like_untiled(runtime_ok, tmp_path, int8):
    """The fire model at its smallest budget and on forced grids: the squeeze output is a branch point inside
    column-split units (the 1x1 expand reads a sub-band of the 3x3 expand's hull), the Concat joins in them."""
    cats, branched = _run_against_untiled(_paths(tmp_path, int8), _budgets)
    assert cats, "no column-split unit held a Concat"
    assert branched, "no column-split unit held a branch point"


def test_concat_along_w_is_not_column_local(tmp_path):
    from tigris import api
    from tigris.ops import kind_for

    g = builders._new(1)
    a = g.conv("x", 3, 4, 3)
    y = g.op("Concat", [a, g.conv("x", 3, 4, 1)], axis=3)
    path = tmp_path / "wcat.onnx"
    onnx.save(builders._finish(g, "wcat", [1, 3, 8, 8], y), str(path))
    prep = api.prepare(path)
    op = next(o for o in prep.graph.ops if o.op_type == "Concat")
    assert kind_for(op.op_type).col_local(prep.graph, op) == "Concat along W"


def concat_cols_plan(tmp: Path) -> bytes:
    """A real plan of the float fire model at its smallest budget, with a Concat in a column-split unit."""
    from tigris import api
    from tigris.plan import min_fast_budget

    path = _paths(tmp, False)
    prep = api.prepare(path)
    return api.compile_model(path, min_fast_budget(prep.graph, **api._plan_kwargs(prep, True)), xip=True,
                             prepared=prep).plan_bytes


def concat_axis_w(data: bytes) -> bytes:
    """``data`` with the AXIS of the first Concat of a COLS unit set to W (2), resealed."""
    import struct

    from tigris.emit import format as F
    from tigris.emit import read_plan
    from tigris.emit.writer import seal

    pf = read_plan(data)
    k = next(o.index for u in pf.units if u.col_split for o in pf.ops[u.op_first:u.op_first + u.op_count]
             if o.kind == "concat")
    ops = struct.unpack_from("<I", data, F.DIR_OFFSET + (int(F.SectionId.OPS) - 1) * F.SECTION.size + 4)[0]
    b = bytearray(data)
    struct.pack_into("<i", b, ops + k * F.OP.size + F.OP.offsets()["params"], 2)
    return seal(b)


def test_readers_refuse_a_concat_along_w_in_a_cols_unit(runtime_ok, tmp_path):
    from tigris.emit import read_plan
    from tigris.emit.reader import PlanFormatError
    from tigris.host.session import PlanError, Session

    base = concat_cols_plan(tmp_path)
    Session(base)  # the plan itself loads
    bad = concat_axis_w(base)
    with pytest.raises(PlanFormatError) as py:
        read_plan(bad)
    assert py.value.status == "ERR_COLS_OP"
    with pytest.raises(PlanError) as c:
        Session(bad)
    assert c.value.name == "TGRS_ERR_COLS_OP"


BLOCK = st.one_of(
    st.tuples(st.just("fire"), st.sampled_from([2, 4]), st.sampled_from([3, 5]), st.sampled_from([1, 3])),
    st.tuples(st.just("res"), st.sampled_from([1, 3])),
    st.tuples(st.just("pool")),
    st.tuples(st.just("dw")),
)


def random_model(blocks, h: int, w: int, seed: int) -> onnx.ModelProto:
    """Stem conv 3x3 to 6 channels, then ``blocks``: fire modules (squeeze 1x1, expands 1x1 and kxk, Concat),
    residual adds (x + conv(x)), 3x3/2 max pools (pass pool_concat moves one after a Concat onto its inputs) and
    depthwise 3x3 convs; a 1x1 head conv."""
    g = builders._new(seed)
    x, c = g.op("Relu", [g.conv("x", 3, 6, 3)]), 6
    hh, ww = h, w
    for b in blocks:
        if b[0] == "fire":
            _, sq, ex, k = b
            s = g.op("Relu", [g.conv(x, c, sq, 1)])
            x, c = g.op("Concat", [g.op("Relu", [g.conv(s, sq, ex, 1)]), g.conv(s, sq, ex, k)], axis=1), 2 * ex
        elif b[0] == "res":
            x = g.op("Add", [x, g.conv(x, c, c, b[1])])
        elif b[0] == "pool" and min(hh, ww) >= 5:
            x = g.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)
            hh, ww = -(-(hh - 3) // 2) + 1, -(-(ww - 3) // 2) + 1
        elif b[0] == "dw":
            x = g.op("Relu", [g.conv(x, c, c, 3, group=c)])
    return builders._finish(g, "random_fires", [1, 3, h, w], g.conv(x, c, 4, 1))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(blocks=st.lists(BLOCK, min_size=1, max_size=4), h=st.integers(7, 16), w=st.integers(7, 20),
       seed=st.integers(0, 9), int8=st.sampled_from([False, False, True]))
def test_random_branched_graphs_in_cols_units_run_like_untiled(runtime_ok, tmp_path_factory, blocks, h, w, seed,
                                                               int8):
    """Random graphs with branch points (fire modules' squeezes, residual inputs) and channel Concats, planned with
    column tiles at their smallest budget and on forced grids below the row floor: every plan proven, and on the
    host runtime the untiled plan's output bit for bit (int8 and float), the fast high-water mark the plan's peak."""
    d = tmp_path_factory.mktemp("rnd")
    if int8:
        logging.getLogger().setLevel(logging.ERROR)
    fp = saved_model(d, random_model(blocks, h, w, seed), "m", int8)

    def budgets(prep, kw):
        from tigris.plan import min_fast_budget

        floor = min_fast_budget(prep.graph, **{**kw, "col_tiles": False})
        least = min_fast_budget(prep.graph, **kw)
        return ((least, None), (floor, 2), (floor, 3), ((least + floor) // 32 * 16, 2))

    _run_against_untiled(fp, budgets)


def test_readers_refuse_a_sub_band_that_misses_the_output_band(runtime_ok, tmp_path):
    """A 1x1 conv reading a sub-band of a branch buffer's hull (run row by row): its input band moved one column
    right no longer holds its output band's first column, and both readers refuse it (TGRS_ERR_TILE_COLS)."""
    import struct

    from tigris import api
    from tigris.emit import format as F
    from tigris.emit import read_plan
    from tigris.emit.reader import PlanFormatError
    from tigris.emit.writer import seal
    from tigris.host.session import PlanError, Session
    from tigris.plan import min_fast_budget
    from tigris.plan.cols import reads_sub_bands

    path = _paths(tmp_path, False)
    prep = api.prepare(path)
    c = api.compile_model(path, min_fast_budget(prep.graph, **api._plan_kwargs(prep, True)), xip=True,
                          prepared=prep)
    g, data = prep.graph, c.plan_bytes
    pf = read_plan(data)
    found = None
    for k, u in enumerate(c.analysis.plan.units):
        for i in u.ops if u.tile_cols else ():
            op = g.ops[i]
            x, y = op.inputs[0], op.outputs[0]
            for t, cols in enumerate(u.tile_cols):
                if reads_sub_bands(g, op) and cols[x] != cols[y] and found is None:
                    found = (k, x, t, cols[y])
    assert found is not None, "no op reads a sub-band"
    k, x, t, (o0, _o1) = found
    unit = pf.units[k]
    names = [tt.name for tt in pf.tensors]
    pos = {names[p.tensor]: j for j, p in enumerate(unit.placements)}
    sec = lambda sid: int(F.SECTION.unpack(data, F.DIR_OFFSET + (int(sid) - 1) * F.SECTION.size)["offset"])  # noqa
    u = F.UNIT.unpack(data, sec(F.SectionId.UNITS) + k * F.UNIT.size)
    rec = sec(F.SectionId.TILE_ROWS) + 8 * (int(u["rows_first"]) + (unit.tiles + t) * len(unit.placements) + pos[x])
    b = bytearray(data)
    struct.pack_into("<i", b, rec, o0 + 1)
    bad = seal(b)
    with pytest.raises(PlanFormatError) as py:
        read_plan(bad)
    assert py.value.status == "ERR_TILE_COLS"
    with pytest.raises(PlanError) as e:
        Session(bad)
    assert e.value.name == "TGRS_ERR_TILE_COLS"
