"""Transition tables: task, node execution, bug, skill iteration, deployment. One table each, readable at a glance.

`check(table, from_status, to_status)` raises INVALID_TRANSITION for a move the
table does not list. A `None` from-status means "new": the table's `_initial` set.
"""

from __future__ import annotations

from typing import get_args

from .errors import ErrorCode, GraphLemonError
from .models import BugStatus, DeploymentStatus, LogStatus, NodeStatus, SkillIterationStatus, TaskStatus

_ACTIVE_TASK = ("planning", "coding", "integrating", "validating")

# task.status (REQ-01 / 05 / 09 / 10 / 14)
TASK: dict[str, frozenset[str]] = {
    "_initial": frozenset({"created"}),
    "created": frozenset({"queued", "planning", "abandoned"}),
    # a queued run waiting for a goal slot may be stopped by a person (stopped_by_person)
    "queued": frozenset({"planning", "coding", "integrating", "validating", "blocked_pending_human", "abandoned"}),
    # planning -> coding; full_replan comes back to planning; each stage may block or wait; a person's abandon
    # ends the task from every state that has not ended (its run stops at a safe point first)
    "planning": frozenset({"planning", "coding", "waiting_for_quota", "paused", "blocked_pending_human", "abandoned"}),
    "coding": frozenset(
        {"coding", "integrating", "validating", "planning", "waiting_for_quota", "paused", "blocked_pending_human",
         "abandoned"}
    ),  # fmt: skip
    "integrating": frozenset(
        {"integrating", "coding", "planning", "validating", "waiting_for_quota", "paused", "blocked_pending_human",
         "abandoned"}
    ),  # fmt: skip
    "validating": frozenset(
        {"done", "coding", "planning", "waiting_for_quota", "paused", "blocked_pending_human", "abandoned"}
    ),
    # quota wait returns to the stage it interrupted, or times out (usage_limit_wait_timeout)
    "waiting_for_quota": frozenset({*_ACTIVE_TASK, "blocked_pending_human", "paused", "abandoned"}),
    # a human resumes (back to the stage before the block, or re-queued) or abandons
    "blocked_pending_human": frozenset({*_ACTIVE_TASK, "queued", "paused", "abandoned"}),
    "paused": frozenset({*_ACTIVE_TASK, "queued", "blocked_pending_human", "abandoned"}),
    "done": frozenset(),
    "abandoned": frozenset(),
}

# work_node_execution.status (REQ-02 verifying/reflecting, REQ-03 reflecting -> retrying -> blocked, REQ-14)
NODE: dict[str, frozenset[str]] = {
    "_initial": frozenset({"pending", "running"}),
    "pending": frozenset({"running", "cancelled"}),
    "running": frozenset({"verifying", "reflecting", "waiting_for_quota", "done", "failed", "blocked", "cancelled"}),
    "verifying": frozenset({"done", "reflecting", "failed", "blocked", "waiting_for_quota"}),
    "reflecting": frozenset({"retrying", "blocked", "failed"}),
    "retrying": frozenset({"running", "waiting_for_quota", "blocked", "failed"}),
    "waiting_for_quota": frozenset({"running", "verifying", "retrying", "blocked"}),
    "failed": frozenset({"retrying", "blocked"}),
    "blocked": frozenset({"retrying", "running", "cancelled"}),  # a human resumes a blocked node
    "done": frozenset(),
    "cancelled": frozenset(),
}

# bug_record.status (docs/tester.md: the tester opens and fixes unit-test bugs, the stage that found a bug closes it)
BUG: dict[str, frozenset[str]] = {
    "_initial": frozenset({"open"}),
    "open": frozenset({"fixing", "fixed", "wontfix"}),
    "fixing": frozenset({"fixed", "open", "wontfix"}),
    "fixed": frozenset({"verified", "reopened"}),
    "verified": frozenset({"reopened"}),
    "reopened": frozenset({"fixing", "fixed", "wontfix"}),
    "wontfix": frozenset({"reopened"}),
}

# skill_iteration.status (REQ-08): a proposal is gated before it applies; an applied one can be rolled back
SKILL_ITERATION: dict[str, frozenset[str]] = {
    "_initial": frozenset({"proposed"}),
    "proposed": frozenset({"gating", "rejected"}),
    "gating": frozenset({"applied", "rejected"}),
    "applied": frozenset({"rolled_back"}),
    "rejected": frozenset(),
    "rolled_back": frozenset(),
}

# deployment.status (REQ-15, blue-green): the happy path, path A (health check failed), path B (anomaly after
# cutover), and a rollback that itself fails. A human's `deploy rollback` of a live deployment is an anomaly too.
DEPLOYMENT: dict[str, frozenset[str]] = {
    "_initial": frozenset({"staged"}),
    "staged": frozenset({"candidate_starting", "health_check_failed"}),
    "candidate_starting": frozenset({"health_check_running", "health_check_failed"}),
    "health_check_running": frozenset({"health_check_passed", "health_check_failed"}),
    "health_check_passed": frozenset({"cutover_in_progress"}),
    "cutover_in_progress": frozenset({"live", "anomaly_detected"}),
    "live": frozenset({"monitoring", "anomaly_detected"}),
    "monitoring": frozenset({"monitoring_window_clean", "anomaly_detected"}),
    "monitoring_window_clean": frozenset({"finalized", "anomaly_detected"}),
    "finalized": frozenset({"anomaly_detected"}),
    "health_check_failed": frozenset({"rolled_back", "rollback_failed"}),  # path A: no retry
    "anomaly_detected": frozenset({"rolled_back", "rollback_failed"}),  # path B
    "rollback_failed": frozenset({"blocked_pending_human"}),
    # a person repaired what the rollback needed and runs `deploy rollback` again
    "blocked_pending_human": frozenset({"rolled_back", "rollback_failed"}),
    "rolled_back": frozenset(),
}

# execution_log_file.status (REQ-13): a node that runs again (retry, resume) reopens its log and appends to it;
# only a closed log is purged, and a failed purge is retried on the next cycle
EXECUTION_LOG: dict[str, frozenset[str]] = {
    "_initial": frozenset({"open"}),
    "open": frozenset({"closed"}),
    "closed": frozenset({"open", "purged", "purge_failed"}),
    "purge_failed": frozenset({"purged", "purge_failed", "open"}),
    "purged": frozenset({"open"}),  # a purged node resumed much later starts a new file
}

TABLES: dict[str, tuple[dict[str, frozenset[str]], tuple[str, ...]]] = {
    "task": (TASK, get_args(TaskStatus)),
    "node": (NODE, get_args(NodeStatus)),
    "bug": (BUG, get_args(BugStatus)),
    "skill_iteration": (SKILL_ITERATION, get_args(SkillIterationStatus)),
    "deployment": (DEPLOYMENT, get_args(DeploymentStatus)),
    "execution_log": (EXECUTION_LOG, get_args(LogStatus)),
}

TERMINAL_TASK = frozenset({"done", "abandoned"})
ACTIVE_BUG = frozenset({"open", "fixing", "reopened"})


def allowed(table: str, from_status: str | None) -> frozenset[str]:
    transitions, _ = TABLES[table]
    return transitions["_initial" if from_status is None else from_status]


def check(table: str, from_status: str | None, to_status: str) -> None:
    """Raise INVALID_TRANSITION unless `table` allows from_status -> to_status."""
    if to_status not in allowed(table, from_status):
        start = from_status or "(new)"
        raise GraphLemonError(
            ErrorCode.INVALID_TRANSITION,
            f"{table} cannot go from {start} to {to_status}",
            table=table,
            from_status=from_status,
            to_status=to_status,
        )
