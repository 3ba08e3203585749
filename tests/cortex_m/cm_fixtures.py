"""Fixtures of the Cortex-M tests: the example's Python harness, and a skip (with the reason) when the cross tools
are missing. CI installs gcc-arm-none-eabi, libnewlib-arm-none-eabi and qemu-system-arm, so there they always run.

Not a conftest.py on purpose: other test files do `from conftest import ...` for tests/conftest.py, and a second
conftest module would shadow it. The test modules here import these fixtures by name."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cortex-m"
if str(EXAMPLE) not in sys.path:
    sys.path.insert(0, str(EXAMPLE))

import qemu_harness  # noqa: E402


@pytest.fixture(scope="session")
def harness():
    missing = qemu_harness.missing_tools()
    if missing:
        pytest.skip(f"needs {', '.join(missing)} (apt: gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm)")
    return qemu_harness


@pytest.fixture(scope="session")
def board_objs(tmp_path_factory):
    """One object folder per board, shared by every build of the session (the runtime compiles once per board and
    optimisation level). A fixed name under the session's base temp so every module importing this gets the same."""
    root = tmp_path_factory.getbasetemp() / "cm_objs"
    return {b: root / b for b in qemu_harness.BOARDS}


BOARDS = ["mps2-an386", "mps3-an547"]
# The variant target.h selects for the board's core, and the plain C99 loops on the same core.
VARIANTS = {"target": "", "plain": "-DTGRS_FORCE_PLAIN"}


def run_plan(harness, board_objs, d: Path, plan: bytes, board: str, x: bytes, obj_key: str, *, cflags: str = "",
             opt: str = "-O2", timeout_s: int = 300) -> bytes:
    """Build ``plan`` as firmware for ``board`` in folder ``d`` (objects shared per board under ``obj_key``), run it on
    the input bytes ``x`` and return its output bytes; the run must end with the harness's success code."""
    d.mkdir(parents=True, exist_ok=True)
    elf = harness.build_plan_app(plan, board, d / "fw", obj_dir=board_objs[board] / obj_key, cflags=cflags, opt=opt)
    (d / "in0.bin").write_bytes(x)
    r = harness.run(board, elf, ["in0.bin", "out0.bin"], cwd=d, timeout_s=timeout_s)
    assert r.returncode == harness.EXIT_OK, r.console
    return (d / "out0.bin").read_bytes()


def assert_feature_off_refuses(harness, board_objs, tmp_path: Path, plan: bytes, x: bytes, macro: str,
                               obj_key: str, *, build_match: str, opt: str | None = None, cflags: str = "") -> None:
    """A runtime built with ``-D<macro>`` leaves out what ``plan`` needs: the file ``tigris codegen`` writes for it stops
    that build (its ``#error`` names ``build_match``), and with that guard skipped (a plan swapped in later) the runtime
    refuses the plan at init with TGRS_ERR_UNSUPPORTED instead of running it."""
    from tigris.codegen import generate_c

    flags = f"{cflags} -D{macro}".strip()
    extra = {} if opt is None else {"opt": opt}
    tmp_path.mkdir(parents=True, exist_ok=True)
    with pytest.raises(harness.BuildError, match=build_match):
        harness.build_plan_app(plan, "mps2-an386", tmp_path / "guard", obj_dir=board_objs["mps2-an386"] / obj_key,
                               cflags=flags, **extra)
    c_src, header = generate_c(plan, "model", "app")
    guard = f"#if defined({macro})"
    assert guard in c_src
    d = tmp_path / "guard_skipped"
    d.mkdir()
    (d / "model.c").write_text(c_src.replace(guard, "#if 0"))
    (d / "model.h").write_text(header)
    elf = harness.build("mps2-an386", d / "build", model_c=d / "model.c", obj_dir=board_objs["mps2-an386"] / obj_key,
                        cflags=flags, **extra)
    (d / "in0.bin").write_bytes(x)
    r = harness.run("mps2-an386", elf, ["in0.bin", "out0.bin"], cwd=d, timeout_s=120)
    assert r.returncode == harness.EXIT_RUNTIME, r.console
    assert "TGRS_ERR_UNSUPPORTED" in r.console, r.console


def assert_variant_matches_host(harness, board_objs, tmp_path: Path, key: str, board: str, variant: str,
                                plan: bytes, x: bytes, expect: bytes) -> None:
    """Build ``plan`` as firmware for ``board`` with ``variant``'s flags (objects shared per board and variant), run
    it on the input bytes ``x`` and require the host runtime's output bytes ``expect`` (int8); a mismatch says how
    many bytes differ and the first one."""
    got = run_plan(harness, board_objs, tmp_path, plan, board, x, f"variants-{variant}", cflags=VARIANTS[variant],
                   timeout_s=120)
    assert len(got) == len(expect)
    if got != expect:
        g, e = np.frombuffer(got, np.int8), np.frombuffer(expect, np.int8)
        bad = np.flatnonzero(g != e)
        pytest.fail(f"{key} on {board} ({variant}): {bad.size} of {e.size} bytes differ, first at {bad[0]}: "
                    f"{g[bad[0]]} != {e[bad[0]]}")
