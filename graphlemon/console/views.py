"""What the console's pages show, computed from ledger records (folds of the domain, no I/O).

The same functions serve the REST answers and the WebSocket snapshots, so a page's first
paint and its live updates come from one place.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Any

from .. import bugs as bugfold
from .. import nodes as nodefold
from .. import taskboard, violations
from ..models import (
    ArtifactRecord,
    BudgetConfig,
    EscalationRecord,
    LeaseEvent,
    NodeEvent,
    RunRecord,
    TaskEvent,
    TimelineEvent,
    UsageRecord,
)
from ..wording import status_words, summary_words

# the dashboard's order: what needs a person or is moving first, finished last
STATUS_ORDER = {
    "blocked_pending_human": 0,
    "waiting_for_quota": 1,
    "planning": 2,
    "coding": 2,
    "integrating": 2,
    "validating": 2,
    "queued": 3,
    "created": 3,
    "paused": 4,
    "done": 5,
    "abandoned": 6,
}
OPEN_BUG = frozenset({"open", "fixing", "reopened"})
TIMELINE_LIMIT = 500  # the task page shows the latest milestones; `graphlemon status TASK` has them all

Records = dict[str, list]


def dashboard(records: Records) -> list[dict[str, Any]]:
    """One row per task: status, round, spend against budget, open bugs."""
    tasks = taskboard.fold(records.get("task", []))
    bugs = bugfold.fold(records.get("bug", []))
    spend = _spend(records.get("usage", []))
    budgets = _budgets(records.get("budget", []))
    open_bugs = Counter(b.task_id for b in bugs.values() if b.status in OPEN_BUG)
    refused = Counter(e.task_id for e in records.get("node", []) if isinstance(e, NodeEvent) and e.event == "violation")
    rows = []
    for task in tasks.values():
        tokens, cost = spend.get(task.task_id, (0, 0.0))
        rows.append({
            "task_id": task.task_id,
            "goal_text": task.goal_text,
            "status": task.status,
            "blocked_reason": task.blocked_reason,
            "loop_round": task.loop_round,
            "updated_at": task.updated_at.isoformat(),
            "used_tokens": tokens,
            "used_cost_usd": round(cost, 6),
            "budget": _budget_view(budgets.get(task.task_id), tokens, cost),
            "open_bugs": open_bugs.get(task.task_id, 0),
            "refused_actions": refused.get(task.task_id, 0),  # violations.fold's count: never a clean "done"
        })  # fmt: skip
    rows.sort(key=lambda r: (STATUS_ORDER.get(r["status"], 9), r["updated_at"]), reverse=False)
    return rows


def project_spend(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """What the project's tasks used in all: tokens and dollars."""
    return {"tokens": sum(r["used_tokens"] for r in rows), "cost_usd": round(sum(r["used_cost_usd"] for r in rows), 6),
            "tasks": len(rows)}  # fmt: skip


def flow_runs(records: Records, task_id: str) -> list[dict]:
    """Every Prefect flow run that ran the task, oldest first: the one that created it (its task events) and each one
    that held its lease — took or adopted it (a deployment run handed the lease), or renewed it with its id (a
    `graphlemon run` / `resume --engine prefect` takes the lease as its process, then its flow run names itself on
    it in `drive`)."""
    found: dict[str, str] = {}
    for e in records.get("task", []):
        if isinstance(e, TaskEvent) and e.task_id == task_id and e.flow_run_id:
            found.setdefault(e.flow_run_id, e.ts.isoformat())
    for e in records.get("lease", []):
        if isinstance(e, LeaseEvent) and e.task_id == task_id and e.flow_run_id and e.event in RAN_IT:
            found.setdefault(e.flow_run_id, e.ts.isoformat())
    return [{"flow_run_id": run, "ts": ts} for run, ts in sorted(found.items(), key=lambda item: item[1])]


RAN_IT = ("taken", "taken_over", "adopted", "renewed")  # the lease events of a holder that runs the task


def task_detail(records: Records, task_id: str, nodes: list[dict] | None = None) -> dict[str, Any] | None:
    """Everything the task page shows; None if the task is not in the records. `nodes`: the task's node
    executions already folded (the feed keeps them), else they are folded here."""
    task = taskboard.fold(e for e in records.get("task", []) if e.task_id == task_id).get(task_id)
    if task is None:
        return None
    if nodes is None:
        nodes = [
            n.model_dump(mode="json")
            for n in nodefold.fold(e for e in records.get("node", []) if e.task_id == task_id).values()
        ]
    failures = attempt_failures(records.get("node", []), task_id)
    waits = waiting_spans(e for e in records.get("task", []) if e.task_id == task_id)
    nodes = [{**n, "failures": failures.get(n["node_exec_id"], []), **node_times(n, waits)} for n in nodes]
    bugs = [b for b in bugfold.fold(records.get("bug", [])).values() if b.task_id == task_id]
    tokens, cost = _spend(records.get("usage", [])).get(task_id, (0, 0.0))
    usage = [u for u in records.get("usage", []) if isinstance(u, UsageRecord) and u.task_id == task_id]
    by_role: dict[str, dict[str, float]] = {}
    for u in usage:
        row = by_role.setdefault(u.role, {"calls": 0, "tokens": 0, "cost_usd": 0.0})
        row["calls"] += 1
        row["tokens"] += _tokens(u)
        row["cost_usd"] = round(row["cost_usd"] + u.cost_usd, 6)
    timeline = [e for e in records.get("timeline", []) if isinstance(e, TimelineEvent) and e.task_id == task_id]
    escalations = [e for e in records.get("escalation", []) if isinstance(e, EscalationRecord) and e.task_id == task_id]
    budgets = _budgets(records.get("budget", []))
    history = [b for b in records.get("budget", []) if isinstance(b, BudgetConfig) and b.task_id == task_id]
    return {
        "task": task.model_dump(mode="json"),
        "nodes": nodes,
        "timeline": [  # `said`: the summary in people's words (wording.summary_words); `summary` as recorded
            {**e.model_dump(mode="json", include={"ts", "event", "unit_id", "summary", "ref"}),
             "said": summary_words(e.event, e.summary)}
            for e in timeline[-TIMELINE_LIMIT:]
        ],
        "timeline_total": len(timeline),
        "bugs": [b.model_dump(mode="json") for b in sorted(bugs, key=lambda b: b.opened_at, reverse=True)],
        "artifacts": [
            a.model_dump(mode="json", include={"artifact_id", "artifact_type", "version", "unit_id", "title", "ts"})
            for a in records.get("artifact", [])
            if isinstance(a, ArtifactRecord) and a.task_id == task_id
        ],
        "runs": sum(1 for r in records.get("run", []) if isinstance(r, RunRecord) and r.task_id == task_id),
        "usage": {
            "tokens": tokens,
            "cost_usd": round(cost, 6),
            "calls": len(usage),
            "by_role": by_role,
            "executors": sorted({u.executor for u in usage}),
        },  # fmt: skip
        "budget": _budget_view(budgets.get(task_id), tokens, cost),
        "budget_changes": [
            b.model_dump(mode="json", include={"ts", "limit_type", "limit_value", "by"}) for b in history
        ],
        "escalation": _escalation_view(escalations[-1]) if escalations else None,
        "times": task_times(task, waits),
        "flow_runs": flow_runs(records, task_id),
        "violations": refused_view(violations.fold(records.get("node", []), task_id)),
    }


def refused_view(refused: violations.TaskViolations) -> dict[str, Any]:
    """A task's refused actions as the task page shows them (the texts neutralised for display)."""
    return {"count": refused.count, "headline": refused.headline(), "by_stage": refused.by_stage(),
            "actions": [{**a.as_dict(), "shown": a.shown} for a in refused.actions]}  # fmt: skip


ENDED_NODE = frozenset({"done", "failed", "blocked", "cancelled"})


def task_times(task: taskboard.Task, waits: list[tuple[datetime, datetime | None]] | None = None) -> dict[str, Any]:
    """When the task started, when it stopped (done, abandoned, or waiting for a person: its last change), how long
    it took or has taken so far (`ended` None: it is still going), and `waited_s`: how much of that it waited for a
    person before being resumed (`waits`, from `waiting_spans`)."""
    ended = task.updated_at if task.status in SETTLED_TASK else None
    waited = sum(_overlap(task.created_at, ended, a, b) for a, b in waits or [] if b is not None)
    return {"started": task.created_at.isoformat(), "ended": ended.isoformat() if ended else None,
            "duration_s": (ended - task.created_at).total_seconds() if ended else None, "waited_s": waited}  # fmt: skip


def node_times(node: dict[str, Any], waits: list[tuple[datetime, datetime | None]] | None = None) -> dict[str, Any]:
    """A node's end (its last change, once it has ended), its duration, and `waited_s`: how long of it the task
    waited for a person and was then resumed (blocked or paused, then going on in the same node), which is not
    running time (the Gantt strip on the task page; `duration_s` leaves it out). A wait still going on is not in
    it: the page ends a live node's bar where its task stopped."""
    start = datetime.fromisoformat(node["started_at"])
    ended = node.get("status") in ENDED_NODE
    end = datetime.fromisoformat(node["updated_at"]) if ended else None
    waited = sum(_overlap(start, end, a, b) for a, b in waits or [] if b is not None)
    if not ended:
        return {"ended_at": None, "duration_s": None, "waited_s": waited}
    return {"ended_at": node["updated_at"], "duration_s": (end - start).total_seconds() - waited, "waited_s": waited}


def waiting_spans(events) -> list[tuple[datetime, datetime | None]]:
    """When the task waited for a person: from each move into blocked/paused to the next move out (None: still)."""
    spans: list[tuple[datetime, datetime | None]] = []
    since: datetime | None = None
    for e in events:
        waiting = e.status in ("blocked_pending_human", "paused")
        if waiting and since is None:
            since = e.ts
        elif not waiting and since is not None:
            spans.append((since, e.ts))
            since = None
    return spans + ([(since, None)] if since is not None else [])


def _overlap(start: datetime, end: datetime | None, a: datetime, b: datetime) -> float:
    """Seconds of [a, b) inside [start, end) (`end` None: the node goes on)."""
    lo, hi = max(start, a), b if end is None else min(end, b)
    return max(0.0, (hi - lo).total_seconds())


def _escalation_view(record: EscalationRecord) -> dict[str, Any]:
    from .rendering import markdown_html

    return {**record.model_dump(mode="json"), "summary_html": markdown_html(record.summary_md)}


def project_bugs(records: Records) -> dict[str, int]:
    """The project's open bugs, those of no task (reported by a person from the console or the CLI) included."""
    bugs = [b for b in bugfold.fold(records.get("bug", [])).values() if b.status in OPEN_BUG]
    return {"open": len(bugs), "open_without_task": sum(1 for b in bugs if not b.task_id)}


def run_params(records: Records, task_id: str) -> dict[str, Any]:
    """What the task runs with: executor, playbook, the loop's limits (its latest `task_settings`), the engine (a
    Prefect flow ran it, or the direct engine) and its budget."""
    settings = [r for r in records.get("task_settings", []) if getattr(r, "task_id", None) == task_id]
    saved = settings[-1].settings if settings else {}
    flows = any(isinstance(e, TaskEvent) and e.task_id == task_id and e.flow_run_id for e in records.get("task", []))
    budget = _budgets(records.get("budget", [])).get(task_id)
    return {"executor": saved.get("executor"), "playbook": saved.get("playbook"),
            "max_unit_attempts": saved.get("max_unit_attempts"), "max_loop_rounds": saved.get("max_loop_rounds"),
            "engine": "prefect" if flows else "direct",
            "budget": {"limit": budget.limit_value, "limit_type": budget.limit_type} if budget else None}  # fmt: skip


def bug_row(bug: bugfold.Bug) -> dict[str, Any]:
    """A bug as the bugs page lists it: its fields plus `shown_category`, the validator's attribution when it made
    one (`root_cause_category`), else the triage category."""
    return {**bug.model_dump(mode="json"), "shown_category": bug.root_cause_category or bug.category}


FAILED_ATTEMPT = frozenset({"reflecting", "failed", "blocked"})
ERROR_SHOWN_CHARS = 600


def attempt_failures(node_events: list, task_id: str) -> dict[str, list[dict[str, Any]]]:
    """Per node execution, each attempt that failed (the event that carried its error): what the graph marks red."""
    out: dict[str, dict[int, dict[str, Any]]] = {}
    for e in node_events:
        if isinstance(e, NodeEvent) and e.task_id == task_id and e.status in FAILED_ATTEMPT and e.error:
            out.setdefault(e.node_exec_id, {})[e.attempt] = {
                "attempt": e.attempt, "status": e.status, "error_code": e.error_code,
                "error": e.error[:ERROR_SHOWN_CHARS], "ts": e.ts.isoformat(),
            }  # fmt: skip
    return {nid: sorted(by.values(), key=lambda f: f["attempt"]) for nid, by in out.items()}


def pending_units(node_events: list, task_id: str, declared: list[str]) -> list[dict[str, Any]]:
    """Units the task's latest plan declared that have no coder node in that round yet (drawn as pending).
    `declared`: the project's units.json, which holds the plan of the most recently planned task."""
    planners = [e for e in node_events if isinstance(e, NodeEvent) and e.stage == "planner"]
    if not declared or not planners or planners[-1].task_id != task_id:
        return []
    plan_round = planners[-1].loop_round
    started = {e.unit_id for e in node_events if isinstance(e, NodeEvent) and e.task_id == task_id
               and e.stage in ("coder", "tester") and e.loop_round == plan_round}  # fmt: skip
    return [{"unit_id": u, "loop_round": plan_round} for u in declared if u not in started]


LIVE_NODE = frozenset({"running", "verifying", "reflecting", "retrying", "waiting_for_quota"})
SETTLED_TASK = frozenset({"blocked_pending_human", "paused", "done", "abandoned"})


def log_liveness(log_status: str | None, node_status: str | None, task_status: str | None) -> tuple[bool, str | None]:
    """Is a node's log still being written (live), and if not while it is still open, why: a log stays open when
    its node never ended cleanly (its task was blocked, or its run killed), yet nothing will write to it."""
    if log_status != "open":
        return False, None
    if node_status is not None and node_status not in LIVE_NODE:
        return False, f"the node is {node_status}"
    if task_status in SETTLED_TASK:
        return False, f"its task {'needs you' if task_status == 'blocked_pending_human' else 'is ' + status_words(task_status)}"
    return True, None


def allowed_actions(status: str, run_state: str | None) -> list[str]:
    """The human actions a task's state allows (the server refuses the others anyway): `run` a task nothing runs,
    `resume` a blocked or paused one nothing runs, `stop` a running one, `budget` and `abandon` until it has ended
    (an abandon of a running task stops it first)."""
    if status in ("done", "abandoned"):
        return []
    actions = ["run"] if run_state in ("idle", "interrupted") else []
    if status in ("blocked_pending_human", "paused") and run_state not in ("running", "stopping"):
        actions.append("resume")
    if run_state == "running":
        actions.append("stop")
    return [*actions, "budget", "abandon"]


def _tokens(u: UsageRecord) -> int:
    return u.input_tokens + u.output_tokens + u.cache_read_tokens + u.cache_write_tokens


def _spend(usage: list) -> dict[str, tuple[int, float]]:
    out: dict[str, tuple[int, float]] = {}
    for u in usage:
        if isinstance(u, UsageRecord) and u.task_id:
            tokens, cost = out.get(u.task_id, (0, 0.0))
            out[u.task_id] = (tokens + _tokens(u), cost + u.cost_usd)
    return out


def _budgets(configs: list) -> dict[str, BudgetConfig]:
    return {b.task_id: b for b in configs if isinstance(b, BudgetConfig)}  # the latest wins


def _budget_view(config: BudgetConfig | None, tokens: int, cost: float) -> dict[str, Any] | None:
    if config is None:
        return None
    used = tokens if config.limit_type == "token_count" else round(cost, 6)
    return {"limit_type": config.limit_type, "limit": config.limit_value, "used": used,
            "remaining": config.limit_value - used}  # fmt: skip
