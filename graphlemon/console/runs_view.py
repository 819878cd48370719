"""The runs page: every task of every project the console lists, newest first, with its times and whether anything
runs it (`run`, from its lease alone, as on the task page: a task not ended that no run holds is not "going on"; the
page filters by status and date in place; a filtered list is a link)."""

from __future__ import annotations

from typing import Any

from .. import lease as leases
from ..errors import GraphLemonError
from ..taskboard import TaskBoard
from ..wording import status_words
from .views import task_times


def all_runs(registry) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    skipped: list[dict[str, str]] = []
    for project in registry.list():
        if not project.available:
            continue
        try:
            ledger = registry.get(project.project_id).ledger
            tasks = TaskBoard(ledger).all()
        except GraphLemonError as exc:  # a damaged ledger is named, never skipped silently
            skipped.append({"project_id": project.project_id, "name": project.name, "error": f"{exc.code}: {exc.message}"})
            continue
        for task in tasks.values():
            rows.append({"project_id": project.project_id, "project": project.name, "task_id": task.task_id,
                         "goal_text": task.goal_text, "status": task.status, "blocked_reason": task.blocked_reason,
                         "words": status_words(task.status, task.blocked_reason), "loop_round": task.loop_round,
                         "updated_at": task.updated_at.isoformat(),
                         **_run(ledger, task), **task_times(task)})  # fmt: skip
    rows.sort(key=lambda r: r["started"], reverse=True)
    return {"runs": rows, "unreadable": skipped}


def _run(ledger, task) -> dict[str, Any]:
    history = leases.history(ledger, task.task_id)
    last = leases.last_run(history)
    return {"run": leases.run_state(leases.latest(history), task.status),
            "last_run": last.model_dump(mode="json") if last else None}
