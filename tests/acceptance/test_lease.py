"""One lease per task (graphlemon/lease.py): taken atomically, refused with the holder named, taken over from a gone
holder (and the journal says so), handed to a process or a flow run, renewed, stopped, and the goal slots it holds.
Real processes (a live one, a dead one, a reused pid), a real ledger; the other machine is a holder whose boot id
is not this machine's."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path

import pytest

from graphlemon import lease as leases
from graphlemon.errors import ErrorCode, GraphLemonError, LeaseLost, StopRequested, TaskHeld
from graphlemon.lease import Holder
from graphlemon.ledger import Ledger
from graphlemon.models import LeaseEvent, utcnow


@pytest.fixture
def ledger(tmp_path: Path) -> Ledger:
    return Ledger(tmp_path / ".graphlemon")


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def sleeper():
    proc = subprocess.Popen([sys.executable, "-c", "import time; print('up', flush=True); time.sleep(60)"],
                            stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert proc.stdout.readline() == "up\n"
    return proc


def elsewhere(label: str = "a worker on another machine") -> Holder:
    return Holder(label=label, pid=4242, host="far-away", boot_id="another-machine", proc_start=1)


def test_a_second_starter_is_refused_with_the_holder_named_and_the_refusal_recorded(ledger):
    lease, replaced = leases.take(ledger, "t1", Holder.here("graphlemon resume"))
    assert replaced is None and leases.live(ledger, "t1").lease_id == lease.lease_id
    with pytest.raises(TaskHeld) as refused:
        leases.take(ledger, "t1", Holder.here("console: run it now", action_id="a-1"))
    err = refused.value
    assert err.code == ErrorCode.TASK_HELD and err.exit_code == 1
    assert "graphlemon resume (pid" in err.message and "since" in err.message and "graphlemon stop t1" in err.message
    assert err.context["lease_id"] == lease.lease_id and err.context["since"] == lease.since.isoformat()
    events = [e.event for e in ledger.read_as("lease", LeaseEvent)]
    assert events == ["taken", "refused"] and leases.current(ledger, "t1").refused == 1
    leases.take(ledger, "t2", Holder.here("another task"))  # one lease per task: another task is free


@pytest.mark.system  # starts processes
def test_a_lease_whose_process_ended_is_taken_over_and_the_journal_says_why(ledger):
    leases.take(ledger, "t1", Holder.here("a killed run", pid=dead_pid()))
    lease, replaced = leases.take(ledger, "t1", Holder.here("graphlemon resume"))
    assert replaced is not None and replaced.holder.label == "a killed run"
    assert lease.previous == replaced.lease_id and "has ended" in lease.took_over_because
    assert [e.event for e in ledger.read_as("lease", LeaseEvent)] == ["taken", "taken_over"]


@pytest.mark.system  # starts processes
def test_a_reused_pid_is_not_the_holder(ledger):
    live = sleeper()
    try:
        impostor = Holder.here("a run whose pid the kernel gave away", pid=live.pid).model_copy(update={"proc_start": 1})
        leases.take(ledger, "t1", impostor)
        assert "another process" in leases.current(ledger, "t1").gone()
        honest = Holder.here("a live run", pid=live.pid)
        leases.take(ledger, "t1", honest)  # takes over the impostor's
        with pytest.raises(TaskHeld):
            leases.take(ledger, "t1", Holder.here("second"))
    finally:
        live.kill()
        live.wait()
    assert "has ended" in leases.current(ledger, "t1").gone()


def test_a_holder_on_another_machine_is_live_while_it_renews_and_gone_after_its_silence(ledger, monkeypatch):
    lease, _ = leases.take(ledger, "t1", elsewhere())
    now = utcnow()
    assert leases.current(ledger, "t1").gone(now) is None
    late = now + timedelta(seconds=leases.STALE_S + 1)
    assert "has not renewed its lease" in leases.current(ledger, "t1").gone(late)
    ledger.append(LeaseEvent(task_id="t1", lease_id=lease.lease_id, event="renewed", ts=late))
    assert leases.current(ledger, "t1").gone(late) is None  # a heartbeat keeps it
    assert "has not renewed" in leases.current(ledger, "t1").gone(late + timedelta(seconds=leases.STALE_S + 1))


def test_a_lease_handed_to_a_flow_run_holds_until_it_starts_and_adopts_it(ledger):
    with leases.held(ledger, "t1", Holder.here("console: new goal")) as mine:
        mine.hand(Holder(label="Prefect flow run devloop", flow_run_id="run-1"), reserve_s=60)
    held = leases.live(ledger, "t1")
    assert held.holder.pid is None and held.reserved_until is not None  # the console let go: the run holds it
    assert leases.reserved_for(ledger, "t1", "run-1") == held.lease_id and leases.reserved_for(ledger, "t1", "x") is None
    with pytest.raises(TaskHeld, match="flow run run-1"):
        leases.take(ledger, "t1", Holder.here("graphlemon resume"))
    adopted, _ = leases.take(ledger, "t1", Holder.here("Prefect flow run devloop", flow_run_id="run-1"), adopt=held.lease_id)
    assert adopted.lease_id == held.lease_id and adopted.holder.pid is not None and adopted.reserved_until is None


def test_a_reservation_nobody_adopted_expires(ledger):
    with leases.held(ledger, "t1", Holder.here("console")) as mine:
        mine.hand(Holder(label="Prefect flow run never picked up", flow_run_id="run-2"), reserve_s=0.05)
    time.sleep(0.1)
    assert "did not start by" in leases.current(ledger, "t1").gone()
    _, replaced = leases.take(ledger, "t1", Holder.here("graphlemon resume"))
    assert replaced.holder.flow_run_id == "run-2"


@pytest.mark.system  # starts processes
def test_a_child_process_adopts_the_lease_handed_to_it(ledger, tmp_path):
    code = ("import sys; from graphlemon import lease; from graphlemon.ledger import Ledger; "
            "l, _ = lease.take(Ledger(sys.argv[1]), 't1', lease.Holder.here('child'), adopt=sys.argv[2]); "
            "print(l.lease_id, l.holder.pid, flush=True)")  # fmt: skip
    with leases.held(ledger, "t1", Holder.here("console: resume", action_id="click-1")) as mine:
        child = subprocess.run([sys.executable, "-c", code, str(ledger.state_dir), mine.lease_id],
                               capture_output=True, text=True, timeout=60)  # fmt: skip
        mine.handed = True  # it is the child's now
    lease_id, pid = child.stdout.split()
    assert lease_id == mine.lease_id and int(pid) != mine.lease.holder.pid
    assert leases.current(ledger, "t1").holder.action_id == "click-1"  # the action it serves is kept


def test_stop_requests_reach_the_holder_at_its_safe_point_and_an_abandon_upgrades_them(ledger):
    assert leases.request_stop(ledger, "t1", by="a person") is None  # nothing holds it: nothing recorded
    with leases.held(ledger, "t1", Holder.here("graphlemon run")) as mine:
        mine.check("planner · round 0")  # nothing asked yet
        asked = leases.request_stop(ledger, "t1", by="a person (console)", note="wrong goal")
        assert asked.lease_id == mine.lease_id and asked.stop.then == "block"
        leases.request_stop(ledger, "t1", by="someone else")  # one request: the first one stands
        with pytest.raises(StopRequested) as stop:
            mine.check("coder add · attempt 2 (round 0)")
        assert stop.value.context["by"] == "a person (console)" and stop.value.then == "block"
        assert "before coder add · attempt 2 (round 0)" in stop.value.message and "wrong goal" in stop.value.message
        leases.request_stop(ledger, "t1", by="a person", then="abandon")
        with pytest.raises(StopRequested) as stop:
            mine.check("validator · round 0")
        assert stop.value.then == "abandon"
    assert leases.run_state(leases.current(ledger, "t1"), "blocked_pending_human") is None


def test_a_run_whose_lease_was_taken_over_stops_and_writes_nothing_more(ledger):
    mine = leases.HeldLease(ledger, *leases.take(ledger, "t1", elsewhere("a run on a machine that went silent")))
    future = utcnow() + timedelta(seconds=leases.STALE_S + 5)
    ledger.append(LeaseEvent(task_id="t1", lease_id="lease-new", event="taken_over", holder="graphlemon resume",
                             previous=mine.lease_id, reason="silent", ts=future))  # fmt: skip
    with pytest.raises(LeaseLost, match="taken over"):
        mine.check("tester add · attempt 1 (round 0)")
    mine.release("coding", "the run ended")
    assert leases.current(ledger, "t1").lease_id == "lease-new"  # the new holder's lease is untouched


def test_a_holder_renews_its_lease_while_it_runs(ledger, monkeypatch):
    monkeypatch.setattr(leases, "HEARTBEAT_S", 0.05)
    with leases.held(ledger, "t1", Holder.here("graphlemon run")):
        time.sleep(0.4)
    events = [e.event for e in ledger.read_as("lease", LeaseEvent)]
    assert events[0] == "taken" and events[-1] == "released" and events.count("renewed") >= 2


@pytest.mark.system  # starts processes
def test_a_goal_slot_waits_for_the_holder_and_a_killed_holder_frees_it(ledger):
    child = ("import sys, time; from graphlemon import lease; from graphlemon.ledger import Ledger; "
             "l = lease.HeldLease(Ledger(sys.argv[1]), *lease.take(Ledger(sys.argv[1]), 'holder', "
             "lease.Holder.here('graphlemon run'))); l.take_slot(1); print('holding', flush=True); time.sleep(60)")  # fmt: skip
    holder = subprocess.Popen([sys.executable, "-c", child, str(ledger.state_dir)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "holding\n"
        waits, got = [], threading.Event()
        with leases.held(ledger, "second", Holder.here("graphlemon run")) as second:

            def wait() -> None:
                second.take_slot(1, on_wait=waits.append)
                got.set()

            thread = threading.Thread(target=wait, daemon=True)
            thread.start()
            time.sleep(1.0)
            assert not got.is_set() and len(waits) == 1
            assert waits[0].startswith("task second waits for a goal slot: 1 of 1 in use on this project (holder)")
            holder.kill()
            holder.wait()
            assert got.wait(10)  # the kill freed it: nothing had to release it
            thread.join(5)
    finally:
        holder.kill()
        holder.wait()
    with leases.held(ledger, "a", Holder.here("one")) as a, leases.held(ledger, "b", Holder.here("two")) as b:
        a.take_slot(2)
        b.take_slot(2)  # two slots let two runs in at once


def test_a_stop_while_waiting_for_a_slot_ends_the_wait(ledger):
    with leases.held(ledger, "first", Holder.here("one")) as first, leases.held(ledger, "t1", Holder.here("two")) as mine:
        first.take_slot(1)
        threading.Timer(0.5, lambda: leases.request_stop(ledger, "t1", by="a person")).start()
        with pytest.raises(StopRequested, match="waiting for a goal slot"):
            mine.take_slot(1)


@pytest.mark.system  # a dead holder is a process that ended
@pytest.mark.parametrize(("live", "stop", "status", "state"), [
    (True, False, "coding", "running"), (True, True, "coding", "stopping"), (True, False, "blocked_pending_human", "running"),
    (False, False, "coding", "interrupted"), (False, False, "waiting_for_quota", "interrupted"),
    (False, False, "queued", "idle"), (False, False, "blocked_pending_human", None), (False, False, "done", None),
    (False, False, "paused", None),
])  # fmt: skip
def test_running_or_not_comes_from_the_lease_alone(ledger, live, stop, status, state):
    if live:
        leases.take(ledger, "t1", Holder.here("a live run"))
        if stop:
            leases.request_stop(ledger, "t1", by="a person")
    else:
        leases.take(ledger, "t1", Holder.here("a dead run", pid=dead_pid()))
    assert leases.run_state(leases.current(ledger, "t1"), status) == state


@pytest.mark.system  # starts processes
def test_starters_racing_in_separate_processes_get_one_lease(ledger):
    code = ("import sys, time; from graphlemon import lease; from graphlemon.ledger import Ledger\n"
            "time.sleep(max(0, float(sys.argv[2]) - time.time()))\n"
            "try:\n    lease.take(Ledger(sys.argv[1]), 't1', lease.Holder.here('starter')); print('took')\n"
            "except Exception as exc:\n    print(getattr(exc, 'code', exc))\n"
            "time.sleep(3)\n")  # fmt: skip
    at = str(time.time() + 2.0)
    procs = [subprocess.Popen([sys.executable, "-c", code, str(ledger.state_dir), at], stdout=subprocess.PIPE, text=True)
             for _ in range(8)]  # fmt: skip
    outs = [p.communicate(timeout=60)[0].strip() for p in procs]
    assert sorted(outs) == ["TASK_HELD"] * 7 + ["took"], outs
    events = [e.event for e in ledger.read_as("lease", LeaseEvent)]
    assert events.count("taken") == 1 and events.count("refused") == 7


def test_an_unknown_lease_event_kind_is_corrupt_not_skipped(ledger):
    ledger.state_dir.mkdir(parents=True, exist_ok=True)
    (ledger.state_dir / "leases.ndjson").write_text(json.dumps(
        {"kind": "lease", "task_id": "t1", "lease_id": "x", "event": "stolen", "ts": utcnow().isoformat()}) + "\n")
    with pytest.raises(GraphLemonError) as err:
        leases.current(ledger, "t1")
    assert err.value.code == ErrorCode.LEDGER_CORRUPT


def test_a_waiting_deployed_run_is_passed_on_by_short_holds_and_forgotten_once_a_run_takes_the_task(ledger):
    with leases.held(ledger, "t1", Holder.here("Prefect flow run devloop", flow_run_id="run-9")) as deployed:
        deployed.waiting_run = "run-9"  # it suspends for a person: the lease is let go to wait
    assert leases.waiting_run(ledger, "t1") == "run-9"
    with leases.held(ledger, "t1", Holder.here("console: budget raised")) as console:
        assert console.waiting_run == "run-9"  # a console's short hold passes it on
    with leases.held(ledger, "t1", Holder.here("graphlemon resume")) as run:
        assert run.waiting_run == "run-9"
        run.waiting_run = None  # it ran the loop itself (the driver's run_once)
    assert leases.waiting_run(ledger, "t1") is None
