"""An execution log's records (REQ-13): where its file is, and the fold of its `execution_log_file` events.

`execution_log_file` records (kind `log`, `execution_logs.ndjson`): `open` when the node starts, `closed` when it ends
(size, line count), `purged` when retention removed its folder, `purge_failed` with the error. The file is
`.graphlemon/logs/<node_exec_id>/node.log`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel

from ..errors import invalid_param
from ..models import ExecutionLogEvent, LogStatus

LOGS_DIR = "logs"
LOG_NAME = "node.log"
CLOSING = frozenset({"done", "failed", "blocked", "cancelled"})  # a node status that ends the node's run
_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")


def enabled() -> bool:
    return os.environ.get("GRAPHLEMON_EXEC_LOGS", "on").lower() not in ("off", "0", "false", "no")



class ExecLog(BaseModel):
    """An execution_log_file's current state: the fold of its events."""

    node_exec_id: str
    task_id: str | None = None
    stage: str | None = None
    unit_id: str | None = None
    status: LogStatus
    path: str
    created_at: datetime
    updated_at: datetime
    closed_at: datetime | None = None
    size_bytes: int | None = None
    line_count: int | None = None
    purged_at: datetime | None = None
    retention_days: int | None = None
    error: str | None = None
    purge_attempts: int = 0


def fold(events: Iterable[ExecutionLogEvent]) -> dict[str, ExecLog]:
    logs: dict[str, ExecLog] = {}
    for ev in events:
        log = logs.get(ev.node_exec_id)
        if log is None:
            log = logs[ev.node_exec_id] = ExecLog(
                node_exec_id=ev.node_exec_id, task_id=ev.task_id, stage=ev.stage, unit_id=ev.unit_id,
                status=ev.status, path=ev.path, created_at=ev.ts, updated_at=ev.ts,
            )  # fmt: skip
        log.status, log.updated_at, log.path = ev.status, ev.ts, ev.path
        if ev.status == "open":
            log.closed_at, log.error = None, None
        elif ev.status == "closed":
            log.closed_at, log.size_bytes, log.line_count = ev.ts, ev.size_bytes, ev.line_count
        elif ev.status == "purged":
            log.purged_at, log.retention_days, log.error = ev.ts, ev.retention_days, None
        elif ev.status == "purge_failed":
            log.error, log.retention_days = ev.error, ev.retention_days
            log.size_bytes = ev.size_bytes if ev.size_bytes is not None else log.size_bytes  # the bytes left
            log.purge_attempts += 1
    return logs


def log_path(state_dir: Path, node_exec_id: str) -> Path:
    """`.graphlemon/logs/<node_exec_id>/node.log`; an id that is not a plain name is INVALID_PARAM."""
    if not _SAFE_ID.match(node_exec_id) or ".." in node_exec_id:
        raise invalid_param(f"not a node execution id: {node_exec_id!r}")
    return Path(state_dir) / LOGS_DIR / node_exec_id / LOG_NAME



def file_stats(path: Path) -> tuple[int, int]:
    """(size, line count) read in blocks, never the whole file at once; (0, 0) for a missing file."""
    try:
        with open(path, "rb") as fh:
            size, lines = 0, 0
            while block := fh.read(1 << 20):
                size += len(block)
                lines += block.count(b"\n")
    except FileNotFoundError:
        return 0, 0
    return size, lines



def file_stats_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0



def purged_notice(log: ExecLog) -> str:
    when = log.purged_at.strftime("%Y-%m-%d %H:%M UTC") if log.purged_at else "an unknown date"
    days = f"{log.retention_days} day{'s' if log.retention_days != 1 else ''}" if log.retention_days else "?"
    return f"purged by retention on {when} ({days})"

