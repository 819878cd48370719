"""Log retention (REQ-13): log_retention_config and p_log_retention_cleanup over the execution_log_file records.

* `retention` / `set_retention`: the setting (a whole number of days, 1..3650; 14 until set). A bad value is
  INVALID_PARAM and nothing is written.
* `purge_expired`: every `closed` log closed before now - retention_days, and every earlier `purge_failed` one, has its
  folder deleted — with the folders of the turns that ran inside the node (`<node>-tester-a2/`, `<node>-replay-…/`:
  their transcripts) — and becomes `purged`; a deletion that fails is `purge_failed` with the error and the bytes
  still on disk, and does not stop the others; an `open` log is never touched. Files under logs/ that no record
  names age out by mtime. `run_retention` is the same with its `timeline` record (the flow and `graphlemon gc
  --retention`).
* `close_abandoned`: an `open` log whose task no live run holds, not written for `ABANDONED_AFTER`, was left by a
  killed run; `graphlemon gc` closes it (a resumed node reopens it and appends), so retention can purge it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pydantic import BaseModel

from ..errors import invalid_param
from ..ledger import Ledger
from ..models import MAX_RETENTION_DAYS, LogRetentionConfig, LogStatus, TimelineEvent, utcnow
from .records import LOGS_DIR, log_path
from .write import NodeLog, NodeLogs

DEFAULT_RETENTION_DAYS = 14
ABANDONED_AFTER = timedelta(minutes=10)  # an open log not written for this long, its task's run gone: left by a kill


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
    size_bytes: int = 0  # the bytes this run deleted (a failed purge may have deleted part of the folders)
    left_bytes: int = 0  # the bytes still on disk (0 once purged)
    error: str | None = None


class PurgeResult(BaseModel):
    retention_days: int
    cutoff: datetime
    purged: list[PurgeOutcome]
    failed: list[PurgeOutcome]
    kept_open: int
    kept_recent: int
    untracked_purged: list[str] = []  # files under logs/ no record names (paths relative to .graphlemon/)
    untracked_failed: list[str] = []

    def summary(self) -> str:
        return (f"log retention ({self.retention_days} d): {len(self.purged)} purged, {len(self.failed)} failed, "
                f"{self.kept_recent} kept (recent), {self.kept_open} open")  # fmt: skip


def purge_expired(
    ledger: Ledger,
    retention_days: int | None = None,
    *,
    now: datetime | None = None,
    remove: Callable[[Path], None] | None = None,
) -> PurgeResult:
    """p_log_retention_cleanup: every `closed` log closed before now - retention_days, and every earlier
    `purge_failed` one, has its folder deleted and becomes `purged`; a deletion that fails is `purge_failed` with
    the error and does not stop the others. An open log is never touched."""
    days = check_retention_days(retention_days) if retention_days is not None else retention(ledger).retention_days
    cutoff = (now or utcnow()) - timedelta(days=days)
    remove = remove or remove_log_folder
    logs = NodeLogs(ledger)
    known = logs.all()
    turns = turn_folders(ledger.state_dir / LOGS_DIR, set(known))
    purged, failed, kept_open, kept_recent = [], [], 0, 0
    for log in sorted(known.values(), key=lambda g: g.created_at):
        if log.status == "open":
            kept_open += 1
            continue
        due = log.status == "purge_failed" or (log.status == "closed" and (log.closed_at or log.updated_at) < cutoff)
        if not due:
            kept_recent += log.status == "closed"
            continue
        outcome = _purge(logs, log.node_exec_id, log.path, turns.get(log.node_exec_id, []), remove, days)
        (purged if outcome.status == "purged" else failed).append(outcome)
    untracked, untracked_failed = _purge_untracked(ledger, set(known) | {f.name for fs in turns.values() for f in fs},
                                                   cutoff, remove, days)  # fmt: skip
    return PurgeResult(retention_days=days, cutoff=cutoff, purged=purged, failed=failed, kept_open=kept_open,
                         kept_recent=kept_recent, untracked_purged=untracked,
                         untracked_failed=untracked_failed)  # fmt: skip


def _purge(logs: NodeLogs, nid: str, rel: str, turns: list[Path], remove, days: int) -> PurgeOutcome:
    """Delete one node's log folder and its turns' folders; `purged`, or `purge_failed` with the bytes left."""
    folders = [(logs.state_dir / rel).parent, *turns]
    before = sum(_folder_size(f) for f in folders)
    errors = []
    for folder in folders:
        try:
            remove(folder)
        except OSError as exc:
            errors.append(f"{type(exc).__name__}: {exc}")
    left = sum(_folder_size(f) for f in folders)
    if errors:
        error = "; ".join(errors)
        logs.transition(nid, "purge_failed", error=error[:2000], retention_days=days, size_bytes=left, by="retention")
        return PurgeOutcome(node_exec_id=nid, path=rel, status="purge_failed", size_bytes=before - left,
                            left_bytes=left, error=error)  # fmt: skip
    logs.transition(nid, "purged", size_bytes=before, retention_days=days, by="retention")
    return PurgeOutcome(node_exec_id=nid, path=rel, status="purged", size_bytes=before)


def turn_folders(root: Path, node_ids: set[str]) -> dict[str, list[Path]]:
    """Folders under logs/ that belong to a node without being one: a turn that ran inside it (`<node>-tester-a2`,
    `<node>-replay-<unit>-a3`) — the node with the longest id the folder's name starts with, then `-`."""
    if not root.is_dir() or root.is_symlink():
        return {}
    out: dict[str, list[Path]] = {}
    for entry in root.iterdir():
        if entry.name in node_ids or not (entry.is_dir() or entry.is_symlink()):
            continue
        owners = [nid for nid in node_ids if entry.name.startswith(nid + "-")]
        if owners:
            out.setdefault(max(owners, key=len), []).append(entry)
    return out


def run_retention(ledger: Ledger, retention_days: int | None = None) -> PurgeResult:
    """p_log_retention_cleanup as a whole: `purge_expired`, then its `timeline` record (the flow and `gc --retention`)."""
    result = purge_expired(ledger, retention_days)
    ledger.append(TimelineEvent(event="log_retention", summary=result.summary()))
    return result


class AbandonedLog(BaseModel):
    node_exec_id: str
    task_id: str | None = None
    path: str
    idle_s: int


def abandoned_logs(ledger: Ledger, *, now: datetime | None = None) -> list[AbandonedLog]:
    """Open logs a killed run left: no live run holds the task (no lease of it, or its holder is gone) and the
    file was not written for `ABANDONED_AFTER`."""
    from ..lease import live

    now = now or utcnow()
    found = []
    for log in NodeLogs(ledger).all().values():
        if log.status != "open":
            continue
        if log.task_id and live(ledger, log.task_id) is not None:
            continue
        path = ledger.state_dir / log.path
        try:
            written = datetime.fromtimestamp(path.stat().st_mtime, UTC)
        except FileNotFoundError:
            written = log.updated_at
        if now - written >= ABANDONED_AFTER:
            found.append(AbandonedLog(node_exec_id=log.node_exec_id, task_id=log.task_id, path=log.path,
                                      idle_s=int((now - written).total_seconds())))  # fmt: skip
    return sorted(found, key=lambda a: a.node_exec_id)


def close_abandoned(ledger: Ledger, found: list[AbandonedLog]) -> None:
    """Close each log with a last line saying why (its size and line count recorded); resuming the node reopens it."""
    logs = NodeLogs(ledger)
    for log in found:
        writer = NodeLog(log_path(ledger.state_dir, log.node_exec_id))
        writer.write("node", f"closed by graphlemon gc: the run that wrote this log ended without closing it "
                             f"(no live run of {log.task_id or 'its task'}, {log.idle_s} s without a line)")  # fmt: skip
        writer.close()
        logs.close(log.node_exec_id)


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


