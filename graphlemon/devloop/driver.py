"""The one driver of a run's lifecycle, for both engines: hold the task's lease, close what a gone holder left,
take a goal slot, run the loop, give the slot back, ask a person when the task is blocked, then the on-done hooks.

    drive(session, engine, on_done=[...]) -> Task

Everything the driver decides comes from the task's journal: the lease (graphlemon/lease.py) says who runs the
task and whether a person asked it to stop, the goal slots are leases holding a slot, and a gone holder's leftovers
are closed once per lease it left (its `resumed` timeline event names the lease). An `Engine` supplies what differs
between the engines: what takes the lease (this process, or a Prefect flow run), how stages run (`Stages` with
plain calls, or with the Prefect runner), what a gone holder left outside the journal (a Prefect flow run still
"Running"), and whether a person answers a block while the run waits (a deployed flow run suspends with a form; the
CLI ends the run blocked and `graphlemon resume` continues it). On-done hooks run once the run has settled (e.g.
deploying the merge of a finished task in GraphLemon's own repository).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager, nullcontext
from typing import Literal, Protocol

from pydantic import BaseModel, Field

from .. import lease as leases
from ..agents.automode_denials import reset_classifier_counts
from ..errors import StopRequested
from ..lease import Holder, Lease
from ..models import TimelineEvent
from ..stages.session import LoopSession
from ..taskboard import Task
from .loop import run_devloop, stopped
from .stages import Stages


class Decision(BaseModel):
    """A person's answer to a blocked task."""

    action: Literal["resume", "abandon"] = "resume"
    note: str = Field(default="", max_length=20_000)
    by: str = "human"  # who resumed, as the task's history records it
    place: str = "by a person"  # where, for the history's default note: "resumed in the Prefect UI"


class Engine(Protocol):
    def holder(self, session: LoopSession) -> Holder:
        """What holds the task's lease for this run."""

    def on_wait(self, message: str) -> None:
        """Say that the run waits for a goal slot (the task stays queued)."""

    def running(self, session: LoopSession) -> AbstractContextManager[None]:
        """The block the loop runs in, once the goal slot is held."""

    def close_gone(self, session: LoopSession, gone: Lease) -> None:
        """A holder of the task is gone without letting go of its lease: close what it left outside the journal."""

    def stages(self, session: LoopSession) -> Stages:
        """How the loop's stages run."""

    def ask_person(self, session: LoopSession, task: Task) -> Decision | None:
        """The task is blocked: a person's decision, or None to end the run blocked (resumed later)."""


OnDone = Callable[[LoopSession, Task], None]


class DirectEngine:
    """The engine without Prefect: this process holds the lease, stages are plain calls, a block ends the run."""

    def __init__(self, on_wait: Callable[[str], None] | None = None, label: str = "graphlemon (direct engine)") -> None:
        self._on_wait, self.label = on_wait, label

    def holder(self, session: LoopSession) -> Holder:
        return Holder.here(self.label)

    def on_wait(self, message: str) -> None:
        if self._on_wait is not None:
            self._on_wait(message)

    def running(self, session: LoopSession) -> AbstractContextManager[None]:
        return nullcontext()

    def close_gone(self, session: LoopSession, gone: Lease) -> None:
        """Nothing outside the journal: a killed process held nothing else."""

    def stages(self, session: LoopSession) -> Stages:
        return Stages(session.run)

    def ask_person(self, session: LoopSession, task: Task) -> Decision | None:
        return None


def drive(
    session: LoopSession, engine: Engine, *, run_id: str | None = None, on_done: Iterable[OnDone] = (),
    adopt: str | None = None,
) -> Task:  # fmt: skip
    """Run (or resume) the task until it is done, abandoned, stopped, or blocked with nobody to answer now; then the
    on-done hooks. The task's lease is held throughout (the one the caller holds, or taken here: TASK_HELD when
    another holder runs the task; `adopt` names a lease handed to this run). A task that is already blocked when the
    run starts goes straight to the person (a deployed run that was suspended starts over here once its form is
    answered)."""
    board = session.board
    if board.get(session.task_id).terminal:  # ended before this start: nothing to run, nothing to hold
        return board.get(session.task_id)
    status = lambda: board.get(session.task_id).status  # noqa: E731 - the task's status when the lease is let go
    with leases.held(session.ledger, session.task_id, engine.holder(session), adopt=adopt, status=status) as held:
        session.lease = held
        try:
            if run_id is not None and held.lease.holder.flow_run_id != run_id:
                held.renew(flow_run_id=run_id)  # the journal links the lease to its Prefect flow run
            close_gone_holders(session, engine)
            final = board.get(session.task_id)
            if final.terminal:  # ended while this start waited for the lease
                return final
            if final.status != "blocked_pending_human":
                final = run_once(session, engine, run_id)
            while final.status == "blocked_pending_human" and final.blocked_reason != "stopped_by_person":
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
        finally:
            session.lease = None


def run_once(session: LoopSession, engine: Engine, run_id: str | None = None) -> Task:
    """Hold one of the project's goal slots while the loop runs, then give it back (a stop while the run waits for
    a slot is served there: the task was queued, it is blocked `stopped_by_person`)."""
    held = session.lease
    assert held is not None, "run_once runs under the task's lease (drive)"
    held.waiting_run = None  # this run runs the loop: no deployed run waits for the task any more
    try:
        held.take_slot(session.project.meta.settings.max_concurrent_goals, on_wait=engine.on_wait)
        with engine.running(session):
            return run_devloop(session, engine.stages(session), flow_run_id=run_id)
    except StopRequested as stop:
        return stopped(session, stop)
    finally:
        held.give_slot()


def close_gone_holders(session: LoopSession, engine: Engine) -> None:
    """Each lease of the task whose holder went away without letting go (a killed run, a launch that never started)
    is closed once: the task's worktrees are repaired (stale git locks, half-done merges, a half-made worktree), the
    engine closes what it left outside the journal, and a `resumed` timeline event names the lease."""
    current = session.lease.lease_id if session.lease is not None else None
    history = leases.history(session.ledger, session.task_id)
    closed = {e.ref for e in session.ledger.read_as("timeline", TimelineEvent)
              if e.event == "resumed" and e.task_id == session.task_id}  # fmt: skip
    gone = [x for x in history if x.released is None and x.lease_id != current and x.lease_id not in closed]
    if not gone:
        return
    repaired = session.worktrees.recover() if session.worktrees.base.exists() else []
    for lease in gone:
        engine.close_gone(session, lease)
        why = next((x.took_over_because for x in history if x.previous == lease.lease_id), None) or "gone"
        note = f"resumed after an interrupted run ({lease.holder.describe()}: {why})"
        session.timeline("resumed", note + (f"; {'; '.join(repaired)}" if repaired else ""), ref=lease.lease_id)
        repaired = []  # said once
