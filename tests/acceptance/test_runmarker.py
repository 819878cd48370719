"""Who runs a task right now (graphlemon/runmarker.py): live and stale markers, and what `status` says of each."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from graphlemon.errors import GraphLemonError
from graphlemon.runmarker import RunMarker, claim, release, run_state, write_marker


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


@pytest.mark.system
def test_a_zombie_is_not_a_live_run(tmp_path):
    zombie = subprocess.Popen([sys.executable, "-c", "pass"])  # exits; not waited for yet: a zombie
    try:
        deadline = time.monotonic() + 30
        while Path(f"/proc/{zombie.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
            assert time.monotonic() < deadline
            time.sleep(0.01)
        write_marker(tmp_path, RunMarker(task_id="t1", pid=zombie.pid, host=socket.gethostname()))
        assert run_state(tmp_path, "t1", "coding") == "interrupted"
    finally:
        zombie.wait()


@pytest.mark.parametrize("status", ["queued", "blocked_pending_human", "paused", "done"])
def test_nothing_should_run_and_nothing_does(tmp_path, status):
    assert run_state(tmp_path, "t1", status) is None


@pytest.mark.system
@pytest.mark.parametrize("status", ["blocked_pending_human", "done", "abandoned"])
def test_a_task_waiting_for_a_person_is_never_called_interrupted(tmp_path, status):
    write_marker(tmp_path, RunMarker(task_id="t1", pid=dead_pid(), host=socket.gethostname()))
    assert run_state(tmp_path, "t1", status) is None


@pytest.mark.parametrize("status", ["planning", "coding", "integrating", "validating", "waiting_for_quota"])
def test_a_working_status_with_no_run_is_interrupted(tmp_path, status):
    assert run_state(tmp_path, "t1", status) == "interrupted"


@pytest.mark.system
def test_a_live_run_is_running_and_a_killed_one_is_interrupted(tmp_path):
    assert claim(tmp_path, "t1") is None
    assert run_state(tmp_path, "t1", "coding") == "running"
    release(tmp_path, "t1")
    write_marker(tmp_path, RunMarker(task_id="t1", pid=dead_pid(), host=socket.gethostname()))
    assert run_state(tmp_path, "t1", "coding") == "interrupted"
    stale = claim(tmp_path, "t1")  # the next run takes over and learns of the dead one
    assert stale is not None and stale.pid != os.getpid() and run_state(tmp_path, "t1", "coding") == "running"


@pytest.mark.system
def test_a_second_run_of_a_live_task_is_refused(tmp_path):
    other = subprocess.Popen([sys.executable, "-c", "import time; print('up', flush=True); time.sleep(30)"],
                             stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert other.stdout.readline() == "up\n"
        write_marker(tmp_path, RunMarker(task_id="t1", pid=other.pid, host=socket.gethostname()))
        with pytest.raises(GraphLemonError, match="already running"):
            claim(tmp_path, "t1")
        assert run_state(tmp_path, "t1", "coding") == "running"
    finally:
        other.kill()
        other.wait()
