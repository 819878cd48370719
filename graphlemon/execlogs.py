"""Execution logs (REQ-13): one raw log per work_node_execution, as a file and as ledger records.

* `execution_log_file` records (kind `log`, `execution_logs.ndjson`): `open` when the node starts, `closed` when it
  ends (size, line count), `purged` when retention removed its folder, `purge_failed` with the error.
* The file is `.graphlemon/logs/<node_exec_id>/node.log`, plain text, one line per thing the node did
  (`<ts> [<kind>] <text>`), written line-buffered and redacted by the one redactor. The agents' JSON transcripts live
  in the same folder; retention removes the folder.
* `NodeLogs.on_transition` is the one seam the node tracker calls: it opens, writes the status line, closes.
  Everything else a node does reaches its log through `write_line(state_dir, node_exec_id, kind, text)`.
* Reading never loads a whole file: `read_range` (byte ranges cut at line ends), `tail_lines` (from the end,
  block by block), `follow` (new lines until the log closes).

`GRAPHLEMON_EXEC_LOGS=off` turns the node logs off (benchmarks compare the loop with and without them).
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel

from . import lifecycle
from .errors import ErrorCode, GraphLemonError, invalid_param
from .ledger import Ledger
from .models import ExecutionLogEvent, LogStatus, NodeEvent, utcnow
from .redact import DEFAULT as DEFAULT_REDACTOR

LOGS_DIR = "logs"
LOG_NAME = "node.log"
LINE_MAX_CHARS = 4000  # one log line (a tool result, a test's output tail) keeps its head
PAGE_MAX_BYTES = 1 << 20  # the most one range read returns
CLOSING = frozenset({"done", "failed", "blocked", "cancelled"})  # a node status that ends the node's run
_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")


def enabled() -> bool:
    return os.environ.get("GRAPHLEMON_EXEC_LOGS", "on").lower() not in ("off", "0", "false", "no")


# -- the folded record ----------------------------------------------------------------------------------------


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


# -- writing -------------------------------------------------------------------------------------------------


class NodeLog:
    """The writer of one node's log: whole lines, line-buffered (a follower sees each line as it is written)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        # a lone surrogate (a file name an agent chose, undecodable bytes) is written escaped, never an error
        self._fh = open(path, "a", encoding="utf-8", errors="backslashreplace", buffering=1)  # noqa: SIM115
        self._lock = threading.Lock()

    def write(self, kind: str, text: str) -> None:
        """`<ts> [kind] text`; a multi-line text continues with indented lines; secrets masked; long text cut."""
        text = _cut(DEFAULT_REDACTOR.text(str(text)))
        first, *rest = text.replace("\r\n", "\n").split("\n") or [""]
        ts = utcnow().strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        body = "".join(f"\n    {line}" for line in rest)
        with self._lock:
            if not self._fh.closed:
                self._fh.write(f"{ts} [{kind}] {first}{body}\n")

    def write_many(self, kind: str, texts: list[str]) -> None:
        """Many lines of one kind in one write (a chatty process's output): redacted together, each line cut."""
        ts = utcnow().strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        clean = DEFAULT_REDACTOR.text("\n".join(texts)).replace("\r\n", "\n").split("\n")
        out = "".join(f"{ts} [{kind}] {_cut(line)}\n" for line in clean)
        with self._lock:
            if not self._fh.closed:
                self._fh.write(out)

    def close(self) -> None:
        with self._lock:
            self._fh.close()


def _cut(text: str) -> str:
    return text if len(text) <= LINE_MAX_CHARS else f"{text[:LINE_MAX_CHARS]} … [{len(text) - LINE_MAX_CHARS} more chars cut]"


_writers: dict[Path, NodeLog] = {}
_writers_lock = threading.Lock()


def writer(state_dir: Path, node_exec_id: str) -> NodeLog | None:
    """The open writer of a node's log in this process; None when the node has no open log (no record opened it:
    an ad-hoc agent run) or logging is off."""
    if not enabled():
        return None
    try:
        path = log_path(state_dir, node_exec_id)
    except GraphLemonError:
        return None
    with _writers_lock:
        found = _writers.get(path)
        if found is None and path.is_file():  # opened by another process (a work-pool unit loop's parent)
            found = _writers[path] = NodeLog(path)
        return found or _owner(path)


def _owner(path: Path) -> NodeLog | None:
    """Under the lock: the open log of the node a turn id belongs to (`<coder node>-tester-a2` is a tester turn
    inside its coder node: its lines go to that node's log)."""
    folder, nid = path.parent.parent, path.parent.name
    owners = [p for p in _writers if p.parent.parent == folder and nid.startswith(p.parent.name + "-")]
    return _writers[max(owners, key=lambda p: len(p.parent.name))] if owners else None


def write_line(state_dir: Path, node_exec_id: str | None, kind: str, text: str) -> None:
    """Append one line to a node's log, if it has one open (the seam every component writes through)."""
    if node_exec_id is None:
        return
    log = writer(state_dir, node_exec_id)
    if log is not None:
        log.write(kind, text)


def _drop_writer(path: Path) -> None:
    with _writers_lock:
        found = _writers.pop(path, None)
    if found is not None:
        found.close()


class NodeLogs:
    """execution_log_file records over the ledger: open, close, purge; the current state of every log."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    @property
    def state_dir(self) -> Path:
        return self.ledger.state_dir

    def all(self) -> dict[str, ExecLog]:
        return fold(self.ledger.read_as("log", ExecutionLogEvent))

    def find(self, node_exec_id: str) -> ExecLog | None:
        return self.all().get(node_exec_id)

    def for_task(self, task_id: str) -> list[ExecLog]:
        return sorted((g for g in self.all().values() if g.task_id == task_id), key=lambda g: g.created_at)

    def on_transition(self, event: NodeEvent) -> None:
        """The node tracker's hook: a running node has an open log, every status change is a line, an ending
        status closes the log (a retried or resumed node reopens it and appends)."""
        if not enabled() or event.event != "transition":
            return
        nid = event.node_exec_id
        current = self.find(nid)
        if current is None or current.status != "open":
            if event.status in CLOSING:
                return  # nothing was opened (a node recorded as already ended)
            log = self._open(event)
        else:
            log = writer(self.state_dir, nid) or self._open(event)
        detail = f" ({': '.join(x for x in (event.error_code, event.error) if x)})" if event.error else ""
        quota = f" until the {event.quota_limit_type} limit resets" if event.status == "waiting_for_quota" else ""
        log.write("node", f"{event.stage} {nid} attempt {event.attempt}: {event.status}{quota}{detail}")
        if event.status in CLOSING:
            self.close(nid)

    def _open(self, event: NodeEvent) -> NodeLog:
        path = log_path(self.state_dir, event.node_exec_id)
        rel = path.relative_to(self.state_dir).as_posix()
        self.transition(event.node_exec_id, "open", path=rel, task_id=event.task_id, stage=event.stage,
                     unit_id=event.unit_id)  # fmt: skip
        with _writers_lock:
            log = _writers.get(path)
            if log is None:
                log = _writers[path] = NodeLog(path)
        return log

    def close(self, node_exec_id: str) -> ExecLog | None:
        path = log_path(self.state_dir, node_exec_id)
        _drop_writer(path)
        size, lines = file_stats(path)
        return self.transition(node_exec_id, "closed", size_bytes=size, line_count=lines)

    def transition(self, node_exec_id: str, to: LogStatus, **fields) -> ExecLog | None:
        """A validated status change of one log (INVALID_TRANSITION for a move the table does not list)."""
        with self.ledger.transaction("log") as tx:
            mine = [r for r in tx.records() if isinstance(r, ExecutionLogEvent) and r.node_exec_id == node_exec_id]
            current = fold(mine).get(node_exec_id)
            if current is not None and current.status == to == "open":
                return current  # already open (a second process of the same node)
            lifecycle.check("execution_log", current.status if current else None, to)
            base = dict(task_id=current.task_id, stage=current.stage, unit_id=current.unit_id, path=current.path) \
                if current else {}  # fmt: skip
            event = ExecutionLogEvent(node_exec_id=node_exec_id, status=to,
                                      from_status=current.status if current else None, **{**base, **fields})  # fmt: skip
            tx.append(event)
        return fold([*mine, event]).get(node_exec_id)


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


# -- reading -------------------------------------------------------------------------------------------------


class LogChunk(BaseModel):
    """Bytes [start, end) of a log as text, cut at line ends; `size` is the file's size when read."""

    start: int
    end: int
    size: int
    text: str


def read_range(path: Path, start: int = 0, max_bytes: int = 256 * 1024) -> LogChunk:
    """At most `max_bytes` from `start`, ending at a line end (one line longer than the page comes whole up to
    PAGE_MAX_BYTES); a start inside a line moves to the next line."""
    if start < 0 or max_bytes <= 0:
        raise invalid_param(f"a byte range needs start >= 0 and a positive length, not {start}, {max_bytes}")
    max_bytes = min(max_bytes, PAGE_MAX_BYTES)
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        start = min(start, size)
        if start > 0:
            fh.seek(start - 1)
            if fh.read(1) != b"\n":  # inside a line: skip to the next one
                rest = fh.read(PAGE_MAX_BYTES)
                cut = rest.find(b"\n")
                start = size if cut < 0 else start + cut + 1
        fh.seek(start)
        data = fh.read(min(max_bytes, size - start))
    cut = data.rfind(b"\n") + 1
    if cut == 0 and data:  # a line longer than the page: return what fits (whole lines only when they end)
        cut = len(data) if start + len(data) >= size or len(data) >= PAGE_MAX_BYTES else 0
    data = data[:cut]
    return LogChunk(start=start, end=start + len(data), size=size, text=data.decode("utf-8", errors="replace"))


def tail_lines(path: Path, n: int) -> LogChunk:
    """The last `n` whole lines, read backwards block by block."""
    if n < 0:
        raise invalid_param(f"--tail must be 0 or more lines, not {n}")
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        end = size
        fh.seek(max(0, size - 1))
        if size and fh.read(1) != b"\n":  # a line being written: stop before it
            end = line_start(fh, size)
        pos, found, block = end, 0, 64 * 1024
        start = end
        while pos > 0 and found <= n:
            lo = max(0, pos - block)
            fh.seek(lo)
            buf = fh.read(pos - lo)
            idx = len(buf)
            while found <= n:
                idx = buf.rfind(b"\n", 0, idx)
                if idx < 0:
                    break
                found += 1
                if found == n + 1:
                    start = lo + idx + 1
                    break
            pos = lo
        if found <= n:
            start = 0
        if n == 0:
            start = end
        fh.seek(start)
        data = fh.read(end - start)
    return LogChunk(start=start, end=end, size=size, text=data.decode("utf-8", errors="replace"))


def line_start(fh, size: int) -> int:
    """The offset where the line holding byte `size - 1` starts (read back in 64 KB steps, never the whole file)."""
    pos = size
    while pos > 0:
        lo = max(0, pos - 65536)
        fh.seek(lo)
        buf = fh.read(pos - lo)
        idx = buf.rfind(b"\n")
        if idx >= 0:
            return lo + idx + 1
        pos = lo
    return 0


def follow(
    logs: NodeLogs, node_exec_id: str, start: int, *, poll_s: float = 0.1, max_bytes: int = 256 * 1024
) -> Iterator[LogChunk]:
    """New whole lines from `start` while the log is open; after it closes, what is left, then the end."""
    path = log_path(logs.state_dir, node_exec_id)
    offset = start
    while True:
        state = logs.find(node_exec_id)
        is_open = state is not None and state.status == "open"
        while True:  # drain what is there
            try:
                chunk = read_range(path, offset, max_bytes)
            except FileNotFoundError:
                return
            if chunk.end == offset:
                break
            offset = chunk.end
            yield chunk
        if not is_open:
            return
        time.sleep(poll_s)


# -- looking a log up (CLI, console) --------------------------------------------------------------------------


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


def view(ledger: Ledger, node_exec_id: str) -> LogView:
    """NODE_EXEC_NOT_FOUND unless the node (or its log record) exists; a purged log says when and why."""
    from .nodes import NodeTracker

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


def purged_notice(log: ExecLog) -> str:
    when = log.purged_at.strftime("%Y-%m-%d %H:%M UTC") if log.purged_at else "an unknown date"
    days = f"{log.retention_days} day{'s' if log.retention_days != 1 else ''}" if log.retention_days else "?"
    return f"purged by retention on {when} ({days})"


def file_stats_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def log_test_run(state_dir: Path, node_exec_id: str | None, what: str, run) -> None:
    """A test-runner run in the node's log: the command, the counts, and the output's last lines."""
    if node_exec_id is None or writer(state_dir, node_exec_id) is None:
        return
    s = run.summary
    end = " (timed out)" if run.timed_out else " (crashed)" if run.crashed else ""
    write_line(state_dir, node_exec_id, "tests", f"{what}: $ {run.command}")
    write_line(state_dir, node_exec_id, "tests",
               f"{what}: {'passed' if run.ok else 'failed'}{end}, exit {run.exit_code}, {s.passed} passed, "
               f"{s.failed} failed, {s.skipped} skipped of {s.total} in {run.duration_ms} ms")  # fmt: skip
    tail = "\n".join(run.output_tail.splitlines()[-OUTPUT_TAIL_LINES:])
    if tail.strip():
        write_line(state_dir, node_exec_id, "tests", f"{what}: output tail\n{tail}")


OUTPUT_TAIL_LINES = 30
