"""Prefect task of the Planner stage (REQ-02)."""

from __future__ import annotations

from prefect import task

from graphlemon.devloop.outcomes import PlanOutcome
from graphlemon.devloop.planner import run_planner

from ._common import RETRY_DELAYS, STAGE_CACHE, session_for, transient_only
from ._redacted_artifacts import create_markdown_artifact


@task(name="plan", task_run_name="planner-round-{loop_round}", retries=2, retry_delay_seconds=RETRY_DELAYS,
      retry_condition_fn=transient_only, cache_policy=STAGE_CACHE, persist_result=True)  # fmt: skip
def plan(project: str, task_id: str, config: dict, loop_round: int, feedback: str | None) -> PlanOutcome:
    """Plan (or re-plan) the task: BRD / PRD / SDD / benchmark, units, specs, contracts."""
    session = session_for(project, task_id, config)
    outcome = run_planner(session, loop_round, feedback)
    if outcome.ok:
        store = session.artifacts
        for kind, artifact_id in outcome.artifact_ids.items():
            record = store.get(artifact_id)
            create_markdown_artifact(
                key=f"{kind}-{task_id}".lower(), markdown=store.read_text(record), description=f"{kind} v{record.version}"
            )
    return outcome
