"""The console's SDD-patch approval: a page of its own (`/patches`) and its two routes, through the same domain calls
as `graphlemon approve-patch` (graphlemon/stages/patch_approval.py). A person reads the diff and approves it with
one click; the approval is recorded on the task's timeline (`sdd_patch_approved`, and `human_action`)."""

from __future__ import annotations

import asyncio
from importlib import resources
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from .router import Router
from .security import TOKEN_COOKIE, _page_headers, _same
from .shared import ConsoleSettings


def patch_routes(router: Router, settings: ConsoleSettings) -> None:
    route = router.route

    @route("GET", "/api/projects/{project_id}/patches")
    async def pending(project_id: str) -> Any:
        from ..stages.patch_approval import pending_patches

        handle = settings.registry.get(project_id)
        return {"project_id": project_id,
                "patches": [p.model_dump(mode="json") for p in await asyncio.to_thread(pending_patches, handle)]}  # fmt: skip

    @route("POST", "/api/projects/{project_id}/patches/{run_id}/approve")
    async def approve(project_id: str, run_id: str) -> Any:
        from ..models import TimelineEvent
        from ..stages.patch_approval import approve as approve_patch
        from ..stages.patch_approval import preview

        handle = settings.registry.get(project_id)
        record = await asyncio.to_thread(approve_patch, handle, run_id, by="console")
        shown = await asyncio.to_thread(preview, handle, run_id)
        event = TimelineEvent(event="human_action", task_id=shown.task_id, ref=record.artifact_id,
                              summary=f"approved the SDD patch of {run_id} ({record.artifact_id})")  # fmt: skip
        await asyncio.to_thread(handle.ledger.append, event)
        return {"run_id": run_id, "artifact_id": record.artifact_id, "path": record.path, "task_id": shown.task_id}

    async def page(request: Request) -> Response:
        html = (resources.files("graphlemon.console") / "static" / "patches.html").read_text(encoding="utf-8")
        token = settings.token if _same(request.cookies.get(TOKEN_COOKIE), settings.token) else ""
        return HTMLResponse(html.replace("{{TOKEN}}", token), headers=_page_headers())

    router.raw("/patches", page)
