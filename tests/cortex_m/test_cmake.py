"""The CMake build of the Cortex-M example (runtime_c/CMakeLists.txt: tigris_runtime + tigris_add_model) with
arm-none-eabi-gcc, run under QEMU: same bytes out as the host runtime. The plan is kws_dscnn_int8 from tests/models
(no ../shared needed), generated with --fast-section so the fast arena goes to the M55's DTCM by its own linker rule.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from cm_fixtures import EXAMPLE, harness  # noqa: F401  (fixture)

REPO = EXAMPLE.parents[1]
KWS = REPO / "tests" / "models" / "kws_dscnn_int8.onnx"
BOARD = "mps3-an547"
DTCM = (0x30000000, 0x30000000 + 512 * 1024)


def _symbols(elf: Path) -> dict[str, tuple[int, str]]:
    """name -> (address, output section) from the ELF's symbol table."""
    out = subprocess.run(["arm-none-eabi-objdump", "-t", str(elf)], capture_output=True, text=True, check=True).stdout
    syms = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 5 and len(parts[0]) == 8:
            try:
                syms[parts[-1]] = (int(parts[0], 16), parts[-3])
            except ValueError:
                continue
    return syms


@pytest.fixture(scope="module")
def cmake_build(harness, tmp_path_factory):
    if shutil.which("cmake") is None:
        pytest.skip("needs cmake (apt: cmake)")
    from tigris import api
    from tigris.codegen import generate_c
    from tigris.host import Session

    work = tmp_path_factory.mktemp("cmake")
    prep = api.prepare(str(KWS))
    plan = api.compile_model(str(KWS), "32K", prepared=prep).plan_bytes
    c_src, header = generate_c(plan, "kws", "app", fast_section=".bss.tgrs_fast")
    (work / "kws.c").write_text(c_src)
    (work / "kws.h").write_text(header)
    build = work / "build"
    cfg = ["cmake", "-S", str(EXAMPLE), "-B", str(build), f"-DCMAKE_TOOLCHAIN_FILE={EXAMPLE / 'arm-none-eabi.cmake'}",
           f"-DBOARD={BOARD}", f"-DMODEL_C={work / 'kws.c'}"]
    for cmd in (cfg, ["cmake", "--build", str(build), "-j2"]):
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    session = Session(plan)
    inputs = api.random_inputs(prep, seed=4)
    host = session.run(inputs)
    return {"elf": build / "model.elf", "build": build, "work": work, "plan": plan,
            "in": [session.caller_bytes(s.name, inputs[s.name]) for s in session.inputs],
            "out": [session.caller_bytes(s.name, host.outputs[s.name]) for s in session.outputs]}


def test_runtime_library_holds_exactly_the_host_sources(cmake_build):
    """runtime_c/sources.cmake is the one list: the CMake library has one object per runtime source the host builds
    (the ESP-IDF component reads the same file: tests/test_codegen_esp32s3.py)."""
    from tigris.host.build import c_sources, find_sources

    lib = next(cmake_build["build"].rglob("libtigris_runtime.a"))
    members = subprocess.run(["arm-none-eabi-ar", "t", str(lib)], capture_output=True, text=True, check=True)
    got = sorted(m.removesuffix(".obj").removesuffix(".o") for m in members.stdout.split())
    assert got == sorted(p.name for p in c_sources(find_sources()))


def test_fast_arena_is_placed_by_its_section(cmake_build):
    syms = _symbols(cmake_build["elf"])
    addr, section = syms["kws_fast_arena"]
    assert section == ".tgrs_fast" and DTCM[0] <= addr < DTCM[1] and addr % 16 == 0
    assert syms["kws_slow_arena"][1] == ".tgrs_slow"


def test_cmake_firmware_on_qemu_matches_host(harness, cmake_build, tmp_path):
    names_in = [f"in{i}.bin" for i in range(len(cmake_build["in"]))]
    names_out = [f"out{i}.bin" for i in range(len(cmake_build["out"]))]
    for n, data in zip(names_in, cmake_build["in"]):
        (tmp_path / n).write_bytes(data)
    r = harness.run(BOARD, cmake_build["elf"], names_in + names_out, cwd=tmp_path, timeout_s=300)
    assert r.returncode == harness.EXIT_OK, r.console
    assert r.report["systick_ticks"] > 0 and "cycles" not in r.report
    assert r.report["instructions"] == r.report["systick_ticks"] * 1_000_000_000 // 32_000_000
    assert 0 < r.report["fast_peak"] <= r.report["fast_arena"]
    for n, host in zip(names_out, cmake_build["out"]):
        assert (tmp_path / n).read_bytes() == host
