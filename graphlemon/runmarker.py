"""Who is running a task right now: `.graphlemon/running/<task_id>.json` (pid, host, flow run, goal slot).

A run claims its task before it starts. A marker left by a process that is gone is
*stale*: the previous run was killed (REQ-06), so the new run takes over — and the
Prefect layer marks the dead flow run Crashed and gives back the goal slot it held.
A marker of a live process on this host means the task is already running: refused.
"""

from __future__ import annotations

import json
import os
import socket
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from .errors import ErrorCode, GraphLemonError
from .models import utcnow
from .processes import pid_alive


class RunMarker(BaseModel):
    task_id: str
    pid: int
    host: str
    flow_run_id: str | None = None
    holds_goal_slot: bool = False
    started: datetime = Field(default_factory=utcnow)


def marker_path(state_dir: Path, task_id: str) -> Path:
    return Path(state_dir) / "running" / f"{task_id}.json"


def read_marker(state_dir: Path, task_id: str) -> RunMarker | None:
    path = marker_path(state_dir, task_id)
    try:
        return RunMarker.model_validate_json(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except ValueError:
        return RunMarker(task_id=task_id, pid=-1, host="?")  # unreadable: treat as stale, never as alive


def is_alive(marker: RunMarker) -> bool:
    if marker.host != socket.gethostname() or marker.pid <= 0:
        return marker.host not in (socket.gethostname(), "?")  # another host: assume alive (cannot check)
    if not pid_alive(marker.pid):
        return False
    try:
        cmdline = Path(f"/proc/{marker.pid}/cmdline").read_bytes()
    except OSError:
        return True
    # a reused pid that is not a python process is not our run (an empty cmdline: mid-exec, give it the benefit)
    return not cmdline or b"python" in cmdline or b"graphlemon" in cmdline or b"prefect" in cmdline


def claim(state_dir: Path, task_id: str, flow_run_id: str | None = None) -> RunMarker | None:
    """Mark the task as run by this process; returns the stale marker of a dead previous run, if any."""
    previous = read_marker(state_dir, task_id)
    if previous is not None and previous.pid != os.getpid() and is_alive(previous):
        raise GraphLemonError(
            ErrorCode.INVALID_TRANSITION,
            f"task {task_id} is already running (pid {previous.pid} on {previous.host}, since {previous.started:%H:%M:%S})",
            task_id=task_id,
            pid=previous.pid,
        )
    write_marker(
        state_dir, RunMarker(task_id=task_id, pid=os.getpid(), host=socket.gethostname(), flow_run_id=flow_run_id)
    )
    return previous if previous is not None and previous.pid != os.getpid() else None


def write_marker(state_dir: Path, marker: RunMarker) -> None:
    path = marker_path(state_dir, marker.task_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(marker.model_dump(mode="json")), encoding="utf-8")
    os.replace(tmp, path)


def release(state_dir: Path, task_id: str) -> None:
    marker = read_marker(state_dir, task_id)
    if marker is not None and marker.pid == os.getpid():
        marker_path(state_dir, task_id).unlink(missing_ok=True)


RunState = Literal["running", "interrupted"]
_NEEDS_A_RUN = frozenset({"planning", "coding", "integrating", "validating", "waiting_for_quota"})
_SETTLED = frozenset({"blocked_pending_human", "paused", "done", "abandoned"})


def run_state(state_dir: Path, task_id: str, status: str) -> RunState | None:
    """Is a process working on the task? `running` (a live marker), `interrupted` (its run was killed:
    `graphlemon resume` continues it), or None (nothing should be running: queued, blocked, done...)."""
    if status in _SETTLED:
        return None  # a person decides next, or it has ended: whatever process was last seen on it
    marker = read_marker(state_dir, task_id)
    if marker is not None:
        return "running" if is_alive(marker) else "interrupted"
    return "interrupted" if status in _NEEDS_A_RUN else None
