"""The console's REST routes: reads and actions, as JSON; domain errors answer as `error` JSON (`shared.error_response`).

Every route reaches the domain through the same calls as the CLI; the guard (`security.py`) has already checked
the request before any route runs. Files are served only from a project's `.graphlemon/artifacts/`. Here: the
router, health, projects and the reads; the actions are in `routes_actions.py`, the execution logs in `routes_logs.py`.
"""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError
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
    task_or_404,
    with_run,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable


class AddProject(BaseModel):
    path: str
    git_init: bool = False
    first_commit: bool = False  # a repository with no commit yet: commit what it holds (the person agreed)


class NameBody(BaseModel):
    name: str = ""


class Router:
    """The routes as they are declared: `@router.route(method, path, Body)` makes a JSON endpoint (path parameters
    and the validated body as arguments; domain errors as `error` JSON); `router.raw` adds a plain Starlette one."""

    def __init__(self) -> None:
        self.routes: list[Route] = []

    def route(self, method: str, path: str, body: type[BaseModel] | None = None):
        routes = self.routes

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

    def raw(self, path: str, endpoint: Callable[[Request], Awaitable[Response]], method: str = "GET") -> None:
        self.routes.append(Route(path, endpoint, methods=[method]))


def api_routes(settings: ConsoleSettings, hubs: Hubs) -> list[Route]:
    """Every REST route of the console, each bound to these settings and this project-hub cache."""
    from .routes_actions import action_routes
    from .routes_logs import log_routes
    from .routes_patches import patch_routes

    router = Router()
    _health_and_project_routes(router, settings)
    _read_routes(router, settings, hubs)
    action_routes(router, settings)
    log_routes(router, settings)
    patch_routes(router, settings)  # the SDD-patch approval page (routes_patches.py)
    return router.routes


def _health_and_project_routes(router: Router, settings: ConsoleSettings) -> None:
    route = router.route

    # -- health (REQ-15: the deploy supervisor's health endpoint) -----------------------------------------
    async def healthz(request: Request) -> Response:
        body = {"status": "ok", "pid": os.getpid(), **(settings.health() if settings.health else {})}
        return JSONResponse(
            body, status_code=200 if body["status"] == "ok" else 503, headers={"Cache-Control": "no-store"}
        )

    router.raw("/healthz", healthz)

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


def _read_routes(router: Router, settings: ConsoleSettings, hubs: Hubs) -> None:
    route = router.route

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


async def _json(request: Request) -> Any:
    try:
        return await request.json()
    except ValueError:
        raise invalid_param("the request body is not JSON") from None
