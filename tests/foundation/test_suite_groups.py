"""The suite's own scheduling (tests/conftest.py): over pytest-xdist workers (`make test`'s default) a test module
runs whole on one worker (`--dist loadgroup`), which xdist reads from the `@group` suffix of each test's node id;
otherwise no node id is changed. A pytest or xdist upgrade that loses the suffix fails here instead of silently
starting the Prefect stack, a console and Chromium on every worker."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

MODULE = "tests/foundation/test_suite_groups.py"


def test_a_test_carries_its_modules_group_over_xdist_workers_and_nothing_otherwise(request):
    name = f"{MODULE}::{request.node.name}"
    if "PYTEST_XDIST_WORKER" in os.environ and request.config.option.loadgroup:
        assert request.node.nodeid == f"{name}@{MODULE}"
    else:
        assert request.node.nodeid == name


def test_the_suites_environment_is_made_once_per_process_whatever_name_imports_it_again():
    """tests/conftest.py imported a second time under another name (`from tests.conftest import ...`) keeps the
    session's PREFECT_HOME and config folder: a new one half-way left the local Prefect server started under the
    first running after the session (its `pytest_sessionfinish` stops the current folder's)."""
    before = {name: os.environ[name] for name in ("PREFECT_HOME", "GRAPHLEMON_CONFIG_DIR")}
    path = Path(__file__).resolve().parents[1] / "conftest.py"
    spec = importlib.util.spec_from_file_location("conftest_imported_again", path)
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
    assert {name: os.environ[name] for name in before} == before
