"""What the console's REST routes and its live protocol share: the settings, one hub per project, the answer to a
refused request, and the task views with their run state (read from the hub's parsed records)."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field

from starlette.responses import JSONResponse

from ..errors import BAD_INPUT_CODES, ErrorCode, GraphLemonError
from . import views
from .hub import ProjectHub
from .project_registry import ProjectRegistry


@dataclass
class ConsoleSettings:
    token: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    loopback: bool = True  # bound to 127.0.0.1 / ::1 only
    registry: ProjectRegistry = field(default_factory=ProjectRegistry)
    force_polling: bool | None = None  # None: watchfiles decides (inotify, polling where it is not available)
    health: Callable[[], dict] | None = None  # `graphlemon serve`: what GET /healthz reports (REQ-15)


class Hubs:
    """One hub (one parse, one watcher) per project, however many requests and WebSockets arrive at once."""

    def __init__(self, settings: ConsoleSettings) -> None:
        self.settings = settings
        self._hubs: dict[str, ProjectHub] = {}
        self._lock = asyncio.Lock()

    async def get(self, project_id: str) -> ProjectHub:
        handle = await asyncio.to_thread(self.settings.registry.get, project_id)  # PROJECT_NOT_FOUND
        async with self._lock:
            hub = self._hubs.get(project_id)
            if hub is not None and hub.feed.state_dir == handle.state_dir:
                await hub.refresh()
                return hub
            if hub is not None:
                await hub.close()
            hub = await asyncio.to_thread(ProjectHub, handle.state_dir, force_polling=self.settings.force_polling)
            self._hubs[project_id] = hub
            return hub

    async def close(self) -> None:
        for hub in list(self._hubs.values()):
            await hub.close()


def error_response(exc: GraphLemonError, *, status: int | None = None, extra: dict | None = None) -> JSONResponse:
    if status is None:
        if exc.code.endswith("_NOT_FOUND"):
            status = 404
        elif exc.code in BAD_INPUT_CODES:
            status = 400
        elif exc.code == ErrorCode.LEDGER_CORRUPT:
            status = 500
        elif exc.code == ErrorCode.SANDBOX_VIOLATION:
            status = 403
        else:
            status = 409
    body = {"error": {"code": str(exc.code), "message": exc.message, **(extra or {})}}
    return JSONResponse(body, status_code=status)


# -- task views with their run state -------------------------------------------------------------------


def task_or_404(records: dict, task_id: str, nodes: list[dict]) -> dict:
    detail = views.task_detail(records, task_id, nodes)
    if detail is None:
        raise GraphLemonError(ErrorCode.TASK_NOT_FOUND, f"no task {task_id!r} in this project", task_id=task_id)
    return detail


def run_view(handle, task_id: str, tasks: dict | None = None) -> dict:
    """Whether anything runs the task (from its lease alone) and the actions its state allows. `tasks`: the
    project's tasks already folded (the live feed has them parsed), else they are read from the ledger."""
    from ..agents.budget import suggested_raise
    from ..taskboard import TaskBoard
    from ..wording import next_step
    from .launch import task_run

    tasks = TaskBoard(handle.ledger).all() if tasks is None else tasks
    task = tasks.get(task_id)
    if task is None:
        raise GraphLemonError(ErrorCode.TASK_NOT_FOUND, f"no task {task_id!r} in this project", task_id=task_id)
    run = task_run(handle, task).model_dump(mode="json")
    step = next_step(task_id, task.status, task.blocked_reason, handle.root, run["state"],
                     raise_to=suggested_raise(handle.ledger, task_id))  # fmt: skip
    return {
        "task_id": task_id,
        "status": task.status,
        **run,
        "actions": views.allowed_actions(task.status, run["state"]),
        "next": step.model_dump(),
    }


def dashboard_rows(handle, records: dict) -> list[dict]:
    """The dashboard's rows, each with whether anything runs its task (`run`: running, stopping, interrupted, idle
    or None)."""
    from .. import lease as leases
    from ..taskboard import fold
    from .launch import launches, task_run

    rows = views.dashboard(records)
    tasks, known, by_launch = fold(records.get("task", [])), launches(handle), leases.leases_by_launch(handle.ledger)
    for row in rows:
        task = tasks.get(row["task_id"])
        row["run"] = task_run(handle, task, known, by_launch).state if task else None
    return rows


def dashboard_state(handle, records: dict) -> dict:
    """The dashboard: its rows, the project's spend, and its open bugs (a bug a person reported on no task counts)."""
    rows = dashboard_rows(handle, records)
    return {"tasks": rows, "spend": views.project_spend(rows), "bugs": views.project_bugs(records)}


def with_run(handle, detail: dict, records: dict) -> dict:
    """The task view plus whether anything runs it (from its lease), which human actions its state allows and which
    one is the main one (`next`: the next step, the command included), the run's parameters, links to its Prefect
    flow runs, and the units its plan declared that have not started (from the feed's parsed records)."""
    from ..taskboard import fold
    from .prefect_links import flow_run_links

    task = detail["task"]
    task_id = task["task_id"]
    view = run_view(handle, task_id, fold(records.get("task", [])))
    pending = [] if task["status"] in ("done", "abandoned") else views.pending_units(
        records.get("node", []), task_id, declared_units(handle))  # fmt: skip
    return {**detail, "run": {"state": view["state"], "lease": view["lease"], "launch": view["launch"],
                            "last_run": view["last_run"]},
            "actions": view["actions"], "pending_units": pending, "next": view["next"],
            "params": views.run_params(records, task_id), "flow_runs": flow_run_links(detail["flow_runs"])}  # fmt: skip


def declared_units(handle) -> list[str]:
    from ..units import UnitFiles

    try:
        return UnitFiles(handle.state_dir).units().ids()
    except GraphLemonError:  # no plan yet (or one the loop itself will refuse): nothing declared to show
        return []
