"""What a newcomer does, on a fresh clone: both README commands, then `tigris verify` with the README's install.

The first README command (`pip install .`, then analyze) must leave a tigris whose verify works: ONNX Runtime is a
runtime dependency (docs/cli.md, "verify"). The second command is run verbatim except that pytest is given one test
file: the whole suite inside the suite would take as long as CI itself. The clone is of the committed HEAD; pip
reuses its cache (no network is needed where the wheels are cached) and the runtime build cache is a temporary one,
so the installed package really compiles its C runtime.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from test_project import readme_commands

REPO = Path(__file__).resolve().parents[1]


def _git_checkout() -> bool:
    if shutil.which("git") is None:
        return False
    r = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--is-inside-work-tree"], capture_output=True, text=True)
    return r.returncode == 0 and r.stdout.strip() == "true"


def _sh(cmd: str, cwd: Path, env: dict[str, str], timeout: int = 900) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
@pytest.mark.skipif(not _git_checkout(), reason="needs git and a git checkout of the repository to clone")
def test_readme_commands_then_verify_on_a_fresh_clone(tmp_path):
    clone = tmp_path / "tigris"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True, timeout=300)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "TIGRIS_RUNTIME_C")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if ".venv" not in p)
    env["TIGRIS_CACHE_DIR"] = str(tmp_path / "cache")
    install, test = readme_commands()

    r = _sh(install, clone, env)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "fits" in r.stdout

    # the same install (the README's `pip install .`): verify is a main command and must work
    r = _sh(". .venv/bin/activate && tigris verify examples/mnist-8.onnx -m 32K", clone, env)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "pass" in r.stdout

    r = _sh(test + " tests/test_project.py", clone, env)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert " passed" in r.stdout
