"""Prefect task of the BugTriager stage (loop L2): judge a failed integration run."""

from __future__ import annotations

from graphlemon.nodes import node_exec_id
from graphlemon.stages.bug_triager import triage_integration
from graphlemon.stages.outcomes import IntegrationOutcome
from graphlemon.stages.session import RunRef

from ._common import stage_task, task_key, timeline_logged
from ._redacted_artifacts import create_markdown_artifact


@stage_task(name="bug-triager", task_run_name="bug-triager · round {loop_round} · attempt {attempt}")
def bug_triager_task(run: RunRef, loop_round: int, attempt: int, run_id: str) -> IntegrationOutcome:
    """The DevLoop's BugTriager stage: judge the failed integration run; the verdict becomes the L2 action."""
    nid = node_exec_id(run.task_id, "bug-triager", loop_round=loop_round, attempt=attempt)
    logged = timeline_logged(run, step=(nid, "outcome"))
    with logged as session:
        outcome = triage_integration(session, loop_round, attempt, run_id)
    if logged.reused:
        return logged.cached(outcome)
    create_markdown_artifact(
        key=task_key(session, "triage", run_id),
        markdown=f"**{outcome.category}** (confidence {outcome.confidence}) → {outcome.action}\n\n{outcome.root_cause or ''}",
        description=f"{outcome.category} for {run_id}",
    )
    return outcome
