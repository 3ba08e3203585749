"""Root fixtures. The helpers live in tests/tigris_testing.py (import them from there, not from conftest)."""
from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis.configuration import set_hypothesis_home_dir

# Hypothesis keeps a cache folder (.hypothesis/) in the working directory even with database=None; tests write only
# to temporary folders, so point it at one.
set_hypothesis_home_dir(tempfile.mkdtemp(prefix="tigris-hypothesis-"))

from tigris_testing import require_shared_models


@pytest.fixture
def shared_models() -> Path:
    return require_shared_models()
