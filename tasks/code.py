"""Prefect tasks of the Coder stage (REQ-03): one coder turn, and the L1 loop of a unit."""

from __future__ import annotations

from prefect import task

from graphlemon.devloop.outcomes import UnitOutcome
from graphlemon.devloop.unit_loop import CoderTurn, coder_turn, run_unit_loop

from ._common import RETRY_DELAYS, STAGE_CACHE, session_for, transient_only


@task(name="coder-turn", task_run_name="coder-{unit_id}-attempt-{attempt}", retries=2, retry_delay_seconds=RETRY_DELAYS,
      retry_condition_fn=transient_only, cache_policy=STAGE_CACHE, persist_result=True)  # fmt: skip
def coder_turn_task(
    project: str, task_id: str, config: dict, nid: str, unit_id: str, attempt: int, loop_round: int, hints: str | None
) -> CoderTurn:
    """One coder turn in the unit's worktree, committed."""
    return coder_turn(session_for(project, task_id, config), nid, unit_id, attempt, loop_round, hints)


@task(name="unit-loop", task_run_name="unit-{unit_id}-round-{loop_round}{pass_tag}",
      cache_policy=STAGE_CACHE, persist_result=True)  # fmt: skip
def unit_loop_task(
    project: str, task_id: str, config: dict, unit_id: str, loop_round: int, feedback: str | None, pass_tag: str = ""
) -> UnitOutcome:
    """L1 for one unit: coder turn -> tester stage -> retry with hints until green or the retry limit."""
    from flows.devloop import PrefectStages

    session = session_for(project, task_id, config)
    return run_unit_loop(session, PrefectStages(project, task_id, config), unit_id, loop_round, feedback, pass_tag)
