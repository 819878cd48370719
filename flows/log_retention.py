"""Prefect flow `log_retention`: purge execution logs older than the retention setting (REQ-13).

`purge_expired_logs` is plain Python (the flow is a thin wrapper around it). Until the logs
issue brings its own log records, a log is any file under `.graphlemon/logs/` (walked
without following symlinks; a symlink is removed, never its target), and it counts as closed
once it has not been written for the retention period. Each removal is recorded in the
ledger as a `timeline` event `log_purged` (ref = path under .graphlemon/), each failure as
`log_purge_failed`; a failure does not stop the others and the file is retried next run.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from prefect import flow, task
from pydantic import BaseModel

from flows.reports import artifact_key, project_dir
from graphlemon.errors import invalid_param
from graphlemon.models import TimelineEvent
from graphlemon.project import ProjectHandle, open_project
from tasks._redacted_artifacts import create_markdown_artifact

LOGS_DIR = "logs"
DEFAULT_RETENTION_DAYS = 14.0


class PurgedLog(BaseModel):
    path: str  # relative to .graphlemon/
    size_bytes: int
    modified: datetime


class PurgeFailure(BaseModel):
    path: str
    error: str


class RetentionResult(BaseModel):
    retention_days: float
    cutoff: datetime
    purged: list[PurgedLog]
    failed: list[PurgeFailure]
    kept: int


def purge_expired_logs(
    handle: ProjectHandle,
    retention_days: float,
    *,
    now: datetime | None = None,
    remove: Callable[[Path], None] = os.unlink,
) -> RetentionResult:
    """Delete log files last modified before now - retention_days and record each one in the ledger."""
    number = isinstance(retention_days, int | float) and not isinstance(retention_days, bool)
    if not number or not math.isfinite(retention_days) or retention_days <= 0:
        raise invalid_param(f"retention_days must be a positive number of days, not {retention_days!r}")
    cutoff = (now or datetime.now(UTC)) - timedelta(days=retention_days)
    purged, failed, kept = [], [], 0
    for path in _log_files(handle.state_dir / LOGS_DIR):
        try:
            st = path.lstat()
        except FileNotFoundError:  # removed by someone else meanwhile
            continue
        modified = datetime.fromtimestamp(st.st_mtime, UTC)
        if modified >= cutoff:
            kept += 1
            continue
        rel = path.relative_to(handle.state_dir).as_posix()
        try:
            remove(path)
        except FileNotFoundError:
            continue
        except OSError as exc:
            failed.append(PurgeFailure(path=rel, error=f"{type(exc).__name__}: {exc}"))
        else:
            purged.append(PurgedLog(path=rel, size_bytes=st.st_size, modified=modified))
    handle.ledger.append(*_events(purged, failed, retention_days))
    return RetentionResult(retention_days=retention_days, cutoff=cutoff, purged=purged, failed=failed, kept=kept)


def _log_files(root: Path) -> list[Path]:
    if not root.is_dir() or root.is_symlink():
        return []
    found = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        found += [Path(dirpath) / name for name in filenames]
        found += [Path(dirpath) / name for name in dirnames if (Path(dirpath) / name).is_symlink()]
    return sorted(found)


def _events(purged: list[PurgedLog], failed: list[PurgeFailure], days: float) -> list[TimelineEvent]:
    events = [
        TimelineEvent(
            event="log_purged",
            ref=p.path,
            summary=f"{p.size_bytes} bytes, last written {p.modified:%Y-%m-%d %H:%M} UTC, retention {days:g} d",
        )
        for p in purged
    ]
    events += [
        TimelineEvent(event="log_purge_failed", ref=f.path, summary=f"{f.error}; retried next run") for f in failed
    ]
    return events


@task(name="purge-expired-logs")
def purge_expired_logs_task(project: str, retention_days: float) -> RetentionResult:
    return purge_expired_logs(open_project(project), retention_days)


@flow(name="log_retention", log_prints=True)
def log_retention(project: str | None = None, retention_days: float = DEFAULT_RETENTION_DAYS) -> RetentionResult:
    """Purge `.graphlemon/logs/` files older than `retention_days`; failures are recorded and retried next run."""
    chosen = project_dir(project)
    result = purge_expired_logs_task(chosen, retention_days)
    lines = [f"- purged `{p.path}` ({p.size_bytes} bytes)" for p in result.purged]
    lines += [f"- **failed** `{f.path}`: {f.error}" for f in result.failed]
    summary = f"Log retention ({retention_days:g} days): {len(result.purged)} purged, {len(result.failed)} failed, {result.kept} kept.\n\n"
    create_markdown_artifact(
        markdown=summary + "\n".join(lines), key=artifact_key(open_project(chosen).project_id, "log-retention")
    )
    print(summary.strip())
    return result
