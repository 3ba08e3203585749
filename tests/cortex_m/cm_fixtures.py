"""Fixtures of the Cortex-M tests: the example's Python harness, and a skip (with the reason) when the cross tools
are missing. CI installs gcc-arm-none-eabi, libnewlib-arm-none-eabi and qemu-system-arm, so there they always run.

Not a conftest.py on purpose: other test files do `from conftest import ...` for tests/conftest.py, and a second
conftest module would shadow it. The test modules here import these fixtures by name."""
from __future__ import annotations

import sys
from pathlib import Path

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
