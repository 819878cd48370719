"""Writing an execution log (REQ-13): the file, one line per thing the node did, and its records over the ledger.

* The file is plain text, `<ts> [<kind>] <text>` a line, written line-buffered and redacted by the one redactor.
  The agents' JSON transcripts live in the same folder; retention removes the folder.
* `NodeLogs.on_transition` is the one seam the node tracker calls: it opens, writes the status line, closes.
  Everything else a node does reaches its log through `write_line(state_dir, node_exec_id, kind, text)`.
"""

from __future__ import annotations

import threading
from pathlib import Path

from .. import lifecycle
from ..errors import GraphLemonError
from ..ledger import Ledger
from ..models import ExecutionLogEvent, LogStatus, NodeEvent, utcnow
from ..redact import DEFAULT as DEFAULT_REDACTOR
from .records import CLOSING, ExecLog, enabled, file_stats, fold, log_path

LINE_MAX_CHARS = 4000  # one log line (a tool result, a test's output tail) keeps its head


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
