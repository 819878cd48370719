"""The end of a confined process and of everything it started, as a checked effect.

A confined run (testrun/confine.py) is a launcher shell (its own session: the quota watcher, `du`, `sleep`),
bubblewrap, and inside a private pid namespace whose first process (its init) bwrap starts. No process inside
can leave that namespace (the seccomp filter refuses `unshare`, `setns` and namespace flags to `clone`), so a
child that double-forks or calls `setsid` is still in it, and when its init dies the kernel kills every process
in it. bwrap reports the init's host pid and the namespace's inode on its `--json-status-fd` (`STATUS_FD`), which
the launcher opens on a file in a folder of the host's own (`status_file`): bwrap writes it from outside the
sandbox, and the descriptor is closed inside.

`end_run(proc, status)` ends a run whatever state it is in (running, exited, its launcher already gone):

1. the init: a pidfd on it (checked against the namespace's inode, so a reused pid is never signalled) and a
   descriptor on its namespace (kept open: the inode cannot name another namespace while we look); SIGKILL through
   the pidfd, then wait for it to exit (the kernel kills and reaps the namespace's processes first);
2. the launcher: when step 1 killed the sandbox, a short wait for it to exit on its own; if it still runs,
   SIGTERM / SIGKILL to its group and every descendant; then SIGKILL to whatever is left of its session;
3. the check: every process in /proc whose pid namespace is that one, or whose session is the launcher's, is
   listed; those are killed once more, and whatever still runs after that is returned (`pid (name)`). The caller
   turns a non-empty answer into an error: the run did not end.

Without a status file (a run that was not confined, or bwrap that never started) steps 2 and 3 still hold for
the launcher's session and descendants; a process that left both (`setsid` after a double fork) is not found.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .launcher import STATUS_FD
from .process import kill_group_leftovers, kill_process_tree, proc_table

__all__ = ["STATUS_FD", "SandboxInit", "end_run", "read_init", "status_file"]
EXIT_WAIT_S = 5.0  # how long the init may take to die (it waits for its namespace's processes to be reaped)
LAUNCHER_WAIT_S = 2.0  # how long the launcher may take to exit once bwrap has (its sweep, the watcher's end)
STATUS_LIMIT = 4096


@dataclass(frozen=True)
class SandboxInit:
    """The sandbox's first process as bwrap reported it: its host pid and its pid namespace's inode."""

    pid: int
    pid_ns: int


@contextlib.contextmanager
def status_file() -> Iterator[Path]:
    """A path for bwrap's status in a folder only this user can enter; removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix=f"graphlemon-status-{os.getpid()}-"))
    try:
        yield folder / "status.json"
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def read_init(path: Path | None) -> SandboxInit | None:
    """The first line bwrap wrote (`{"child-pid": N, "pid-namespace": INODE, ...}`), or None when there is none."""
    if path is None:
        return None
    try:
        with open(path, "rb") as fh:
            head = fh.read(STATUS_LIMIT).split(b"\n", 1)[0]
        data = json.loads(head)
        return SandboxInit(int(data["child-pid"]), int(data["pid-namespace"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def end_run(proc: subprocess.Popen, status: Path | None) -> list[str]:
    """End every process of the run `proc` launched (see the module's doc); what still runs after that, as
    `pid (name)` (empty: the run has ended, checked)."""
    pinned = _pin(read_init(status))
    try:
        if pinned is not None:
            _kill_init(*pinned)
        _end_launcher(proc, settle=pinned is not None)
        ns = os.fstat(pinned[1]) if pinned is not None else None
        left = _left(proc.pid, ns)
        if left:
            for pid in left:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            deadline = time.monotonic() + EXIT_WAIT_S
            while left and time.monotonic() < deadline:
                time.sleep(0.05)
                left = _left(proc.pid, ns)
        return [f"{pid} ({_name(pid)})" for pid in sorted(left)]
    finally:
        for fd in pinned or ():
            os.close(fd)


def _pin(init: SandboxInit | None) -> tuple[int, int] | None:
    """(a pidfd on the init, a descriptor on its pid namespace), or None when the init is gone (its namespace with
    it) or its pid now names another process."""
    if init is None:
        return None
    try:
        pidfd = os.pidfd_open(init.pid)
    except OSError:
        return None
    try:
        nsfd = os.open(f"/proc/{init.pid}/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        os.close(pidfd)
        return None
    if os.fstat(nsfd).st_ino != init.pid_ns:
        os.close(pidfd)
        os.close(nsfd)
        return None
    return pidfd, nsfd


def _kill_init(pidfd: int, _nsfd: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    select.select([pidfd], [], [], EXIT_WAIT_S)


def _end_launcher(proc: subprocess.Popen, *, settle: bool) -> None:
    """`settle`: the sandbox was just killed, so the launcher is given LAUNCHER_WAIT_S to end on its own (its
    sweep); otherwise one still running is killed at once."""
    if settle:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(LAUNCHER_WAIT_S)
    if proc.poll() is None:
        kill_process_tree(proc)
    kill_group_leftovers(proc.pid)


def _left(leader: int, ns: os.stat_result | None) -> set[int]:
    """The live processes of the run: in its pid namespace, or in the launcher's session."""
    out = set()
    for pid, (_ppid, sid) in proc_table().items():
        if sid == leader and pid != leader:
            out.add(pid)
        elif ns is not None and _in_namespace(pid, ns):
            out.add(pid)
    return out


def _in_namespace(pid: int, ns: os.stat_result) -> bool:
    try:
        st = os.stat(f"/proc/{pid}/ns/pid")
    except OSError:
        return False
    return (st.st_dev, st.st_ino) == (ns.st_dev, ns.st_ino)


def _name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return "?"
