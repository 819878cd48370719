"""Prefect tasks of the Tester stage: `run-tests` wraps the structured test runner; `tester` is the L1 Tester stage."""

from __future__ import annotations

from pathlib import Path

from prefect import task

from graphlemon import testrun
from graphlemon.stages.session import RunRef
from graphlemon.stages.tester import TesterOutput, test_unit
from graphlemon.testrun import TestRunResult

from ._common import artifact_key, finished, stage_task, task_key, timeline_logged
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
    key = artifact_key("test-run", Path(project_dir).resolve().name)
    create_markdown_artifact(
        key=key, markdown=testrun.markdown_summary(result), description=f"graphlemon test {project_dir}"
    )
    return result


def _tester_name() -> str:
    from prefect.runtime import task_run

    p = task_run.parameters
    return f"tester {p['unit_id']} · attempt {p['attempt'] - p['first'] + 1}"


@stage_task(name="tester", task_run_name=_tester_name)
def tester_task(
    run: RunRef, nid: str, unit_id: str, attempt: int, first: int, loop_round: int, code_ref: str | None
) -> TesterOutput:
    """The Tester stage of one L1 attempt (tests written, run, hints, bugs), with a table artifact for the UI;
    red tests end the task run in the state `Red` with the first failure and its hint."""
    logged = timeline_logged(run, step=(nid, f"a{attempt}-tester"))
    with logged as session:
        out = test_unit(session, nid, unit_id, attempt, first, loop_round, code_ref)
    if logged.reused:
        return logged.cached(out, red=not out.ok)
    rows = [{"test": f.test, "expected": str(f.expected), "got": str(f.got), "hint": f.hint, "bug": f.bug_id or ""}
            for f in out.failures] or [{"test": f"all {out.summary.total} passed", "expected": "", "got": "", "hint": "", "bug": ""}]  # fmt: skip
    create_table_artifact(
        key=task_key(session, "unit", unit_id, "tests"),
        table=rows,
        description=f"{unit_id} attempt {attempt}: {out.run_id}",
    )
    first_failure = out.failures[0] if out.failures else None
    why = (
        f"{out.summary.failed} of {out.summary.total} failed; first: {first_failure.test}: {first_failure.hint}"
        if first_failure
        else "the test suite crashed"
    )
    return finished(out, red=not out.ok, name="Red", message=why)
