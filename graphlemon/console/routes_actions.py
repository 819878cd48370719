"""The console's actions: resume, run, abandon, budget, a new goal, a first commit, a bug report. What a person
does is recorded on the task's timeline (`human_action`); a resume or a re-queued task starts its run at once."""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import BaseModel, Field

from ..errors import ErrorCode, GraphLemonError, invalid_param
from .router import Router
from .shared import (
    ConsoleSettings,
    error_response,
    run_view,
)


class ResumeBody(BaseModel):
    note: str | None = Field(default=None, max_length=20_000)


class AbandonBody(BaseModel):
    note: str | None = Field(default=None, max_length=20_000)


class GoalBody(BaseModel):
    goal: str = ""
    executor: str = "scripted"
    playbook: str | None = None
    engine: str = "prefect"
    budget_tokens: int | None = None


class BugBody(BaseModel):
    title: str = ""
    description: str = ""
    unit_id: str | None = None
    severity: str = "medium"


class BudgetBody(BaseModel):
    limit: float
    limit_type: str = "token_count"


def action_routes(router: Router, settings: ConsoleSettings) -> None:
    route = router.route

    @route("POST", "/api/projects/{project_id}/tasks/{task_id}/resume", ResumeBody)
    async def resume(project_id: str, task_id: str, body: ResumeBody) -> Any:
        """manual_resume, then the run `graphlemon resume` would start, in the background."""
        from ..agents.automode_denials import reset_classifier_counts
        from ..taskboard import TaskBoard
        from .launch import check_can_continue, engine_of

        handle = settings.registry.get(project_id)
        note = (body.note or "").strip() or None
        await asyncio.to_thread(check_can_continue, handle)  # before the task changes: its run must be able to start
        board = TaskBoard(handle.ledger)
        why = "resumed by a person" + (f" with the note: {note}" if note else "")
        if await asyncio.to_thread(engine_of, handle, task_id) == "prefect":
            # a deployed run of it may wait in Prefect for a person: `graphlemon resume --note` answers that run (or
            # resumes the task itself when none waits), so the decision and the note go to it, not to the ledger here
            task = await asyncio.to_thread(board.get, task_id)
            if task.status not in ("blocked_pending_human", "paused"):
                await asyncio.to_thread(board.manual_resume, task_id)  # refused as below: INVALID_TRANSITION
            run = await _continue(handle, task_id, why, note=note)
        else:
            task = await asyncio.to_thread(board.manual_resume, task_id, note=note, by="console")
            await asyncio.to_thread(reset_classifier_counts, handle.ledger, task_id, note or "manual resume")
            run = await _continue(handle, task.task_id, why)
        return {"task": task.model_dump(mode="json"), "run": run,
                "next": f"graphlemon resume {task_id} --project {handle.root}"}  # fmt: skip

    @route("POST", "/api/projects/{project_id}/tasks/{task_id}/run")
    async def run_task(project_id: str, task_id: str) -> Any:
        """Start the run a task needs (queued with nothing picking it up, or interrupted); refused otherwise."""
        from ..taskboard import TaskBoard
        from .launch import task_run

        handle = settings.registry.get(project_id)
        tasks = await asyncio.to_thread(lambda: TaskBoard(handle.ledger).all())
        task = tasks.get(task_id)
        if task is None:
            raise GraphLemonError(ErrorCode.TASK_NOT_FOUND, f"no task {task_id!r} in this project", task_id=task_id)
        state = (await asyncio.to_thread(task_run, handle, task, tasks)).state
        if state not in ("idle", "interrupted"):
            why = "a run of it is going on" if state == "running" else f"it is {task.status}: nothing to run"
            raise GraphLemonError(ErrorCode.INVALID_TRANSITION, f"task {task_id} was not started: {why}",
                                  task_id=task_id, status=task.status)  # fmt: skip
        return {"run": await _continue(handle, task_id, f"run the {state} task")}

    @route("GET", "/api/projects/{project_id}/tasks/{task_id}/run")
    async def task_run_state(project_id: str, task_id: str) -> Any:
        handle = settings.registry.get(project_id)
        return await asyncio.to_thread(run_view, handle, task_id)

    @route("POST", "/api/projects/{project_id}/tasks/{task_id}/abandon", AbandonBody)
    async def abandon(project_id: str, task_id: str, body: AbandonBody) -> Any:
        from ..taskboard import TaskBoard

        handle = settings.registry.get(project_id)
        note = (body.note or "").strip() or "abandoned from the console"
        task = await asyncio.to_thread(TaskBoard(handle.ledger).transition, task_id, "abandoned", note=note,
                                       by="console")  # fmt: skip
        await asyncio.to_thread(_record_action, handle, task_id, f"abandoned: {note}")
        return {"task": task.model_dump(mode="json")}

    @route("POST", "/api/projects/{project_id}/tasks/{task_id}/budget", BudgetBody)
    async def budget(project_id: str, task_id: str, body: BudgetBody) -> Any:
        """Set the limit; a task it re-queued is run at once (as `graphlemon resume` would)."""
        from ..agents.budget import update_budget

        handle = settings.registry.get(project_id)
        update = await asyncio.to_thread(update_budget, handle.ledger, task_id, body.limit, body.limit_type,
                                         by="console")  # fmt: skip
        limit = f"{body.limit:,g} {body.limit_type}"
        if update.requeued:
            run = await _continue(handle, task_id, f"budget raised to {limit}")
        else:
            run = None
            await asyncio.to_thread(_record_action, handle, task_id, f"budget set to {limit}")
        from ..wording import budget_warning

        st = update.status
        return {"task_status": update.task_status, "requeued": update.requeued, "limit": st.limit_value,
                "limit_type": st.limit_type, "used": st.used, "remaining": st.remaining, "run": run,
                "warning": budget_warning(st.limit_type, st.limit_value, st.used, update.task_status)}  # fmt: skip

    @route("POST", "/api/projects/{project_id}/goals", GoalBody)
    async def goal(project_id: str, body: GoalBody) -> Any:
        from .launch import check_goal, start_goal
        from .project_registry import has_commit

        handle = settings.registry.get(project_id)
        request = check_goal(body.goal, body.executor, body.playbook, body.engine, body.budget_tokens)
        try:
            started = await asyncio.to_thread(start_goal, handle, request)  # refused before anything starts
        except GraphLemonError as exc:
            if exc.code == ErrorCode.INVALID_PARAM and not await asyncio.to_thread(has_commit, handle.root):
                return error_response(exc, extra={"fix": "first_commit"})  # the page offers to make it
            raise
        return {"mode": started.mode, "ref": started.ref, "log": started.log, "launch_id": started.launch_id}

    @route("GET", "/api/projects/{project_id}/launches/{launch_id}")
    async def launch(project_id: str, launch_id: str) -> Any:
        from ..taskboard import TaskBoard
        from .launch import get_launch, launch_view

        handle = settings.registry.get(project_id)
        record = await asyncio.to_thread(get_launch, handle.state_dir, launch_id)
        tasks = await asyncio.to_thread(lambda: TaskBoard(handle.ledger).all())
        return launch_view(handle.state_dir, record, tasks).model_dump(mode="json")

    @route("POST", "/api/projects/{project_id}/first-commit")
    async def first_commit(project_id: str) -> Any:
        """A repository with no commit yet: commit what the folder holds, so a goal can branch from it."""
        from ..project import require_git
        from .project_registry import make_first_commit

        handle = settings.registry.get(project_id)
        await asyncio.to_thread(require_git, handle)  # a removed .git: what to do, not git's own words
        return {"commit": await asyncio.to_thread(make_first_commit, handle.root)}

    async def _continue(handle, task_id: str, why: str, note: str | None = None) -> dict:
        from .launch import start_resume

        started = await asyncio.to_thread(start_resume, handle, task_id, note)
        summary = f"{why}; started graphlemon resume (process {started.ref})"
        await asyncio.to_thread(_record_action, handle, task_id, summary, started.launch_id)
        return {"mode": started.mode, "ref": started.ref, "log": started.log, "launch_id": started.launch_id}

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


def _record_action(handle, task_id: str, summary: str, ref: str | None = None) -> None:
    """What a person did from the console stays on the task's timeline (the page shows it after a reload)."""
    from ..models import TimelineEvent

    handle.ledger.append(TimelineEvent(event="human_action", task_id=task_id, summary=summary, ref=ref))
