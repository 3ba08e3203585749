"""tgrs_run (runtime_c/src/exec.c) on real plans: untiled, tiled, XIP, LZ4, uint8 boundaries.

Oracles: the NumPy reference executor (tigris.reference) on the same graph, bit-exact for int8 and within
1e-5 x max(1, max|ref|) for float32; the compiler's own fast and slow peaks for the runtime's high-water marks
(they must be equal). Plans are compiled at several fast budgets so the same graph runs as one untiled unit and as
tiled units that reload and spill bands through the slow arena.
"""
from __future__ import annotations

import numpy as np
import pytest

import _rt_plans as P
from tigris.emit import format as F
from tigris.host import PlanError, Session
from tigris.host.build import runtime
from tigris.reference import run_reference

FLOAT_TOL = 1e-5  # x max(1, max|ref|)
BUDGETS = [1 << 20, 6000, 3000]
MODES = [(False, "none"), (True, "none"), (False, "lz4")]
CODES = {s.name: s.code for s in F.STATUS}


@pytest.mark.parametrize("fast", BUDGETS)
@pytest.mark.parametrize("xip,comp", MODES, ids=["copy", "xip", "lz4"])
@pytest.mark.parametrize("int8,u8", [(False, False), (True, False), (True, True)], ids=["f32", "int8", "uint8io"])
def test_runs_match_reference_and_peaks_match_plan(fast: int, xip: bool, comp: str, int8: bool, u8: bool) -> None:
    g = P.eltwise_graph(int8=int8, uint8_io=u8)
    data, plan = P.compile_graph(g, fast, xip=xip, compression=comp)
    s = Session(data)
    assert [i.name for i in s.inputs] == ["x"] and [o.name for o in s.outputs] == ["y"]
    assert s.inputs[0].dtype == ("uint8" if u8 else g.tensors["x"].dtype)
    for seed in (0, 1):
        x = P.random_input(g, seed)
        res = s.run(x)
        ref = run_reference(g, x)["y"]
        got = res.outputs["y"]
        assert got.shape == ref.shape and got.dtype == ref.dtype
        if int8:
            np.testing.assert_array_equal(got, ref)
        else:
            tol = FLOAT_TOL * max(1.0, float(np.abs(ref).max()))
            assert float(np.abs(got - ref).max()) <= tol
        assert res.fast_peak == plan.fast_peak
        assert res.slow_peak == plan.slow_peak


def test_tiled_plan_is_tiled_and_bit_identical_to_untiled_int8() -> None:
    g = P.eltwise_graph(int8=True)
    big, big_plan = P.compile_graph(g, 1 << 20)
    small, small_plan = P.compile_graph(g, 1500)
    assert all(u.tiles == 1 for u in big_plan.units)
    assert any(u.tiles > 1 for u in small_plan.units)  # the small budget really tiles
    x = P.random_input(g, 7)
    a = Session(big).run(x)
    b = Session(small).run(x)
    np.testing.assert_array_equal(a.outputs["y"], b.outputs["y"])
    assert b.slow_peak > 0 and b.fast_peak < a.fast_peak


def test_input_shape_and_dtype_are_checked() -> None:
    g = P.eltwise_graph(int8=True, uint8_io=True)
    s = Session(P.compile_graph(g, 1 << 20)[0])
    x = P.random_input(g, 0)["x"]
    with pytest.raises(Exception, match="shape"):
        s.run({"x": x[:, :, :4]})
    with pytest.raises(Exception, match="uint8"):
        s.run({"x": x.astype(np.float32)})
    with pytest.raises(Exception, match="missing"):
        s.run({})


def _raw_run(data: bytes, fast_len: int | None = None, slow_len: int | None = None, shift: int = 0) -> int:
    """tgrs_run through the raw API with chosen arena lengths (and a misaligned fast arena when shift != 0)."""
    rt = runtime()
    ffi, lib = rt.ffi, rt.lib
    buf = ffi.new("uint8_t[]", data)
    plan = ffi.new("tgrs_plan *")
    assert lib.tgrs_load(plan, buf, len(data)) == 0
    info = ffi.new("tgrs_io_info *")
    assert lib.tgrs_input_info(plan, 0, info) == 0
    inp = ffi.new("uint8_t[]", info.nbytes)
    assert lib.tgrs_output_info(plan, 0, info) == 0
    out = ffi.new("uint8_t[]", info.nbytes)
    fsz = lib.tgrs_fast_size(plan) if fast_len is None else fast_len
    ssz = lib.tgrs_slow_size(plan) if slow_len is None else slow_len
    fast = ffi.new("uint8_t[]", fsz + 16)
    slow = ffi.new("uint8_t[]", ssz + 16)
    ins = ffi.new("void *[]", [inp])
    outs = ffi.new("void *[]", [out])
    return int(lib.tgrs_run(plan, fast + shift, fsz, slow, ssz, ffi.cast("const void *const *", ins), outs,
                            ffi.NULL))


def test_arenas_smaller_than_the_plan_are_refused() -> None:
    g = P.eltwise_graph(int8=True)
    data, plan = P.compile_graph(g, 1500)
    assert plan.slow_peak > 0
    assert _raw_run(data) == 0
    assert _raw_run(data, fast_len=plan.fast_peak - 1) == CODES["ERR_ARENA_SMALL"]
    assert _raw_run(data, slow_len=plan.slow_peak - 1) == CODES["ERR_ARENA_SMALL"]
    assert _raw_run(data, shift=1) == CODES["ERR_ALIGN"]


def test_run_before_load_is_refused() -> None:
    rt = runtime()
    ffi, lib = rt.ffi, rt.lib
    plan = ffi.new("tgrs_plan *")  # zeroed, never loaded
    ptrs = ffi.new("void *[]", 1)
    buf = ffi.new("uint8_t[]", 16)
    assert lib.tgrs_run(plan, buf, 16, buf, 16, ffi.cast("const void *const *", ptrs), ptrs, ffi.NULL) == \
        CODES["ERR_STATE"]
    assert lib.tgrs_num_inputs(plan) == -1 and lib.tgrs_fast_size(plan) == 0


def test_status_names_match_the_format_table() -> None:
    rt = runtime()
    for s in F.STATUS:
        assert rt.ffi.string(rt.lib.tgrs_status_name(s.code)).decode() == f"TGRS_{s.name}"
    err = PlanError(CODES["ERR_CRC"], "plan")
    assert err.name == "TGRS_ERR_CRC" and "CRC" in str(err)


CONV_CASES = [(False, 1 << 20), (False, 4000), (False, 2500), (True, 1 << 20), (True, 1800), (True, 1300)]


@pytest.mark.parametrize("xip,comp", MODES, ids=["copy", "xip", "lz4"])
@pytest.mark.parametrize("int8,fast", CONV_CASES)
def test_conv_chain_units_tiles_and_chains(int8: bool, fast: int, xip: bool, comp: str) -> None:
    """Weights in the prefix (copied or LZ4) or in place, several units (spill/reload), tiled chains."""
    from tigris.ir import DoesNotFitError

    g = P.conv_chain_graph(int8=int8)
    try:
        data, plan = P.compile_graph(g, fast, xip=xip, compression=comp)
    except DoesNotFitError:
        pytest.skip(f"the planner cannot fit this graph in {fast} bytes with xip={xip}")
    x = P.random_input(g, 3)
    res = Session(data).run(x)
    ref = run_reference(g, x)["y"]
    if int8:
        np.testing.assert_array_equal(res.outputs["y"], ref)
    else:
        assert float(np.abs(res.outputs["y"] - ref).max()) <= FLOAT_TOL * max(1.0, float(np.abs(ref).max()))
    assert (res.fast_peak, res.slow_peak) == (plan.fast_peak, plan.slow_peak)


def test_conv_chain_budgets_cover_units_tiles_and_chains() -> None:
    """Some budget of the sweep splits the graph into units that spill, some tiles a chain, and those plans run
    bit-exact (int8) against the reference, so the cases above are not all single-unit plans."""
    from tigris.ir import DoesNotFitError

    g = P.conv_chain_graph(int8=True)
    x = P.random_input(g, 5)
    ref = run_reference(g, x)["y"]
    split = chained = False
    for fast in range(4000, 900, -100):
        try:
            data, plan = P.compile_graph(g, fast)
        except DoesNotFitError:
            continue
        is_split = len(plan.units) >= 2 and plan.slow_peak > 0
        is_chain = any(u.tiles > 1 and len(u.stages) > 1 for u in plan.units)
        if (is_split and not split) or (is_chain and not chained):
            res = Session(data).run(x)
            np.testing.assert_array_equal(res.outputs["y"], ref)
            assert (res.fast_peak, res.slow_peak) == (plan.fast_peak, plan.slow_peak)
        split, chained = split or is_split, chained or is_chain
    assert chained, "no budget produced a tiled chain"
    g32 = P.conv_chain_graph(int8=False)
    assert any(len(P.compile_graph(g32, f)[1].units) >= 2 for f in (2500, 2300, 2200)), "no float multi-unit plan"


def _run_filled(data: bytes, x: bytes, fill: int) -> tuple[int, bytes]:
    """One raw tgrs_run with both arenas pre-filled with `fill` (a device's arenas start as garbage)."""
    rt = runtime()
    ffi, lib = rt.ffi, rt.lib
    buf = ffi.new("uint8_t[]", data)
    plan = ffi.new("tgrs_plan *")
    assert lib.tgrs_load(plan, buf, len(data)) == 0
    info = ffi.new("tgrs_io_info *")
    assert lib.tgrs_output_info(plan, 0, info) == 0
    out = ffi.new("uint8_t[]", info.nbytes)
    fsz, ssz = lib.tgrs_fast_size(plan), lib.tgrs_slow_size(plan)
    fast = ffi.new("uint8_t[]", bytes([fill]) * max(1, fsz))
    slow = ffi.new("uint8_t[]", bytes([fill]) * max(1, ssz))
    inp = ffi.new("uint8_t[]", x)
    ins = ffi.new("void *[]", [inp])  # kept in a variable: a cast of a temporary would not keep it alive
    outs = ffi.new("void *[]", [out])
    rc = lib.tgrs_run(plan, fast, fsz, slow, ssz, ffi.cast("const void *const *", ins), outs, ffi.NULL)
    return int(rc), bytes(ffi.buffer(out, info.nbytes))


@pytest.mark.parametrize("int8", [False, True], ids=["f32", "int8"])
def test_outputs_do_not_depend_on_arena_garbage(int8: bool) -> None:
    """Every byte a kernel reads was written before in this run (weights, reloads, earlier ops, halo rows): the same
    plan on arenas pre-filled with 0x00 and with 0xA5 gives bit-identical outputs, at every budget of the sweep."""
    from tigris.ir import DoesNotFitError

    g = P.conv_chain_graph(int8=int8)
    x = np.random.default_rng(11).integers(0, 256, size=g.tensors["x"].nbytes, dtype=np.uint8)
    if not int8:  # finite floats: the low three bytes random, the top byte in a small exponent range
        x = x.reshape(-1, 4)
        x[:, 3] = x[:, 3] % 0x3E
        x = x.reshape(-1)
    checked = 0
    for fast in (1 << 20, 4000, 2500, 2000, 1500, 1300, 1000):
        for xip, comp in MODES:
            try:
                data, _ = P.compile_graph(g, fast, xip=xip, compression=comp)
            except DoesNotFitError:
                continue
            a = _run_filled(data, x.tobytes(), 0x00)
            b = _run_filled(data, x.tobytes(), 0xA5)
            assert a[0] == 0 and b[0] == 0
            assert a[1] == b[1], (fast, xip, comp)
            checked += 1
    assert checked >= 6


@pytest.mark.parametrize("rel,fast", [("mlperf_tiny/resnet8_cifar_int8.onnx", "64K"),
                                      ("mlperf_tiny/kws_dscnn_f32.onnx", "64K")], ids=["resnet8-int8", "kws-f32"])
def test_real_model_outputs_do_not_depend_on_arena_garbage(rel: str, fast: str) -> None:
    from tigris import api

    path = P.shared_model(rel)
    prep = api.prepare(path)
    s_in = Session(api.compile_model(path, fast, prepared=prep).plan_bytes).inputs[0]
    for xip, comp in MODES:
        data = api.compile_model(path, fast, xip=xip, compression=comp, prepared=prep).plan_bytes
        x = api.random_inputs(prep, seed=2)[s_in.name]
        raw = Session(data)._to_caller(s_in, x)
        a = _run_filled(data, raw, 0x00)
        b = _run_filled(data, raw, 0xA5)
        assert a[0] == 0 and b[0] == 0 and a[1] == b[1], (xip, comp)


def test_a_session_reuses_its_arenas_across_runs() -> None:
    """Runs on one Session (arenas reused, holding the previous run's bytes) equal runs on fresh Sessions."""
    g = P.conv_chain_graph(int8=True)
    data, _ = P.compile_graph(g, 1300)
    s = Session(data)
    for seed in (0, 1, 2, 0):
        x = P.random_input(g, seed)
        np.testing.assert_array_equal(s.run(x).outputs["y"], Session(data).run(x).outputs["y"])


def test_a_kernel_check_refuses_the_plan_at_load_naming_the_op() -> None:
    """A plan whose conv parameters a kernel would refuse: the loader's per-kind step refuses it (no run starts), and
    PlanError names the status and the op."""
    import struct

    from tigris.emit.writer import seal

    g = P.conv_chain_graph(int8=False)
    data, _ = P.compile_graph(g, 1 << 20)
    e = F.DIR_OFFSET + (int(F.SectionId.OPS) - 1) * F.SECTION.size
    ops_off = struct.unpack_from("<I", data, e + 4)[0]
    b = bytearray(data)
    struct.pack_into("<i", b, ops_off + F.OP.offsets()["params"], 0)  # conv1: kernel height 0
    with pytest.raises(PlanError) as err:
        Session(seal(b))
    assert err.value.name == "TGRS_ERR_PARAM"
    assert "conv1" in str(err.value) and "\n" not in str(err.value)
