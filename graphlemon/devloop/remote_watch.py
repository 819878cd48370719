"""A remote unit run's heartbeat, and how the devloop tells that its worker is gone (docs/scale.md, "A worker that
dies").

The run (`remote-unit-loop` on a worker) writes a counter to the result store every `heartbeat_s` seconds
(`graphlemon-heartbeats/<flow run id>`), from a thread of its own, as long as its process lives. The devloop,
waiting for the run, reads it at each poll and times it on its own clock (no two machines' clocks are compared):
a run that is `Running` and whose counter has not moved for `stale_s` seconds — or that has stayed `Pending` for
`start_s` seconds without a first beat — has lost its process, whatever Prefect still says.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from pydantic import BaseModel, Field


def heartbeat_key(flow_run_id: str) -> str:
    return f"graphlemon-heartbeats/{flow_run_id}"


class WatchBounds(BaseModel):
    """How often a run beats, and how long the devloop waits for a beat before it calls the run's worker gone."""

    heartbeat_s: float = Field(default=5.0, gt=0, le=300)
    stale_s: float = Field(default=30.0, gt=0)
    start_s: float = Field(default=180.0, gt=0)  # Pending → Running: a flow-run process start on a busy worker

    @classmethod
    def from_env(cls) -> WatchBounds:
        """The defaults, each replaced by `GRAPHLEMON_REMOTE_<FIELD>` when set (INVALID_PARAM when not a number > 0)."""
        import os

        from ..errors import invalid_param

        given = {f: os.environ[f"GRAPHLEMON_REMOTE_{f.upper()}"] for f in cls.model_fields
                 if f"GRAPHLEMON_REMOTE_{f.upper()}" in os.environ}  # fmt: skip
        try:
            return cls.model_validate(given)
        except ValueError as exc:
            raise invalid_param(f"GRAPHLEMON_REMOTE_*: {exc}") from None


@contextmanager
def beating(write: Callable[[str, bytes], object], key: str, every: float) -> Iterator[None]:
    """Write an increasing counter at `key` now and every `every` seconds until the block ends."""
    done = threading.Event()

    def beat() -> None:
        n = 0
        while True:
            n += 1
            try:
                write(key, str(n).encode())
            except Exception:  # noqa: BLE001 - a store that did not answer this time: the next beat tries again
                pass
            if done.wait(every):
                return

    thread = threading.Thread(target=beat, name=f"heartbeat-{key}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join(timeout=max(every, 5.0))  # a beat being written ends before the block does: none comes after it


class Watch:
    """One run's liveness as the devloop sees it: `seen(state_type, beat)` at each poll -> why its worker is gone,
    or None."""

    def __init__(self, bounds: WatchBounds, clock: Callable[[], float] = time.monotonic) -> None:
        self.bounds, self.clock = bounds, clock
        self.beat: bytes | None = None
        self.since: float | None = None  # when the current state or the last new beat was first seen
        self.state: str | None = None

    def seen(self, state_type: str, beat: bytes | None) -> str | None:
        now = self.clock()
        if state_type != self.state or (beat is not None and beat != self.beat):
            self.state, self.since = state_type, now
        if beat is not None:
            self.beat = beat
        quiet = now - (self.since if self.since is not None else now)
        if state_type == "PENDING" and self.beat is None and quiet > self.bounds.start_s:
            return f"it stayed Pending {quiet:.0f} s without starting (its worker is gone)"
        if state_type in ("RUNNING", "CANCELLING") and quiet > self.bounds.stale_s:
            last = "no heartbeat at all" if self.beat is None else "no heartbeat"
            return f"its worker is gone: {last} for {quiet:.0f} s (GraphLemon's bound: {self.bounds.stale_s:.0f} s)"
        return None
