"""Issue 24.1: the direct engine's goal slots — a second run waits while every slot is held, and a killed
holder gives its slot back (the kernel drops its lock), so a kill never blocks a project."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time

import pytest

from graphlemon.devloop.goal_slots import goal_slot

HOLDER = """
import sys, time
from graphlemon.devloop.goal_slots import goal_slot
with goal_slot(sys.argv[1], "task-holder", 1):
    print("holding", flush=True)
    time.sleep(120)
"""


@pytest.mark.system
def test_a_second_run_waits_for_the_slot_and_gets_it_when_the_holder_is_killed(tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        waits, got = [], threading.Event()

        def second():
            with goal_slot(tmp_path, "task-second", 1, on_wait=waits.append):
                got.set()

        thread = threading.Thread(target=second, daemon=True)
        thread.start()
        time.sleep(1.0)
        assert not got.is_set() and waits == ["task task-second waits for a goal slot: 1 of 1 in use on this project"]
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert got.wait(10)
    thread.join(5)
    assert waits == [waits[0]]  # said once


def test_two_slots_let_two_runs_in_at_once(tmp_path):
    with goal_slot(tmp_path, "a", 2) as first, goal_slot(tmp_path, "b", 2) as second:
        assert {first, second} == {0, 1}
