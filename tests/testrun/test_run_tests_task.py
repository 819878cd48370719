"""The thin Prefect task `run-tests` in a real flow run."""

from __future__ import annotations

import pytest
from prefect_stack import artifacts_keyed

from .helpers import copy_fixture

pytestmark = pytest.mark.system


@pytest.mark.slow
def test_run_tests_task_returns_the_result_and_an_artifact(prefect_harness, tmp_path):
    from prefect import flow

    from graphlemon.tasks.tester import run_tests

    project = copy_fixture("pytest_mixed", tmp_path)

    @flow
    def one_run():
        return run_tests(str(project), ["tests/test_mixed.py::test_status_code"])

    result = one_run()
    assert result.summary.failed == 1 and result.failures[0].expected == "401"

    found = artifacts_keyed(f"test-run-{project.name}".lower().replace("_", "-"))
    assert found and "test_status_code" in found[0].data
