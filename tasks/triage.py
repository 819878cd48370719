"""Prefect task `triage-run`: triage any one test run (the DevLoop's own BugTriager stage is tasks/bug_triager.py)."""

from __future__ import annotations

from prefect import task

from graphlemon.models import TriageRecord
from graphlemon.project import open_project
from graphlemon.triage import triage_run as triage
from graphlemon.triage.triager import markdown

from ._common import artifact_key
from ._redacted_artifacts import create_markdown_artifact


@task(name="triage-run", task_run_name="triage-{run_id}", retries=0)  # one retry policy: GraphLemon's own
def triage_run(
    project: str, run_id: str, executor: str = "none", playbook: str | None = None, task_id: str | None = None
) -> TriageRecord:
    """triage.json + one ledger record for the run; the verdict as a markdown artifact in the UI."""
    from graphlemon.agents import build_executor
    from graphlemon.blocks.agents import load_agent_settings

    settings = None if executor == "none" else load_agent_settings()  # blocks when a Prefect API is set, else env
    backend = None if settings is None else build_executor(executor, playbook=playbook, settings=settings)
    handle = open_project(project)
    outcome = triage(handle, run_id, executor=backend, task_id=task_id)
    key = artifact_key(task_id or handle.project_id, "triage", run_id)  # a task's: `<task>-triage-<run>`, as the loop's
    create_markdown_artifact(key=key, markdown=markdown(outcome.record), description=f"{outcome.record.category} for {run_id}")
    return outcome.record
