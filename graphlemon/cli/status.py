"""`graphlemon status [TASK_ID]`: the project's tasks, and for a blocked task why and the evidence (REQ-09)."""

from __future__ import annotations

from collections import Counter
from typing import Annotated

import typer

from ._common import JsonOpt, ProjectOpt, console, emit_json, line, open_project


def register(app: typer.Typer) -> None:
    @app.command()
    def status(
        task_id: Annotated[str | None, typer.Argument(help="One task in detail (timeline, bugs, evidence).")] = None,
        project: ProjectOpt = None,
        as_json: JsonOpt = False,
    ) -> None:
        """The project's tasks, blocked ones first with their reason and evidence pack; or one task in detail."""
        from ..bugs import BugTracker
        from ..devloop.runmarker import run_state
        from ..models import LEDGER_FILES, EscalationRecord
        from ..taskboard import TaskBoard

        handle = open_project(project)
        ledger = handle.ledger
        tasks = sorted(TaskBoard(ledger).all().values(), key=lambda t: (t.status != "blocked_pending_human", t.created_at))
        if task_id is not None:
            TaskBoard(ledger).get(task_id)  # TASK_NOT_FOUND for an unknown id
            tasks = [t for t in tasks if t.task_id == task_id]
        packs: dict[str, EscalationRecord] = {e.task_id: e for e in ledger.read_as("escalation", EscalationRecord)}
        blocked = [t for t in tasks if t.status == "blocked_pending_human"]
        runs = {t.task_id: run_state(handle.state_dir, t.task_id, t.status) for t in tasks}
        if as_json:
            emit_json(
                {
                    "project_id": handle.project_id,
                    "root": str(handle.root),
                    "tasks": [{**t.model_dump(mode="json"), "run": runs[t.task_id]} for t in tasks],
                    "blocked": [
                        {"task_id": t.task_id, "blocked_reason": t.blocked_reason,
                         "evidence": packs[t.task_id].summary_md if t.task_id in packs else None}
                        for t in blocked
                    ],  # fmt: skip
                    "bugs": dict(Counter(b.status for b in BugTracker(ledger).all().values())),
                    "records": {kind: len(ledger.read(kind)) for kind in LEDGER_FILES},
                }
            )
            return
        out = console()
        if task_id is not None:
            from .show import show_task

            show_task(handle, task_id, out)
        else:
            _tasks_table(handle, tasks, runs, out)
        for task in blocked:
            if task.task_id in packs:
                from rich.markdown import Markdown
                from rich.panel import Panel

                out.print(Panel(Markdown(packs[task.task_id].summary_md), title=line(f"{task.task_id} needs a human")))


def _tasks_table(handle, tasks, runs, out) -> None:
    from rich.table import Table

    from ..bugs import BugTracker

    bugs = Counter(b.status for b in BugTracker(handle.ledger).all().values())
    out.print(line(("project", "bold"), f" {handle.project_id}  {handle.root}"))
    out.print("bugs: " + (", ".join(f"{k} {v}" for k, v in sorted(bugs.items())) or "none"), highlight=False)
    if not tasks:
        out.print('no tasks yet: `graphlemon run "GOAL"`')
        return
    table = Table(title=f"{len(tasks)} task(s)")
    for column in ("task_id", "status", "round", "reason / note", "goal"):
        table.add_column(column, overflow="fold", no_wrap=column == "task_id")
    for t in tasks:
        colour = {"done": "green", "blocked_pending_human": "red"}.get(t.status, "yellow")
        status = line((t.status, colour))
        note = t.blocked_reason or t.note or ""
        if runs[t.task_id] == "interrupted":  # nobody is running it
            status.append(" (interrupted)", style="red")
        table.add_row(t.task_id, status, str(t.loop_round), note, t.goal_text)
    out.print(table)
    stopped = [t.task_id for t in tasks if runs[t.task_id] == "interrupted"]
    if stopped:
        out.print(f"{len(stopped)} task(s) interrupted (their run was stopped before the task ended): "
                  f"`graphlemon resume {stopped[0]}` continues one from where it stopped.", highlight=False)  # fmt: skip
