"""I/O inside the arena (tigris.h: tgrs_input_home, tgrs_output_home, tgrs_run_in_place): the caller writes each input
at its home in the arena and reads each output there, and the run takes no input/output buffers at all. The same
plans run both ways must give identical outputs and high-water marks; a plan whose input homes would clobber each
other is refused with TGRS_ERR_PLACEMENT instead of handing out a pointer."""
from __future__ import annotations

import struct

import numpy as np
import pytest

import _rt_plans as P
from tigris import api
from tigris.emit import format as F
from tigris.emit.writer import seal
from tigris.host import PlanError, Session
from tigris.ir import AnalyzedGraph, DoesNotFitError, Op, Tensor
from tigris_testing import REPO

CODES = {s.name: s.code for s in F.STATUS}


def _both_ways(data: bytes, inputs: dict[str, np.ndarray]) -> None:
    s = Session(data)
    a = s.run(inputs)
    b = s.run(inputs, io="in-arena")
    assert a.outputs.keys() == b.outputs.keys()
    for name, got in a.outputs.items():
        assert got.dtype == b.outputs[name].dtype and got.shape == b.outputs[name].shape, name
        assert got.tobytes() == b.outputs[name].tobytes(), name
    assert (a.fast_peak, a.slow_peak) == (b.fast_peak, b.slow_peak)


@pytest.mark.parametrize("fast", [1 << 20, 6000, 3000])
@pytest.mark.parametrize("xip,comp", [(False, "none"), (True, "none"), (False, "lz4")], ids=["copy", "xip", "lz4"])
@pytest.mark.parametrize("int8,u8", [(False, False), (True, False), (True, True)], ids=["f32", "int8", "uint8io"])
def test_small_plans_agree_both_ways(fast: int, xip: bool, comp: str, int8: bool, u8: bool) -> None:
    g = P.eltwise_graph(int8=int8, uint8_io=u8)
    data, _ = P.compile_graph(g, fast, xip=xip, compression=comp)
    for seed in (0, 1):
        _both_ways(data, P.random_input(g, seed))


def _compile_both_ways(path, budgets) -> int:
    prep = api.prepare(path)
    inputs = api.random_inputs(prep, seed=3)
    ran = 0
    for fast in budgets:
        for xip in (False, True):
            try:
                c = api.compile_model(path, fast, xip=xip, prepared=prep)
            except DoesNotFitError:
                continue
            _both_ways(c.plan_bytes, inputs)
            ran += 1
    return ran


@pytest.mark.parametrize("name,budgets", [("mnist-8.onnx", ["64K", "8K"]), ("kws_dscnn_int8.onnx", ["64K", "24K"])])
def test_repository_models_agree_both_ways(name: str, budgets: list[str]) -> None:
    assert _compile_both_ways(REPO / "tests" / "models" / name, budgets) >= 2


@pytest.mark.shared
@pytest.mark.parametrize("rel,budgets", [("mlperf_tiny/vww_mbv1_025_96_int8.onnx", ["128K"]),
                                         ("mlperf_tiny/kws_dscnn_f32.onnx", ["64K"]),
                                         ("mlperf_tiny/resnet8_cifar_int8.onnx", ["64K"])],
                         ids=["vww", "kws_f32", "resnet8"])
def test_shared_models_agree_both_ways(rel: str, budgets: list[str]) -> None:
    assert _compile_both_ways(P.shared_model(rel), budgets) >= 1


def test_in_place_run_takes_no_buffers_and_homes_are_inside_the_arenas() -> None:
    g = P.eltwise_graph(int8=True)
    data, plan = P.compile_graph(g, 3000)  # several units: a slow arena
    s = Session(data)
    ffi, lib = s._ffi, s._lib
    # The copying entry point refuses NULL buffers; the in-place one has none to take.
    st = ffi.new("tgrs_stats *")
    rc = lib.tgrs_run(s._plan, s._fast, s.fast_size, s._slow, s.slow_size, ffi.NULL, ffi.NULL, st)
    assert rc == CODES["ERR_NULL"]
    base_f = int(ffi.cast("uintptr_t", s._fast))
    base_s = int(ffi.cast("uintptr_t", s._slow))
    for out, specs in ((False, s.inputs), (True, s.outputs)):
        for i, spec in enumerate(specs):
            h = int(ffi.cast("uintptr_t", s._home(out, i)))
            inside_fast = base_f <= h and h + spec.nbytes <= base_f + s.fast_size
            inside_slow = base_s <= h and h + spec.nbytes <= base_s + s.slow_size
            assert inside_fast or inside_slow
    home = ffi.new("void **")
    assert lib.tgrs_input_home(s._plan, s._fast, s.fast_size, s._slow, s.slow_size, 1, home) == CODES["ERR_INPUT"]
    assert home[0] == ffi.NULL
    assert lib.tgrs_input_home(s._plan, s._fast, s.fast_size - 1, s._slow, s.slow_size, 0, home) == \
        CODES["ERR_ARENA_SMALL"]
    assert lib.tgrs_output_home(s._plan, s._fast, s.fast_size, s._slow, s.slow_size, 0, ffi.NULL) == \
        CODES["ERR_NULL"]
    assert lib.tgrs_run_in_place(s._plan, s._fast, s.fast_size - 1, s._slow, s.slow_size, st) == \
        CODES["ERR_ARENA_SMALL"]


def _two_input_graph() -> AnalyzedGraph:
    shape = (1, 4, 8, 8)
    tensors = {n: Tensor(n, shape, "float32", None, "nhwc") for n in ("x1", "x2", "y")}
    return AnalyzedGraph("two_in", tensors, [Op("add0", "Add", ("x1", "x2"), ("y",))], ["x1", "x2"], ["y"], {}, {})


def _section(data: bytes, sid: F.SectionId) -> tuple[int, int, int]:
    _, off, size, count = struct.unpack_from("<4I", data, F.DIR_OFFSET + (int(sid) - 1) * F.SECTION.size)
    return off, size, count


def test_clashing_input_homes_are_refused() -> None:
    g = _two_input_graph()
    data, _ = P.compile_graph(g, 1 << 20)
    x = {"x1": np.ones((1, 4, 8, 8), np.float32), "x2": np.full((1, 4, 8, 8), 2.0, np.float32)}
    _both_ways(data, x)
    # Forge the second input's home onto the first's (its unit-0 placement and its interface record): the loader
    # cannot prove liveness, so the plan loads; the home queries must refuse it.
    b = bytearray(data)
    io_off, _, _ = _section(data, F.SectionId.IO)
    pl_off, _, n_pl = _section(data, F.SectionId.PLACEMENTS)
    io_o = F.IO.offsets()
    pl_o = F.PLACEMENT.offsets()
    tensor = [struct.unpack_from("<I", b, io_off + k * F.IO.size + io_o["tensor"])[0] for k in range(2)]
    home0 = struct.unpack_from("<I", b, io_off + io_o["offset"])[0]
    struct.pack_into("<I", b, io_off + F.IO.size + io_o["offset"], home0)
    for p in range(n_pl):
        if struct.unpack_from("<I", b, pl_off + p * F.PLACEMENT.size + pl_o["tensor"])[0] == tensor[1]:
            struct.pack_into("<I", b, pl_off + p * F.PLACEMENT.size + pl_o["offset"], home0)
    s = Session(seal(b))
    with pytest.raises(PlanError, match="TGRS_ERR_PLACEMENT"):
        s.run(x, io="in-arena")
    home = s._ffi.new("void **")
    for i in range(2):
        rc = s._lib.tgrs_input_home(s._plan, s._fast, s.fast_size, s._slow, s.slow_size, i, home)
        assert rc == CODES["ERR_PLACEMENT"] and home[0] == s._ffi.NULL
    # The output does not clash with anything of its own direction.
    assert s._lib.tgrs_output_home(s._plan, s._fast, s.fast_size, s._slow, s.slow_size, 0, home) == 0
