"""The suite's own scheduling (tests/conftest.py): over pytest-xdist workers (`make test`'s default) a test module
runs whole on one worker (`--dist loadgroup`), which xdist reads from the `@group` suffix of each test's node id;
otherwise no node id is changed. A pytest or xdist upgrade that loses the suffix fails here instead of silently
starting the Prefect stack, a console and Chromium on every worker."""

from __future__ import annotations

import os

MODULE = "tests/foundation/test_suite_groups.py"


def test_a_test_carries_its_modules_group_over_xdist_workers_and_nothing_otherwise(request):
    name = f"{MODULE}::{request.node.name}"
    if "PYTEST_XDIST_WORKER" in os.environ and request.config.option.loadgroup:
        assert request.node.nodeid == f"{name}@{MODULE}"
    else:
        assert request.node.nodeid == name
