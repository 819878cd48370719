"""A pure computation in a forked child with a time limit: Python's `re` has no timeout, and a pattern an agent
wrote (`^(a+)+$`) can backtrack for hours on one line, holding the host's CPU. The child inherits everything (nothing
is pickled on the way in); its result comes back pickled through a pipe; past the limit it is killed."""

from __future__ import annotations

import os
import pickle
import select
import signal
import time
from collections.abc import Callable
from typing import Any

from ...errors import ErrorCode, GraphLemonError


class TimedOut(Exception):
    """The child ran past its limit and was killed."""


def in_child(fn: Callable[..., Any], *args: Any, seconds: float) -> Any:
    """fn(*args) in a forked child; TimedOut past `seconds`. A GraphLemonError in the child is raised here again."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: compute, send, leave without running the parent's exit handlers
        try:
            os.close(read_fd)
            try:
                payload = ("ok", fn(*args))
            except GraphLemonError as exc:
                payload = ("error", exc.code.value, exc.message)
            with os.fdopen(write_fd, "wb") as out:
                out.write(pickle.dumps(payload))
        finally:
            os._exit(0)
    os.close(write_fd)
    try:
        data = _read_until(read_fd, time.monotonic() + seconds)
    finally:
        os.close(read_fd)
        if data is None:
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    if data is None:
        raise TimedOut(f"ran past {seconds:g} s")
    payload = pickle.loads(data)  # our own child's bytes
    if payload[0] == "error":
        raise GraphLemonError(ErrorCode(payload[1]), payload[2])
    return payload[1]


def _read_until(fd: int, deadline: float) -> bytes | None:
    """Everything the child writes until it closes the pipe, or None at the deadline."""
    chunks = []
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return None
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
