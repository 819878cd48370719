"""Prefect tasks of the BugTriager: the DevLoop's L2 stage (`bug-triager`), and triage of any one run (`triage-run`)."""

from __future__ import annotations

from prefect import task

from graphlemon.devloop.integrator import triage_integration
from graphlemon.devloop.outcomes import IntegrationOutcome
from graphlemon.models import TriageRecord
from graphlemon.project import open_project
from graphlemon.triage import triage_run as triage
from graphlemon.triage.triager import markdown

from ._common import RETRY_DELAYS, STAGE_OPTIONS, artifact_key, session_for, task_key, timeline_logged, transient_only
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
    handle = open_project(project)
    outcome = triage(handle, run_id, executor=backend, task_id=task_id)
    key = artifact_key(handle.project_id, *([task_id] if task_id else []), "triage", run_id)
    create_markdown_artifact(key=key, markdown=markdown(outcome.record), description=f"{outcome.category} for {run_id}")
    return outcome.record


@task(name="bug-triager", task_run_name="bug-triager · round {loop_round} · attempt {attempt}", **STAGE_OPTIONS)
def bug_triager_task(project: str, task_id: str, loop_round: int, attempt: int, run_id: str) -> IntegrationOutcome:
    """The DevLoop's BugTriager stage: judge the failed integration run; the verdict becomes the L2 action."""
    with timeline_logged(session_for(project, task_id)) as session:
        outcome = triage_integration(session, loop_round, attempt, run_id)
    create_markdown_artifact(
        key=task_key(session, "triage", run_id),
        markdown=f"**{outcome.category}** (confidence {outcome.confidence}) → {outcome.action}\n\n{outcome.root_cause or ''}",
        description=f"{outcome.category} for {run_id}",
    )
    return outcome
