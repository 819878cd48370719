"""The console's REST routes: reads and actions, as JSON; domain errors answer as `error` JSON (`shared.error_response`).

Every route reaches the domain through the same calls as the CLI; the guard (`security.py`) has already checked
the request before any route runs. Files are served only from a project's `.graphlemon/artifacts/`. Here: the
health, projects and the reads (the router: `router.py`); the actions are in `routes_actions.py`, the execution logs in `routes_logs.py`.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from ..errors import ErrorCode, GraphLemonError
from . import views
from .router import Router
from .routes_actions import action_routes
from .routes_logs import log_routes
from .routes_patches import patch_routes
from .shared import (
    ConsoleSettings,
    Hubs,
    dashboard_state,
    declared_units,
    error_response,
    task_or_404,
    with_run,
)


class AddProject(BaseModel):
    path: str
    git_init: bool = False
    first_commit: bool = False  # a repository with no commit yet: commit what it holds (the person agreed)


class NameBody(BaseModel):
    name: str = ""


def api_routes(settings: ConsoleSettings, hubs: Hubs) -> list[Route]:
    """Every REST route of the console, each bound to these settings and this project-hub cache."""
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

    @route("GET", "/api/words")
    async def words() -> Any:
        """The words the page shows for statuses, reasons, categories and timeline events (graphlemon/wording.py: the
        CLI's too)."""
        from .. import wording

        return {"status": wording.STATUS_WORDS, "reason": wording.REASON_WORDS, "node": wording.NODE_WORDS,
                "category": wording.CATEGORY_WORDS, "event": wording.EVENT_WORDS}  # fmt: skip

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
        state = await asyncio.to_thread(dashboard_state, settings.registry.get(project_id), records)
        return {"project_id": project_id, **state}

    @route("GET", "/api/runs")
    async def runs() -> Any:
        """Every task of every listed project, newest first (the runs page filters them by status and date)."""
        from .runs_view import all_runs

        return await asyncio.to_thread(all_runs, settings.registry)

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
        from .rendering import diff_lines

        detail = await asyncio.to_thread(iteration_detail, handle.state_dir, handle.ledger, iteration_id)
        return {**detail.model_dump(mode="json"), "diff_lines": [line.model_dump() for line in diff_lines(detail.diff or "")]}

    @route("GET", "/api/projects/{project_id}/artifacts/{artifact_id}")
    async def artifact(project_id: str, artifact_id: str) -> Response:
        handle = settings.registry.get(project_id)
        _record, text = await asyncio.to_thread(_artifact_text, handle, artifact_id)
        return PlainTextResponse(text, headers={"X-Content-Type-Options": "nosniff"})

    @route("GET", "/api/projects/{project_id}/artifacts/{artifact_id}/view")
    async def artifact_page(project_id: str, artifact_id: str) -> Any:
        """The artifact's own page: its record, and its text as people read it (a diff's numbered lines, markdown
        rendered safely: rendering.py)."""
        from .rendering import artifact_view

        handle = settings.registry.get(project_id)
        record, text = await asyncio.to_thread(_artifact_text, handle, artifact_id)
        return {"artifact": record.model_dump(mode="json"), **artifact_view(record.artifact_type,
                                                                             Path(record.path).suffix, text)}  # fmt: skip


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


def _artifact_text(handle, artifact_id: str):
    """ARTIFACT_NOT_FOUND; SANDBOX_VIOLATION for a record naming a file outside `.graphlemon/artifacts/`."""
    from ..artifacts import ARTIFACTS_DIR, ArtifactStore

    record = ArtifactStore(handle.ledger).get(artifact_id)
    root = (handle.state_dir / ARTIFACTS_DIR).resolve()
    path = (handle.state_dir / record.path).resolve()
    if not path.is_relative_to(root) or not path.is_file():
        raise GraphLemonError(ErrorCode.SANDBOX_VIOLATION, f"artifact {artifact_id} is not a file under {root}")
    return record, path.read_text(encoding="utf-8", errors="replace")
