"""The console's execution-log routes: v_log_viewer (a window of a node's log, the download) and
v_log_retention_settings."""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ..errors import ErrorCode, GraphLemonError, invalid_param
from . import views
from .router import Router
from .shared import (
    ConsoleSettings,
    error_response,
)


class RetentionBody(BaseModel):
    retention_days: Any = None  # checked by the domain (INVALID_PARAM for 0, negatives, text, absurd values)


def log_routes(router: Router, settings: ConsoleSettings) -> None:
    route = router.route

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

            body["entries"] = [e.model_dump() for e in render(chunk.text, chunk.start)]
        return JSONResponse(body)

    router.raw("/api/projects/{project_id}/logs/{node_exec_id}/range", log_range)
    router.raw("/api/projects/{project_id}/logs/{node_exec_id}/download", log_download)

    @route("GET", "/api/projects/{project_id}/tasks/{task_id}/logs")
    async def task_logs(project_id: str, task_id: str) -> Any:
        from ..execlogs import NodeLogs

        handle = settings.registry.get(project_id)
        logs = await asyncio.to_thread(NodeLogs(handle.ledger).for_task, task_id)
        return {"task_id": task_id, "logs": [g.model_dump(mode="json") for g in logs]}

    @route("GET", "/api/projects/{project_id}/logs")
    async def project_logs(project_id: str) -> Any:
        """Every execution log of the project, newest first (the nav's Logs page; the retention setting beside it)."""
        from ..execlogs import NodeLogs

        handle = settings.registry.get(project_id)
        logs = await asyncio.to_thread(lambda: list(NodeLogs(handle.ledger).all().values()))
        logs.sort(key=lambda g: g.created_at, reverse=True)
        return {"logs": [g.model_dump(mode="json") for g in logs]}

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
