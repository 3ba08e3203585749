"""Every runtime source compiles with -Wall -Wextra -Werror -pedantic at every optimization level a firmware uses,
on each Arm core family the kernels have variants for (and a core with none). Unoptimized Arm builds select the
plain loops (target.h); -Os and -O3 select the target's variants, whose inline assembly and GCC's
if-conversion have each broken one of these builds before."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SOURCES = sorted(str(p) for p in (REPO / "runtime_c" / "src").rglob("*.c") if "fuzz" not in p.parts)
CORES = {
    "cortex-m55": "-mcpu=cortex-m55 -mfloat-abi=hard",
    "cortex-m4f": "-mcpu=cortex-m4 -mfloat-abi=hard -mfpu=fpv4-sp-d16",
    "cortex-m0plus": "-mcpu=cortex-m0plus",
}


@pytest.mark.parametrize("opt", ["-O0", "-Os", "-O3"])
@pytest.mark.parametrize("core", sorted(CORES))
def test_runtime_builds_at_every_level(core, opt, tmp_path):
    if shutil.which("arm-none-eabi-gcc") is None:
        pytest.skip("needs arm-none-eabi-gcc (apt: gcc-arm-none-eabi)")
    for extra in ([], ["-DTGRS_INT8_ONLY", "-DTGRS_NO_ROLLING", "-DTGRS_NO_COLS"]):
        cmd = ["arm-none-eabi-gcc", *CORES[core].split(), "-mthumb", opt, *extra, "-std=c99", "-Wall", "-Wextra",
               "-Werror", "-pedantic", f"-I{REPO / 'runtime_c' / 'include'}", f"-I{REPO / 'runtime_c' / 'src'}",
               "-c", *SOURCES]
        r = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True)
        assert r.returncode == 0, (core, opt, extra, r.stderr[-2000:])
