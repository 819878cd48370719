"""Log retention (REQ-13): log_retention_config and p_log_retention_cleanup over the execution_log_file records.

* `retention` / `set_retention`: the setting (a whole number of days, 1..3650; 14 until set). A bad value is
  INVALID_PARAM and nothing is written.
* `cleanup`: every `closed` log closed before now - retention_days, and every earlier `purge_failed` one, has its
  folder deleted and becomes `purged`; a deletion that fails is `purge_failed` with the error and does not stop the
  others; an `open` log is never touched. Files under logs/ that no record names age out by mtime.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pydantic import BaseModel

from .errors import invalid_param
from .execlogs import LOGS_DIR, NodeLogs
from .ledger import Ledger
from .models import MAX_RETENTION_DAYS, LogRetentionConfig, LogStatus, TimelineEvent, utcnow

DEFAULT_RETENTION_DAYS = 14


def check_retention_days(value: object) -> int:
    """A whole number of days in [1, MAX_RETENTION_DAYS], else INVALID_PARAM (a bool or float is not one)."""
    if isinstance(value, str):
        try:
            value = int(value.strip())
        except ValueError:
            raise invalid_param(f"retention_days must be a whole number of days, not {value!r}") from None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise invalid_param(f"retention_days must be a whole number of days, not {value!r}")
    if not 1 <= value <= MAX_RETENTION_DAYS:
        raise invalid_param(f"retention_days must be between 1 and {MAX_RETENTION_DAYS} days, not {value}")
    return value


def retention(ledger: Ledger) -> LogRetentionConfig:
    """The current setting (the latest record), or the default when none was ever set."""
    found = ledger.read_as("log_retention", LogRetentionConfig)
    return found[-1] if found else LogRetentionConfig(retention_days=DEFAULT_RETENTION_DAYS, by="default")


def set_retention(ledger: Ledger, days: object, *, by: str = "cli") -> LogRetentionConfig:
    """c_log_retention_config_update: validated first; a bad value changes nothing."""
    record = LogRetentionConfig(retention_days=check_retention_days(days), by=by)
    ledger.append(record)
    return record


class PurgeOutcome(BaseModel):
    node_exec_id: str
    path: str
    status: LogStatus  # purged | purge_failed
    size_bytes: int = 0
    error: str | None = None


class CleanupResult(BaseModel):
    retention_days: int
    cutoff: datetime
    purged: list[PurgeOutcome]
    failed: list[PurgeOutcome]
    kept_open: int
    kept_recent: int
    untracked_purged: list[str] = []  # files under logs/ no record names (paths relative to .graphlemon/)
    untracked_failed: list[str] = []


def cleanup(
    ledger: Ledger,
    retention_days: int | None = None,
    *,
    now: datetime | None = None,
    remove: Callable[[Path], None] | None = None,
) -> CleanupResult:
    """p_log_retention_cleanup: every `closed` log closed before now - retention_days, and every earlier
    `purge_failed` one, has its folder deleted and becomes `purged`; a deletion that fails is `purge_failed` with
    the error and does not stop the others. An open log is never touched."""
    days = check_retention_days(retention_days) if retention_days is not None else retention(ledger).retention_days
    cutoff = (now or utcnow()) - timedelta(days=days)
    remove = remove or remove_log_folder
    logs = NodeLogs(ledger)
    purged, failed, kept_open, kept_recent = [], [], 0, 0
    for log in sorted(logs.all().values(), key=lambda g: g.created_at):
        if log.status == "open":
            kept_open += 1
            continue
        due = log.status == "purge_failed" or (log.status == "closed" and (log.closed_at or log.updated_at) < cutoff)
        if not due:
            kept_recent += log.status == "closed"
            continue
        path = ledger.state_dir / log.path
        size = _folder_size(path.parent)
        try:
            remove(path.parent)
        except OSError as exc:
            error = f"{type(exc).__name__}: {exc}"
            logs.transition(log.node_exec_id, "purge_failed", error=error[:2000], retention_days=days, by="retention")
            failed.append(PurgeOutcome(node_exec_id=log.node_exec_id, path=log.path, status="purge_failed",
                                       error=error))  # fmt: skip
            continue
        logs.transition(log.node_exec_id, "purged", size_bytes=size, retention_days=days, by="retention")
        purged.append(PurgeOutcome(node_exec_id=log.node_exec_id, path=log.path, status="purged", size_bytes=size))
    untracked, untracked_failed = _purge_untracked(ledger, set(logs.all()), cutoff, remove, days)
    return CleanupResult(retention_days=days, cutoff=cutoff, purged=purged, failed=failed, kept_open=kept_open,
                         kept_recent=kept_recent, untracked_purged=untracked,
                         untracked_failed=untracked_failed)  # fmt: skip


def _purge_untracked(ledger: Ledger, known: set[str], cutoff: datetime, remove, days: int) -> tuple[list[str], list[str]]:
    """Files under logs/ that no execution_log_file names (the console's run logs, an ad-hoc agent turn's
    transcript, logs from before the records): removed once not written for the retention period, each a
    `timeline` event (`log_purged` / `log_purge_failed`, retried next run). Symlinks are removed, never followed."""
    root = ledger.state_dir / LOGS_DIR
    if not root.is_dir() or root.is_symlink():
        return [], []
    done, failed, events = [], [], []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        here = Path(dirpath)
        if here == root:
            dirnames[:] = [d for d in dirnames if d not in known]
        entries = [here / n for n in filenames] + [here / d for d in dirnames if (here / d).is_symlink()]
        for path in entries:
            try:
                st = path.lstat()
            except FileNotFoundError:
                continue
            if datetime.fromtimestamp(st.st_mtime, UTC) >= cutoff:
                continue
            rel = path.relative_to(ledger.state_dir).as_posix()
            try:
                path.unlink()
            except FileNotFoundError:
                continue
            except OSError as exc:
                failed.append(rel)
                events.append(TimelineEvent(event="log_purge_failed", ref=rel,
                                            summary=f"{type(exc).__name__}: {exc}; retried next run"))  # fmt: skip
                continue
            done.append(rel)
            events.append(TimelineEvent(event="log_purged", ref=rel,
                                        summary=f"{st.st_size} bytes, not in any execution log record, "
                                        f"last written {datetime.fromtimestamp(st.st_mtime, UTC):%Y-%m-%d %H:%M} UTC, "
                                        f"retention {days} d"))  # fmt: skip
    if events:
        ledger.append(*events)
    return done, failed


def remove_log_folder(folder: Path) -> None:
    """Delete a node's log folder (its node.log and transcripts), never following a symlink; a folder already gone
    is fine, any other failure raises."""
    if folder.is_symlink():
        folder.unlink()
        return
    if not folder.exists():
        return
    for dirpath, dirnames, filenames in os.walk(folder, topdown=False, followlinks=False):
        for name in filenames:
            os.unlink(Path(dirpath) / name)
        for name in dirnames:
            sub = Path(dirpath) / name
            sub.unlink() if sub.is_symlink() else sub.rmdir()
    folder.rmdir()


def _folder_size(folder: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(folder, followlinks=False):
        for name in files:
            try:
                total += (Path(dirpath) / name).lstat().st_size
            except OSError:
                pass
    return total


