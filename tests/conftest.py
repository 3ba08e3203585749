"""Root fixtures. The helpers live in tests/tigris_testing.py (import them from there, not from conftest)."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis.configuration import set_hypothesis_home_dir

# Hypothesis keeps a cache folder (.hypothesis/) in the working directory even with database=None; tests write only
# to temporary folders, so point it at one.
set_hypothesis_home_dir(tempfile.mkdtemp(prefix="tigris-hypothesis-"))

from tigris_testing import require_shared_models


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """The whole suite (``python -m pytest -q``, no paths given: the README's and CI's command) runs on every core
    through pytest-xdist when it is installed (the ``test`` extra): serially it takes most of CI's time limit on 2
    cores. Runs of chosen files or tests stay serial (one process, plain output, ``--pdb``), as do runs that pick
    their own ``-n`` or ``-p no:xdist``, or capture nothing (``-s``). ``worksteal`` hands each worker one half of the
    files in order and balances the ends, so a module's fixtures (a compiled model, a QEMU image) are mostly built
    once; docs/design.md "Tests" says why."""
    if os.environ.get("PYTEST_XDIST_WORKER") or not config.pluginmanager.hasplugin("xdist"):
        return
    if getattr(config, "args_source", None) != pytest.Config.ArgsSource.TESTPATHS:
        return
    opt = config.option
    if getattr(opt, "numprocesses", None) is not None or opt.usepdb or opt.capture == "no" or opt.collectonly:
        return
    opt.numprocesses = "auto"
    if getattr(opt, "dist", "no") == "no":
        opt.dist = "worksteal"


@pytest.fixture
def shared_models() -> Path:
    return require_shared_models()
