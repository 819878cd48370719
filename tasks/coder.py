"""Prefect task of the Coder stage (REQ-03): one coder turn in the unit's worktree."""

from __future__ import annotations

from prefect import task

from graphlemon.stages.coder import CoderTurn, coder_turn

from ._common import STAGE_OPTIONS, session_for, timeline_logged


def _run_name() -> str:
    """`coder collision · attempt 2` (the attempt within the round; the unit's subflow names the round)."""
    from prefect.runtime import task_run

    p = task_run.parameters
    return f"coder {p['unit_id']} · attempt {p['attempt'] - p.get('first', 1) + 1}"


@task(name="coder", task_run_name=_run_name, **STAGE_OPTIONS)
def coder_task(
    project: str, task_id: str, nid: str, unit_id: str, attempt: int, loop_round: int, hints: str | None, first: int = 1
) -> CoderTurn:
    """One coder turn in the unit's worktree, committed (`attempt` counts across rounds, `first` is this round's)."""
    with timeline_logged(session_for(project, task_id)) as session:
        return coder_turn(session, nid, unit_id, attempt, loop_round, hints)
