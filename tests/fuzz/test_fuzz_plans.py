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
from tigris.emit import format as F
from tigris.emit.writer import seal
from tigris.host.build import c_sources, find_sources, kernel_stubs_source, missing_kernels

ITERS = int(os.environ.get("TIGRIS_FUZZ_ITERS", "1000"))
SEED = int(os.environ.get("TIGRIS_FUZZ_SEED", "20261129"))
BATCH = 20000
# -O0: building with -O1 takes four times as long under the sanitizers, and running 1000 mutants takes a second.
SAN_FLAGS = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer", "-g", "-O0"]


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


def _sections(p: bytes) -> list[tuple[int, int, int, int]]:
    return [struct.unpack_from("<4I", p, F.DIR_OFFSET + i * F.SECTION.size) for i in range(len(F.SECTIONS))]


RECORD_OF = {s.id: s.record for s in F.SECTIONS}
INTERESTING = [0, 1, 2, 3, 4, 7, 8, 15, 16, 17, 255, 256, 0x7FFF, 0xFFFF, 0x10000, 0x7FFFFFFF, 0x80000000,
               0xFFFFFFF0, 0xFFFFFFFE, 0xFFFFFFFF]


def _pos(base: bytes, rng: random.Random, lo: int = 0) -> int:
    """A byte position, 80% of the time outside the WEIGHTS payload: in a real model the weights are most of the
    bytes, and a changed weight only changes numbers, while the structure is what the loader must defend."""
    woff = _sections(base)[-1][1] if len(base) >= F.DATA_START else len(base)
    if lo < woff <= len(base) and rng.random() < 0.8:
        return rng.randrange(lo, woff)
    return rng.randrange(lo, len(base))


def mutate(base: bytes, rng: random.Random) -> bytes:
    """One random mutation; re-sealed (correct CRC) 85% of the time so deeper checks see it."""
    b = bytearray(base)
    what = rng.choice(["flip", "flip", "byte", "u32", "u32", "u32", "truncate", "extend", "section", "swap"])
    if what == "flip":
        for _ in range(rng.choice([1, 1, 2, 4])):
            b[_pos(base, rng)] ^= 1 << rng.randrange(8)
    elif what == "byte":
        b[_pos(base, rng)] = rng.choice([0, 0xFF, 0x80, 0x7F, rng.randrange(256)])
    elif what == "u32":
        i = min(_pos(base, rng, F.CRC_START), len(b) - 4) & ~3
        v = rng.choice(INTERESTING + [struct.unpack_from("<I", b, i)[0] + rng.choice([-16, -1, 1, 16])])
        struct.pack_into("<I", b, i, v & 0xFFFFFFFF)
    elif what == "truncate":
        b = b[: rng.randrange(len(b))]
        if len(b) >= F.HEADER.size and rng.random() < 0.7:
            struct.pack_into("<I", b, F.HEADER.offsets()["file_size"], len(b))
    elif what == "extend":
        b += bytes(rng.choice([1, 16, 64, 1000]))
        if rng.random() < 0.7:
            struct.pack_into("<I", b, F.HEADER.offsets()["file_size"], len(b))
        if rng.random() < 0.5:  # grow the last section (WEIGHTS) or another one over the new bytes
            k = rng.randrange(len(F.SECTIONS))
            e = F.DIR_OFFSET + k * F.SECTION.size
            sid, off, size, count = struct.unpack_from("<4I", b, e)
            rec = RECORD_OF[F.SectionId(sid)] if sid in F.SectionId._value2member_map_ else None
            grow = rec.size * rng.choice([1, 2, 100]) if rec is not None else rng.choice([1, 16, 1000])
            struct.pack_into("<4I", b, e, sid, off, (size + grow) & 0xFFFFFFFF,
                             (count + (grow // rec.size if rec is not None else grow)) & 0xFFFFFFFF)
    elif what == "section":
        k = rng.randrange(len(F.SECTIONS))
        e = F.DIR_OFFSET + k * F.SECTION.size + 4 * rng.randrange(1, 4)
        struct.pack_into("<I", b, e, rng.choice(INTERESTING) & 0xFFFFFFFF)
    else:  # swap two records of one table
        secs = [(sid, off, cnt) for sid, off, _, cnt in _sections(base)
                if sid in RECORD_OF and RECORD_OF[sid] is not None and cnt >= 2]
        if secs:
            sid, off, cnt = rng.choice(secs)
            rs = RECORD_OF[sid].size
            i, j = rng.sample(range(cnt), 2)
            a = bytes(b[off + i * rs: off + (i + 1) * rs])
            b[off + i * rs: off + (i + 1) * rs] = b[off + j * rs: off + (j + 1) * rs]
            b[off + j * rs: off + (j + 1) * rs] = a
        else:
            b[rng.randrange(len(b))] ^= 0x10
    if len(b) >= F.CRC_START and rng.random() < 0.85:
        return seal(b)
    return bytes(b)


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
