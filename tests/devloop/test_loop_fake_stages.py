"""The org loop driven by a fake `Stages` (no agents, no tests run, no Prefect): the loop's control in milliseconds.

The fake answers each stage from a script and records the calls; the project, ledger and task board are real.
The acceptance tests (tests/acceptance/) are the end-to-end layer with real git, pytest and Prefect.
"""

from __future__ import annotations

from graphlemon.devloop.loop import run_devloop
from graphlemon.devloop.unit_loop import unit_node_id
from graphlemon.stages.outcomes import Attribution, IntegrationOutcome, PlanOutcome, UnitOutcome, ValidationOutcome
from graphlemon.stages.session import LoopSession
from graphlemon.units import UnitEntry, UnitsFile


class FakeStages:
    """Scripted stage outcomes; `calls` lists what the loop asked for, in order."""

    def __init__(self, session: LoopSession, *, red: dict[int, set[str]] | None = None, validations=(), l2=()):
        self.session = session
        self.red = red or {}  # round -> units that end red in that round
        self.validations = list(validations)  # ValidationOutcome per validator call (default: green)
        self.l2 = list(l2)  # IntegrationOutcome per integrate / triage call (default: pass)
        self.calls: list[tuple] = []

    def plan(self, loop_round, feedback):
        self.calls.append(("plan", loop_round, feedback))
        units = [UnitEntry(unit_id="board"), UnitEntry(unit_id="game", depends_on=["board"])]
        self.session.unit_files.write_units(UnitsFile(units=units))
        return PlanOutcome(ok=True, unit_ids=["board", "game"])

    def code_units(self, unit_ids, loop_round, feedback, pass_tag=""):
        self.calls.append(("code", loop_round, tuple(unit_ids), pass_tag))
        out = []
        for unit in unit_ids:
            green = unit not in self.red.get(loop_round, set())
            nid = unit_node_id(self.session.task_id, unit, loop_round, pass_tag)
            nodes = self.session.nodes
            nodes.transition(nid, "running", task_id=self.session.task_id, stage="coder", unit_id=unit,
                             loop_round=loop_round)  # fmt: skip
            nodes.transition(nid, "done" if green else "blocked")
            out.append(UnitOutcome(unit_id=unit, green=green, attempts=1))
        return out

    def integrate(self, loop_round, attempt):
        self.calls.append(("integrate", loop_round, attempt))
        return self.l2.pop(0) if self.l2 else IntegrationOutcome(ok=True, run_id=f"int-{attempt}", action="pass")

    def triage(self, loop_round, attempt, run_id):
        self.calls.append(("triage", loop_round, attempt))
        return self.l2.pop(0)

    def validate(self, loop_round):
        self.calls.append(("validate", loop_round))
        result = self.validations.pop(0) if self.validations else ValidationOutcome(ok=True, run_id="v", route="done")
        self.session.save_outcome(f"ne-{self.session.task_id}-validator-r{loop_round}", result)
        return result

    def coder_turn(self, *args):  # the fake's unit loops never reach the turns
        raise AssertionError("not used")

    test_unit = coder_turn


def _coder_bug(unit="game", bug="bug-1") -> Attribution:
    return Attribution(bug_id=bug, unit_id=unit, root_cause_category="coder", root_cause_detail="the wall check is off by one",
                       suggested_route="fast_lane")  # fmt: skip


def _fast_lane(unit="game", bug="bug-1") -> ValidationOutcome:
    return ValidationOutcome(ok=False, run_id="v", route="fast_lane", attributions=[_coder_bug(unit, bug)],
                             units_to_fix=[unit], feedback={unit: "off by one"})  # fmt: skip


def test_green_first_time_plans_codes_in_waves_integrates_validates_done(session):
    stages = FakeStages(session)
    task = run_devloop(session, stages)
    assert task.status == "done"
    assert stages.calls == [
        ("plan", 0, None), ("code", 0, ("board",), ""), ("code", 0, ("game",), ""), ("integrate", 0, 1),
        ("validate", 0),
    ]  # fmt: skip


def test_fast_lane_codes_only_the_attributed_unit_next_round(session):
    stages = FakeStages(session, validations=[_fast_lane()])
    assert run_devloop(session, stages).status == "done"
    assert ("code", 1, ("game",), "") in stages.calls and ("plan", 1, None) not in stages.calls


def test_a_red_unit_stops_later_waves_and_skips_integration(session):
    stages = FakeStages(session, red={0: {"board"}}, validations=[_fast_lane("board")])
    run_devloop(session, stages)
    round0 = [c for c in stages.calls if c[1] == 0]
    assert round0 == [("plan", 0, None), ("code", 0, ("board",), ""), ("validate", 0)]


def test_same_bug_three_rounds_blocks_not_converging(session):
    stages = FakeStages(session, validations=[_fast_lane()] * 3)
    task = run_devloop(session, stages)
    assert (task.status, task.blocked_reason) == ("blocked_pending_human", "not_converging")
    assert [c for c in stages.calls if c[0] == "validate"] == [("validate", 0), ("validate", 1), ("validate", 2)]


def test_infra_flake_is_rerun_once_then_a_person_is_asked(session):
    failed = IntegrationOutcome(ok=False, run_id="int", action="triage", failures=1)
    flake = IntegrationOutcome(ok=False, run_id="int", action="rerun", category="infra_flake", root_cause="ECONNREFUSED")
    stages = FakeStages(session, l2=[failed, flake, failed, flake])
    task = run_devloop(session, stages)
    assert (task.status, task.blocked_reason) == ("blocked_pending_human", "not_converging")
    assert [c[0] for c in stages.calls if c[0] in ("integrate", "triage")] == ["integrate", "triage"] * 2


def test_a_confident_impl_bug_resets_the_affected_unit_then_integration_passes(session):
    failed = IntegrationOutcome(ok=False, run_id="int", action="triage", failures=1)
    impl = IntegrationOutcome(ok=False, run_id="int", action="reset_units", category="impl_bug", confidence=0.9,
                              affected_units=["game"], root_cause="game ignores the board size")  # fmt: skip
    stages = FakeStages(session, l2=[failed, impl])
    assert run_devloop(session, stages).status == "done"
    assert ("code", 0, ("game",), "l2a1") in stages.calls and ("integrate", 0, 2) in stages.calls
