"""Prefect tasks of the Tester stage: `run-tests` wraps the structured test runner."""

from __future__ import annotations

from pathlib import Path

from prefect import task
from prefect.artifacts import create_markdown_artifact

from graphlemon import testrun
from graphlemon.testrun import TestRunResult


@task(name="run-tests", retries=0)
def run_tests(
    project_dir: Path | str,
    targets: list[str] | None = None,
    framework: str | None = None,
    last_failed: bool = False,
    command: str | None = None,
    timeout: float = 120.0,
) -> TestRunResult:
    """Run a project's tests once (a real test failure is a result, not a task failure)."""
    result = testrun.run_tests(
        Path(project_dir), targets or (), framework=framework, last_failed=last_failed, command=command, timeout=timeout
    )
    create_markdown_artifact(key="test-run", markdown=testrun.markdown_summary(result), description="graphlemon test")
    return result
