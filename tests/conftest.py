"""Root fixtures. The helpers live in tests/tigris_testing.py (import them from there, not from conftest)."""
from __future__ import annotations

from pathlib import Path

import pytest

from tigris_testing import (  # noqa: F401 - re-exported for files that load this conftest by path
    EXAMPLES,
    MODELS,
    REPO,
    SHARED,
    SHARED_FLOAT,
    SHARED_INT8,
    TEST_MODELS,
    require_shared_models,
    shared_model,
)


@pytest.fixture
def shared_models() -> Path:
    return require_shared_models()
