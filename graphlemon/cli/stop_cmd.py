"""`graphlemon stop TASK` and `graphlemon abandon TASK`: a person's stop of a task's run, wherever it runs.

The run stops at its next safe point and keeps what it finished (docs/devloop.md, "Stop"). Both wait for it by
default (`--no-wait`: ask and return).
"""

from __future__ import annotations

from typing import Annotated

import typer

from ._common import JsonOpt, ProjectOpt, console, emit_json, open_project, seconds

NoteOpt = Annotated[str, typer.Option(help="Why (kept in the task's history and its evidence pack).")]
WaitOpt = Annotated[bool, typer.Option("--wait/--no-wait", help="Wait until the run has stopped (default).")]
TimeoutOpt = Annotated[
    float, typer.Option(help="Seconds to wait for the run's next safe point.", callback=seconds(7 * 24 * 3600))
]
BY = "a person (graphlemon {command})"


def register(app: typer.Typer) -> None:
    @app.command()
    def stop(
        task_id: Annotated[str, typer.Argument(help="The task whose run to stop.")],
        note: NoteOpt = "",
        wait: WaitOpt = True,
        timeout: TimeoutOpt = 600.0,
        project: ProjectOpt = None,
        as_json: JsonOpt = False,
    ) -> None:
        """Stop the task's run at its next safe point: finished work is kept, the task waits for you
        (stopped by a person) and `graphlemon resume` continues it without redoing anything finished."""
        _stop(task_id, note, wait, timeout, project, as_json, then="block")

    @app.command()
    def abandon(
        task_id: Annotated[str, typer.Argument(help="The task to end.")],
        note: NoteOpt = "",
        wait: WaitOpt = True,
        timeout: TimeoutOpt = 600.0,
        project: ProjectOpt = None,
        as_json: JsonOpt = False,
    ) -> None:
        """End the task (abandoned), from any state it has not ended in; a running task is stopped at its next safe
        point first."""
        _stop(task_id, note, wait, timeout, project, as_json, then="abandon")


def _stop(task_id: str, note: str, wait: bool, timeout: float, project, as_json: bool, *, then: str) -> None:
    from ..devloop.stopping import stop_task, wait_stopped
    from ..taskboard import TaskBoard
    from ..wording import status_words
    from .show import print_next_step, print_stopping_next_step

    handle = open_project(project)
    task_id = TaskBoard(handle.ledger).resolve(task_id)
    by = BY.format(command="stop" if then == "block" else "abandon")
    result = stop_task(handle, task_id, by=by, note=note.strip(), then=then)  # type: ignore[arg-type]
    out = console()
    if not as_json:
        out.print(result.message, markup=False, highlight=False)
    task = result.task
    if wait and result.outcome == "stopping":
        if not as_json:
            out.print(f"waiting for it (up to {timeout:g} s) ...", markup=False, highlight=False)
        task = wait_stopped(handle, task_id, result, by=by, note=note.strip(), then=then, timeout=timeout)  # type: ignore[arg-type]
    if as_json:
        emit_json({"task_id": task_id, "outcome": result.outcome, "status": task.status,
                   "blocked_reason": task.blocked_reason, "holder": result.holder, "lease_id": result.lease_id,
                   "note": task.note})  # fmt: skip
        return
    if result.outcome == "stopping" and wait:
        out.print(f"task {task_id}: {status_words(task.status, task.blocked_reason)}", markup=False,
                  highlight=False)  # fmt: skip
        if task.status == "done":
            out.print("its run finished its last step before a safe point came: nothing was stopped",
                      markup=False, highlight=False)  # fmt: skip
    if result.outcome == "stopping" and not wait:
        print_stopping_next_step(handle, task_id, out, then=then)
    elif task.status in ("blocked_pending_human", "abandoned"):  # walk5: an abandon printed no next step
        print_next_step(handle, task, out)  # the command as it works when pasted (full paths), and the task's page
