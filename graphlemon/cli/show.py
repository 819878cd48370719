"""Rendering a task for people: status, timeline, bugs, and a short convergence summary."""

from __future__ import annotations

from collections import Counter

from ._common import line


def task_summary(handle, task_id: str) -> dict:
    """The numbers `graphlemon status` and the demo print (pure reads of the ledger)."""
    from ..bugs import BugTracker
    from ..models import NodeEvent, RunRecord, TaskSettingsRecord, UsageRecord
    from ..taskboard import TaskBoard
    from ..violations import fold

    task = TaskBoard(handle.ledger).get(task_id)
    bugs = BugTracker(handle.ledger).list(task_id=task_id)
    runs = [r for r in handle.ledger.read_as("run", RunRecord) if r.task_id == task_id]
    usage = [u for u in handle.ledger.read_as("usage", UsageRecord) if u.task_id == task_id]
    settings = handle.ledger.read_as("task_settings", TaskSettingsRecord)  # what it runs with: its executor
    return {
        "task": task,
        "bugs": bugs,
        "bug_status": Counter(b.status for b in bugs),
        "unit_runs": sum(r.scope == "unit" for r in runs),
        "red_unit_runs": sum(r.scope == "unit" and not r.ok for r in runs),
        "tokens": sum(u.input_tokens + u.output_tokens + u.cache_read_tokens + u.cache_write_tokens for u in usage),
        "cost_usd": sum(u.cost_usd for u in usage),
        "calls": len(usage),
        "executors": sorted({u.executor for u in usage}),
        "executor_set": next((r.settings.get("executor") for r in reversed(settings) if r.task_id == task_id), None),
        "violations": fold(handle.ledger.read_as("node", NodeEvent), task_id),
    }


def show_task(handle, task_id: str, out, wide: bool = False) -> None:
    from ..models import TimelineEvent
    from ..violations import with_refusals
    from ..wording import duration_words, event_words, printable, route_words, status_words, summary_words
    from .fit import Col, print_fitted

    s = task_summary(handle, task_id)
    task = s["task"]
    refused = s["violations"]
    colour = "green" if task.status == "done" else "red" if task.status == "blocked_pending_human" else "yellow"
    colour = "yellow" if refused.count and colour == "green" else colour  # never a clean green with refusals
    words = with_refusals(status_words(task.status, task.blocked_reason), refused)
    out.print(line("\n", (task.task_id, "bold"), ": ", (words, colour), f" — {printable(task.goal_text)}"))
    ended = task.status in ("done", "abandoned", "blocked_pending_human", "paused")
    span = (f"started {task.created_at:%Y-%m-%d %H:%M:%S} UTC"
            + (f" · {'ended' if task.terminal else 'stopped'} {task.updated_at:%Y-%m-%d %H:%M:%S} UTC · took "
               f"{duration_words((task.updated_at - task.created_at).total_seconds())}" if ended else ""))  # fmt: skip
    out.print(f"  {span}", markup=False, highlight=False)
    if task.note:
        out.print(f"  {printable(task.note)}", markup=False)
    said = [n for n in task.decision_resumes if n]
    if said and said[-1] != task.note:  # walk5: a resume's note was stored but shown nowhere
        out.print(f"  your resume note: {printable(said[-1])}", markup=False, highlight=False)
    events = [e for e in handle.ledger.read_as("timeline", TimelineEvent) if e.task_id == task_id]
    day = len({e.ts.date() for e in events}) > 1  # a timeline over more than one day shows the date
    rows = [[f"{e.ts:%Y-%m-%d %H:%M:%S}" if day else f"{e.ts:%H:%M:%S}", event_words(e.event), e.unit_id or "",
             printable(summary_words(e.event, e.summary))] for e in events]  # fmt: skip
    cols = [Col("time", whole=True), Col("event", whole=True), Col("unit", whole=True), Col("summary")]
    print_fitted(out, "timeline", cols, rows, wide, priority=["time", "event", "summary", "unit"])
    if s["bugs"]:
        rows = [[b.bug_id, b.unit_id or "", b.status, b.root_cause_category or "",
                 route_words(b.suggested_route) if b.suggested_route else "", printable(b.title)] for b in s["bugs"]]  # fmt: skip
        cols = [Col("bug_id", whole=True), Col("unit", whole=True), Col("status", whole=True),
                Col("root cause", whole=True), Col("route", whole=True), Col("title")]  # fmt: skip
        print_fitted(out, "bugs", cols, rows, wide, priority=["bug_id", "status", "title", "unit"])
    if refused.count:
        rows = [[f"{a.ts:%H:%M:%S}", a.stage, a.unit_id or "", a.shown] for a in refused.actions]
        cols = [Col("time", whole=True), Col("stage", whole=True), Col("unit", whole=True), Col("refused")]
        print_fitted(out, f"refused actions ({refused.count}): the sandbox undid or refused each", cols, rows, wide,
                     priority=["time", "stage", "refused", "unit"])  # fmt: skip
    statuses = ", ".join(f"{k} {v}" for k, v in sorted(s["bug_status"].items())) or "none"
    set_to = s["executor_set"]
    executors = ", ".join(s["executors"]) or (f"{set_to} (no model call recorded)" if set_to else "none")
    out.print(
        f"convergence: {task.loop_round + 1} round(s); {s['unit_runs']} unit test runs ({s['red_unit_runs']} red); "
        f"bugs: {statuses}; usage: {s['tokens']:,} tokens, ${s['cost_usd']:.4f} in {s['calls']} call(s) "
        f"(executor: {executors})",
        highlight=False,
    )


def print_next_step(handle, task, out) -> None:
    """After a run stops: what to do now, as a command that works as printed (the full task id, the project's
    absolute path, graphlemon's own path when it is not on PATH), and the task's page in a running console."""
    from ..lease import current, run_state
    from ..wording import next_step, printable, status_words
    from ._common import invocation

    run = run_state(current(handle.ledger, task.task_id), task.status)
    from ..agents.budget import suggested_raise

    step = next_step(task.task_id, task.status, task.blocked_reason, handle.root, run, invocation(),
                     suggested_raise(handle.ledger, task.task_id))  # fmt: skip
    out.print(line(("next: ", "bold"), printable(step.why)))
    if step.action == "none" and not task.terminal:  # a done or abandoned task: where to read it
        return
    out.print(f"  {step.command}", markup=False, highlight=False, soft_wrap=True)  # one line, copied whole
    url = console_task_url(handle.project_id, task.task_id)
    words = f"{step.label} on the task's page" if step.label else "the task's page"
    if url:
        out.print(f"  or in the console ({words}): {url}", markup=False, highlight=False, soft_wrap=True)
    elif step.action != "none":
        out.print(f"  or in the console: `{invocation()} console`, then {words} ({status_words(task.status, task.blocked_reason)})",
                  markup=False, highlight=False, soft_wrap=True)  # fmt: skip


def print_stopping_next_step(handle, task_id: str, out, *, then: str) -> None:
    """After a stop asked without waiting: the command to see the task stopped and, for a stop, the one to resume
    it then (as the waiting stop prints them: full paths), and the task's page in a running console."""
    from ..wording import next_step
    from ._common import invocation

    see = next_step(task_id, "planning", None, handle.root, "stopping", invocation())
    out.print(line(("next: ", "bold"), "its run stops at its next safe point; see where the task stands with"))
    out.print(f"  {see.command}", markup=False, highlight=False, soft_wrap=True)
    if then == "block":
        resume = next_step(task_id, "blocked_pending_human", "stopped_by_person", handle.root, None, invocation())
        out.print("  then, once it is stopped, resume it with", markup=False, highlight=False)
        out.print(f"  {resume.command}", markup=False, highlight=False, soft_wrap=True)
    url = console_task_url(handle.project_id, task_id)
    if url:
        out.print(f"  or in the console (the task's page): {url}", markup=False, highlight=False, soft_wrap=True)


def console_task_url(project_id: str, task_id: str) -> str | None:
    """The task's page in the newest console running on this machine for this user (none running: None)."""
    from ..console.running_consoles import running

    consoles = running()
    return consoles[-1].task_url(project_id, task_id) if consoles else None
