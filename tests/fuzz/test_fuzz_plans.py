"""Plan-mutation fuzzing of runtime_c under AddressSanitizer and UndefinedBehaviorSanitizer.

Valid plans from the real compiler path are mutated thousands of times (bit flips, byte and u32 field overwrites
with boundary values, truncations, extended lengths, swapped records), mostly re-sealed with a correct CRC so the
mutation reaches the structural checks and the executor rather than stopping at the checksum. Every mutant is fed
to runtime_c/fuzz/driver.c, built here with -fsanitize=address,undefined into a tmp dir: each must be refused by
tgrs_load or run to completion (any status) inside exact-size heap buffers, with zero sanitizer reports.

CI runs TIGRIS_FUZZ_ITERS mutations (default 1000, well under a minute); `make -C runtime_c fuzz-long` runs many more.
"""
from __future__ import annotations

import os
import random
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

import _rt_fuzz_plans as FP
from _rt_fuzz_plans import mutate
from tigris.host.build import c_sources, find_sources, kernel_stubs_source, missing_kernels

ITERS = int(os.environ.get("TIGRIS_FUZZ_ITERS", "1000"))
SEED = int(os.environ.get("TIGRIS_FUZZ_SEED", "20261129"))
BATCH = 20000
# -O0: building with -O1 takes four times as long under the sanitizers, and running 1000 mutants takes a second.
# -DTGRS_ANY_TARGET=1: a host build, which reads every target's weight arrangements (the seed plans include one
# packed for the Cortex-M4; runtime_c/src/kernels/target.h).
SAN_FLAGS = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer", "-g", "-O0",
             "-DTGRS_ANY_TARGET=1"]


@pytest.fixture(scope="module")
def driver(tmp_path_factory) -> Path:
    if shutil.which("gcc") is None:
        pytest.skip("needs gcc")
    rs = find_sources()
    out = tmp_path_factory.mktemp("fuzz")
    srcs = c_sources(rs)
    stub = out / "stubs.c"
    stub.write_text(kernel_stubs_source(missing_kernels(srcs)))
    exe = out / "driver"
    cmd = ["gcc", "-std=c99", "-ffp-contract=off", *SAN_FLAGS, f"-I{rs.include}", f"-I{rs.src}",
           str(rs.root / "fuzz" / "driver.c"), str(rs.root / "fuzz" / "harness.c"), *map(str, srcs), str(stub), "-lm", "-o", str(exe)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0 and "sanitizer" in r.stderr.lower() and "cannot find" in r.stderr.lower():
        pytest.skip(f"sanitizer runtime not installed: {r.stderr.strip().splitlines()[-1]}")
    assert r.returncode == 0, r.stderr
    return exe


def _run(driver: Path, plans: list[bytes], tmp: Path) -> list[tuple[int, int]]:
    stream = tmp / "plans.bin"
    with open(stream, "wb") as f:
        for p in plans:
            f.write(struct.pack("<I", len(p)))
            f.write(p)
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0:abort_on_error=0:exitcode=99",
               UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:exitcode=98")
    r = subprocess.run([str(driver), str(stream)], capture_output=True, text=True, env=env, timeout=600)
    assert "Sanitizer" not in r.stderr and "runtime error" not in r.stderr, r.stderr[-4000:]
    assert r.returncode == 0, (r.returncode, r.stderr[-4000:])
    lines = r.stdout.split("\n")
    res = [tuple(int(v) for v in ln.split()[1:]) for ln in lines if ln.strip()]
    assert len(res) == len(plans)
    return res  # type: ignore[return-value]


def test_valid_plans_run_clean(driver: Path, tmp_path: Path) -> None:
    plans = FP.base_plans()
    res = _run(driver, plans, tmp_path)
    bad = [(i, load, run) for i, (load, run) in enumerate(res) if load != 0 or run != 0]
    assert not bad, bad


def test_mutated_plans_are_refused_or_run_within_bounds(driver: Path, tmp_path: Path) -> None:
    bases = FP.base_plans()
    rng = random.Random(SEED)
    res: list[tuple[int, int]] = []
    for start in range(0, ITERS, BATCH):  # batches keep a long run's memory flat
        mutants = [mutate(bases[i % len(bases)], rng) for i in range(start, min(ITERS, start + BATCH))]
        res += _run(driver, mutants, tmp_path)
    assert not [i for i, (_, run) in enumerate(res) if run == 3], "a run reported a peak beyond its arena"
    loaded = sum(1 for load, _ in res if load == 0)
    refused_codes = {load for load, _ in res if load != 0}
    # The sanitizers found nothing (checked in _run). The mix must exercise both sides: refusals of many kinds and
    # mutants that load and run (e.g. a changed weight byte, a parameter value).
    assert len(refused_codes) >= 8, refused_codes
    assert loaded >= ITERS // 50, loaded


def test_lz4_decoder_on_mutated_blocks(driver: Path, tmp_path: Path) -> None:
    """The LZ4 decoder alone, under the sanitizers: mutated reference blocks (flips, truncations, junk appended,
    random bytes) with exact, short and long output buffers. Decoding and output-free validation must agree."""
    import lz4.block

    rng = random.Random(SEED + 1)
    blocks = []
    for n in (0, 1, 17, 300, 5000):
        for kind in range(3):
            data = bytes(rng.randrange(256) for _ in range(n)) if kind == 0 else \
                bytes(rng.randrange(3) for _ in range(n)) if kind == 1 else (b"abcdefg" * (n // 7 + 1))[:n]
            blocks.append((data, lz4.block.compress(data, store_size=False)))
    recs = []
    for i in range(max(200, ITERS)):
        data, blk = blocks[i % len(blocks)]
        b = bytearray(blk)
        op = rng.randrange(5)
        if op == 0 and b:
            b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
        elif op == 1:
            b = b[: rng.randrange(len(b) + 1)]
        elif op == 2:
            b += bytes(rng.randrange(256) for _ in range(rng.randrange(1, 8)))
        elif op == 3 and b:
            b[rng.randrange(len(b))] = rng.choice([0, 0xFF, 0xF0, 0x0F])
        else:
            b = bytearray(rng.randrange(256) for _ in range(rng.randrange(1, 64)))
        out_len = max(0, len(data) + rng.choice([0, 0, 0, -1, 1, -16, 16]))
        recs.append(struct.pack("<II", out_len, len(b)) + bytes(b))
    stream = tmp_path / "blocks.bin"
    stream.write_bytes(b"".join(recs))
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0:exitcode=99", UBSAN_OPTIONS="halt_on_error=1:exitcode=98")
    r = subprocess.run([str(driver), "lz4", str(stream)], capture_output=True, text=True, env=env, timeout=600)
    assert "Sanitizer" not in r.stderr and "runtime error" not in r.stderr, r.stderr[-4000:]
    assert r.returncode == 0, r.stderr[-2000:]
    res = [tuple(int(v) for v in ln.split()[1:]) for ln in r.stdout.splitlines() if ln.strip()]
    assert len(res) == len(recs)
    assert all(d == v for d, v in res), [x for x in res if x[0] != x[1]][:5]
    assert any(d == 0 for d, _ in res) and any(d != 0 for d, _ in res)
