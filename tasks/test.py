"""Prefect tasks of the Tester stage: `run-tests` wraps the structured test runner; `tester` is the L1 Tester stage."""

from __future__ import annotations

from pathlib import Path

from prefect import task

from graphlemon import testrun
from graphlemon.devloop.unit_loop import test_unit
from graphlemon.tester import TesterOutput
from graphlemon.testrun import TestRunResult

from ._common import STAGE_CACHE, session_for, transient_only
from ._redacted_artifacts import create_markdown_artifact, create_table_artifact


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


@task(name="tester", task_run_name="tester-{unit_id}-attempt-{attempt}", retries=2, retry_delay_seconds=[2, 10],
      retry_condition_fn=transient_only, cache_policy=STAGE_CACHE, persist_result=True)  # fmt: skip
def tester_task(
    project: str, task_id: str, config: dict, nid: str, unit_id: str, attempt: int, first: int, loop_round: int,
    code_ref: str | None,
) -> TesterOutput:  # fmt: skip
    """The Tester stage of one L1 attempt (tests written, run, hints, bugs), with a table artifact for the UI."""
    out = test_unit(session_for(project, task_id, config), nid, unit_id, attempt, first, loop_round, code_ref)
    rows = [{"test": f.test, "expected": str(f.expected), "got": str(f.got), "hint": f.hint, "bug": f.bug_id or ""}
            for f in out.failures] or [{"test": f"all {out.summary.total} passed", "expected": "", "got": "", "hint": "", "bug": ""}]  # fmt: skip
    create_table_artifact(
        key=f"tests-{unit_id}".lower(), table=rows, description=f"{unit_id} attempt {attempt}: {out.run_id}"
    )
    return out
