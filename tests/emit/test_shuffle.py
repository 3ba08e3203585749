"""Byte-plane shuffle of LZ4 unit weights (UnitFlag.SHUFFLE): the NumPy model, the C in-place inverse, the writer's
per-unit choice, Python writer -> C runtime round trips, refusal of malformed flags, and the issue-5 target that
``-c lz4`` makes every shared float model's plan smaller than ``-c none``."""
from __future__ import annotations

import os
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tigris.emit import format as F
from tigris.emit import read_plan
from tigris.emit.reader import PlanFormatError
from tigris.emit.weights import compress_unit_blob, shuffle_planes, unshuffle_planes
from tigris.emit.writer import seal
from tigris_testing import SHARED_FLOAT, TEST_MODELS, host_session, shared_model

RUNTIME = Path(os.environ.get("TIGRIS_RUNTIME_C") or Path(__file__).resolve().parents[2] / "runtime_c")


def _loop_model(raw: bytes, chunk: int = 256) -> bytes:
    """The format's definition, written as the obvious loop: chunk byte 4*i + p is stored at p*chunk/4 + i."""
    out = bytearray(raw)
    q = chunk // 4
    for base in range(0, len(raw) - chunk + 1, chunk):
        for i in range(q):
            for p in range(4):
                out[base + p * q + i] = raw[base + 4 * i + p]
    return bytes(out)


@pytest.mark.parametrize("n", [0, 16, 255, 256, 272, 512, 1000, 4096 + 48])
def test_numpy_shuffle_matches_the_definition_and_inverts(n: int) -> None:
    raw = np.random.default_rng(n).integers(0, 256, n, dtype=np.uint8).tobytes()
    assert shuffle_planes(raw) == _loop_model(raw)
    assert unshuffle_planes(shuffle_planes(raw)) == raw


def test_writer_shuffles_only_when_smaller() -> None:
    rng = np.random.default_rng(0)
    floats = rng.standard_normal(4096).astype(np.float32).tobytes()
    block, shuffled = compress_unit_blob(floats)
    assert shuffled and len(block) < len(floats)  # exponent planes compress; plain LZ4 cannot shrink these
    codes = np.tile(np.arange(-40, 40, dtype=np.int8), 200).tobytes()  # int8 repeats: whole-byte matches
    block, shuffled = compress_unit_blob(codes)
    assert len(block) < len(codes)
    assert len(block) <= len(compress_unit_blob(shuffle_planes(codes))[0]) or not shuffled
    assert compress_unit_blob(b"\x01" * 100) == (compress_unit_blob(b"\x01" * 100)[0], False)  # below one chunk


_DRIVER = r"""
#include <stdio.h>
#include <stdint.h>
#include "tgrs_shuffle.h"
static uint8_t buf[1 << 16];
int main(void) {
    size_t n = fread(buf + 8, 1, sizeof buf - 16, stdin);
    size_t i;
    for (i = 0; i < 8; ++i) { buf[i] = 0xA5; buf[8 + n + i] = 0x5A; }
    if (tgrs_unshuffle(buf + 8, n) != 0) return 3;
    for (i = 0; i < 8; ++i) { if (buf[i] != 0xA5 || buf[8 + n + i] != 0x5A) return 4; } /* no byte outside */
    fwrite(buf + 8, 1, n, stdout);
    return 0;
}
"""


def test_c_unshuffle_is_byte_exact_against_numpy(tmp_path: Path) -> None:
    src = tmp_path / "drv.c"
    src.write_text(_DRIVER)
    exe = tmp_path / "drv"
    try:
        subprocess.run(
            ["gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-fsanitize=address,undefined",
             f"-I{RUNTIME / 'include'}", f"-I{RUNTIME / 'src'}", str(src), str(RUNTIME / "src" / "shuffle.c"),
             "-o", str(exe)],
            check=True, capture_output=True, text=True,
        )
    except (OSError, subprocess.CalledProcessError) as e:
        pytest.skip(f"cannot build the C driver: {e}")
    rng = np.random.default_rng(1)
    for n in (0, 1, 16, 255, 256, 257, 768, 1024 + 200, 60000):
        data = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
        r = subprocess.run([str(exe)], input=data, capture_output=True, check=False)
        assert r.returncode == 0, r.stderr.decode(errors="replace")
        assert r.stdout == unshuffle_planes(data), n


@pytest.fixture(scope="module")
def session_cls():
    return host_session()


@pytest.fixture(scope="module")
def resnet8():
    from tigris.api import prepare, random_inputs

    prep = prepare(TEST_MODELS / "resnet8_cifar_f32.onnx")
    return prep, random_inputs(prep, seed=3)


def _unit_offsets(data: bytes) -> list[int]:
    e = F.SECTION.unpack(data, F.DIR_OFFSET + (int(F.SectionId.UNITS) - 1) * F.SECTION.size)
    return [int(e["offset"]) + k * F.UNIT.size for k in range(int(e["count"]))]


@pytest.mark.parametrize("fast", ["8M", "200K"])
def test_shuffled_plan_runs_like_the_uncompressed_one(session_cls, resnet8, fast: str) -> None:
    """Python writer -> C runtime: the shuffled LZ4 plan gives bit-identical outputs to the plain plan (same
    weights, same kernels; any un-shuffle error would change them) and the same fast high-water mark."""
    from tigris.api import compile_model, run_plan

    prep, inputs = resnet8
    plain = compile_model("resnet8", fast, prepared=prep).plan_bytes
    packed = compile_model("resnet8", fast, compression="lz4", prepared=prep).plan_bytes
    pf = read_plan(packed)
    assert any(u.shuffled for u in pf.units), "a float model's units should be stored shuffled"
    assert len(packed) < len(plain)
    ref = read_plan(plain)
    for u_plain, u_packed in zip(ref.unit_images, pf.unit_images):
        assert u_plain == u_packed  # the Python reader undoes the shuffle too
    a, b = run_plan(plain, inputs), run_plan(packed, inputs)
    for k in a.outputs:
        np.testing.assert_array_equal(a.outputs[k], b.outputs[k])  # tolerance: none, bit-identical
    assert a.fast_peak == b.fast_peak


def test_malformed_shuffle_flags_are_refused(session_cls, resnet8) -> None:
    """SHUFFLE without LZ4, with XIP, on an empty blob, and a corrupted shuffled block: refused by both readers with
    the same code."""
    from tigris.api import compile_model

    Session, PlanError = session_cls
    prep, _ = resnet8

    def codes(data: bytes) -> tuple[str, str]:
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

    def set_flags(data: bytes, unit: int, flags: int) -> bytes:
        b = bytearray(data)
        struct.pack_into("<I", b, _unit_offsets(data)[unit] + F.UNIT.offsets()["flags"], flags)
        return seal(b)

    for comp, xip in (("none", False), ("none", True)):
        data = compile_model("resnet8", "8M", compression=comp, xip=xip, prepared=prep).plan_bytes
        assert codes(set_flags(data, 0, int(F.UnitFlag.SHUFFLE))) == ("ERR_WEIGHTS", "ERR_WEIGHTS")
    data = compile_model("resnet8", "8M", compression="lz4", prepared=prep).plan_bytes
    assert codes(set_flags(data, 0, 0)) == ("OK", "OK")  # loads; the weights would just be in plane order
    assert codes(set_flags(data, 0, 8)) == ("ERR_UNIT", "ERR_UNIT")  # unknown bit
    pf = read_plan(data)
    u = pf.units[0]
    w = pf.sections["WEIGHTS"][0] if "WEIGHTS" in pf.sections else None
    if w is not None:
        b = bytearray(data)
        b[w + u.wblob_off] ^= 0xF0  # the first token's literal length: the block no longer decodes to wraw_size
        assert codes(seal(b)) == ("ERR_LZ4", "ERR_LZ4")


@pytest.mark.parametrize("rel", SHARED_FLOAT)
def test_lz4_shrinks_every_shared_float_model(rel: str) -> None:
    """Issue 5: ``-c lz4`` gives a smaller plan than ``-c none`` for every shared float model (resident plans)."""
    from tigris.api import compile_model, prepare

    path = shared_model(rel)
    prep = prepare(path)
    plain = compile_model(path, "16M", prepared=prep).plan_bytes
    packed = compile_model(path, "16M", compression="lz4", prepared=prep).plan_bytes
    assert len(packed) < len(plain), (len(packed), len(plain))
