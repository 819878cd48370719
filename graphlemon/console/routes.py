"""The console's REST routes: reads and actions, as JSON; domain errors answer as `error` JSON (`state.error_response`).

Every route reaches the domain through the same calls as the CLI; the guard (`security.py`) has already checked
the request before any route runs. Files are served only from a project's `.graphlemon/artifacts/`.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from pydantic import BaseModel, Field, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from ..errors import ErrorCode, GraphLemonError, invalid_param
from . import views
from .shared import (
    ConsoleSettings,
    Hubs,
    dashboard_rows,
    declared_units,
    error_response,
    run_view,
    task_or_404,
    with_run,
)

# -- request bodies ------------------------------------------------------------------------------------


class AddProject(BaseModel):
    path: str
    git_init: bool = False
    first_commit: bool = False  # a repository with no commit yet: commit what it holds (the person agreed)


class NameBody(BaseModel):
    name: str = ""


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


class RetentionBody(BaseModel):
    retention_days: Any = None  # checked by the domain (INVALID_PARAM for 0, negatives, text, absurd values)


class BudgetBody(BaseModel):
    limit: float
    limit_type: str = "token_count"


# -- the routes ----------------------------------------------------------------------------------------


def api_routes(settings: ConsoleSettings, hubs: Hubs) -> list[Route]:
    """Every REST route of the console, each bound to these settings and this project-hub cache."""
    routes: list = []

    def route(method: str, path: str, body: type[BaseModel] | None = None):
        """A JSON endpoint: path parameters and the validated body as arguments; domain errors as `error` JSON."""

        def register(handler):
            async def endpoint(request: Request) -> Response:
                try:
                    kwargs = dict(request.path_params)
                    if body is not None:
                        kwargs["body"] = body.model_validate(await _json(request))
                    result = await handler(**kwargs)
                except GraphLemonError as exc:
                    return error_response(exc)
                except ValidationError as exc:
                    first = exc.errors()[0]
                    where = ".".join(str(p) for p in first.get("loc", ())) or "request"
                    return error_response(invalid_param(f"{where}: {first.get('msg', 'invalid')}"))
                return result if isinstance(result, Response) else JSONResponse(result)

            routes.append(Route(path, endpoint, methods=[method]))
            return handler

        return register

    # -- health (REQ-15: the deploy supervisor's health endpoint) -----------------------------------------
    async def healthz(request: Request) -> Response:
        body = {"status": "ok", "pid": os.getpid(), **(settings.health() if settings.health else {})}
        return JSONResponse(
            body, status_code=200 if body["status"] == "ok" else 503, headers={"Cache-Control": "no-store"}
        )

    routes.append(Route("/healthz", healthz))

    # -- projects (v_project_setup) ----------------------------------------------------------------
    @route("GET", "/api/projects")
    async def list_projects() -> Any:
        return [p.model_dump() for p in await asyncio.to_thread(settings.registry.list)]

    @route("POST", "/api/projects", AddProject)
    async def add_project(body: AddProject) -> Any:
        asked: list[str] = []

        def consent(question: str) -> bool:
            asked.append(question)
            return body.git_init

        try:
            result = await asyncio.to_thread(settings.registry.add, body.path, consent)
        except GraphLemonError as exc:
            if exc.code == ErrorCode.ABORTED and asked:
                return error_response(exc, extra={"question": asked[0], "needs_git_init": True})
            raise
        from .project_registry import has_commit, make_first_commit

        commit = None
        if body.first_commit and not await asyncio.to_thread(has_commit, result.project.root):
            commit = await asyncio.to_thread(make_first_commit, result.project.root)
        return {"project_id": result.project.project_id, "root": str(result.project.root),
                "created": result.created, "git_initialised": result.git_initialised, "first_commit": commit,
                "has_commit": commit is not None or await asyncio.to_thread(has_commit, result.project.root)}  # fmt: skip

    @route("POST", "/api/projects/{project_id}/forget")
    async def forget_project(project_id: str) -> Any:
        """Drop a project from the console's list; its folder and ledger stay as they are."""
        return (await asyncio.to_thread(settings.registry.forget, project_id)).model_dump()

    @route("POST", "/api/projects/{project_id}/name", NameBody)
    async def name_project(project_id: str, body: NameBody) -> Any:
        await asyncio.to_thread(settings.registry.rename, project_id, body.name)
        return {"project_id": project_id, "name": " ".join(body.name.split())}

    # -- reads (dashboard, task detail, artifacts) -------------------------------------------------
    @route("GET", "/api/projects/{project_id}/tasks")
    async def tasks(project_id: str) -> Any:
        hub = await hubs.get(project_id)
        _cursors, records, _nodes = hub.feed.snapshot()
        rows = await asyncio.to_thread(dashboard_rows, settings.registry.get(project_id), records)
        return {"project_id": project_id, "tasks": rows, "spend": views.project_spend(rows)}

    @route("GET", "/api/projects/{project_id}/tasks/{task_id}")
    async def task(project_id: str, task_id: str) -> Any:
        hub = await hubs.get(project_id)
        _cursors, records, nodes = hub.feed.snapshot(task_id)
        detail = task_or_404(records, task_id, nodes)
        handle = settings.registry.get(project_id)
        return await asyncio.to_thread(with_run, handle, detail, records)

    # -- the deploy supervisor (REQ-15): deployments, one deployment's state machine, signals, timeline -------
    @route("GET", "/api/projects/{project_id}/deployments")
    async def deployments(project_id: str) -> Any:
        from ..deploy.deploy_view import deployments_view

        handle = settings.registry.get(project_id)
        return await asyncio.to_thread(deployments_view, handle.ledger, handle.state_dir)

    @route("GET", "/api/projects/{project_id}/deployments/{deployment_id}")
    async def deployment(project_id: str, deployment_id: str) -> Any:
        from ..deploy.deploy_view import deployments_view

        handle = settings.registry.get(project_id)
        return await asyncio.to_thread(deployments_view, handle.ledger, handle.state_dir, deployment_id)

    # -- v_skill_audit_log: the same domain calls as `graphlemon skills log` / `skills show` ------------------
    @route("GET", "/api/projects/{project_id}/skills")
    async def skills(project_id: str) -> Any:
        from ..skills.iteration import skill_log

        handle = settings.registry.get(project_id)
        log = await asyncio.to_thread(skill_log, handle.state_dir, handle.ledger)
        return {"project_id": project_id, "iterations": [it.model_dump(mode="json") for it in log]}

    @route("GET", "/api/projects/{project_id}/skills/{iteration_id}")
    async def skill_iteration(project_id: str, iteration_id: str) -> Any:
        from ..skills.iteration import iteration_detail

        handle = settings.registry.get(project_id)
        detail = await asyncio.to_thread(iteration_detail, handle.state_dir, handle.ledger, iteration_id)
        return detail.model_dump(mode="json")

    @route("GET", "/api/projects/{project_id}/artifacts/{artifact_id}")
    async def artifact(project_id: str, artifact_id: str) -> Response:
        from ..artifacts import ARTIFACTS_DIR, ArtifactStore

        handle = settings.registry.get(project_id)
        record = ArtifactStore(handle.ledger).get(artifact_id)
        root = (handle.state_dir / ARTIFACTS_DIR).resolve()
        path = (handle.state_dir / record.path).resolve()
        if not path.is_relative_to(root) or not path.is_file():
            raise GraphLemonError(ErrorCode.SANDBOX_VIOLATION, f"artifact {artifact_id} is not a file under {root}")
        return PlainTextResponse(path.read_text(encoding="utf-8", errors="replace"),
                                 headers={"X-Content-Type-Options": "nosniff"})  # fmt: skip

    # -- actions -----------------------------------------------------------------------------------
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
        why = "manual_resume" + (f" with the note: {note}" if note else "")
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
        return {"task_status": update.task_status, "requeued": update.requeued, "limit": update.status.limit_value,
                "limit_type": update.status.limit_type, "used": update.status.used,
                "remaining": update.status.remaining, "run": run}  # fmt: skip

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
        from .project_registry import make_first_commit

        handle = settings.registry.get(project_id)
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

    @route("GET", "/api/projects/{project_id}/bugs")
    async def bugs(project_id: str) -> Any:
        """Every bug of the project, newest first, and the units to filter by (the page filters in place)."""
        from ..bugs import BugTracker

        handle = settings.registry.get(project_id)
        found = await asyncio.to_thread(BugTracker(handle.ledger).list)
        found.sort(key=lambda b: b.opened_at, reverse=True)
        units = await asyncio.to_thread(declared_units, handle)
        return {"project_id": project_id, "bugs": [views.bug_row(b) for b in found],
                "units": sorted(set(units) | {b.unit_id for b in found if b.unit_id})}  # fmt: skip

    @route("GET", "/api/projects/{project_id}/bugs/{bug_id}")
    async def bug_detail(project_id: str, bug_id: str) -> Any:
        from ..bugs import BugTracker

        handle = settings.registry.get(project_id)
        tracker = BugTracker(handle.ledger)
        found = await asyncio.to_thread(tracker.get, bug_id)  # BUG_NOT_FOUND
        history = [e for e in await asyncio.to_thread(handle.ledger.read, "bug") if e.bug_id == bug_id]
        return {**views.bug_row(found), "history": [e.model_dump(mode="json", exclude_none=True) for e in history]}

    # -- execution logs (REQ-13): v_log_viewer, v_log_retention_settings ---------------------------------
    @route("GET", "/api/projects/{project_id}/logs/{node_exec_id}")
    async def log_meta(project_id: str, node_exec_id: str) -> Any:
        from ..nodes import log_view
        from ..taskboard import TaskBoard

        handle = settings.registry.get(project_id)
        v = await asyncio.to_thread(log_view, handle.ledger, node_exec_id)
        tasks = await asyncio.to_thread(lambda: TaskBoard(handle.ledger).all()) if v.task_id else {}
        task = tasks.get(v.task_id) if v.task_id else None
        live, ended = views.log_liveness(v.status, v.node_status, task.status if task else None)
        return {**v.model_dump(mode="json"), "live": live, "ended_because": ended}

    async def log_download(request: Request) -> Response:
        """The whole log as a file (the viewer holds only a window of it)."""
        from starlette.responses import FileResponse

        from ..execlogs import log_path
        from ..nodes import log_view

        try:
            handle = settings.registry.get(request.path_params["project_id"])
            nid = request.path_params["node_exec_id"]
            v = await asyncio.to_thread(log_view, handle.ledger, nid)  # NODE_EXEC_NOT_FOUND
            path = log_path(handle.state_dir, nid)
            if v.log is None or v.status == "purged" or not path.is_file():
                raise GraphLemonError(ErrorCode.NODE_EXEC_NOT_FOUND, v.notice or f"{nid} has no log file",
                                      node_exec_id=nid)  # fmt: skip
        except GraphLemonError as exc:
            return error_response(exc)
        return FileResponse(path, media_type="text/plain; charset=utf-8", filename=f"{nid}.log",
                            headers={"X-Content-Type-Options": "nosniff"})  # fmt: skip

    async def log_range(request: Request) -> Response:
        """c_execution_log_get: bytes [start, start + max) of a node's log, whole lines (never the whole file)."""
        from ..execlogs import log_path, read_range
        from ..nodes import log_view

        try:
            handle = settings.registry.get(request.path_params["project_id"])
            nid = request.path_params["node_exec_id"]
            v = await asyncio.to_thread(log_view, handle.ledger, nid)  # NODE_EXEC_NOT_FOUND
            start, size = _int_param(request, "start", 0), _int_param(request, "max", 256 * 1024)
            if v.log is None or v.status == "purged":
                return JSONResponse({"start": 0, "end": 0, "size": 0, "text": "", "notice": v.notice})
            chunk = await asyncio.to_thread(read_range, log_path(handle.state_dir, nid), start, size)
        except GraphLemonError as exc:
            return error_response(exc)
        except FileNotFoundError:
            return JSONResponse({"start": 0, "end": 0, "size": 0, "text": ""})
        body = chunk.model_dump()
        if request.query_params.get("render") == "1":  # the lines for people (graphlemon/log_render.py)
            from ..log_render import render

            body["entries"] = [e.model_dump() for e in render(chunk.text)]
        return JSONResponse(body)

    routes.append(Route("/api/projects/{project_id}/logs/{node_exec_id}/range", log_range, methods=["GET"]))
    routes.append(Route("/api/projects/{project_id}/logs/{node_exec_id}/download", log_download, methods=["GET"]))

    @route("GET", "/api/projects/{project_id}/tasks/{task_id}/logs")
    async def task_logs(project_id: str, task_id: str) -> Any:
        from ..execlogs import NodeLogs

        handle = settings.registry.get(project_id)
        logs = await asyncio.to_thread(NodeLogs(handle.ledger).for_task, task_id)
        return {"task_id": task_id, "logs": [g.model_dump(mode="json") for g in logs]}

    @route("GET", "/api/projects/{project_id}/log-retention")
    async def log_retention(project_id: str) -> Any:
        handle = settings.registry.get(project_id)
        return await asyncio.to_thread(_retention_view, handle.ledger)

    @route("POST", "/api/projects/{project_id}/log-retention", RetentionBody)
    async def log_retention_update(project_id: str, body: RetentionBody) -> Any:
        from ..execlogs.retention import set_retention

        handle = settings.registry.get(project_id)
        await asyncio.to_thread(set_retention, handle.ledger, body.retention_days, by="console")
        return await asyncio.to_thread(_retention_view, handle.ledger)

    return routes


# -- helpers -------------------------------------------------------------------------------------------


async def _json(request: Request) -> Any:
    try:
        return await request.json()
    except ValueError:
        raise invalid_param("the request body is not JSON") from None


def _record_action(handle, task_id: str, summary: str, ref: str | None = None) -> None:
    """What a person did from the console stays on the task's timeline (the page shows it after a reload)."""
    from ..models import TimelineEvent

    handle.ledger.append(TimelineEvent(event="human_action", task_id=task_id, summary=summary, ref=ref))


def _int_param(request: Request, name: str, default: int) -> int:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError:
        raise invalid_param(f"{name} must be a whole number of bytes, not {raw!r}") from None


def _retention_view(ledger) -> dict:
    from ..execlogs import NodeLogs
    from ..execlogs.retention import retention

    cfg = retention(ledger)
    counts: dict[str, int] = {}
    for g in NodeLogs(ledger).all().values():
        counts[g.status] = counts.get(g.status, 0) + 1
    return {"retention_days": cfg.retention_days, "set_by": cfg.by, "set_at": cfg.ts.isoformat(), "logs": counts}
