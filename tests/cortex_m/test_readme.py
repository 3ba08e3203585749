"""examples/cortex-m/README.md runs end to end as written: its shell block, verbatim, in a copy of the example (the
Makefile and CMake builds, QEMU, and the byte comparison with the host runtime that make_io.py prepares)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cm_fixtures import EXAMPLE, harness  # noqa: F401  (fixture)

REPO = EXAMPLE.parents[1]


def readme_block() -> str:
    text = (EXAMPLE / "README.md").read_text()
    m = re.search(r"```sh\n(.*?)```", text, re.S)
    assert m, "examples/cortex-m/README.md has no ```sh block"
    return m.group(1)


def test_readme_block_runs_as_written(harness, tmp_path):
    if shutil.which("cmake") is None:
        pytest.skip("needs cmake (apt: cmake)")
    # The layout the block's relative paths assume, without the build outputs of a developer's tree.
    ignore = shutil.ignore_patterns("build", "__pycache__")
    shutil.copytree(EXAMPLE, tmp_path / "examples" / "cortex-m", ignore=ignore)
    shutil.copytree(REPO / "runtime_c", tmp_path / "runtime_c", ignore=ignore)
    (tmp_path / "tests" / "models").mkdir(parents=True)
    shutil.copy(REPO / "tests" / "models" / "kws_dscnn_int8.onnx", tmp_path / "tests" / "models")
    env = dict(os.environ)
    # `tigris` and `python3` as the README's install gives them: this interpreter's environment
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    r = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", readme_block()], cwd=tmp_path / "examples" / "cortex-m",
                       env=env, capture_output=True, text=True, timeout=1500)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    assert "hello from the guest" in r.stdout + r.stderr
    assert "firmware output = host output" in r.stdout
    assert "CMake firmware output = host output" in r.stdout
    assert "systick_ticks" in r.stdout + r.stderr
