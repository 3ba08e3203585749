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


# The reduced build's feature macros. A -D changes only what the preprocessor produces, so a source whose
# preprocessed text is the same with and without them compiles to the same diagnostics: the reduced build compiles
# only the sources it changes (6 of 32 today) instead of the whole runtime a second time.
REDUCED = ["-DTGRS_INT8_ONLY", "-DTGRS_NO_ROLLING", "-DTGRS_NO_COLS"]


def _preprocessed(flags: list[str], src: str, cwd: Path) -> str:
    r = subprocess.run(["arm-none-eabi-gcc", *flags, "-E", "-P", src], cwd=cwd, capture_output=True, text=True)
    assert r.returncode == 0, (src, r.stderr[-2000:])
    return r.stdout


@pytest.mark.parametrize("opt", ["-O0", "-Os", "-O3"])
@pytest.mark.parametrize("core", sorted(CORES))
def test_runtime_builds_at_every_level(core, opt, tmp_path):
    if shutil.which("arm-none-eabi-gcc") is None:
        pytest.skip("needs arm-none-eabi-gcc (apt: gcc-arm-none-eabi)")
    base = ["arm-none-eabi-gcc", *CORES[core].split(), "-mthumb", opt, "-std=c99", "-Wall", "-Wextra", "-Werror",
            "-pedantic", f"-I{REPO / 'runtime_c' / 'include'}", f"-I{REPO / 'runtime_c' / 'src'}"]
    changed = [src for src in SOURCES
               if _preprocessed(base[1:], src, tmp_path) != _preprocessed([*base[1:], *REDUCED], src, tmp_path)]
    assert changed  # the executor and the loader at least read the feature macros
    for extra, sources in (([], SOURCES), (REDUCED, changed)):
        cmd = [*base, *extra, "-c", *sources]
        r = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True)
        assert r.returncode == 0, (core, opt, extra, r.stderr[-2000:])
