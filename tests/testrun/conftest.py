from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import copy_fixture


@pytest.fixture
def fixture_project(tmp_path: Path):
    """fixture_project("pytest_mixed") → a fresh copy of tests/fixtures/testrun/pytest_mixed."""
    return lambda name: copy_fixture(name, tmp_path)
