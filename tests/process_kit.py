"""Processes a test left, found by a mark in their command line, and a bounded wait: shared by the tests that check
nothing a run started outlives it (issue 43)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path


def marked(mark: str) -> list[int]:
    """The live processes whose command line holds `mark`."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and mark.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def wait_until(check: Callable[[], object], seconds: float) -> bool:
    """True once `check()` is true, polled every 0.1 s for at most `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.1)
    return bool(check())
