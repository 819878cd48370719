"""Prefect task of the Coder stage (REQ-03): one coder turn in the unit's worktree."""

from __future__ import annotations

from prefect import task

from graphlemon.devloop.unit_loop import CoderTurn, coder_turn

from ._common import STAGE_OPTIONS, session_for


@task(name="coder", task_run_name="coder {unit_id} · attempt {attempt}", **STAGE_OPTIONS)
def coder_task(
    project: str, task_id: str, nid: str, unit_id: str, attempt: int, loop_round: int, hints: str | None
) -> CoderTurn:
    """One coder turn in the unit's worktree, committed."""
    return coder_turn(session_for(project, task_id), nid, unit_id, attempt, loop_round, hints)
