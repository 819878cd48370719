"""The one driver of a run's lifecycle, for both engines: claim the task, take a goal slot, run the loop, give
the slot and the task back, ask a person when the task is blocked, then the on-done hooks.

    drive(session, engine, on_done=[...]) -> Task

An `Engine` supplies what differs between the engines: the goal slot (a `flock` for the direct engine,
Prefect's global concurrency limit for a flow run), how a killed previous run is closed, how stages run
(`Stages` with plain calls, or with the Prefect runner), and whether a person answers a block while
the run waits (a deployed flow run suspends with a form; the CLI ends the run blocked and
`graphlemon resume` continues it). On-done hooks run once the run has settled (e.g. deploying the merge of
a finished task in GraphLemon's own repository).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager, contextmanager
from typing import Literal, Protocol

from pydantic import BaseModel, Field

from .. import runmarker
from ..agents.automode_denials import reset_classifier_counts
from ..runmarker import RunMarker
from ..stages.session import LoopSession
from ..taskboard import Task
from .goal_slots import goal_slot
from .loop import prepare_run, run_devloop
from .stages import Stages


class Decision(BaseModel):
    """A person's answer to a blocked task."""

    action: Literal["resume", "abandon"] = "resume"
    note: str = Field(default="", max_length=20_000)
    by: str = "human"  # who resumed, as the task's history records it
    place: str = "by a person"  # where, for the history's default note: "resumed in the Prefect UI"


class Engine(Protocol):
    def goal_slot(self, session: LoopSession) -> AbstractContextManager[None]:
        """Hold one of the project's goal slots for the block (waits, the task queued, until one is free)."""

    def close_stale(self, session: LoopSession, stale: RunMarker) -> None:
        """A killed previous run of the task left `stale`: close what it left open (its run, its slot)."""

    def stages(self, session: LoopSession) -> Stages:
        """How the loop's stages run."""

    def ask_person(self, session: LoopSession, task: Task) -> Decision | None:
        """The task is blocked: a person's decision, or None to end the run blocked (resumed later)."""


OnDone = Callable[[LoopSession, Task], None]


class DirectEngine:
    """The engine without Prefect: a `flock` goal slot, plain calls, a block ends the run."""

    def __init__(self, on_wait: Callable[[str], None] | None = None) -> None:
        self.on_wait = on_wait

    @contextmanager
    def goal_slot(self, session: LoopSession):
        limit = session.project.meta.settings.max_concurrent_goals
        with goal_slot(session.project.state_dir, session.task_id, limit, on_wait=self.on_wait):
            yield

    def close_stale(self, session: LoopSession, stale: RunMarker) -> None:
        """Nothing to close: the kernel dropped the killed run's slot lock with its process."""

    def stages(self, session: LoopSession) -> Stages:
        return Stages(session.run)

    def ask_person(self, session: LoopSession, task: Task) -> Decision | None:
        return None


def drive(session: LoopSession, engine: Engine, *, run_id: str | None = None, on_done: Iterable[OnDone] = ()) -> Task:
    """Run (or resume) the task until it is done, abandoned, or blocked with nobody to answer now; then the
    on-done hooks. A task that is already blocked when the run starts goes straight to the person (a deployed
    run that was suspended starts over here once its form is answered)."""
    board = session.board
    final = board.get(session.task_id)
    if final.status != "blocked_pending_human":
        final = run_once(session, engine, run_id)
    while final.status == "blocked_pending_human":
        decision = engine.ask_person(session, final)
        if decision is None:
            final = board.get(session.task_id)  # blocked still, or decided meanwhile from elsewhere
            break
        if decision.action == "abandon":
            final = board.transition(
                session.task_id, "abandoned", note=decision.note or f"abandoned {decision.place}", by="human"
            )
            break
        board.manual_resume(session.task_id, note=decision.note or None, by=decision.by)
        reset_classifier_counts(session.ledger, session.task_id, decision.note or f"resumed {decision.place}")
        final = run_once(session, engine, run_id)
    for hook in on_done:
        hook(session, final)
    return final


def run_once(session: LoopSession, engine: Engine, run_id: str | None = None) -> Task:
    """Claim the task, hold a goal slot while the loop runs, give both back."""
    stale = prepare_run(session, run_id)
    if stale is not None:
        engine.close_stale(session, stale)
    try:
        with engine.goal_slot(session):
            return run_devloop(session, engine.stages(session), flow_run_id=run_id)
    finally:
        runmarker.release(session.project.state_dir, session.task_id)
