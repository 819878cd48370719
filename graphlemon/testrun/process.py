"""Run one test command as its own process group, with a timeout and a cancel event.

The child's stdout and stderr are pipes, as under a terminal-less native run (CI): a test that looks at what fd 1
is sees what its own runner gives it, never a regular file. One thread copies them into their files as they come
(`_Pump`): both pipes are read together, so a child filling one never blocks; merged output is one pipe for both
streams, so their order is the child's own. A file keeps at most MAX_KEPT_BYTES: its head, then a cut line and
its last TAIL_KEPT_BYTES. On timeout, cancel or any exception in the caller, the whole group is killed
(SIGTERM, a short grace, SIGKILL), together with every descendant found under
/proc that left the group. Anything of the group still alive after a normal exit
is killed too: a test run leaves no process behind.

Every run started here is known until it ends (`tracked`): when the interpreter exits (Ctrl-C or an exception in the
main thread, a handled SIGTERM), its runs are ended before Python waits for the threads that wait for them, and no
new run starts after that. A GraphLemon killed outright (SIGKILL) is noticed by each confined run's launcher
(launcher.py), which then ends its run on its own. A run ended that way is no result (its exit code is GraphLemon's
kill, not the tests'): `run_process` raises ABORTED for it instead of returning an outcome, so nothing records it as
a failure or opens a bug for it.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import select
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ..errors import ErrorCode, GraphLemonError

GRACE_SECONDS = 1.0
POLL_SECONDS = 0.1
DRAIN_SECONDS = 1.0  # after the run ended: how long a pipe still held open (a daemon it left) is read on
MAX_KEPT_BYTES = 256 * 1024 * 1024  # an output file's most: its head, then a cut line and its tail
TAIL_KEPT_BYTES = 8 * 1024 * 1024
CHUNK_BYTES = 1024 * 1024
CUT_LINE = b"\n[graphlemon] ... output cut: beyond %d MB only its tail is kept ...\n"
STOPPING = "GraphLemon is stopping: no new run starts"

_live: set[subprocess.Popen] = set()
_ended: set[subprocess.Popen] = set()  # the runs `end_live_runs` ended: no result comes of them
_live_lock = threading.Lock()
_stopping = threading.Event()


@dataclass(frozen=True)
class ProcessOutcome:
    exit_code: int | None  # negative: killed by that signal; None: never started
    duration_ms: int
    timed_out: bool = False
    cancelled: bool = False
    start_error: str | None = None


def run_process(
    argv: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    output_path: Path,
    timeout: float,
    cancel: threading.Event | None = None,
    stdout_path: Path | None = None,
) -> ProcessOutcome:
    """Run `argv` (no shell) in `cwd`; its output goes to `output_path` (stdout to `stdout_path` if given)."""
    started = time.monotonic()
    if _stopping.is_set():
        raise ended_by_stop(argv, "was not started")
    with contextlib.ExitStack() as files:  # opened before the run starts: a link it plants later is not followed
        output = files.enter_context(open(output_path, "wb"))
        stdout = files.enter_context(open(stdout_path, "wb")) if stdout_path else output
        try:
            proc = subprocess.Popen(
                argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE if stdout_path else subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        except OSError as exc:
            reason = f"command not found: {argv[0]}" if isinstance(exc, FileNotFoundError) else str(exc)
            return ProcessOutcome(exit_code=None, duration_ms=_ms(started), start_error=reason)
        assert proc.stdout is not None
        pipes = [(proc.stdout, stdout)] + ([(proc.stderr, output)] if proc.stderr is not None else [])
        with _Pump(pipes) as pump, tracked(proc):
            outcome = _watch(proc, started, timeout, cancel)
            pump.drain(DRAIN_SECONDS)
    if proc in _ended:
        raise ended_by_stop(argv, "was ended before it finished")
    return outcome


class _Pump:
    """Copies each pipe into its file on a thread of its own until every writer has closed it (or `drain` gives
    up on a pipe that a process beyond the run's reach still holds); each file keeps its head and tail (`_Kept`)."""

    def __init__(self, pipes: list[tuple[BinaryIO, BinaryIO]]) -> None:
        self._pipes = [pipe for pipe, _file in pipes]
        self._kept = {pipe.fileno(): _Kept(file) for pipe, file in pipes}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._copy, name="graphlemon-run-output", daemon=True)

    def __enter__(self) -> _Pump:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        for pipe in self._pipes:
            pipe.close()

    def drain(self, seconds: float) -> None:
        """Read on until every pipe is closed, at most `seconds` more."""
        self._thread.join(seconds)
        self._stop.set()

    def _copy(self) -> None:
        with selectors.DefaultSelector() as selector:
            for fd in self._kept:
                os.set_blocking(fd, False)
                selector.register(fd, selectors.EVENT_READ)
            try:
                while selector.get_map() and not self._stop.is_set():
                    for key, _events in selector.select(POLL_SECONDS):
                        chunk = _read(key.fd)
                        if chunk:
                            self._kept[key.fd].write(chunk)
                        elif chunk is not None:
                            selector.unregister(key.fd)
            finally:
                for kept in self._kept.values():
                    kept.finish()


def _read(fd: int) -> bytes | None:
    """What the pipe holds (b"": closed by every writer; None: nothing yet)."""
    try:
        return os.read(fd, CHUNK_BYTES)
    except BlockingIOError:
        return None
    except OSError:
        return b""


class _Kept:
    """An output file: everything up to MAX_KEPT_BYTES, beyond that a cut line and the last TAIL_KEPT_BYTES. A
    write that fails (a full disk) drops the rest: the pipe is still read, so the run never blocks on it."""

    def __init__(self, file: BinaryIO) -> None:
        self._file: BinaryIO | None = file
        self._room = MAX_KEPT_BYTES
        self._tail: bytearray | None = None

    def write(self, chunk: bytes) -> None:
        if self._tail is not None:
            self._tail += chunk
            if len(self._tail) > 2 * TAIL_KEPT_BYTES:
                del self._tail[:-TAIL_KEPT_BYTES]
            return
        head, rest = chunk[: self._room], chunk[self._room :]
        self._room -= len(head)
        self._put(head)
        if rest:
            self._tail = bytearray(rest)

    def finish(self) -> None:
        if self._tail is not None:
            self._put(CUT_LINE % (MAX_KEPT_BYTES // (1024 * 1024)) + bytes(self._tail[-TAIL_KEPT_BYTES:]))
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.flush()

    def _put(self, data: bytes) -> None:
        if self._file is None or not data:
            return
        try:
            self._file.write(data)
        except OSError:
            self._file = None


def ended_by_stop(argv: list[str], what: str) -> GraphLemonError:
    """ABORTED: a run GraphLemon did not start or ended itself because it is ending; no result comes of it."""
    return GraphLemonError(ErrorCode.ABORTED, f"{STOPPING}: the run of {argv[0]!r} {what} (no result: nothing is "
                           "recorded of it)")  # fmt: skip


def _watch(proc: subprocess.Popen, started: float, timeout: float, cancel: threading.Event | None) -> ProcessOutcome:
    timed_out = cancelled = False
    try:
        deadline = started + timeout
        while True:
            if _wait(proc, min(POLL_SECONDS, max(0.0, deadline - time.monotonic()))):
                break
            if cancel is not None and cancel.is_set():
                cancelled = True
            elif time.monotonic() >= deadline:
                timed_out = True
            else:
                continue
            kill_process_tree(proc)
            break
    except BaseException:
        kill_process_tree(proc)
        raise
    kill_group_leftovers(proc.pid)
    return ProcessOutcome(proc.returncode, _ms(started), timed_out=timed_out, cancelled=cancelled)


@contextlib.contextmanager
def tracked(proc: subprocess.Popen) -> Iterator[subprocess.Popen]:
    """`proc` is a live run until the block ends: `end_live_runs` ends it if the interpreter exits meanwhile."""
    with _live_lock:
        _live.add(proc)
    try:
        if _stopping.is_set():  # it started while the runs were being ended
            _ended.add(proc)
            kill_process_tree(proc)
        yield proc
    finally:
        with _live_lock:
            _live.discard(proc)


def stopping() -> bool:
    """GraphLemon is ending (`end_live_runs` was called): the loop starts no new step."""
    return _stopping.is_set()


def end_live_runs() -> int:
    """End every live run (its whole tree) and start no new one; how many were running. The threads waiting on
    them see them end and go on (their own code ends each run's leftovers)."""
    _stopping.set()
    with _live_lock:
        running = [proc for proc in _live if proc.poll() is None]
        _ended.update(running)
    for proc in running:
        kill_process_tree(proc)
    return len(running)


# Python waits for non-daemon threads before it runs `atexit` functions: a thread waiting on a test run would keep
# GraphLemon (and the run) alive until the run's own timeout. This hook runs before that wait (concurrent.futures
# uses it the same way).
getattr(threading, "_register_atexit", atexit.register)(end_live_runs)


def kill_process_tree(proc: subprocess.Popen) -> None:
    """SIGTERM the group and its descendants, wait a grace period, then SIGKILL them all."""
    members = descendants(proc.pid)
    _signal_all(proc.pid, members, signal.SIGTERM)
    try:
        proc.wait(GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        pass
    members |= descendants(proc.pid)
    _signal_all(proc.pid, members, signal.SIGKILL)
    proc.wait()
    _wait_gone(members)


def kill_group_leftovers(leader: int) -> None:
    """After the leader exited: SIGKILL whatever still runs in its group or session."""
    members = _session_members(leader)
    _signal_all(leader, members, signal.SIGKILL)
    _wait_gone(members)


def _wait_gone(pids: set[int], seconds: float = 2.0) -> None:
    """Until every pid has died (a zombie counts as dead), at most `seconds`."""
    deadline = time.monotonic() + seconds
    while pids and time.monotonic() < deadline:
        pids = pids & set(proc_table())
        if pids:
            time.sleep(0.02)


def descendants(root: int) -> set[int]:
    """Every live process below `root` (by parent links) plus its session members, from /proc."""
    table = proc_table()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _sid) in table.items():
        children.setdefault(ppid, []).append(pid)
    found: set[int] = set()
    stack = [root]
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in found:
                found.add(child)
                stack.append(child)
    return found | {pid for pid, (_ppid, sid) in table.items() if sid == root and pid != root}


def _session_members(leader: int) -> set[int]:
    return {pid for pid, (_ppid, sid) in proc_table().items() if sid == leader and pid != leader}


def proc_table() -> dict[int, tuple[int, int]]:
    """pid → (ppid, session id) for every process visible in /proc (empty where there is no /proc)."""
    table: dict[int, tuple[int, int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return table
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            stat = Path("/proc", entry, "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()  # after "pid (comm) ": state ppid pgrp session
        if len(fields) >= 4 and fields[0] != "Z":
            table[int(entry)] = (int(fields[1]), int(fields[3]))
    return table


def _signal_all(group: int, pids: set[int], sig: signal.Signals) -> None:
    try:
        os.killpg(group, sig)
    except (ProcessLookupError, PermissionError):
        pass
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _wait(proc: subprocess.Popen, seconds: float) -> bool:
    """True once the process has exited; wakes at once on exit where pidfd is available."""
    if proc.poll() is not None:
        return True
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is not None:
        try:
            fd = pidfd_open(proc.pid)
        except OSError:
            fd = None
        if fd is not None:
            try:
                select.select([fd], [], [], seconds)
            finally:
                os.close(fd)
            return proc.poll() is not None
    try:
        proc.wait(seconds)
        return True
    except subprocess.TimeoutExpired:
        return False


def _ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
