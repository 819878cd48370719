"""Is a process still running? One answer for run markers, scratch folders and deployed instances."""

from __future__ import annotations

import os
from pathlib import Path


def pid_alive(pid: int) -> bool:
    """True while `pid` runs; a zombie (exited, only its exit status left) is not alive. A process of another user
    counts as alive (it exists), and so does one whose state cannot be read."""
    if not pid_exists(pid):
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return True


def pid_exists(pid: int) -> bool:
    """True while `pid` names a process, a zombie included (one that exited and whose parent has not yet read its
    exit status: a launch whose exit code is about to be recorded)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def proc_start(pid: int) -> int | None:
    """When the process `pid` started, in clock ticks since the machine booted (field 22 of /proc/<pid>/stat), or
    None when it cannot be read (gone, or no /proc). A pid the kernel gave to a new process has another start: the
    pair (pid, start) names one process for as long as the machine runs."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def boot_id() -> str:
    """This machine since its last boot (the kernel's random boot id); a process of another boot is gone."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return "unknown"
