"""Goal slots for runs without Prefect: at most `max_concurrent_goals` tasks of a project run at once.

A slot is an exclusive `flock` on `.graphlemon/goal-slots/<n>.lock`; the kernel drops it when
the holding process ends, however it ends, so a killed run never keeps its slot. A run that
finds every slot taken waits (its task stays queued) until one frees. The Prefect engine uses
Prefect's global concurrency limit for the same job; both engines on one project share nothing,
so one project should be driven by one engine at a time.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import invalid_param

POLL_S = 0.2


def slots_dir(state_dir: Path) -> Path:
    return Path(state_dir) / "goal-slots"


def _try_slot(path: Path, task_id: str) -> int | None:
    """The fd holding slot `path`, or None when another process holds it."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps({"task_id": task_id, "pid": os.getpid()}).encode(), 0)
    return fd


@contextmanager
def goal_slot(
    state_dir: Path, task_id: str, limit: int, *, on_wait: Callable[[str], None] | None = None
) -> Iterator[int]:
    """Hold one of the project's `limit` goal slots while the block runs (yields the slot number); waits for a
    free one, calling `on_wait(message)` once when it has to."""
    if limit < 1:
        raise invalid_param(f"max_concurrent_goals is {limit}; it must be at least 1")
    folder = slots_dir(state_dir)
    folder.mkdir(parents=True, exist_ok=True)
    told = False
    while True:
        for n in range(limit):
            fd = _try_slot(folder / f"{n}.lock", task_id)
            if fd is not None:
                try:
                    yield n
                finally:
                    os.close(fd)  # releases the lock
                return
        if not told and on_wait is not None:
            on_wait(f"task {task_id} waits for a goal slot: {limit} of {limit} in use on this project")
            told = True
        time.sleep(POLL_S)
