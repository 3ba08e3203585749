"""The checked-in C header must be exactly what the Python format definition generates, and must compile."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from tigris.emit import format as F
from tigris.emit import gen_header


def test_header_is_not_stale() -> None:
    current = gen_header.HEADER_PATH.read_text()
    assert current == gen_header.generate(), "run `python3 -m tigris.emit.gen_header` and commit the header"


def test_check_mode_detects_staleness(tmp_path) -> None:
    out = tmp_path / "tgrs_format.h"
    assert gen_header.main(["-o", str(out)]) == 0
    assert gen_header.main(["--check", "-o", str(out)]) == 0
    out.write_text(out.read_text().replace(f"TGRS_FORMAT_VERSION {F.VERSION}u", "TGRS_FORMAT_VERSION 9u"))
    assert gen_header.main(["--check", "-o", str(out)]) == 1


def test_generation_is_deterministic() -> None:
    assert gen_header.generate() == gen_header.generate()


def test_status_codes_distinct_and_negative() -> None:
    codes = [s.code for s in F.STATUS]
    assert len(set(codes)) == len(codes)
    assert F.STATUS[0].name == "OK" and F.STATUS[0].code == 0
    assert all(c < 0 for c in codes[1:])
    for name in ("ERR_PARAM", "ERR_DTYPE", "ERR_TILE", "ERR_SCRATCH", "ERR_SHAPE"):
        assert name in F.STATUS_BY_NAME


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
def test_header_compiles_and_layout_matches(tmp_path) -> None:
    """The compile-time layout checks in the header only bite when a C compiler sees it: compile a file that
    includes it with the project's strict flags and prints the sizes the compiler computed."""
    src = tmp_path / "t.c"
    lines = ['#include <stdio.h>', '#include "tgrs_format.h"', "int main(void) {"]
    for rec in F.RECORDS:
        lines.append(f'    printf("%u\\n", (unsigned)sizeof(tgrs_{rec.name}_rec));')
    lines += ["    return 0;", "}"]
    src.write_text("\n".join(lines) + "\n")
    exe = tmp_path / "t"
    inc = gen_header.HEADER_PATH.parent
    subprocess.run(
        ["gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", f"-I{inc}", str(src), "-o", str(exe)],
        check=True,
    )
    sizes = [int(x) for x in subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split()]
    assert sizes == [rec.size for rec in F.RECORDS]


def test_kind_table_lists_every_kind_and_each_has_a_kernel_and_a_check(tmp_path) -> None:
    """TGRS_KINDS (the X-macro the executor's kernel table and the loader's check table expand) names every kind of
    tigris.ops.KINDS in TGRS_OP_* order, and runtime_c defines both entry points of each; --check notices a dropped
    entry."""
    import re

    from tigris.ops import KINDS

    text = gen_header.generate()
    listed = re.findall(r"X\((\w+), (\w+)\)", text.split("#define TGRS_KINDS(X)")[1].split("\n\n")[0])
    assert listed == [(k.upper(), k) for k, _, _ in KINDS]
    src = "\n".join(p.read_text() for p in (gen_header.HEADER_PATH.parents[1] / "src").rglob("*.c"))
    for k, _, _ in KINDS:
        for fn in (f"tgrs_kernel_{k}", f"tgrs_check_{k}"):
            assert re.search(rf"^int {fn}\(const tgrs_op_ctx \*ctx\)$", src, re.M), fn
    out = tmp_path / "tgrs_format.h"
    assert gen_header.main(["-o", str(out)]) == 0
    out.write_text(out.read_text().replace("    X(COPY, copy)", "", 1))
    assert gen_header.main(["--check", "-o", str(out)]) == 1
