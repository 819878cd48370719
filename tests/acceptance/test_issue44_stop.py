"""Issue 44: a stop that works. `graphlemon stop`, the console's Stop and Cancel in the Prefect UI mean one thing: the
holder stops at its next safe point, keeps its finished work and leaves the task resumable (`blocked_pending_human`,
`stopped_by_person`, with what was running); `resume` then redoes nothing finished; `abandon` works from every state
that has not ended, stopping the run first.

Real `graphlemon run` / `stop` / `resume` / `abandon` processes on the two-unit calc goal (scripted, labelled so), and
a real devloop flow run on the session's Prefect server for Cancel. The stop points are timeline events, so each
case lands somewhere else in the loop; `GRAPHLEMON_STOP_POINTS` picks more of them (the full sweep of stops at random
moments is `benchmarks/bench_journal.py`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from conftest import CALC, make_repo, playbook_variant, run_flow, turn

from graphlemon import lease as leases
from graphlemon.devloop.stopping import stop_task
from graphlemon.models import NodeEvent, TimelineEvent, UsageRecord
from graphlemon.taskboard import TaskBoard

pytestmark = pytest.mark.system  # graphlemon runs, Prefect servers

GRAPHLEMON = [sys.executable, "-m", "graphlemon"]
# timeline events the calc goal passes through with steps still to come (a stop that arrives after the last step
# finds the task done: nothing to stop)
POINTS = ["planned", "unit_tested", "unit_green"]
STOP_POINTS = POINTS[: int(os.environ.get("GRAPHLEMON_STOP_POINTS", "1"))]


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []


def cli(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([*GRAPHLEMON, *args], capture_output=True, text=True, timeout=timeout)


def start(project) -> subprocess.Popen:
    return subprocess.Popen([*GRAPHLEMON, "run", "Build calc", "--project", str(project.root), "--playbook",
                             str(CALC / "playbook.yaml"), "--engine", "direct", "--quiet"],  # fmt: skip
                            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def when(ready, proc: subprocess.Popen | None = None, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        assert proc is None or proc.poll() is None, f"the run ended before the point: {proc.stderr.read()[-2000:]}"
        assert time.monotonic() < deadline, "the point never came"
        time.sleep(0.05)


def counts(project) -> dict:
    usage = project.ledger.read_as("usage", UsageRecord)
    return {"calls": len(usage), "tokens": sum(u.input_tokens + u.output_tokens for u in usage)}


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> dict:
    """What the calc goal spends run once without a stop (calls and tokens: the scripted playbook's)."""
    project = make_repo(tmp_path_factory.mktemp("clean") / "calc", CALC / "repo")
    proc = start(project)
    assert proc.wait(timeout=600) == 0, proc.stderr.read()[-2000:]
    return counts(project)


@pytest.mark.parametrize("point", STOP_POINTS)
def test_a_stop_at_a_safe_point_keeps_the_work_and_resume_redoes_nothing(calc, point, uninterrupted):
    proc = start(calc)
    timeline = calc.state_dir / "timeline.ndjson"
    when(lambda: any(e.get("event") == point for e in lines(timeline)), proc)
    task_id = TaskBoard(calc.ledger).list()[0].task_id
    if point == "planned":  # the command a person types (it waits for the run to stop)
        stop = cli("stop", "--note", "wrong goal wording", "--project", str(calc.root), task_id)
        assert stop.returncode == 0, stop.stderr
        assert "stop requested" in stop.stdout and "stops at its next safe point" in stop.stdout
        assert f"task {task_id}: needs you: stopped by a person" in stop.stdout  # in words, not internal names
        assert f"graphlemon resume {task_id} --project {calc.root}" in stop.stdout  # the next step, as it pastes
        by = "a person (graphlemon stop)"
    else:  # the same stop, asked the moment the point is reached (the command's start-up would land it later)
        by = "a person (this test)"
        asked = stop_task(calc, task_id, by=by, note="wrong goal wording")
        assert asked.outcome == "stopping" and asked.holder.startswith("graphlemon run")
    assert proc.wait(timeout=120) == 1  # the run ended on its own, at its safe point: blocked
    [task] = TaskBoard(calc.ledger).all().values()
    assert (task.status, task.blocked_reason) == ("blocked_pending_human", "stopped_by_person"), task.note
    assert f"stopped by {by} (wrong goal wording) before " in task.note
    assert "started, not finished:" in task.note or "no stage was running" in task.note  # the stages it cut, if any
    assert "Traceback" not in proc.stderr.read()
    [lease] = leases.history(calc.ledger, task.task_id)
    assert lease.stop.by == by and lease.task_status == "blocked_pending_human"
    done_before = {e.node_exec_id for e in calc.ledger.read_as("node", NodeEvent) if e.status == "done"}
    seen = len(calc.ledger.read("node"))
    resumed = cli("resume", task.task_id, "--project", str(calc.root), "--engine", "direct", "--json")
    assert json.loads(resumed.stdout)["status"] == "done", resumed.stderr[-2000:]
    after = calc.ledger.read_as("node", NodeEvent)[seen:]
    assert not [e for e in after if e.node_exec_id in done_before and e.status == "running"], "a finished stage ran again"
    assert counts(calc) == uninterrupted  # no turn paid twice: the stop never cut a turn
    for kind, key in (("usage", "call_id"), ("run", "run_id")):
        seen_keys = Counter(getattr(r, key) for r in calc.ledger.read(kind))
        assert max(seen_keys.values()) == 1, f"a {kind} record written twice"


def test_abandon_of_a_running_task_stops_it_first_and_of_an_interrupted_one_at_once(calc, tmp_path):
    proc = start(calc)
    when(lambda: any(e.get("event") == "planned" for e in lines(calc.state_dir / "timeline.ndjson")), proc)
    [task] = TaskBoard(calc.ledger).all().values()
    out = cli("abandon", task.task_id, "--note", "not needed after all", "--project", str(calc.root), "--json")
    assert out.returncode == 0, out.stderr
    said = json.loads(out.stdout)
    assert (said["outcome"], said["status"]) == ("stopping", "abandoned") and said["holder"].startswith("graphlemon run")
    assert proc.wait(timeout=120) == 1
    assert "abandoned" in [e.event for e in calc.ledger.read_as("timeline", TimelineEvent)]

    killed = make_repo(tmp_path / "killed" / "calc", CALC / "repo")  # a run killed mid-stage: nothing runs it
    proc = start(killed)
    when(lambda: any(e.get("event") == "unit_green" for e in lines(killed.state_dir / "timeline.ndjson")), proc)
    os.killpg(proc.pid, 9)
    proc.wait()
    [task] = TaskBoard(killed.ledger).all().values()
    assert task.status in ("coding", "integrating", "validating")  # once refused: INVALID_TRANSITION
    out = cli("abandon", task.task_id, "--project", str(killed.root), "--json")
    said = json.loads(out.stdout)
    assert (said["outcome"], said["status"]) == ("abandoned", "abandoned"), out.stderr
    history = leases.history(killed.ledger, task.task_id)
    assert history[-1].previous == history[-2].lease_id and "has ended" in history[-1].took_over_because
    again = cli("abandon", task.task_id, "--project", str(killed.root))
    assert again.returncode == 1 and again.stderr.startswith("error[INVALID_TRANSITION]: ")


def cancel_in_the_ui_at(calc, event: str):
    """A devloop flow run of the calc goal (in this process), put in Cancelling through the API as the UI does when
    its timeline reaches `event` -> (the run's final state, what the flow returned, the task)."""
    from prefect.client.orchestration import get_client
    from prefect.states import Cancelling

    results: dict = {}
    runner = threading.Thread(target=lambda: results.setdefault("first", run_flow(calc, "Build calc", CALC / "playbook.yaml")))
    runner.start()
    when(lambda: any(e.get("event") == event for e in lines(calc.state_dir / "timeline.ndjson")))
    [task] = TaskBoard(calc.ledger).all().values()
    run_id = leases.current(calc.ledger, task.task_id).holder.flow_run_id
    with get_client(sync_client=True) as client:
        client.set_flow_run_state(run_id, Cancelling(message="a person pressed Cancel"), force=True)
        runner.join(timeout=300)
        return client.read_flow_run(run_id).state, results["first"], task


def test_cancel_in_the_prefect_ui_is_a_stop_at_a_safe_point(calc, prefect_harness, monkeypatch):
    # polled often: on a quick machine the scripted calc goal ends within one 5 s poll of "planned"
    monkeypatch.setattr("graphlemon.flows.devloop.CANCEL_POLL_S", 0.2)
    state, first, task = cancel_in_the_ui_at(calc, "planned")
    assert (state.type.value, state.name) == ("CANCELLED", "Stopped"), state
    assert first["blocked_reason"] == "stopped_by_person"
    assert "stopped by a person (Cancel in the Prefect UI) (a person pressed Cancel)" in first["note"]
    nodes = len(calc.ledger.read("node"))
    final = run_flow(calc, None, CALC / "playbook.yaml", task_id=task.task_id)  # resumed (the CLI resumes the same)
    assert final["status"] == "blocked_pending_human"  # a stopped task waits for a person's resume first
    TaskBoard(calc.ledger).manual_resume(task.task_id, note="go on")
    assert run_flow(calc, None, CALC / "playbook.yaml", task_id=task.task_id)["status"] == "done"
    # the resumed run did the steps left (where Cancel landed depends on the machine's load: maybe after the last
    # model turn) and no model call twice
    assert len(calc.ledger.read("node")) > nodes
    assert len({u.call_id for u in calc.ledger.read_as("usage", UsageRecord)}) == len(calc.ledger.read("usage"))


def test_cancel_after_the_last_step_ends_the_run_cancelled_and_says_the_task_is_done(calc, prefect_harness, monkeypatch):
    """Prefect lets a Cancelling run end only Cancelled: a Cancel that finds nothing left to stop must not leave the run
    Cancelling for ever (its Completed refused), nor claim a stop that did not happen."""
    monkeypatch.setattr("graphlemon.flows.devloop.CANCEL_POLL_S", 600)  # the watcher never sees it: the loop ends first
    state, first, _ = cancel_in_the_ui_at(calc, "integrated")
    assert (state.type.value, state.name) == ("CANCELLED", "Done"), state
    assert state.message.startswith("Cancel came after the last step, with nothing left to stop: the task is done")
    assert first["status"] == "done"


def test_a_stop_that_comes_after_the_last_step_says_nothing_was_stopped(calc):
    """The holder reaches done without passing another safe point: `graphlemon stop` says the task is done and that
    nothing was stopped (not a silent 'done')."""
    board = TaskBoard(calc.ledger)
    task = board.create("Build calc")
    for status in ("planning", "coding", "integrating", "validating"):
        board.transition(task.task_id, status, by="test")
    holding = threading.Event()

    def last_step() -> None:
        with leases.held(calc.ledger, task.task_id, leases.Holder.here("a run in its last step"),
                         status=lambda: board.get(task.task_id).status):  # fmt: skip
            holding.set()
            when(lambda: leases.current(calc.ledger, task.task_id).stop is not None)
            board.transition(task.task_id, "done", by="test")  # the step ends the task: no safe point after it

    holder = threading.Thread(target=last_step)
    holder.start()
    holding.wait(30)
    out = cli("stop", task.task_id, "--project", str(calc.root), "--timeout", "60")
    holder.join(30)
    assert out.returncode == 0, out.stderr
    assert f"task {task.task_id}: done" in out.stdout
    assert "its run finished its last step before a safe point came: nothing was stopped" in out.stdout


SLOW_TEST = """
import pathlib, time

def test_slow():
    pathlib.Path(__file__).with_name("slow_started").write_text("yes")
    time.sleep(6)
"""


def test_a_stop_asked_while_a_step_runs_is_served_even_when_that_step_then_fails(calc, tmp_path):
    """walk3: a stop asked while a step was in flight was lost when that step then failed (`stage_failed`)."""

    def failing_after_a_while(data: dict) -> None:  # the add tester runs a slow test, then its turn fails
        turn(data, role="tester", unit="add")["actions"] += [
            {"write_file": {"path": "tests/add/test_slow.py", "content": SLOW_TEST}},
            {"tool": "run_tests", "args": {"targets": ["tests/add/test_slow.py"]}, "expect": "error"},
        ]

    playbook = playbook_variant(tmp_path, CALC, failing_after_a_while)
    proc = subprocess.Popen([*GRAPHLEMON, "run", "Build calc", "--project", str(calc.root), "--playbook", str(playbook),
                             "--engine", "direct", "--quiet"],  # fmt: skip
                            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    when(lambda: list(calc.root.glob(".graphlemon/worktrees/*/*/tests/add/slow_started")), proc)
    task_id = TaskBoard(calc.ledger).list()[0].task_id
    asked = cli("stop", task_id, "--no-wait", "--project", str(calc.root))
    assert asked.returncode == 0, asked.stderr
    assert proc.wait(timeout=120) != 0
    task = TaskBoard(calc.ledger).get(task_id)
    assert (task.status, task.blocked_reason) == ("blocked_pending_human", "stopped_by_person")
    assert "EXECUTOR_ERROR" in (task.note or ""), task.note  # the failure it met is named
