"""Prefect task of the Integrator stage (loop L2)."""

from __future__ import annotations

from prefect import task

from graphlemon.devloop.integrator import run_integration
from graphlemon.devloop.outcomes import IntegrationOutcome

from ._common import STAGE_OPTIONS, session_for


@task(name="integrator", task_run_name="integrator · round {loop_round} · attempt {attempt}", **STAGE_OPTIONS)
def integrator_task(project: str, task_id: str, loop_round: int, attempt: int) -> IntegrationOutcome:
    """Run the integration cases on the merged code (a failed run goes to the bug-triager task)."""
    return run_integration(session_for(project, task_id), loop_round, attempt)
