"""runtime_c builds under the strictness contract on the host and freestanding for Cortex-M4F (issues 2 and 6).

Every source is compiled on its own into a temporary folder (nothing is written into the repository)."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

RT = Path(__file__).resolve().parents[1] / "runtime_c"
SOURCES = sorted((RT / "src").rglob("*.c"))
INCLUDES = [f"-I{RT / 'include'}", f"-I{RT / 'src'}"]

HOST_STRICT = ["gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"]
ARM_M4F = ["arm-none-eabi-gcc", "-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16", "-std=c99",
           "-ffreestanding", "-Os", "-Wall", "-Wextra", "-Werror"]


def _compile_all(cmd: list[str], out: Path) -> None:
    assert SOURCES, "no runtime sources found"
    for i, src in enumerate(SOURCES):
        res = subprocess.run([*cmd, *INCLUDES, "-c", str(src), "-o", str(out / f"{i}.o")],
                             capture_output=True, text=True)
        assert res.returncode == 0, f"{src.relative_to(RT)}:\n{res.stderr}"


def test_host_strict_c99(tmp_path):
    _compile_all(HOST_STRICT, tmp_path)


def test_cortex_m4f_freestanding(tmp_path):
    if shutil.which("arm-none-eabi-gcc") is None:
        pytest.skip("needs arm-none-eabi-gcc (apt: gcc-arm-none-eabi); CI installs it")
    _compile_all(ARM_M4F, tmp_path)
    # The library itself must not call an allocator.
    nm = subprocess.run(["arm-none-eabi-nm", "-u", *map(str, sorted(tmp_path.glob("*.o")))],
                        capture_output=True, text=True, check=True).stdout
    undefined = {ln.split()[-1] for ln in nm.splitlines() if ln.strip() and not ln.endswith(":")}
    assert not undefined & {"malloc", "calloc", "realloc", "free", "_sbrk"}, undefined
