"""A pids cgroup per confined run, for the one case the process limit (RLIMIT_NPROC) does not cover: the kernel
never counts root's processes against it, and a sandbox started by root maps its user to root outside.

Each run gets `<our pids cgroup>/graphlemon-<pid>/run-<n>` with `pids.max` set; the run's launcher moves itself
into it before anything forks. Empty run groups are removed at the next run and when the process exits, but not
one whose launcher has yet to join it (runs start side by side: units, claude turns and their tests). Where no
pids cgroup can be made (no controller, a read-only cgroup file system, cgroup v2 without delegation) the answer is
None and `graphlemon doctor sandbox` says the process limit does not hold.
"""

from __future__ import annotations

import atexit
import itertools
import os
import threading
import time
from pathlib import Path

from ..processes import pid_alive

_lock = threading.Lock()
_counter = itertools.count(1)
_state: dict[str, Path | None] = {}
_unjoined: dict[Path, float] = {}  # run groups handed out whose launcher has not been seen in them, and when
JOIN_GRACE_S = 300.0  # how long a handed-out group waits for its launcher before a sweep may remove it


def new_group(max_pids: int) -> Path | None:
    """A fresh cgroup limited to `max_pids` tasks, or None when none can be made here."""
    with _lock:
        parent = _parent()
        if parent is None:
            return None
        _sweep(parent)
        group = parent / f"run-{next(_counter)}"
        try:
            group.mkdir()
            (group / "pids.max").write_text(f"{max_pids}\n")
        except OSError:
            return None
        _unjoined[group] = time.monotonic()
        return group


def _parent() -> Path | None:
    if "parent" not in _state:
        _state["parent"] = _make_parent()
        if _state["parent"] is not None:
            atexit.register(_remove_all)
    return _state["parent"]


def _make_parent() -> Path | None:
    base = pids_base()
    if base is None:
        return None
    _sweep_dead(base)
    parent = base / f"graphlemon-{os.getpid()}"
    try:
        parent.mkdir(exist_ok=True)
        if not (parent / "pids.max").is_file():
            return None
    except OSError:
        return None
    return parent


def pids_base() -> Path | None:
    """This process's cgroup in a hierarchy with the pids controller (v1's `pids`, or v2 where it is enabled)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _id, controllers, path = line.split(":", 2)
        if "pids" in controllers.split(","):
            base = Path("/sys/fs/cgroup/pids") / path.lstrip("/")
            if base.is_dir():
                return base
    for line in lines:
        if line.startswith("0::"):
            base = Path("/sys/fs/cgroup") / line[3:].lstrip("/")
            try:
                if "pids" in (base / "cgroup.subtree_control").read_text().split():
                    return base
            except OSError:
                return None
    return None


def _sweep(parent: Path, *, wait_for_launchers: bool = True) -> None:
    """Remove the run groups whose processes have all ended (an occupied group refuses rmdir), but not one whose
    launcher has yet to join it."""
    now = time.monotonic()
    for child in parent.glob("run-*"):
        born = _unjoined.get(child)
        if born is not None and wait_for_launchers:
            if _populated(child):
                del _unjoined[child]  # joined: removed once its processes end
                continue
            if now - born < JOIN_GRACE_S:
                continue  # its launcher is about to start
        try:
            child.rmdir()
        except OSError:
            continue
        _unjoined.pop(child, None)


def _populated(group: Path) -> bool:
    try:
        return bool((group / "cgroup.procs").read_text().strip())
    except OSError:
        return False


def _sweep_dead(base: Path) -> None:
    """Remove the empty groups of GraphLemon processes that have ended (killed before they could)."""
    for parent in base.glob("graphlemon-*"):
        pid = parent.name.removeprefix("graphlemon-")
        if not pid.isdigit() or pid_alive(int(pid)):
            continue
        _sweep(parent)
        try:
            parent.rmdir()
        except OSError:
            continue


def _remove_all() -> None:
    parent = _state.get("parent")
    if parent is None:
        return
    _sweep(parent, wait_for_launchers=False)
    try:
        parent.rmdir()
    except OSError:
        pass
