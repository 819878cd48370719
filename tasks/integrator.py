"""Prefect task of the Integrator stage (loop L2)."""

from __future__ import annotations

from graphlemon.nodes import node_exec_id
from graphlemon.stages.integrator import run_integration
from graphlemon.stages.outcomes import IntegrationOutcome
from graphlemon.stages.session import RunRef

from ._common import finished, stage_task, timeline_logged


@stage_task(name="integrator", task_run_name="integrator · round {loop_round} · attempt {attempt}")
def integrator_task(run: RunRef, loop_round: int, attempt: int) -> IntegrationOutcome:
    """Run the integration cases on the merged code (a failed run goes to the bug-triager task)."""
    nid = node_exec_id(run.task_id, "integrator", loop_round=loop_round, attempt=attempt)
    logged = timeline_logged(run, step=(nid, "outcome"))
    with logged as session:
        out = run_integration(session, loop_round, attempt)
    if logged.reused:
        return logged.cached(out, red=not out.ok)
    return finished(
        out, red=not out.ok, name="Red", message=f"{out.failures} integration case(s) failed ({out.run_id})"
    )
