"""The console's actions: resume, run, stop, abandon, budget, a new goal, a first commit, a bug report. What a person
does is recorded on the task's timeline (`human_action`); a resume or a re-queued task starts its run at once.

An action that starts or changes a task's run first takes the task's lease (graphlemon/lease.py): refused with
TASK_HELD (HTTP 409, the holder named) while another holder runs the task. Each carries an `action_id` (the page
makes one per button it draws): a second request with the same id (a double-click) is the same action, answered
from the journal (`"repeated": true`) and never started twice."""

from __future__ import annotations

import asyncio
from contextlib import ExitStack
from typing import Any

from pydantic import BaseModel, Field

from ..errors import ErrorCode, GraphLemonError, TaskHeld, invalid_param
from .router import Router
from .shared import (
    ConsoleSettings,
    error_response,
    run_view,
)

ActionId = Field(default=None, max_length=64, pattern=r"^[A-Za-z0-9_.:-]+$")


class ResumeBody(BaseModel):
    note: str | None = Field(default=None, max_length=20_000)
    action_id: str | None = ActionId


class RunBody(BaseModel):
    action_id: str | None = ActionId


class AbandonBody(BaseModel):
    note: str | None = Field(default=None, max_length=20_000)
    action_id: str | None = ActionId


class StopBody(BaseModel):
    note: str | None = Field(default=None, max_length=20_000)
    action_id: str | None = ActionId


class GoalBody(BaseModel):
    goal: str = ""
    executor: str = "scripted"
    playbook: str | None = None
    engine: str = "prefect"
    budget_tokens: int | None = None
    action_id: str | None = ActionId


class BugBody(BaseModel):
    title: str = ""
    description: str = ""
    unit_id: str | None = None
    severity: str = "medium"


class BudgetBody(BaseModel):
    limit: float
    limit_type: str = "token_count"
    action_id: str | None = ActionId


def action_routes(router: Router, settings: ConsoleSettings) -> None:
    route = router.route

    @route("POST", "/api/projects/{project_id}/tasks/{task_id}/resume", ResumeBody)
    async def resume(project_id: str, task_id: str, body: ResumeBody) -> Any:
        """manual_resume, then the run `graphlemon resume` would start, in the background, under the task's lease."""
        handle = settings.registry.get(project_id)
        note = (body.note or "").strip() or None
        from .launch import check_can_continue

        await asyncio.to_thread(check_can_continue, handle)  # before the task changes: its run must be able to start
        return await asyncio.to_thread(_resume, handle, task_id, note, body.action_id)

    @route("POST", "/api/projects/{project_id}/tasks/{task_id}/run", RunBody)
    async def run_task(project_id: str, task_id: str, body: RunBody) -> Any:
        """Start the run a task needs (queued with nothing picking it up, or interrupted); refused otherwise."""
        handle = settings.registry.get(project_id)
        return await asyncio.to_thread(_run, handle, task_id, body.action_id)

    @route("GET", "/api/projects/{project_id}/tasks/{task_id}/run")
    async def task_run_state(project_id: str, task_id: str) -> Any:
        handle = settings.registry.get(project_id)
        return await asyncio.to_thread(run_view, handle, task_id)

    @route("POST", "/api/projects/{project_id}/tasks/{task_id}/stop", StopBody)
    async def stop(project_id: str, task_id: str, body: StopBody) -> Any:
        """A person's stop: the run stops at its next safe point, the task waits blocked (stopped_by_person)."""
        handle = settings.registry.get(project_id)
        note = (body.note or "").strip()
        return await asyncio.to_thread(_stop, handle, task_id, note, "block")

    @route("POST", "/api/projects/{project_id}/tasks/{task_id}/abandon", AbandonBody)
    async def abandon(project_id: str, task_id: str, body: AbandonBody) -> Any:
        """The task ends (abandoned); a running task is stopped at its next safe point first."""
        handle = settings.registry.get(project_id)
        note = (body.note or "").strip() or "abandoned from the console"
        return await asyncio.to_thread(_stop, handle, task_id, note, "abandon")

    @route("POST", "/api/projects/{project_id}/tasks/{task_id}/budget", BudgetBody)
    async def budget(project_id: str, task_id: str, body: BudgetBody) -> Any:
        """Set the limit; a task it re-queued is run at once (as `graphlemon resume` would), under the task's lease."""
        handle = settings.registry.get(project_id)
        return await asyncio.to_thread(_budget, handle, task_id, body)

    @route("POST", "/api/projects/{project_id}/goals", GoalBody)
    async def goal(project_id: str, body: GoalBody) -> Any:
        from .launch import check_goal, start_goal
        from .project_registry import has_commit

        handle = settings.registry.get(project_id)
        request = check_goal(body.goal, body.executor, body.playbook, body.engine, body.budget_tokens)
        try:
            started = await asyncio.to_thread(start_goal, handle, request, body.action_id)  # refused before any start
        except GraphLemonError as exc:
            if exc.code == ErrorCode.INVALID_PARAM and not await asyncio.to_thread(has_commit, handle.root):
                return error_response(exc, extra={"fix": "first_commit"})  # the page offers to make it
            raise
        answer = {"mode": started.mode, "ref": started.ref, "log": started.log, "launch_id": started.launch_id}
        return {**answer, "repeated": True} if started.repeated else answer

    @route("GET", "/api/projects/{project_id}/launches/{launch_id}")
    async def launch(project_id: str, launch_id: str) -> Any:
        from .. import lease as leases
        from .launch import get_launch, launch_view

        handle = settings.registry.get(project_id)
        record = await asyncio.to_thread(get_launch, handle, launch_id)
        by_launch = await asyncio.to_thread(leases.leases_by_launch, handle.ledger)
        return launch_view(handle.state_dir, record, by_launch.get(launch_id)).model_dump(mode="json")

    @route("POST", "/api/projects/{project_id}/first-commit")
    async def first_commit(project_id: str) -> Any:
        """A repository with no commit yet: commit what the folder holds, so a goal can branch from it."""
        from ..project import require_git
        from .project_registry import make_first_commit

        handle = settings.registry.get(project_id)
        await asyncio.to_thread(require_git, handle)  # a removed .git: what to do, not git's own words
        return {"commit": await asyncio.to_thread(make_first_commit, handle.root)}

    @route("POST", "/api/projects/{project_id}/bugs", BugBody)
    async def bug(project_id: str, body: BugBody) -> Any:
        from typing import get_args

        from ..bugs import BugTracker
        from ..models import Severity

        handle = settings.registry.get(project_id)
        if body.severity not in get_args(Severity):
            raise invalid_param(f"unknown severity {body.severity!r}; choose one of: {', '.join(get_args(Severity))}")
        description = body.description.strip()
        title = body.title.strip() or (description.splitlines()[0][:120] if description else "")
        bug_id = await asyncio.to_thread(BugTracker(handle.ledger).report, title=title, description=body.description,
                                         unit_id=(body.unit_id or "").strip() or None, severity=body.severity,
                                         by="console")  # fmt: skip
        return {"bug_id": bug_id}


CONSOLE = "a person (console)"


def _holder(action: str, action_id: str | None):
    from ..lease import Holder

    return Holder.here(f"console: {action}", action_id=action_id)


def _repeated(handle, task_id: str, action_id: str | None) -> dict | None:
    """The answer to an action already taken (its id on a lease of the task), or None."""
    from .. import lease as leases
    from ..taskboard import TaskBoard

    done = leases.action_lease(handle.ledger, task_id, action_id)
    if done is None:
        return None
    run = {"mode": "local", "ref": str(done.holder.pid), "launch_id": done.holder.launch_id} if done.holder.launch_id \
        else None  # fmt: skip
    return {"repeated": True, "task": TaskBoard(handle.ledger).get(task_id).model_dump(mode="json"), "run": run,
            "lease_id": done.lease_id}  # fmt: skip


def _resume(handle, task_id: str, note: str | None, action_id: str | None) -> dict:
    from ..agents.automode_denials import reset_classifier_counts
    from ..taskboard import TaskBoard
    from .launch import engine_of, start_resume

    if (again := _repeated(handle, task_id, action_id)) is not None:
        return again
    board = TaskBoard(handle.ledger)
    why = "resumed by a person" + (f" with the note: {note}" if note else "")
    with _taken(handle, task_id, "manual_resume", action_id) as lease:
        if isinstance(lease, dict):
            return lease
        if engine_of(handle, task_id) == "prefect":
            # a deployed run of it may wait in Prefect for a person: `graphlemon resume --note` answers that run (or
            # resumes the task itself when none waits), so the decision and the note go to it, not to the ledger here
            task = board.get(task_id)
            if task.status not in ("blocked_pending_human", "paused"):
                board.manual_resume(task_id)  # refused as below: INVALID_TRANSITION
            started = start_resume(handle, task_id, lease, note, action_id)
        else:
            task = board.manual_resume(task_id, note=note, by="console")
            reset_classifier_counts(handle.ledger, task_id, note or "manual resume")
            started = start_resume(handle, task_id, lease, None, action_id)
    run = _started(handle, task_id, why, started)
    return {"task": task.model_dump(mode="json"), "run": run,
            "next": f"graphlemon resume {task_id} --project {handle.root}"}  # fmt: skip


def _run(handle, task_id: str, action_id: str | None) -> dict:
    from .. import lease as leases
    from ..taskboard import TaskBoard
    from .launch import start_resume

    if (again := _repeated(handle, task_id, action_id)) is not None:
        return again
    board = TaskBoard(handle.ledger)
    task = board.get(task_id)
    with _taken(handle, task_id, "run it now", action_id) as lease:
        if isinstance(lease, dict):
            return lease
        state = leases.run_state(None, board.get(task_id).status)  # nothing else holds it: this lease is ours
        if state not in ("idle", "interrupted"):
            raise GraphLemonError(ErrorCode.INVALID_TRANSITION, f"task {task_id} was not started: it is "
                                  f"{task.status}: nothing to run", task_id=task_id, status=task.status)  # fmt: skip
        started = start_resume(handle, task_id, lease, None, action_id)
    return {"run": _started(handle, task_id, f"run the {state} task", started)}


def _stop(handle, task_id: str, note: str, then: str) -> dict:
    from ..devloop.stopping import stop_task

    result = stop_task(handle, task_id, by=CONSOLE, note=note, then=then)  # type: ignore[arg-type]
    verb = "abandon" if then == "abandon" else "stop"
    said = {"abandoned": f"abandoned: {note}", "stopped": f"stopped: {note or 'nothing was running it'}",
            "stopping": f"{verb} requested: {result.holder} stops at its next safe point" + (f" ({note})" if note else ""),
            }.get(result.outcome, result.message)  # fmt: skip
    if not result.repeated:  # a double-click's second stop is the same request: the timeline says it once
        _record_action(handle, task_id, said, result.lease_id)
    return {"outcome": result.outcome, "message": result.message, "task": result.task.model_dump(mode="json"),
            "holder": result.holder, "lease_id": result.lease_id}  # fmt: skip


def _budget(handle, task_id: str, body) -> dict:
    from ..agents.budget import update_budget
    from ..taskboard import TaskBoard
    from ..wording import budget_warning, budget_words
    from .launch import start_resume

    limit = budget_words(body.limit_type, body.limit)
    task = TaskBoard(handle.ledger).get(task_id)
    run = None
    if task.status == "blocked_pending_human" and task.blocked_reason == "budget_exceeded":  # it may be re-queued
        if (again := _repeated(handle, task_id, body.action_id)) is not None:
            return again
        with ExitStack() as held:
            try:
                lease = held.enter_context(_taken(handle, task_id, "budget raised", body.action_id))
            except TaskHeld:  # another action or run holds the task (it re-queues and runs it): the limit is recorded
                lease = None
            if isinstance(lease, dict):
                return lease
            update = update_budget(handle.ledger, task_id, body.limit, body.limit_type, by="console",
                                   requeue=lease is not None)  # fmt: skip
            if update.requeued:
                started = start_resume(handle, task_id, lease, None, body.action_id)
                run = _started(handle, task_id, f"budget raised to {limit}", started)
    else:  # nothing to re-queue: a running task's limit is read at its next model call
        update = update_budget(handle.ledger, task_id, body.limit, body.limit_type, by="console")
    if run is None:
        _record_action(handle, task_id, f"budget set to {limit}")
    st = update.status
    return {"task_status": update.task_status, "requeued": update.requeued, "limit": st.limit_value,
            "limit_type": st.limit_type, "used": st.used, "remaining": st.remaining, "run": run,
            "warning": budget_warning(st.limit_type, st.limit_value, st.used, update.task_status)}  # fmt: skip


class _taken:
    """`with _taken(handle, task, action, action_id) as lease:` the task's lease for a console action; when another
    request of the same action holds it (a double-click), `lease` is that action's answer (a dict) instead."""

    def __init__(self, handle, task_id: str, action: str, action_id: str | None) -> None:
        from .. import lease as leases
        from ..taskboard import TaskBoard

        board = TaskBoard(handle.ledger)
        self.handle, self.task_id, self.action_id = handle, task_id, action_id
        self.cm = leases.held(handle.ledger, task_id, _holder(action, action_id),
                              status=lambda: board.get(task_id).status)  # fmt: skip

    def __enter__(self):
        from ..errors import TaskHeld

        try:
            return self.cm.__enter__()
        except TaskHeld as exc:
            if self.action_id and exc.context.get("action_id") == self.action_id:
                self.cm = None
                return _repeated(self.handle, self.task_id, self.action_id)
            raise

    def __exit__(self, *exc):
        return self.cm.__exit__(*exc) if self.cm is not None else False


def _started(handle, task_id: str, why: str, started) -> dict:
    summary = f"{why}; started graphlemon resume (process {started.ref})"
    _record_action(handle, task_id, summary, started.launch_id)
    return {"mode": started.mode, "ref": started.ref, "log": started.log, "launch_id": started.launch_id}


def _record_action(handle, task_id: str, summary: str, ref: str | None = None) -> None:
    """What a person did from the console stays on the task's timeline (the page shows it after a reload)."""
    from ..models import TimelineEvent

    handle.ledger.append(TimelineEvent(event="human_action", task_id=task_id, summary=summary, ref=ref))
