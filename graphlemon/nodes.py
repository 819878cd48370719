"""Work-node executions over `nodes.ndjson` (work_node_execution; REQ-02 / 03 / 06 / 14).

A node execution is one stage run for one task (and unit and round). Its id is
deterministic — `ne-<task>-<stage>[-<unit>]-r<round>[-a<attempt>]` — so a resumed
flow finds the node it was running instead of starting a second one. The L1 coder
node keeps one id across its attempts (running → reflecting → retrying → running
...), each event carrying the attempt number.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from pydantic import BaseModel

from . import lifecycle
from .errors import ErrorCode, GraphLemonError
from .execlogs import ExecLog, NodeLogs, file_stats_size, purged_notice
from .ledger import Ledger
from .models import LogStatus, NodeEvent, NodeFields, NodeStatus, QuotaLimitType, Stage

TERMINAL_NODE = frozenset({"done", "cancelled"})


class NodeExec(NodeFields):
    """A node execution's current state: the fold of its events (`apply_event`)."""

    task_id: str | None
    started_at: datetime
    updated_at: datetime
    violations: int = 0


def node_exec_id(
    task_id: str | None, stage: Stage, *, unit_id: str | None = None, loop_round: int = 0, attempt: int | None = None
) -> str:
    """Deterministic: a resumed flow finds its node again. Nodes that retry inside (L1) omit the attempt."""
    unit = f"-{unit_id}" if unit_id else ""
    tail = f"-a{attempt}" if attempt is not None else ""
    return f"ne-{task_id or 'adhoc'}-{stage}{unit}-r{loop_round}{tail}"


def apply_event(nodes: dict[str, NodeExec], ev: NodeEvent) -> None:
    node = nodes.get(ev.node_exec_id)
    if ev.event == "violation":
        if node is not None:
            node.violations += 1
        return
    if node is None:
        node = nodes[ev.node_exec_id] = NodeExec(
            node_exec_id=ev.node_exec_id,
            task_id=ev.task_id,
            stage=ev.stage,
            unit_id=ev.unit_id,
            attempt=ev.attempt,
            loop_round=ev.loop_round,
            status=ev.status,
            started_at=ev.ts,
            updated_at=ev.ts,
        )
    node.status = ev.status
    node.attempt = ev.attempt
    node.error_code, node.error = ev.error_code, ev.error
    node.quota_wait_started_at = ev.quota_wait_started_at if ev.status == "waiting_for_quota" else None
    node.quota_limit_type = ev.quota_limit_type if ev.status == "waiting_for_quota" else None
    node.git_worktree_ref = ev.git_worktree_ref or node.git_worktree_ref
    node.output_ref = ev.output_ref or node.output_ref
    node.updated_at = ev.ts


def fold(events: Iterable[NodeEvent]) -> dict[str, NodeExec]:
    nodes: dict[str, NodeExec] = {}
    for ev in events:
        apply_event(nodes, ev)
    return nodes


class NodeTracker:
    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    def all(self) -> dict[str, NodeExec]:
        return fold(self.ledger.read_as("node", NodeEvent))

    def get(self, node_id: str) -> NodeExec:
        node = self.all().get(node_id)
        if node is None:
            raise GraphLemonError(ErrorCode.NODE_EXEC_NOT_FOUND, f"no node execution {node_id!r}", node_exec_id=node_id)
        return node

    def find(self, node_id: str) -> NodeExec | None:
        return self.all().get(node_id)

    def for_task(self, task_id: str) -> list[NodeExec]:
        return [n for n in self.all().values() if n.task_id == task_id]

    def transition(
        self,
        node_id: str,
        to: NodeStatus,
        *,
        task_id: str | None = None,
        stage: Stage | None = None,
        unit_id: str | None = None,
        attempt: int | None = None,
        loop_round: int = 0,
        duration_ms: int | None = None,
        error_code: str | None = None,
        error: str | None = None,
        quota_wait_started_at: datetime | None = None,
        quota_limit_type: QuotaLimitType | None = None,
        git_worktree_ref: str | None = None,
        output_ref: str | None = None,
    ) -> NodeExec:
        """Validated status change (a new node needs task_id and stage); returns the node after it."""
        with self.ledger.transaction("node") as tx:
            nodes = fold(tx.records())
            node = nodes.get(node_id)
            lifecycle.check("node", node.status if node else None, to)
            if node is None and stage is None:
                raise GraphLemonError(
                    ErrorCode.NODE_EXEC_NOT_FOUND, f"no node execution {node_id!r}", node_exec_id=node_id
                )
            event = NodeEvent(
                node_exec_id=node_id,
                task_id=node.task_id if node else task_id,
                stage=node.stage if node else stage,  # type: ignore[arg-type]
                unit_id=node.unit_id if node else unit_id,
                attempt=attempt if attempt is not None else (node.attempt if node else 1),
                loop_round=node.loop_round if node else loop_round,
                status=to,
                duration_ms=duration_ms,
                error_code=error_code,
                error=error,
                quota_wait_started_at=quota_wait_started_at,
                quota_limit_type=quota_limit_type,
                git_worktree_ref=git_worktree_ref,
                output_ref=output_ref,
            )
            tx.append(event)
        NodeLogs(self.ledger).on_transition(event)  # execution_log_file: open / a status line / closed (REQ-13)
        apply_event(nodes, event)
        return nodes[node_id]


# -- a node's execution log, looked up (CLI, console) ----------------------------------------------------


class LogView(BaseModel):
    """What the CLI and the viewer show for one node: its log record, or why there is no file to read."""

    node_exec_id: str
    task_id: str | None = None
    stage: str | None = None
    unit_id: str | None = None
    node_status: str | None = None
    log: ExecLog | None = None
    status: LogStatus | None = None  # None: the node never opened a log (logging was off)
    size_bytes: int = 0
    notice: str | None = None


def log_view(ledger: Ledger, node_exec_id: str) -> LogView:
    """NODE_EXEC_NOT_FOUND unless the node (or its log record) exists; a purged log says when and why."""
    node = NodeTracker(ledger).find(node_exec_id)
    log = NodeLogs(ledger).find(node_exec_id)
    if node is None and log is None:
        raise GraphLemonError(ErrorCode.NODE_EXEC_NOT_FOUND, f"no node execution {node_exec_id!r}",
                              node_exec_id=node_exec_id)  # fmt: skip
    out = LogView(node_exec_id=node_exec_id, task_id=(node or log).task_id, stage=(node or log).stage,
                  unit_id=(node or log).unit_id, node_status=node.status if node else None, log=log,
                  status=log.status if log else None)  # fmt: skip
    if log is None:
        out.notice = "this node has no execution log (it ran with logging off, or before logs were recorded)"
    elif log.status == "purged":
        out.notice = purged_notice(log)
    else:
        out.size_bytes = file_stats_size(ledger.state_dir / log.path)
        if log.status == "purge_failed":
            out.notice = f"retention could not delete this log ({log.error}); it is retried on the next cycle"
    return out

