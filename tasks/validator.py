"""Prefect task of the Validator stage (REQ-04)."""

from __future__ import annotations

from graphlemon.nodes import node_exec_id
from graphlemon.stages.outcomes import ValidationOutcome
from graphlemon.stages.session import RunRef
from graphlemon.stages.validator import run_validator

from ._common import stage_task, task_key, timeline_logged
from ._redacted_artifacts import create_table_artifact


@stage_task(name="validator", task_run_name="validator · round {loop_round}")
def validator_task(run: RunRef, loop_round: int) -> ValidationOutcome:
    """All tests + benchmark checks; root cause per bug; the route."""
    logged = timeline_logged(run, step=(node_exec_id(run.task_id, "validator", loop_round=loop_round), "outcome"))
    with logged as session:
        outcome = run_validator(session, loop_round)
    if logged.reused:
        return logged.cached(outcome)
    rows = [
        {"bug": b.bug_id, "unit": b.unit_id or "", "status": b.status, "root_cause": b.root_cause_category or "",
         "route": b.suggested_route or "", "title": b.title}
        for b in session.bugs.list(task_id=run.task_id)
    ]  # fmt: skip
    if rows:
        create_table_artifact(
            key=task_key(session, "bugs"), table=rows, description=f"bugs after validator round {loop_round}"
        )
    return outcome
