"""Rendering a task for people: status, timeline, bugs, and a short convergence summary."""

from __future__ import annotations

from collections import Counter

from ._common import line


def task_summary(handle, task_id: str) -> dict:
    """The numbers `graphlemon status` and the demo print (pure reads of the ledger)."""
    from ..bugs import BugTracker
    from ..models import NodeEvent, RunRecord, UsageRecord
    from ..taskboard import TaskBoard
    from ..violations import fold

    task = TaskBoard(handle.ledger).get(task_id)
    bugs = BugTracker(handle.ledger).list(task_id=task_id)
    runs = [r for r in handle.ledger.read_as("run", RunRecord) if r.task_id == task_id]
    usage = [u for u in handle.ledger.read_as("usage", UsageRecord) if u.task_id == task_id]
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
        "violations": fold(handle.ledger.read_as("node", NodeEvent), task_id),
    }


def show_task(handle, task_id: str, out, wide: bool = False) -> None:
    from ..models import TimelineEvent
    from .fit import Col, print_fitted

    s = task_summary(handle, task_id)
    task = s["task"]
    from ..violations import status_words

    refused = s["violations"]
    colour = "green" if task.status == "done" else "red" if task.status == "blocked_pending_human" else "yellow"
    colour = "yellow" if refused.count and colour == "green" else colour  # never a clean green with refusals
    reason = f" ({task.blocked_reason})" if task.blocked_reason else ""
    out.print(line("\n", (task.task_id, "bold"), ": ", (f"{status_words(task.status, refused)}{reason}", colour),
                   f" — {task.goal_text}"))  # fmt: skip
    if task.note:
        out.print(f"  {task.note}", markup=False)
    events = [e for e in handle.ledger.read_as("timeline", TimelineEvent) if e.task_id == task_id]
    rows = [[f"{e.ts:%H:%M:%S}", e.event, e.unit_id or "", e.summary] for e in events]
    cols = [Col("time", whole=True), Col("event", whole=True), Col("unit", whole=True), Col("summary")]
    print_fitted(out, "timeline", cols, rows, wide, priority=["time", "event", "summary", "unit"])
    if s["bugs"]:
        rows = [[b.bug_id, b.unit_id or "", b.status, b.root_cause_category or "", b.suggested_route or "", b.title]
                for b in s["bugs"]]  # fmt: skip
        cols = [Col("bug_id", whole=True), Col("unit", whole=True), Col("status", whole=True),
                Col("root cause", whole=True), Col("route", whole=True), Col("title")]  # fmt: skip
        print_fitted(out, "bugs", cols, rows, wide, priority=["bug_id", "status", "title", "unit"])
    if refused.count:
        rows = [[f"{a.ts:%H:%M:%S}", a.stage, a.unit_id or "", a.shown] for a in refused.actions]
        cols = [Col("time", whole=True), Col("stage", whole=True), Col("unit", whole=True), Col("refused")]
        print_fitted(out, f"refused actions ({refused.count}): the sandbox undid or refused each", cols, rows, wide,
                     priority=["time", "stage", "refused", "unit"])  # fmt: skip
    statuses = ", ".join(f"{k} {v}" for k, v in sorted(s["bug_status"].items())) or "none"
    executors = ", ".join(s["executors"]) or "none"
    out.print(
        f"convergence: {task.loop_round + 1} round(s); {s['unit_runs']} unit test runs ({s['red_unit_runs']} red); "
        f"bugs: {statuses}; usage: {s['tokens']:,} tokens, ${s['cost_usd']:.4f} in {s['calls']} call(s) "
        f"(executor: {executors})",
        highlight=False,
    )
