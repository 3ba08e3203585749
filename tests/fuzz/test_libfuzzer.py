"""libFuzzer on the loader and the executor: runtime_c/fuzz/libfuzzer.c built with clang
-fsanitize=fuzzer,address,undefined, seeded with real plans written to a temporary folder (tests/fuzz/make_corpus.py),
run for TIGRIS_LIBFUZZER_SECONDS (default 60). Any crash, sanitizer report, leak, timeout or a high-water mark beyond
the arena makes libFuzzer exit non-zero and write the input; the test fails with its report. Skipped (with the reason)
where clang or its fuzzer runtime is missing; `.ci/run` installs them. `make -C runtime_c fuzz-long` runs the same
target for hours (docs/runtime.md).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from make_corpus import write_corpus
from tigris.host.build import c_sources, find_sources

SECONDS = int(os.environ.get("TIGRIS_LIBFUZZER_SECONDS", "60"))
FLAGS = ["-std=c99", "-g", "-O1", "-ffp-contract=off", "-DTGRS_ANY_TARGET=1", "-fsanitize=fuzzer,address,undefined",
         "-fno-sanitize-recover=undefined", "-Wall", "-Wextra", "-Werror"]


@pytest.fixture(scope="module")
def fuzzer(tmp_path_factory) -> Path:
    clang = shutil.which("clang")
    if clang is None:
        pytest.skip("needs clang with the libFuzzer runtime (.ci/run installs clang and libclang-rt-14-dev)")
    rs = find_sources()
    out = tmp_path_factory.mktemp("libfuzzer")
    exe = out / "tgrs_fuzz"
    cmd = [clang, *FLAGS, f"-I{rs.include}", f"-I{rs.src}", str(rs.root / "fuzz" / "libfuzzer.c"),
           str(rs.root / "fuzz" / "harness.c"), *map(str, c_sources(rs)), "-lm", "-o", str(exe)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0 and re.search(r"cannot find|libclang_rt\.fuzzer|unsupported option", r.stderr):
        pytest.skip(f"clang's fuzzer runtime is not installed: {r.stderr.strip().splitlines()[-1]}")
    assert r.returncode == 0, r.stderr[-4000:]
    return exe


def test_libfuzzer_finds_nothing_on_the_real_plan_corpus(fuzzer: Path, tmp_path: Path) -> None:
    seeds = tmp_path / "seeds"
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    assert len(write_corpus(seeds)) >= 10
    cmd = [str(fuzzer), f"-max_total_time={SECONDS}", "-rss_limit_mb=2048", "-timeout=30", "-print_final_stats=1",
           f"-artifact_prefix={tmp_path}/", str(corpus), str(seeds)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=SECONDS + 300)
    artifacts = [p.name for p in tmp_path.iterdir() if p.name.startswith(("crash-", "leak-", "timeout-", "oom-"))]
    assert r.returncode == 0 and not artifacts, (artifacts, r.stderr[-6000:])
    stats = dict(re.findall(r"stat::(\w+):\s+(\d+)", r.stderr))
    assert int(stats.get("number_of_executed_units", 0)) > 1000, r.stderr[-2000:]  # it really ran
