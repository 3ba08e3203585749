"""What can be checked of the ESP32-S3 component without ESP-IDF (which is not installed here or in CI): the
manifest parses and names the target, the component's CMakeLists registers exactly the runtime's sources (run under
a stand-in for idf_component_register), and the example's main.c compiles against a generated header."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tigris.codegen import generate_c

REPO = Path(__file__).resolve().parents[1]
ESP = REPO / "examples" / "esp32s3"
sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_codegen import synthetic_plan  # noqa: E402


def _simple_yaml(text: str) -> dict:
    """The small YAML subset the manifest uses (nested maps by indentation, '- item' lists, quoted or bare scalars),
    so the test needs no YAML package; anything outside that subset fails the test rather than being skipped."""
    root: dict = {}
    stack: list[tuple[int, dict]] = [(-1, root)]
    pending: tuple[dict, str] | None = None
    for raw in text.splitlines():
        line = raw.split(" #")[0].rstrip() if not raw.lstrip().startswith("#") else ""
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        body = line.strip()
        while stack and indent <= stack[-1][0]:
            stack.pop()
        parent = stack[-1][1]
        if body.startswith("- "):
            assert pending is not None, raw
            owner, key = pending
            if not isinstance(owner[key], list):
                owner[key] = []
            owner[key].append(body[2:].strip().strip('"'))
            continue
        key, sep, value = body.partition(":")
        assert sep, f"not a key: value line: {raw!r}"
        value = value.strip()
        if value:
            parent[key] = value.strip('"')
            pending = None
        else:
            parent[key] = {}
            stack.append((indent, parent[key]))
            pending = (parent, key)
    return root


def test_manifest():
    m = _simple_yaml((ESP / "components" / "tigris" / "idf_component.yml").read_text())
    assert m["targets"] == ["esp32s3"]
    assert m["dependencies"]["idf"]["version"].startswith(">=")
    assert m["version"] and m["description"] and m["license"] == "Apache-2.0"


def test_cmakelists_registers_every_runtime_source(tmp_path):
    if shutil.which("cmake") is None:
        pytest.skip("needs cmake")
    from tigris.host.build import c_sources, find_sources

    script = tmp_path / "probe.cmake"
    script.write_text(
        "# Stand-ins for the ESP-IDF functions the component calls; print what it registers.\n"
        "function(idf_component_register)\n"
        "  cmake_parse_arguments(A \"\" \"\" \"SRCS;INCLUDE_DIRS;PRIV_INCLUDE_DIRS\" ${ARGN})\n"
        "  foreach(s ${A_SRCS})\n    message(STATUS \"SRC ${s}\")\n  endforeach()\n"
        "  message(STATUS \"INC ${A_INCLUDE_DIRS}\")\n  message(STATUS \"PRIV ${A_PRIV_INCLUDE_DIRS}\")\n"
        "endfunction()\n"
        "function(target_compile_options)\n  message(STATUS \"OPTS ${ARGN}\")\nendfunction()\n"
        "set(COMPONENT_LIB tigris_lib)\n"
        f"include(\"{ESP / 'components' / 'tigris' / 'CMakeLists.txt'}\")\n"
    )
    res = subprocess.run(["cmake", "-P", str(script)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    lines = [ln.strip().removeprefix("-- ") for ln in (res.stdout + res.stderr).splitlines()]
    srcs = sorted(Path(ln[4:]).resolve() for ln in lines if ln.startswith("SRC "))
    rs = find_sources()
    assert srcs == sorted(p.resolve() for p in c_sources(rs))
    assert any(ln.startswith("INC ") and Path(ln[4:]).resolve() == rs.include.resolve() for ln in lines)
    opts = next(ln for ln in lines if ln.startswith("OPTS "))
    assert "-std=c99" in opts and "-ffp-contract=off" in opts
    # the list is runtime_c/sources.cmake, the file runtime_c/CMakeLists.txt reads too, not a second glob here
    text = (ESP / "components" / "tigris" / "CMakeLists.txt").read_text()
    assert 'include("${TIGRIS_RT}/sources.cmake")' in text and "GLOB" not in text
    assert 'include("${CMAKE_CURRENT_LIST_DIR}/sources.cmake")' in (ESP.parents[1] / "runtime_c" / "CMakeLists.txt").read_text()


def test_example_main_compiles_against_generated_header(tmp_path):
    if shutil.which("gcc") is None:
        pytest.skip("needs gcc")
    from tigris.host.build import find_sources

    _, header = generate_c(synthetic_plan(), "model", "core", ".rodata.tgrs", ".ext_ram.bss")
    (tmp_path / "model.h").write_text(header)
    # ESP-IDF's esp_timer.h, reduced to the one declaration main.c uses.
    (tmp_path / "esp_timer.h").write_text("#include <stdint.h>\nint64_t esp_timer_get_time(void);\n")
    rs = find_sources()
    res = subprocess.run(["gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-fsyntax-only",
                          f"-I{tmp_path}", f"-I{rs.include}", str(ESP / "main" / "main.c")],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
