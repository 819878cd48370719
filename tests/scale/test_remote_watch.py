"""How the devloop tells a remote unit run's worker is gone: by the run's heartbeat in the result store, timed on
the devloop's own clock, within the stated bound."""

from __future__ import annotations

import time

import pytest

from graphlemon.devloop.remote_attempts import RunSeen, plan
from graphlemon.devloop.remote_watch import Watch, WatchBounds, beating, heartbeat_key
from graphlemon.errors import GraphLemonError


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


BOUNDS = WatchBounds(heartbeat_s=1, stale_s=10, start_s=30)


def test_a_running_run_whose_beat_stops_is_gone_once_the_bound_passes():
    clock = Clock()
    watch = Watch(BOUNDS, clock)
    for n in range(1, 6):  # beating every second: alive
        clock.now = n
        assert watch.seen("RUNNING", str(n).encode()) is None
    clock.now = 15  # the last new beat at 5: 10 s of silence is still within the bound
    assert watch.seen("RUNNING", b"5") is None
    clock.now = 15.5
    said = watch.seen("RUNNING", b"5")
    assert said == "its worker is gone: no heartbeat for 10 s (GraphLemon's bound: 10 s)"


def test_a_run_that_never_beat_is_timed_from_when_it_was_seen_running_and_pending_has_its_own_bound():
    clock = Clock()
    watch = Watch(BOUNDS, clock)
    assert watch.seen("SCHEDULED", None) is None
    clock.now = 1000  # nobody took it: no bound (a line says so), never called gone
    assert watch.seen("SCHEDULED", None) is None
    assert watch.seen("PENDING", None) is None
    clock.now = 1031
    assert "stayed Pending 31 s" in watch.seen("PENDING", None)
    watch = Watch(BOUNDS, clock)
    assert watch.seen("RUNNING", None) is None
    clock.now += 11
    assert "no heartbeat at all for 11 s" in watch.seen("RUNNING", None)


def test_the_heartbeat_is_written_at_once_and_then_every_interval_until_the_block_ends():
    written: list[tuple[str, bytes]] = []
    with beating(lambda k, v: written.append((k, v)), heartbeat_key("run-1"), 0.05):
        time.sleep(0.3)
    count = len(written)
    time.sleep(0.15)
    assert len(written) == count >= 3  # stopped with the block
    assert written[0] == ("graphlemon-heartbeats/run-1", b"1") and written[-1][1] == str(count).encode()


def test_the_bounds_come_from_the_environment_and_nonsense_is_refused(monkeypatch):
    monkeypatch.setenv("GRAPHLEMON_REMOTE_STALE_S", "12")
    assert WatchBounds.from_env() == WatchBounds(stale_s=12)
    monkeypatch.setenv("GRAPHLEMON_REMOTE_HEARTBEAT_S", "-1")
    with pytest.raises(GraphLemonError, match="GRAPHLEMON_REMOTE_"):
        WatchBounds.from_env()


def test_a_deleted_run_counts_against_its_attempt_like_a_failed_one():
    from datetime import UTC, datetime

    gone = RunSeen(id="r1", name="unit add", state_type="DELETED", state_name="Deleted", created=datetime.now(UTC),
                   tags=["graphlemon-unit:n", "graphlemon-attempt:L1"])  # fmt: skip
    assert plan([gone], "n", "L1").key == "graphlemon/n/L1/2"
