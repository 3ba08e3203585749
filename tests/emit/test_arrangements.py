"""Weight arrangements (docs/format.md "Weight arrangements"): `--target cortex-m4` packs the int8 fc weights as
FC_ROWS4 and records the target in the header; the generic default packs nothing. What is checked here, on the host:
the arrangement is a permutation with an exact inverse, packed plans round-trip through the reader, compile
deterministically, and run on the host runtime (which reads every target's arrangement) with the outputs of the
generic plan and the NumPy reference, bit for bit; both readers refuse a malformed arrangement with the same code,
and a runtime built for another core refuses a packed plan with TGRS_ERR_TARGET. tests/cortex_m/test_packed_plans.py
runs the packed plans on the cores."""
from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tigris import api
from tigris.emit import format as F
from tigris.emit.reader import PlanFormatError, arrange_slots, read_plan
from tigris.emit.writer import seal
from tigris.ops import KIND_IDS
from tigris.ops.fc import rows4, unrows4

REPO = Path(__file__).resolve().parents[2]
KWS = REPO / "tests" / "models" / "kws_dscnn_int8.onnx"  # its last op is an int8 fc 64 -> 12


@pytest.fixture(scope="module")
def plans():
    prep = api.prepare(str(KWS))
    generic = api.compile_model(str(KWS), "32K", compression="lz4", prepared=prep, objective="traffic").plan_bytes
    packed = api.compile_model(str(KWS), "32K", compression="lz4", prepared=prep, target="cortex-m4",
                               objective="traffic").plan_bytes
    return prep, generic, packed


@pytest.mark.parametrize("oc,k", [(4, 4), (5, 7), (9, 13), (8, 3), (12, 64), (7, 1)])
def test_rows4_is_a_permutation_with_its_inverse(oc: int, k: int) -> None:
    w = np.random.default_rng(oc * 100 + k).integers(-128, 128, (oc, k)).astype(np.int8)
    r = rows4(w)
    assert r.dtype == np.int8 and r.size == w.size
    assert np.array_equal(np.sort(r), np.sort(w.reshape(-1)))
    assert np.array_equal(unrows4(r, oc, k), w)
    # the documented order: block 0 starts with the first four features of rows 0..3, then row 0's next four
    if oc >= 4 and k >= 4:
        assert np.array_equal(r[:16], w[:4, :4].reshape(-1))
    if oc >= 4 and k >= 8:
        assert np.array_equal(r[16:20], w[0, 4:8])
    if oc % 4:  # rows past the last block keep the plain order, at the end
        assert np.array_equal(r[-(oc % 4) * k:], w[oc - oc % 4:].reshape(-1))


def _fc_arrangements(pf) -> list[int]:
    slot = arrange_slots()[KIND_IDS["fc"] - 1]
    return [op.params[slot] for op in pf.ops if op.kind == "fc"]


def test_generic_packs_nothing_and_cortex_m4_packs_the_fc(plans) -> None:
    _, generic, packed = plans
    g, p = read_plan(generic), read_plan(packed)
    assert g.target == 0 and g.target_name == "generic" and g.arrangements() == {}
    assert _fc_arrangements(g) == [0]
    assert p.target == int(F.Target.CORTEX_M4) and p.target_name == "cortex-m4"
    assert _fc_arrangements(p) == [int(F.Arrange.FC_ROWS4)]
    assert set(p.arrangements().values()) == {"fc_rows4"}
    # the same plan apart from the arranged bytes: same sizes, same memory figures
    assert len(generic) == len(packed) and g.fast_arena == p.fast_arena and g.weight_raw == p.weight_raw
    assert generic != packed


def test_packed_compile_is_deterministic(plans) -> None:
    prep, _, packed = plans
    again = api.compile_model(str(KWS), "32K", compression="lz4", prepared=prep, target="cortex-m4",
                              objective="traffic").plan_bytes
    assert again == packed


def test_host_runs_the_packed_plan_bit_exact(plans) -> None:
    from tigris.host import Session
    from tigris.reference import run_reference

    prep, generic, packed = plans
    for seed in range(3):
        x = api.random_inputs(prep, seed)
        a = Session(generic).run(x).outputs
        b = Session(packed).run(x).outputs
        ref = run_reference(prep.graph, x, prep.lowered)
        for n in a:
            assert np.array_equal(a[n], b[n]), n
            assert np.array_equal(np.asarray(b[n]), np.asarray(ref[n]).reshape(np.shape(b[n]))), n


def test_reference_reads_arranged_weights(plans) -> None:
    """The NumPy reference of an arranged fc op equals the plain op's (the kind's reference undoes FC_ROWS4)."""
    from tigris.ops import arrange
    from tigris.reference import run_reference

    prep, _, _ = plans
    arranged = arrange(prep.lowered, "cortex-m4")
    assert sum(a is not b for a, b in zip(arranged, prep.lowered)) == 1
    x = api.random_inputs(prep, 5)
    a, b = run_reference(prep.graph, x, prep.lowered), run_reference(prep.graph, x, arranged)
    for n in a:
        assert np.array_equal(a[n], b[n])


def _set_param(data: bytes, op_index: int, slot: int, value: int) -> bytes:
    d = read_plan(data)
    off = d.sections["OPS"][0] + op_index * F.OP.size + F.OP.offsets()["params"] + 4 * slot
    b = bytearray(data)
    struct.pack_into("<i", b, off, value)
    return seal(b)


def _set_target(data: bytes, target: int) -> bytes:
    b = bytearray(data)
    struct.pack_into("<I", b, F.HEADER.offsets()["target"], target)
    return seal(b)


def _c_status(data: bytes) -> str:
    from tigris.host.build import runtime

    rt = runtime()
    plan = rt.ffi.new("tgrs_plan *")
    buf = rt.ffi.new("uint8_t[]", data)
    return rt.ffi.string(rt.lib.tgrs_status_name(rt.lib.tgrs_load(plan, buf, len(data)))).decode()


def _py_status(data: bytes) -> str:
    try:
        read_plan(data)
    except PlanFormatError as e:
        return f"TGRS_{e.status}"
    return "TGRS_OK"


def test_readers_refuse_malformed_arrangements_alike(plans) -> None:
    _, generic, packed = plans
    pf = read_plan(packed)
    fc = next(op.index for op in pf.ops if op.kind == "fc")
    slot = arrange_slots()[KIND_IDS["fc"] - 1]
    cases = {
        "unknown id": (_set_param(packed, fc, slot, 99), "TGRS_ERR_BAD_PARAM"),
        "negative id": (_set_param(packed, fc, slot, -1), "TGRS_ERR_BAD_PARAM"),
        "packed op in a generic plan": (_set_target(packed, int(F.Target.GENERIC)), "TGRS_ERR_BAD_PARAM"),
        "packed op of another target": (_set_target(packed, int(F.Target.CORTEX_M55)), "TGRS_ERR_BAD_PARAM"),
        "unknown target": (_set_target(generic, len(F.Target)), "TGRS_ERR_HEADER"),
        "generic plan under a target": (_set_target(generic, int(F.Target.CORTEX_M55)), "TGRS_OK"),
        "packed": (packed, "TGRS_OK"),
    }
    for what, (data, want) in cases.items():
        assert _py_status(data) == want, what
        assert _c_status(data) == want, what


def test_kind_without_arrangement_slot_is_untouched(plans) -> None:
    """Only kinds listing an ``arrange`` parameter have one; every other kind's slots past its parameters stay 0."""
    _, _, packed = plans
    for op in read_plan(packed).ops:
        slot = arrange_slots()[op.kind_id - 1]
        assert (slot >= 0) == (op.kind == "fc")


LOADER_MAIN = r"""
#include <stdio.h>
#include <stdlib.h>
#include "tigris.h"

int main(int argc, char **argv)
{
    static unsigned char buf[1 << 20];
    tgrs_plan plan;
    size_t n;
    FILE *f = fopen(argv[1], "rb");
    if (argc != 2 || f == NULL) {
        return 90;
    }
    n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    puts(tgrs_status_name(tgrs_load(&plan, buf, n)));
    return 0;
}
"""


def _native_loader(tmp: Path, defines: list[str]) -> Path:
    from tigris.host.build import c_sources, find_sources, kernel_stubs_source, missing_kernels

    rs = find_sources()
    srcs = c_sources(rs)
    (tmp / "main.c").write_text(LOADER_MAIN)
    (tmp / "stubs.c").write_text(kernel_stubs_source(missing_kernels(srcs)))
    exe = tmp / "loader"
    cmd = ["gcc", "-std=c99", "-O0", *defines, f"-I{rs.include}", f"-I{rs.src}", str(tmp / "main.c"),
           str(tmp / "stubs.c"), *map(str, srcs), "-lm", "-o", str(exe)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    return exe


def test_a_runtime_for_another_core_refuses_the_packed_plan(plans, tmp_path: Path) -> None:
    """A build that is neither the host's (TGRS_ANY_TARGET) nor the Cortex-M4's reads only the plain layout: it
    loads the generic plan and refuses the packed one with TGRS_ERR_TARGET, before anything runs."""
    if shutil.which("gcc") is None:
        pytest.skip("needs gcc")
    _, generic, packed = plans
    (tmp_path / "g.tgrs").write_bytes(generic)
    (tmp_path / "p.tgrs").write_bytes(packed)
    for defines, want in ((["-DTGRS_FORCE_PLAIN"], "TGRS_ERR_TARGET"),
                          (["-DTGRS_FORCE_PLAIN", "-DTGRS_ANY_TARGET=1"], "TGRS_OK")):
        d = tmp_path / ("any" if len(defines) > 1 else "plain")
        d.mkdir()
        exe = _native_loader(d, defines)
        out = {k: subprocess.run([str(exe), str(tmp_path / f"{k}.tgrs")], capture_output=True, text=True,
                                 timeout=60).stdout.strip() for k in ("g", "p")}
        assert out == {"g": "TGRS_OK", "p": want}, defines


def test_unknown_target_is_a_one_line_error() -> None:
    from tigris.ir import TigrisError
    from tigris.ops import arrange

    with pytest.raises(TigrisError, match="unknown target"):
        arrange([], "cortex-m7")


def test_kind_check_refuses_fc_rows4_on_a_float_op() -> None:
    """A well-formed FC_ROWS4 id on a float fc (whose weights the arrangement does not cover) passes step 15 and is
    refused by the kind's check (step 17) with TGRS_ERR_PARAM, by both readers."""
    data = api.compile_model(str(REPO / "examples" / "mnist-8.onnx"), "64K").plan_bytes
    pf = read_plan(data)
    fc = next(op.index for op in pf.ops if op.kind == "fc")
    bad = _set_param(_set_target(data, int(F.Target.CORTEX_M4)), fc, arrange_slots()[KIND_IDS["fc"] - 1],
                     int(F.Arrange.FC_ROWS4))
    assert _py_status(bad) == _c_status(bad) == "TGRS_ERR_PARAM"
