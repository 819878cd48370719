"""Tasks (one goal each) over `tasks.ndjson`: create, transition, fold (REQ-01 / 05 / 09 / 10 / 14).

A task's state is the fold of its `TaskEvent`s. Every status change goes through
`lifecycle.check("task", ...)` inside a ledger transaction, so two processes can
never move one task along two different edges.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from datetime import datetime

from pydantic import BaseModel, Field

from . import lifecycle
from .errors import ErrorCode, GraphLemonError, invalid_param
from .ledger import Ledger
from .models import BlockedReason, TaskEvent, TaskSettingsRecord, TaskStatus, utcnow
from .wording import status_words

ACTIVE_STAGES: frozenset[str] = frozenset({"planning", "coding", "integrating", "validating"})
# blocks that come from a decision of the loop (a human's resume overrides the decision);
# the others (budget, quota, classifier, corrupt state) interrupt a stage, which simply continues on resume
DECISION_REASONS: frozenset[str] = frozenset(
    {"not_converging", "retry_limit_exceeded", "spec_ambiguous", "low_confidence_triage", "validator_inconclusive",
     "skill_defect", "plan_inconsistent", "human_requested"}
)  # fmt: skip
MAX_GOAL_CHARS = 20_000


class Task(BaseModel):
    """The current state of a task (a fold of its events)."""

    task_id: str
    goal_text: str
    status: TaskStatus
    blocked_reason: BlockedReason | None = None
    loop_round: int = 0
    resume_status: TaskStatus | None = None  # the stage before a block / wait / pause, restored on resume
    decision_resumes: list[str] = Field(default_factory=list)  # notes of human resumes after decision blocks
    note: str | None = None
    created_at: datetime
    updated_at: datetime
    events: int = 0

    @property
    def terminal(self) -> bool:
        return self.status in lifecycle.TERMINAL_TASK


def apply_event(tasks: dict[str, Task], ev: TaskEvent) -> None:
    task = tasks.get(ev.task_id)
    if task is None:
        task = tasks[ev.task_id] = Task(
            task_id=ev.task_id, goal_text=ev.goal_text or "", status=ev.status, created_at=ev.ts, updated_at=ev.ts
        )
    if task.status in ACTIVE_STAGES and ev.status not in ACTIVE_STAGES:
        task.resume_status = task.status
    resumed = ev.status in ACTIVE_STAGES or ev.status == "queued"
    if task.status == "blocked_pending_human" and resumed and task.blocked_reason in DECISION_REASONS:
        task.decision_resumes.append(ev.note or "")
    task.status = ev.status
    task.blocked_reason = ev.blocked_reason if ev.status == "blocked_pending_human" else None
    if ev.loop_round is not None:
        task.loop_round = ev.loop_round
    if ev.note is not None:
        task.note = ev.note
    task.updated_at = ev.ts
    task.events += 1


def fold(events: Iterable[TaskEvent]) -> dict[str, Task]:
    tasks: dict[str, Task] = {}
    for ev in events:
        apply_event(tasks, ev)
    return tasks


def check_goal_text(goal_text: str | None) -> str:
    """The goal, stripped; INVALID_PARAM (in a person's words) for an empty one or one over MAX_GOAL_CHARS."""
    goal = (goal_text or "").strip()
    if not goal:
        raise invalid_param("the goal is empty; say what the loop should build", field="goal_text")
    if len(goal) > MAX_GOAL_CHARS:
        raise invalid_param(
            f"the goal is {len(goal):,} characters long; the limit is {MAX_GOAL_CHARS:,}", field="goal_text"
        )
    return goal


class TaskBoard:
    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    def all(self) -> dict[str, Task]:
        return fold(self.ledger.read("task"))

    def get(self, task_id: str) -> Task:
        task = self.all().get(task_id)
        if task is None:
            raise GraphLemonError(ErrorCode.TASK_NOT_FOUND, f"no task {task_id!r} in this project", task_id=task_id)
        return task

    def resolve(self, task_id: str) -> str:
        """The full id of the task `task_id` names: itself, or the one task id it is a prefix of (the CLI's tables
        show ids shortened to their unique prefix). TASK_NOT_FOUND for none, INVALID_PARAM for several."""
        tasks = self.all()
        if task_id in tasks:
            return task_id
        matches = sorted(t for t in tasks if task_id and t.startswith(task_id))
        if not matches:
            raise GraphLemonError(ErrorCode.TASK_NOT_FOUND, f"no task {task_id!r} in this project", task_id=task_id)
        if len(matches) > 1:
            raise GraphLemonError(
                ErrorCode.INVALID_PARAM,
                f"{task_id!r} is the start of {len(matches)} task ids ({', '.join(matches[:3])}): give more of it",
            )
        return matches[0]

    def list(self, *, status: str | Iterable[str] | None = None) -> list[Task]:
        wanted = {status} if isinstance(status, str) else set(status or ())
        return [t for t in self.all().values() if not wanted or t.status in wanted]

    def create(
        self, goal_text: str, *, by: str = "human", flow_run_id: str | None = None, settings: dict | None = None
    ) -> Task:
        """c_task_create: a new task, `created` then `queued` (the scheduler starts it when a slot frees).

        `settings` (a LoopConfig's JSON) are recorded before the task's first event: a run killed as soon as its
        task exists still resumes with its executor, playbook and limits.

        With a `flow_run_id`, creating is idempotent per flow run: Prefect runs a resumed (suspended) or
        retried flow run from the top again, and that run must find the task it created, not start another."""
        goal = check_goal_text(goal_text)
        with self.ledger.transaction("task") as tx:
            events = tx.records()
            if flow_run_id is not None:
                mine = [e.task_id for e in events if e.status == "created" and e.flow_run_id == flow_run_id]
                if mine:
                    return fold(events)[mine[0]]
            task_id = f"task-{utcnow():%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"
            if settings is not None:
                self.ledger.append(TaskSettingsRecord(task_id=task_id, settings=settings, by=by))
            tx.append(TaskEvent(task_id=task_id, status="created", goal_text=goal, loop_round=0, by=by,
                                flow_run_id=flow_run_id))  # fmt: skip
            tx.append(TaskEvent(task_id=task_id, status="queued", by="scheduler"))
        return self.get(task_id)

    def transition(
        self,
        task_id: str,
        to: TaskStatus,
        *,
        blocked_reason: BlockedReason | None = None,
        loop_round: int | None = None,
        note: str | None = None,
        by: str = "system",
        flow_run_id: str | None = None,
    ) -> Task:
        """Validated status change; returns the task after it."""
        if to == "blocked_pending_human" and blocked_reason is None:
            raise invalid_param("blocked_pending_human needs a blocked_reason")
        with self.ledger.transaction("task") as tx:
            tasks = fold(tx.records())
            task = tasks.get(task_id)
            if task is None:
                raise GraphLemonError(ErrorCode.TASK_NOT_FOUND, f"no task {task_id!r} in this project", task_id=task_id)
            lifecycle.check("task", task.status, to)
            event = TaskEvent(
                task_id=task_id,
                status=to,
                blocked_reason=blocked_reason,
                loop_round=loop_round,
                note=note,
                by=by,
                flow_run_id=flow_run_id,
            )
            tx.append(event)
        apply_event(tasks, event)
        return tasks[task_id]

    def ensure(self, task_id: str, to: TaskStatus, **kwargs) -> Task:
        """Transition unless the task is already there (idempotent, for resumed flows)."""
        task = self.get(task_id)
        if task.status == to and to not in ACTIVE_STAGES:
            return task
        if task.status == to and kwargs.get("loop_round") in (None, task.loop_round):
            return task
        return self.transition(task_id, to, **kwargs)

    def manual_resume(self, task_id: str, *, note: str | None = None, by: str = "human") -> Task:
        """REQ-09 manual_resume: a blocked or paused task goes back to the stage it was in before the block."""
        task = self.get(task_id)
        if task.terminal:
            raise GraphLemonError(
                ErrorCode.INVALID_TRANSITION,
                f"task {task_id} is {status_words(task.status)}: it has ended, so there is nothing to resume; "
                "nothing changed",
                task_id=task_id,
                status=task.status,
            )
        if task.status not in ("blocked_pending_human", "paused"):
            raise GraphLemonError(
                ErrorCode.INVALID_TRANSITION,
                f"task {task_id} is {status_words(task.status)}: only a task that needs you or is paused can be "
                "resumed; there is nothing to resume",
                task_id=task_id,
                status=task.status,
            )
        # the block's note is over: the task's note is now the person's (none: cleared)
        return self.transition(task_id, task.resume_status or "queued", note=note or "", by=by)
