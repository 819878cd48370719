"""Prefect task of the Integrator stage (loop L2)."""

from __future__ import annotations

from prefect import task

from graphlemon.devloop.integrator import run_integration
from graphlemon.devloop.outcomes import IntegrationOutcome

from ._common import RETRY_DELAYS, STAGE_CACHE, session_for, transient_only


@task(name="integrate", task_run_name="integrator-round-{loop_round}-attempt-{attempt}", retries=2,
      retry_delay_seconds=RETRY_DELAYS, retry_condition_fn=transient_only, cache_policy=STAGE_CACHE,
      persist_result=True)  # fmt: skip
def integrate(project: str, task_id: str, config: dict, loop_round: int, attempt: int) -> IntegrationOutcome:
    """Run the integration cases on the merged code; a failure is triaged into the next L2 action."""
    return run_integration(session_for(project, task_id, config), loop_round, attempt)
