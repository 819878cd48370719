"""`graphlemon status [TASK_ID]`: the project's tasks, and for a blocked task why and the evidence (REQ-09)."""

from __future__ import annotations

from collections import Counter
from typing import Annotated

import typer

from ..wording import REASON_WORDS, STATUS_WORDS, printable
from ._common import JsonOpt, ProjectOpt, WideOpt, console, emit_json, line, open_project
from .fit import Col, print_fitted


def register(app: typer.Typer) -> None:
    @app.command()
    def status(
        task_id: Annotated[str | None, typer.Argument(help="One task in detail (timeline, bugs, evidence).")] = None,
        project: ProjectOpt = None,
        as_json: JsonOpt = False,
        wide: WideOpt = False,
    ) -> None:
        """The project's tasks, blocked ones first with their reason and evidence pack; or one task in detail.
        Tables fit the terminal (task ids shown whole, a unique prefix names one too; --wide: every column)."""
        from ..bugs import BugTracker
        from ..lease import current, run_state
        from ..models import LEDGER_FILES, EscalationRecord, NodeEvent
        from ..taskboard import TaskBoard
        from ..violations import fold

        handle = open_project(project)
        ledger = handle.ledger
        tasks = sorted(
            TaskBoard(ledger).all().values(), key=lambda t: (t.status != "blocked_pending_human", t.created_at)
        )
        if task_id is not None:
            task_id = TaskBoard(ledger).resolve(task_id)  # TASK_NOT_FOUND for an unknown id; a unique prefix is enough
            tasks = [t for t in tasks if t.task_id == task_id]
        packs: dict[str, EscalationRecord] = {e.task_id: e for e in ledger.read_as("escalation", EscalationRecord)}
        blocked = [t for t in tasks if t.status == "blocked_pending_human"]
        held = {t.task_id: current(ledger, t.task_id) for t in tasks}
        states = {t.task_id: run_state(held[t.task_id], t.status) for t in tasks}
        # `run` keeps its three values (running, interrupted, null); `lease` says who holds the task, and a stop
        runs = {tid: {"stopping": "running", "idle": None}.get(st, st) if st else None for tid, st in states.items()}
        node_events = ledger.read_as("node", NodeEvent)
        refused = {t.task_id: fold(node_events, t.task_id) for t in tasks}
        # every ledger file is read, whatever the output: a corrupt line is LEDGER_CORRUPT in the table as in JSON
        records = {kind: len(ledger.read(kind)) for kind in LEDGER_FILES}
        if as_json:
            emit_json(
                {
                    "project_id": handle.project_id,
                    "root": str(handle.root),
                    "tasks": [
                        {
                            **t.model_dump(mode="json"),
                            "run": runs[t.task_id],
                            "lease": _lease_json(held[t.task_id], states[t.task_id]),
                            "violations": refused[t.task_id].as_dict(),
                        }
                        for t in tasks
                    ],  # fmt: skip
                    "blocked": [
                        {
                            "task_id": t.task_id,
                            "blocked_reason": t.blocked_reason,
                            "evidence": packs[t.task_id].summary_md if t.task_id in packs else None,
                        }
                        for t in blocked
                    ],  # fmt: skip
                    "bugs": dict(Counter(b.status for b in BugTracker(ledger).all().values())),
                    "records": records,
                }
            )
            return
        out = console()
        if task_id is not None:
            from .show import show_task

            show_task(handle, task_id, out, wide)
            shown = TaskBoard(ledger).get(task_id)
            if shown.status != "blocked_pending_human" and states.get(task_id) in ("idle", "interrupted"):
                from .show import print_next_step

                print_next_step(handle, shown, out)  # nothing runs it: the command that does
        else:
            _tasks_table(handle, tasks, runs, states, out, wide, refused)
        for task in blocked:
            if task.task_id in packs:
                from rich.markdown import Markdown
                from rich.panel import Panel

                out.print(Panel(Markdown(packs[task.task_id].summary_md), title=line(f"{task.task_id} needs a human")))
            from .show import print_next_step

            print_next_step(handle, task, out)


def _lease_json(lease, state) -> dict | None:
    """Who holds the task (its live lease), and whether a person asked it to stop; None when nothing runs it."""
    if state not in ("running", "stopping"):
        return None
    h = lease.holder
    return {"lease_id": lease.lease_id, "holder": h.label, "pid": h.pid, "host": h.host,
            "since": lease.since.isoformat(), "heartbeat": lease.heartbeat.isoformat(),
            "stop_requested_by": lease.stop.by if lease.stop else None}  # fmt: skip


def _first_goal_hint() -> str:
    """What starts a first task here: `run` with a model it can reach; without an API key, what works without one."""
    from ..agents import AgentSettings

    if AgentSettings.from_env().api_key is not None:
        return 'no tasks yet: `graphlemon run "GOAL"`'
    return ('no tasks yet: `graphlemon run "GOAL"` needs a model: ANTHROPIC_API_KEY set, or `--executor claude_code` '
            "with Claude Code logged in; without either, `graphlemon demo` runs a whole task on the shipped snake "
            "example (scripted: a replayed playbook, no model called), and `--executor scripted --playbook FILE` "
            "replays a playbook written for this repository")


def _tasks_table(handle, tasks, runs, states, out, wide: bool = False, refused: dict | None = None) -> None:
    from ..bugs import BugTracker

    bugs = Counter(b.status for b in BugTracker(handle.ledger).all().values())
    out.print(line(("project", "bold"), f" {handle.project_id}  {handle.root}"))
    out.print("bugs: " + (", ".join(f"{k} {v}" for k, v in sorted(bugs.items())) or "none"), highlight=False)
    if not tasks:
        out.print(_first_goal_hint(), highlight=False)
        return
    rows = []
    for t in tasks:  # the whole task id (a cut one names no task a person can copy); statuses in words
        count = refused[t.task_id].count if refused else 0
        colour = {"done": "yellow" if count else "green", "blocked_pending_human": "red"}.get(t.status, "yellow")
        status = line((STATUS_WORDS.get(t.status, t.status), colour))
        if runs[t.task_id] == "interrupted":  # nobody is running it
            status.append(" (interrupted)", style="red")
        elif states[t.task_id] in ("running", "stopping"):
            status.append(f" ({states[t.task_id]})", style="cyan")
        if count:  # a task with refused actions never reads as a clean "done"
            status.append(f" — with {count} refused action{'s' if count > 1 else ''}", style="yellow")
        reason = REASON_WORDS.get(t.blocked_reason, t.blocked_reason) if t.blocked_reason else t.note or ""
        rows.append([t.task_id, status, str(t.loop_round), printable(reason), printable(t.goal_text)])
    cols = [Col("task_id", whole=True), Col("status", whole=True), Col("round", whole=True), Col("reason / note"),
            Col("goal")]  # fmt: skip
    print_fitted(out, f"{len(tasks)} task(s)", cols, rows, wide, priority=["task_id", "status", "goal", "round"])
    flagged = [t.task_id for t in tasks if refused and refused[t.task_id].count]
    if flagged:
        out.print(f"refused actions: the sandbox undid or refused what an agent or a run tried; "
                  f"`graphlemon status {flagged[0]}` lists them.", highlight=False)  # fmt: skip
    stopped = [t.task_id for t in tasks if runs[t.task_id] == "interrupted"]
    if stopped:
        out.print(f"{len(stopped)} task(s) interrupted (their run was stopped before the task ended): "
                  f"`graphlemon resume {stopped[0]}` continues one from where it stopped.", highlight=False)  # fmt: skip
