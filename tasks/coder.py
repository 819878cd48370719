"""Prefect task of the Coder stage (REQ-03): one coder turn in the unit's worktree."""

from __future__ import annotations

from graphlemon.stages.coder import CoderTurn, coder_turn
from graphlemon.stages.session import RunRef

from ._common import stage_task, timeline_logged


def _run_name() -> str:
    """`coder collision · attempt 2` (the attempt within the round; the unit's subflow names the round)."""
    from prefect.runtime import task_run

    p = task_run.parameters
    return f"coder {p['unit_id']} · attempt {p['attempt'] - p['first'] + 1}"


@stage_task(name="coder", task_run_name=_run_name)
def coder_task(
    run: RunRef, nid: str, unit_id: str, attempt: int, first: int, loop_round: int, hints: str | None
) -> CoderTurn:
    """One coder turn in the unit's worktree, committed (`attempt` counts across rounds, `first` is this round's)."""
    logged = timeline_logged(run, step=(nid, f"a{attempt}-coder"))
    with logged as session:
        turn = coder_turn(session, nid, unit_id, attempt, first, loop_round, hints)
    return logged.cached(turn) if logged.reused else turn
