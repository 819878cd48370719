"""REQ-14 p_usage_limit_wait: a plan usage limit pauses the task until quota is back, never blocking on the way.

Usage-limit messages come from the fake `claude` (stream-json `rate_limit_event` plus
"You've hit your session limit · resets ...") or from a scripted playbook's
`raise: quota_exceeded`. Hours of waiting run on a `SimulatedClock` (its sleep only
moves time forward); one test waits on the real clock with sub-second settings.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta

import pytest
from _loop_helpers import CALC, claude_calc, script_turn
from conftest import make_repo, playbook_variant
from fakes.claude import FakeClaude, usage_limit, when

from graphlemon.agents import build_request, run_turn
from graphlemon.devloop.loop import run_devloop
from graphlemon.devloop.stages import Stages
from graphlemon.models import NodeEvent, TaskEvent, TimelineEvent, UsageRecord
from graphlemon.stages.session import LoopConfig, LoopSession
from graphlemon.stages.usage_limit_wait import SimulatedClock
from graphlemon.taskboard import TaskBoard

PROBE = "Reply with the single word"


def start(project, config: LoopConfig, clock=None) -> LoopSession:
    task = TaskBoard(project.ledger).create("Build calc")
    session = LoopSession(project, task.task_id, config)
    if clock is not None:
        session.executor.clock = clock
    return session


def task_events(session: LoopSession) -> list[TaskEvent]:
    return [e for e in session.ledger.read_as("task", TaskEvent) if e.task_id == session.task_id]


def node_events(session: LoopSession, stage: str, unit: str | None = None) -> list[NodeEvent]:
    return [
        e for e in session.ledger.read_as("node", NodeEvent)
        if e.task_id == session.task_id and e.stage == stage and e.unit_id == unit
    ]  # fmt: skip


def timeline(session: LoopSession, prefix: str = "quota") -> list[TimelineEvent]:
    return [e for e in session.ledger.read_as("timeline", TimelineEvent) if e.event.startswith(prefix)]


def quota_playbook(tmp_path, times: int, limit_type: str = "session"):
    """calc, but add's coder turn hits a usage limit its first `times` times."""

    def edit(data):
        data["turns"].insert(0, {"match": {"role": "coder", "unit": "add"}, "times": times,
                                 "raise": {"error": "quota_exceeded", "limit_type": limit_type}})  # fmt: skip

    return playbook_variant(tmp_path, CALC, edit)


@pytest.fixture
def calc(tmp_path):
    return make_repo(tmp_path / "calc", CALC / "repo")


@pytest.fixture
def fake_claude(tmp_path, monkeypatch):
    fake = FakeClaude(tmp_path)
    monkeypatch.setenv("GRAPHLEMON_CLAUDE_BIN", str(fake.bin))
    fake.setenv(monkeypatch)
    yield fake
    fake.close()


@pytest.mark.system
def test_happy_session_limit_waits_until_the_reset_probes_and_resumes_without_blocking(calc, fake_claude):
    clock = SimulatedClock()
    resets = clock.now() + timedelta(hours=2)
    coder_add = script_turn("coder", "add")
    fake_claude.queue(
        when(usage_limit("session", resets_at=int(resets.timestamp())), prompt=coder_add.skill_marks()),
        when(usage_limit("session"), stdin=PROBE),  # the first probe after the reset time: still limited
        when({"steps": [{"result": {"result": "ok"}}]}, stdin=PROBE),  # the second: quota is back
        *claude_calc(),
    )
    session = start(calc, LoopConfig(executor="claude_code"), clock)
    final = run_devloop(session, Stages(session.run))

    assert final.status == "done", final.note
    statuses = [e.status for e in task_events(session)]
    assert "blocked_pending_human" not in statuses
    i = statuses.index("waiting_for_quota")
    assert statuses[i - 1] == statuses[i + 1] == "coding"  # the task went back to the stage it was in
    add = node_events(session, "coder", "add")
    waiting = [e for e in add if e.status == "waiting_for_quota"]
    assert len(waiting) == 1 and waiting[0].quota_limit_type == "session"
    assert abs((waiting[0].quota_wait_started_at - (resets - timedelta(hours=2))).total_seconds()) < 5
    after = add[add.index(waiting[0]) + 1]
    assert after.status == "running" and after.duration_ms >= 2 * 3600 * 1000
    # back-off polling: first until the announced reset (+ the 60 s margin), then 2 x 60 s
    assert 7200 < clock.sleeps[0] <= 7260 and clock.sleeps[1:] == [120.0]
    probes = [c for c in fake_claude.calls if c["stdin"].startswith(PROBE)]
    assert len(probes) == 2 and all("claude-sonnet-5-5" in c["argv"] for c in probes)  # the coder's model
    assert [e.event for e in timeline(session)] == ["quota_wait", "quota_resumed"]
    assert fake_claude.pending == 0


@pytest.mark.system
def test_boundary_opus_limit_retries_at_once_on_the_configured_non_opus_model(calc, fake_claude):
    clock = SimulatedClock()
    planner = script_turn("planner")
    fake_claude.queue(when(usage_limit("opus"), prompt=planner.skill_marks()), *claude_calc())
    session = start(calc, LoopConfig(executor="claude_code", fallback_model="claude-haiku-4-5"), clock)
    final = run_devloop(session, Stages(session.run))

    assert final.status == "done", final.note
    assert clock.sleeps == []  # no back-off at all
    planner_calls = [c["argv"] for c in fake_claude.calls if "Planner agent" in " ".join(c["argv"])]
    models = [argv[argv.index("--model") + 1] for argv in planner_calls]
    assert models == ["claude-opus-5-5", "claude-haiku-4-5"]
    assert not any(e.status == "waiting_for_quota" for e in session.ledger.read_as("node", NodeEvent))
    assert "waiting_for_quota" not in [e.status for e in task_events(session)]
    [fallback] = timeline(session)
    assert fallback.event == "quota_fallback" and "claude-haiku-4-5" in fallback.summary


@pytest.mark.parametrize(("limit_type", "hours", "span"), [("session", 8, "8h00m"), ("weekly", 9 * 24, "216h00m")])
def test_failure_waiting_past_the_timeout_blocks_with_usage_limit_wait_timeout(calc, tmp_path, limit_type, hours, span):
    clock = SimulatedClock()
    session = start(calc, LoopConfig(playbook=quota_playbook(tmp_path, 10_000, limit_type)), clock)
    final = run_devloop(session, Stages(session.run))

    assert final.status == "blocked_pending_human" and final.blocked_reason == "usage_limit_wait_timeout"
    assert sum(clock.sleeps) == pytest.approx(hours * 3600)  # the default timeouts: 8 h / 9 days
    assert f"waited {span} for the {limit_type} usage limit" in final.note
    statuses = [e.status for e in task_events(session)]
    assert statuses[-2:] == ["waiting_for_quota", "blocked_pending_human"]
    node = session.nodes.get(node_events(session, "coder", "add")[0].node_exec_id)
    assert node.status == "waiting_for_quota" and node.quota_limit_type == limit_type
    assert timeline(session)[-1].event == "quota_wait_timeout"


@pytest.mark.system
def test_failure_then_a_manual_resume_reopens_the_gate_and_the_task_finishes(calc, tmp_path):
    clock = SimulatedClock()
    config = LoopConfig(playbook=quota_playbook(tmp_path, 10_000), quota_session_timeout_s=3600)
    session = start(calc, config, clock)
    assert run_devloop(session, Stages(session.run)).blocked_reason == "usage_limit_wait_timeout"

    TaskBoard(calc.ledger).manual_resume(session.task_id, note="the plan has quota again")
    again = LoopSession(calc, session.task_id, config.model_copy(update={"playbook": CALC / "playbook.yaml"}))
    final = run_devloop(again, Stages(again.run))  # same process: the task's gate remembered the timeout
    assert final.status == "done", final.note


class GatedClock:
    """A real-time clock whose sleep lasts until the test opens it."""

    def __init__(self) -> None:
        self.open = threading.Event()

    def now(self) -> datetime:
        return datetime.now(UTC)

    def sleep(self, seconds: float) -> None:
        assert self.open.wait(timeout=30), "the test never opened the clock"


def test_boundary_no_other_turn_of_the_task_starts_while_one_waits(calc, tmp_path):
    clock = GatedClock()
    session = start(calc, LoopConfig(playbook=quota_playbook(tmp_path, 1)), clock)
    board, task_id = session.board, session.task_id
    board.transition(task_id, "planning")
    board.transition(task_id, "coding")
    nid = f"ne-{task_id}-coder-add-r0"
    session.nodes.transition(nid, "running", task_id=task_id, stage="coder", unit_id="add")

    def turn(unit: str, node: str, results: dict) -> None:
        request = build_request(calc, "coder", context="implement it", unit_id=unit, task_id=task_id, node_exec_id=node,
                                workdir=calc.root, writable=["calc/**"])  # fmt: skip
        results[unit] = run_turn(calc, request, session.executor)

    results: dict = {}
    waiter = threading.Thread(target=turn, args=("add", nid, results))
    waiter.start()
    deadline = time.monotonic() + 30
    while board.get(task_id).status != "waiting_for_quota" and time.monotonic() < deadline:
        time.sleep(0.02)
    assert session.nodes.get(nid).status == "waiting_for_quota"
    other = threading.Thread(target=turn, args=("mul", f"ne-{task_id}-coder-mul-r0", results))
    other.start()
    try:
        time.sleep(0.5)
        assert other.is_alive() and "mul" not in results  # held at the task's gate...
        assert not [u for u in calc.ledger.read_as("usage", UsageRecord) if u.unit_id == "mul"]  # ...before any call
    finally:
        clock.open.set()
        waiter.join(timeout=30)
        other.join(timeout=30)
    assert results["add"].ok and results["mul"].ok
    order = [u.unit_id for u in calc.ledger.read_as("usage", UsageRecord)]
    assert order == ["add", "mul"]  # add's retried turn first, then the turn that waited at the gate
    assert board.get(task_id).status == "coding" and session.nodes.get(nid).status == "running"


@pytest.mark.system
def test_happy_real_clock_wait_is_in_the_ledger_for_analytics(calc, tmp_path):
    from graphlemon.analytics.api import budget

    config = LoopConfig(playbook=quota_playbook(tmp_path, 2), quota_poll_initial_s=0.2, quota_session_timeout_s=30)
    session = start(calc, config)
    started = time.monotonic()
    final = run_devloop(session, Stages(session.run))
    assert final.status == "done", final.note
    assert time.monotonic() - started >= 0.6  # it really slept: 0.2 s, then 0.4 s
    row = budget(calc.root, section="tasks", task=session.task_id).iloc[0]
    assert row["quota_wait_hours"] * 3600 >= 0.5 and row["node_quota_wait_hours"] * 3600 >= 0.5
    assert row["quota_blocks"] == 0 and row["budget_blocks"] == 0


@pytest.mark.parametrize(
    "bad",
    [{"quota_session_timeout_s": 0}, {"quota_poll_initial_s": -1}, {"fallback_model": ""},
     {"quota_weekly_timeout_s": "soon"}, {"fallback_model": "claude-opus-4-5"}],
)  # fmt: skip
def test_failure_invalid_wait_settings_are_rejected(bad):
    with pytest.raises(ValueError):
        LoopConfig(**bad)
