"""GlobalAveragePool accumulated over the tiles of a unit (unit flag ACCUM): the NumPy reference semantics, the C
runtime against it on synthetic graphs and on MobileNetV2-0.35 at 32K (issue 4), tiled against untiled, and the
loaders' refusal of malformed ACCUM units.

Tolerances: int8 outputs are compared bit-exactly (the reference defines the integer arithmetic); float outputs of
the C runtime against the NumPy reference within 1e-5 x max(1, max|ref|), against ONNX Runtime within 1e-4 x
max(1, max|ref|) (tigris.api.FLOAT_RTOL); the reference's own band accumulation against its untiled GAP exactly
(the summation order is fixed)."""
from __future__ import annotations

import struct

import numpy as np
import pytest

import _rt_plans as P
from tigris.emit import format as F
from tigris.emit import read_plan
from tigris.emit.reader import PlanFormatError
from tigris.emit.writer import seal
from tigris.ir import QuantParam, Tensor
from tigris.ops import TensorView, lower
from tigris.ops.pool import gap_accumulate, gap_begin, gap_finish
from tigris.reference import run_reference
from tigris_testing import host_session, shared_model

FLOAT_RTOL_REF = 1e-5


@pytest.fixture(scope="module")
def session_cls():
    return host_session()


def _gap_lowered(int8: bool, c: int, h: int, w: int):
    from tigris.ir import AnalyzedGraph, Op

    dt = "int8" if int8 else "float32"
    q = (lambda s, z: QuantParam(np.array([s], np.float32), np.array([z], np.int64))) if int8 else (lambda s, z: None)
    tensors = {"x": Tensor("x", (1, c, h, w), dt, q(0.04, -7), "nhwc"),
               "y": Tensor("y", (1, c, 1, 1), dt, q(0.03, 5), "nhwc")}
    g = AnalyzedGraph("gap", tensors, [Op("gap", "GlobalAveragePool", ("x",), ("y",), {})], ["x"], ["y"], {}, {})
    return lower(g, g.ops[0])


@pytest.mark.parametrize("int8", [False, True])
@pytest.mark.parametrize("h,w,cuts", [(7, 5, (3, 6)), (16, 3, (1, 2, 9, 15)), (5, 5, ()), (9, 1, (4,))])
def test_reference_band_accumulation_equals_untiled(int8: bool, h: int, w: int, cuts: tuple[int, ...]) -> None:
    c = 6
    low = _gap_lowered(int8, c, h, w)
    rng = np.random.default_rng(h * 31 + w)
    if int8:
        x = rng.integers(-128, 128, (1, h, w, c), dtype=np.int8)
    else:
        x = (rng.standard_normal((1, h, w, c)) * 10 ** rng.uniform(-3, 3, (1, h, w, c))).astype(np.float32)
    dt = "int8" if int8 else "float32"
    npdt = np.int8 if int8 else np.float32
    dims = (1, h, w, c)
    zp_in, zp_out = (-7, 5) if int8 else (0, 0)
    whole = TensorView(x, dims, dtype=dt, zero_point=zp_in)
    untiled = TensorView(np.zeros((1, 1, 1, c), npdt), (1, 1, 1, c), dtype=dt, zero_point=zp_out)
    from tigris.ops import kind

    kind("gap").reference(low, [whole], untiled)
    acc = gap_begin(dims, dt)
    edges = [0, *cuts, h]
    for a, b in zip(edges, edges[1:]):
        gap_accumulate(acc, TensorView(x[:, a:b], dims, row0=a, rows=b - a, dtype=dt, zero_point=zp_in))
    tiled = TensorView(np.zeros((1, 1, 1, c), npdt), (1, 1, 1, c), dtype=dt, zero_point=zp_out)
    gap_finish(low, acc, whole, tiled)
    np.testing.assert_array_equal(tiled.data, untiled.data)  # tolerance: none (fixed order / exact integers)
    if not int8:
        exact = x.astype(np.float64).mean(axis=(1, 2)).reshape(-1)
        np.testing.assert_allclose(tiled.data.reshape(-1), exact, rtol=1e-4, atol=1e-6 * np.abs(x).max())


def _accum_units(data: bytes) -> list[int]:
    return [u.index for u in read_plan(data).units if u.accumulates]


# (int8, fast budget, halo reuse) where the planner accumulates the GAP over tiles (checked in the test); with halo
# reuse the accumulating unit also carries rows from tile to tile (unit flag ROLLING, checked too).
ACCUM_CASES = [(False, 4000, False), (False, 2500, False), (True, 3000, False), (True, 1600, False),
               (True, 1000, False), (False, 3000, True), (True, 3000, True), (True, 1200, True)]


@pytest.mark.parametrize("int8,fast,reuse", ACCUM_CASES)
def test_synthetic_accumulating_plans_match_reference_and_untiled(session_cls, int8: bool, fast: int,
                                                                  reuse: bool) -> None:
    from tigris.api import run_plan

    g = P.conv_gap_graph(int8=int8, h=16)
    tiled, plan = P.compile_graph(g, fast, halo_reuse=reuse)
    assert _accum_units(tiled), "this budget should make the GAP accumulate over tiles"
    rolling = [u.index for u in read_plan(tiled).units if u.rolling]
    assert (set(_accum_units(tiled)) <= set(rolling)) if reuse else not rolling
    untiled, _ = P.compile_graph(g, 1 << 20)
    assert not _accum_units(untiled)
    for seed in range(3):
        inp = P.random_input(g, seed)
        ref = run_reference(g, inp)["g"]
        a = run_plan(tiled, inp)
        b = run_plan(untiled, inp)
        assert a.fast_peak == plan.fast_peak
        if int8:
            np.testing.assert_array_equal(a.outputs["g"], ref)  # bit-exact
            np.testing.assert_array_equal(a.outputs["g"], b.outputs["g"])  # tiled == untiled, bit-exact
        else:
            tol = FLOAT_RTOL_REF * max(1.0, float(np.abs(ref).max()))
            np.testing.assert_allclose(a.outputs["g"], ref, rtol=0, atol=tol)
            np.testing.assert_allclose(a.outputs["g"], b.outputs["g"], rtol=0, atol=tol)


@pytest.mark.parametrize(
    "rel,fast",
    [("torchvision/mobilenet_v2_035_96_f32.onnx", "32K"), ("torchvision/mobilenet_v2_035_96_int8.onnx", "32K"),
     ("torchvision/mobilenet_v2_035_96_int8.onnx", "12K")],
)
def test_mobilenet_v2_at_small_budgets(session_cls, rel: str, fast: str) -> None:
    """Issue 4's target: MobileNetV2-0.35 f32 fits at 32K (with --xip) because its GAP accumulates; int8 at 32K and at
    12K, where its GAP accumulates too. Outputs against the reference and ONNX Runtime."""
    from tigris.api import (
        FLOAT_RTOL, INT8_MAX_LSB, QUANT_FLOAT_MIN_COSINE, compare, compile_model, prepare, random_inputs,
        run_onnxruntime, run_plan,
    )

    path = shared_model(rel)
    prep = prepare(path)
    comp = compile_model(path, fast, xip=True, prepared=prep)
    int8 = "int8" in rel
    if not int8 or fast == "12K":
        assert _accum_units(comp.plan_bytes)
    inp = random_inputs(prep, seed=1)
    got = run_plan(comp.plan_bytes, inp)
    assert got.fast_peak <= comp.analysis.plan.fast_peak <= 32 * 1024
    ref = run_reference(prep.graph, inp, prep.lowered)
    ort = run_onnxruntime(path, inp)
    untiled = run_plan(compile_model(path, "8M", xip=True, prepared=prep).plan_bytes, inp)
    for k, r in ref.items():
        if int8:
            np.testing.assert_array_equal(got.outputs[k], r)  # bit-exact against the reference
            np.testing.assert_array_equal(got.outputs[k], untiled.outputs[k])  # and against the one-unit plan
            o = ort[k]
            if np.issubdtype(o.dtype, np.integer):  # within INT8_MAX_LSB of ONNX Runtime
                assert int(np.abs(got.outputs[k].astype(np.int64) - o.astype(np.int64)).max()) <= INT8_MAX_LSB
            else:  # a quantized model with float outputs: the end-to-end gross-error check
                assert compare(got.outputs[k], o, integer=False)["cosine"] >= QUANT_FLOAT_MIN_COSINE
        else:
            scale = max(1.0, float(np.abs(r).max()))
            np.testing.assert_allclose(got.outputs[k], r, rtol=0, atol=FLOAT_RTOL_REF * scale)
            np.testing.assert_allclose(got.outputs[k], untiled.outputs[k], rtol=0, atol=FLOAT_RTOL_REF * scale)
            np.testing.assert_allclose(got.outputs[k], ort[k], rtol=0, atol=FLOAT_RTOL * scale)


# --------------------------------------------------------------------------------------------------------------------
# Refusal of malformed ACCUM units, with the same code from both readers
# --------------------------------------------------------------------------------------------------------------------
def _codes(session_cls, data: bytes) -> tuple[str, str]:
    Session, PlanError = session_cls
    try:
        read_plan(data)
        py = "OK"
    except PlanFormatError as e:
        py = e.status
    try:
        Session(data)
        c = "OK"
    except PlanError as e:
        c = e.name.removeprefix("TGRS_")
    return py, c


def _sec(data: bytes, sid: F.SectionId) -> tuple[int, int]:
    e = F.SECTION.unpack(data, F.DIR_OFFSET + (int(sid) - 1) * F.SECTION.size)
    return int(e["offset"]), int(e["count"])


def _put(data: bytes, pos: int, value: int, fmt: str = "<I") -> bytes:
    b = bytearray(data)
    struct.pack_into(fmt, b, pos, value)
    return seal(b)


@pytest.fixture(scope="module")
def accum_plan() -> bytes:
    data, _ = P.compile_graph(P.conv_gap_graph(int8=True, h=16), 1000)
    return data


def test_malformed_accumulate_units_are_refused(session_cls, accum_plan: bytes) -> None:
    data = accum_plan
    pf = read_plan(data)
    (ui,) = _accum_units(data)
    u = pf.units[ui]
    uoff = _sec(data, F.SectionId.UNITS)[0] + ui * F.UNIT.size + F.UNIT.offsets()["flags"]
    assert _codes(session_cls, data) == ("OK", "OK")
    # ACCUM without TILED, and ACCUM on a unit that does not end with a GAP
    assert _codes(session_cls, _put(data, uoff, int(F.UnitFlag.ACCUM))) == ("ERR_UNIT", "ERR_UNIT")
    others = [v for v in pf.units if v.index != ui]
    if others and others[0].tiled:
        o = _sec(data, F.SectionId.UNITS)[0] + others[0].index * F.UNIT.size
        bad = _put(data, o, int(F.UnitFlag.TILED | F.UnitFlag.ACCUM))
        assert _codes(session_cls, bad) == ("ERR_UNIT", "ERR_UNIT")
    # a GAP reading and writing one buffer
    last = pf.ops[u.op_first + u.op_count - 1]
    ooff = _sec(data, F.SectionId.OPS)[0] + last.index * F.OP.size
    bad = _put(data, ooff + F.OP.offsets()["inputs"], last.output)
    assert _codes(session_cls, bad)[0] == _codes(session_cls, bad)[1] != "OK"
    # bands: the accumulator not whole in a tile; input bands overlapping, skipping, or not reaching the end
    rows_off = _sec(data, F.SectionId.TILE_ROWS)[0]
    pos = {p.tensor: j for j, p in enumerate(u.placements)}
    pc = len(u.placements)
    t_in, t_out = pf.tensors[last.inputs[0]].root, pf.tensors[last.output].root

    def row_pos(tile: int, tensor: int, field: str) -> int:
        rec = _rows_first(data, ui) + tile * pc + pos[tensor]
        return rows_off + rec * F.TILE_ROW.size + F.TILE_ROW.offsets()[field]

    assert _codes(session_cls, _put(data, row_pos(1, t_out, "rows"), 0, "<i")) == ("ERR_TILE_ROWS", "ERR_TILE_ROWS")
    r0, nr = u.tile_rows[1][pos[t_in]]
    assert _codes(session_cls, _put(data, row_pos(1, t_in, "row0"), r0 - 1, "<i")) == \
        ("ERR_TILE_ROWS", "ERR_TILE_ROWS")
    if nr > 1:
        assert _codes(session_cls, _put(data, row_pos(1, t_in, "rows"), nr - 1, "<i")) == \
            ("ERR_TILE_ROWS", "ERR_TILE_ROWS")
    r0, nr = u.tile_rows[-1][pos[t_in]]
    assert _codes(session_cls, _put(data, row_pos(u.tiles - 1, t_in, "rows"), nr - 1, "<i")) == \
        ("ERR_TILE_ROWS", "ERR_TILE_ROWS")


def _rows_first(data: bytes, ui: int) -> int:
    o = _sec(data, F.SectionId.UNITS)[0] + ui * F.UNIT.size + F.UNIT.offsets()["rows_first"]
    return struct.unpack_from("<I", data, o)[0]


def test_int8_accumulator_without_scratch_fails_at_run_time(session_cls, accum_plan: bytes) -> None:
    """The loader cannot know a kind's scratch needs; the GAP refuses to run without its int32 sums."""
    from tigris.api import run_plan
    from tigris.host.session import PlanError

    data = accum_plan
    pf = read_plan(data)
    (ui,) = _accum_units(data)
    u = pf.units[ui]
    last = pf.ops[u.op_first + u.op_count - 1]
    ooff = _sec(data, F.SectionId.OPS)[0] + last.index * F.OP.size
    bad = _put(_put(data, ooff + F.OP.offsets()["scratch_size"], 0), ooff + F.OP.offsets()["scratch_off"], 0)
    with pytest.raises(PlanError, match="SCRATCH"):
        run_plan(bad, P.random_input(P.conv_gap_graph(int8=True, h=16), 0))


def test_loaders_agree_on_mutated_accumulate_plans(session_cls, accum_plan: bytes) -> None:
    """Every u32/i32 field of the UNITS, OPS and TILE_ROWS records set to boundary values: both readers give the
    same verdict and code."""
    data = accum_plan
    n = 0
    bad = []
    for sid, rec in ((F.SectionId.UNITS, F.UNIT), (F.SectionId.TILE_ROWS, F.TILE_ROW), (F.SectionId.OPS, F.OP)):
        off, count = _sec(data, sid)
        for r in range(count if sid != F.SectionId.TILE_ROWS else min(count, 40)):
            for f in rec.fields:
                if f.type not in ("u32", "i32") or f.name in ("params", "name_off", "name_len"):
                    continue
                pos = off + r * rec.size + rec.offsets()[f.name]
                cur = struct.unpack_from("<I", data, pos)[0]
                for v in sorted({0, 1, 2, 4, 5, 0xFFFFFFFF, (cur + 1) & 0xFFFFFFFF, (cur - 1) & 0xFFFFFFFF} - {cur}):
                    n += 1
                    mutated = _put(data, pos, v)
                    py, c = _codes(session_cls, mutated)
                    if py != c:
                        bad.append((sid.name, r, f.name, v, py, c))
    assert n > 300
    assert not bad, bad[:5]
