"""The one driver of a run's lifecycle (graphlemon/devloop/driver.py), the memo every replayable step goes through,
and the run reference and its session factory: driven by fake stages and a
fake engine (a real project, ledger, lease and task board; no agents, no Prefect)."""

from __future__ import annotations

import threading
from contextlib import nullcontext

import pytest
from pydantic import BaseModel
from test_loop_fake_stages import FakeStages, _fast_lane

from graphlemon import lease as leases
from graphlemon.devloop.driver import Decision, close_gone_holders, drive
from graphlemon.devloop.stages import Stages
from graphlemon.devloop.unit_loop import unit_node_id
from graphlemon.models import TaskEvent
from graphlemon.stages.outcomes import UnitOutcome, ValidationOutcome
from graphlemon.stages.session import LoopSession, RunRef, open_session
from graphlemon.taskboard import TaskBoard


def _escalate() -> ValidationOutcome:
    return ValidationOutcome(ok=False, run_id="v", route="escalate", blocked_reason="validator_inconclusive")


class ReplayedFake(FakeStages):
    """Like the real stages, a unit loop that already finished is replayed, not run again."""

    def code_units(self, unit_ids, loop_round, feedback, pass_tag=""):
        nodes = self.session.nodes
        done = [u for u in unit_ids if (n := nodes.find(unit_node_id(self.session.task_id, u, loop_round, pass_tag)))
                and n.status == "done"]  # fmt: skip
        fresh = super().code_units([u for u in unit_ids if u not in done], loop_round, feedback, pass_tag) if (
            len(done) < len(unit_ids)) else []  # fmt: skip
        return [UnitOutcome(unit_id=u, green=True, attempts=1) for u in done] + fresh


class FakeEngine:
    """Fake stages, a slot that counts, and the person's answers in order (None: nobody answers now)."""

    def __init__(self, session: LoopSession, answers=(), **stages) -> None:
        self.fake = ReplayedFake(session, **stages)
        self.answers = list(answers)
        self.asked: list[str] = []
        self.slots = 0
        self.stale: list[leases.Lease] = []

    def holder(self, session):
        return leases.Holder.here("a test's fake engine")

    def on_wait(self, message):
        raise AssertionError(f"no other task holds a slot here: {message}")

    def running(self, session):
        self.slots += 1  # the loop runs once its goal slot is held
        return nullcontext()

    def close_gone(self, session, gone):
        self.stale.append(gone)

    def stages(self, session):
        return self.fake

    def ask_person(self, session, task):
        self.asked.append(task.blocked_reason)
        return self.answers.pop(0) if self.answers else None


def test_happy_a_run_holds_a_slot_releases_its_lease_and_runs_the_on_done_hooks_once(session):
    engine, done = FakeEngine(session), []
    final = drive(session, engine, on_done=[lambda s, t: done.append((s.task_id, t.status))])
    assert final.status == "done" and engine.slots == 1 and engine.asked == []
    assert done == [(session.task_id, "done")]
    [lease] = leases.history(session.ledger, session.task_id)
    assert lease.released is not None and lease.task_status == "done" and not lease.slot  # given back, slot too


def test_a_blocked_task_asks_the_person_and_a_resume_runs_the_loop_again_until_done(session):
    engine = FakeEngine(session, answers=[Decision(note="the SDD is right", by="human (test)")],
                        validations=[_escalate()])  # fmt: skip
    final = drive(session, engine)
    assert engine.asked == ["validator_inconclusive"] and engine.slots == 2
    assert final.status == "done"
    events = [e for e in session.ledger.read_as("task", TaskEvent) if e.task_id == session.task_id]
    resumed = [e for e in events if e.by == "human (test)"]
    assert resumed and resumed[0].note == "the SDD is right"


def test_an_abandon_ends_the_task_and_nobody_answering_ends_the_run_blocked(session, tmp_path):
    engine = FakeEngine(session, answers=[Decision(action="abandon", place="in a test")], validations=[_escalate()])
    assert drive(session, engine).status == "abandoned" and engine.slots == 1
    assert TaskBoard(session.ledger).get(session.task_id).note == "abandoned in a test"

    other = LoopSession(session.project, TaskBoard(session.ledger).create("again").task_id, session.config)
    engine = FakeEngine(other, validations=[_escalate()])
    final = drive(other, engine, on_done=[lambda s, t: engine.asked.append(f"hook saw {t.status}")])
    assert final.status == "blocked_pending_human"
    assert engine.asked == ["validator_inconclusive", "hook saw blocked_pending_human"]


def test_a_task_already_blocked_goes_straight_to_the_person(session):
    drive(session, FakeEngine(session, validations=[_escalate()]))  # ends blocked: nobody answered
    engine = FakeEngine(session, answers=[Decision(note="go on")])
    assert drive(session, engine).status == "done"
    assert engine.asked == ["validator_inconclusive"] and engine.slots == 1  # no run before the answer


def test_a_killed_runs_lease_is_taken_over_and_handed_to_the_engine_to_close_once(session):
    gone = leases.Holder.here("a run killed long ago", pid=999_999_999)
    leases.take(session.ledger, session.task_id, gone)
    engine = FakeEngine(session)
    assert drive(session, engine).status == "done"
    assert [x.holder.pid for x in engine.stale] == [999_999_999]
    first, second = leases.history(session.ledger, session.task_id)
    assert second.previous == first.lease_id and "has ended" in second.took_over_because  # the journal says so
    resumed = [e for e in session.ledger.read("timeline") if e.event == "resumed"]
    assert [e.ref for e in resumed] == [first.lease_id] and "a run killed long ago" in resumed[0].summary
    again = FakeEngine(session)
    close_gone_holders(session, again)  # the gone lease was closed once: never again
    assert again.stale == []


class Count(BaseModel):
    n: int


def test_memo_computes_once_and_then_follows_only_a_fresh_result(session):
    calls, after = [], []

    def compute():
        calls.append(1)
        return Count(n=len(calls))

    first = session.memo("ne-x-coder-u-r0", "a1-coder", Count, compute, then=after.append)
    again = session.memo("ne-x-coder-u-r0", "a1-coder", Count, compute, then=after.append)
    assert first == again == Count(n=1) and len(calls) == 1 and after == [Count(n=1)]
    assert session.outcome_ref("ne-x-coder-u-r0", "a1-coder") == "outcomes.ndjson#ne-x-coder-u-r0/a1-coder"
    assert session.outcome_ref("ne-x-coder-u-r0", "a2-coder") is None


def test_failure_a_step_that_raises_records_nothing_and_runs_again(session):
    def broken():
        raise OSError("disk full")

    with pytest.raises(OSError):
        session.memo("ne-x-validator-r0", "routed", Count, broken)
    assert session.memo("ne-x-validator-r0", "routed", Count, lambda: Count(n=7)) == Count(n=7)


def test_open_session_returns_the_bound_session_in_threads_and_a_fresh_one_elsewhere(session):
    run = session.run
    assert run == RunRef(project=str(session.project.root), task_id=session.task_id)
    assert RunRef.model_validate_json(run.model_dump_json()) == run  # what crosses a task or process boundary
    seen = []
    with session.bound():
        assert open_session(run) is session
        Stages(run, runner=lambda step, fn, r, *a: seen.append(open_session(r))).plan(0, None)
        import contextvars

        t = threading.Thread(target=contextvars.copy_context().run, args=(lambda: seen.append(open_session(run)),))
        t.start()
        t.join()
    assert seen == [session, session]
    fresh = open_session(run)
    assert fresh is not session and fresh.task_id == session.task_id


def test_a_resumed_fast_lane_round_routes_once(session):
    first = drive(session, FakeEngine(session, validations=[_fast_lane()]))
    assert first.status == "done"
    routed = [e for e in session.ledger.read("timeline") if e.event == "routed"]
    assert len(routed) == 1 and routed[0].ref == "route-r0"
