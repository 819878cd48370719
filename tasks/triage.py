"""Prefect task of the BugTriager stage (loop L2): triage one failed integration run."""

from __future__ import annotations

import re

from prefect import task

from graphlemon.models import TriageRecord
from graphlemon.project import open_project
from graphlemon.triage import triage_run as triage
from graphlemon.triage.triager import markdown

from ._common import RETRY_DELAYS, transient_only
from ._redacted_artifacts import create_markdown_artifact


@task(name="triage-run", task_run_name="triage-{run_id}", retries=2, retry_delay_seconds=RETRY_DELAYS,
      retry_condition_fn=transient_only)  # fmt: skip
def triage_run(
    project: str, run_id: str, executor: str = "none", playbook: str | None = None, task_id: str | None = None
) -> TriageRecord:
    """triage.json + one ledger record for the run; the verdict as a markdown artifact in the UI."""
    from blocks.agents import load_agent_settings
    from graphlemon.agents import build_executor

    settings = None if executor == "none" else load_agent_settings()  # blocks when a Prefect API is set, else env
    backend = None if settings is None else build_executor(executor, playbook=playbook, settings=settings)
    outcome = triage(open_project(project), run_id, executor=backend, task_id=task_id)
    key = re.sub(r"[^a-z0-9-]+", "-", f"triage-{run_id}".lower())
    create_markdown_artifact(key=key, markdown=markdown(outcome.record), description=f"{outcome.category} for {run_id}")
    return outcome.record
