"""Prefect task of the Planner stage (REQ-02)."""

from __future__ import annotations

from graphlemon.nodes import node_exec_id
from graphlemon.stages.outcomes import PlanOutcome
from graphlemon.stages.planner import run_planner
from graphlemon.stages.session import RunRef

from ._common import finished, stage_task, task_key, timeline_logged
from ._redacted_artifacts import create_markdown_artifact


@stage_task(name="planner", task_run_name="planner · round {loop_round}")
def planner_task(run: RunRef, loop_round: int, feedback: str | None) -> PlanOutcome:
    """Plan (or re-plan) the task: BRD / PRD / SDD / benchmark, units, specs, contracts."""
    logged = timeline_logged(run, step=(node_exec_id(run.task_id, "planner", loop_round=loop_round), "outcome"))
    with logged as session:
        outcome = run_planner(session, loop_round, feedback)
    if logged.reused:
        return logged.cached(outcome, red=not outcome.ok)
    if outcome.ok:
        store = session.artifacts
        for kind, artifact_id in outcome.artifact_ids.items():
            record = store.get(artifact_id)
            create_markdown_artifact(
                key=task_key(session, kind),
                markdown=store.read_text(record),
                description=f"{kind} v{record.version}",
            )
    return finished(outcome, red=not outcome.ok, name="Blocked", message="; ".join(outcome.violations[:3]))
