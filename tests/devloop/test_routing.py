"""Every routing decision of the DevLoop as a table (graphlemon/stages/routing.py): pure functions, no I/O."""

from __future__ import annotations

import pytest

from graphlemon.stages.outcomes import Attribution, IntegrationOutcome, SkillUpdateOutcome, ValidationOutcome
from graphlemon.stages.routing import (
    INFRA_RERUNS,
    ROOT_CAUSE_ROUTES,
    after_human,
    after_integration,
    after_skill_update,
    after_validation,
    root_cause_route,
    stuck_bugs,
    triage_action,
    validator_route,
)


@pytest.mark.parametrize(
    ("category", "auto", "action"),
    [
        ("infra_flake", False, "rerun"),  # environment trouble is rerun, whatever the confidence
        ("infra_flake", True, "rerun"),
        ("contract_mismatch", True, "patch_sdd"),
        ("contract_mismatch", False, "escalate"),  # low confidence -> a person
        ("impl_bug", True, "reset_units"),
        ("impl_bug", False, "escalate"),
        ("spec_ambiguous", True, "escalate"),  # only a person can settle the spec
        ("spec_ambiguous", False, "escalate"),
    ],
)
def test_triage_verdict_to_l2_action(category, auto, action):
    assert triage_action(category, auto) == action


def _l2(action, category=None, **kw) -> IntegrationOutcome:
    return IntegrationOutcome(ok=action == "pass", run_id="int-1", action=action, category=category, **kw)


@pytest.mark.parametrize(
    ("result", "attempt", "reruns", "expected"),
    [
        (_l2("pass"), 1, 0, ("pass", None)),
        (_l2("pass"), 3, 1, ("pass", None)),
        (_l2("rerun", "infra_flake"), 1, 0, ("rerun", None)),  # infra: rerun once ...
        (_l2("rerun", "infra_flake"), 2, INFRA_RERUNS, ("block", "not_converging")),  # ... not twice
        (_l2("escalate", "spec_ambiguous"), 1, 0, ("block", "spec_ambiguous")),
        (_l2("escalate", "impl_bug", confidence=0.4), 1, 0, ("block", "low_confidence_triage")),
        (_l2("escalate", "contract_mismatch", confidence=0.5), 2, 0, ("block", "low_confidence_triage")),
        (_l2("patch_sdd", "contract_mismatch"), 1, 0, ("patch_sdd", None)),
        (_l2("reset_units", "impl_bug"), 2, 0, ("reset_units", None)),
        (_l2("reset_units", "impl_bug"), 3, 0, ("block", "not_converging")),  # the last attempt failed again
        (_l2("patch_sdd", "contract_mismatch"), 3, 1, ("block", "not_converging")),
    ],
)
def test_integration_attempt_to_next_move(result, attempt, reruns, expected):
    step = after_integration(result, attempt, max_attempts=3, reruns=reruns)
    assert (step.action, step.reason) == expected
    assert step.action != "block" or step.note  # a block always says why


def _attr(bug_id, category, route, unit="u1") -> Attribution:
    return Attribution(
        bug_id=bug_id, unit_id=unit, root_cause_category=category, root_cause_detail="x" * 20, suggested_route=route
    )


CODER = _attr("b1", "coder", "fast_lane")
PLANNING = _attr("b2", "planning", "full_replan", unit="u2")
SKILL = _attr("b3", "skill_defect", "skill_update")
UNSURE = _attr("b4", "inconclusive_escalate", "escalate")
CORE = _attr("b5", "core_engine", "escalate")  # a defect of GraphLemon itself, in another project
CORE_SELF = _attr("b6", "core_engine", "fast_lane")  # ... in GraphLemon's own repository (self-hosted)


@pytest.mark.parametrize(
    ("category", "self_hosted", "route"),
    [
        ("coder", False, "fast_lane"),
        ("coder", True, "fast_lane"),
        ("planning", False, "full_replan"),
        ("planning", True, "full_replan"),
        ("skill_defect", False, "skill_update"),  # the SkillEditor proposes, the gate decides
        ("skill_defect", True, "skill_update"),
        ("inconclusive_escalate", False, "escalate"),
        ("inconclusive_escalate", True, "escalate"),  # self-hosted or not, nobody knows what to fix: a person
        ("core_engine", False, "escalate"),  # GraphLemon's code is not this project's code: a person takes it
        ("core_engine", True, "fast_lane"),  # REQ-15: in GraphLemon's own repository the Coder fixes it
    ],
)
def test_root_cause_to_route(category, self_hosted, route):
    assert root_cause_route(category, self_hosted) == route


def test_every_root_cause_has_a_route_either_way():
    from typing import get_args

    from graphlemon.models import RootCauseCategory

    assert set(ROOT_CAUSE_ROUTES) == set(get_args(RootCauseCategory))
    assert {c: root_cause_route(c, True) for c in ROOT_CAUSE_ROUTES} == {**ROOT_CAUSE_ROUTES, "core_engine": "fast_lane"}


@pytest.mark.parametrize(
    ("attributions", "expected"),
    [
        ([CODER], ("fast_lane", None)),
        ([PLANNING], ("full_replan", None)),
        ([CODER, PLANNING], ("full_replan", None)),  # a plan problem outranks a coding one
        ([SKILL], ("skill_update", None)),  # REQ-08: the SkillEditor proposes, the gate decides
        ([UNSURE], ("escalate", "validator_inconclusive")),
        ([CODER, UNSURE], ("escalate", "validator_inconclusive")),  # any bug that needs a person stops the round
        ([PLANNING, SKILL], ("skill_update", None)),  # the skill first; the next round re-plans
        ([SKILL, UNSURE], ("escalate", "validator_inconclusive")),  # a bug nobody can attribute stops the round
        ([], ("escalate", "validator_inconclusive")),  # red without any attribution: a person looks
        ([CORE], ("escalate", "validator_inconclusive")),  # core_engine outside GraphLemon's repository
        ([CORE_SELF], ("fast_lane", None)),  # core_engine in GraphLemon's own repository -> the Coder
        ([CORE_SELF, PLANNING], ("full_replan", None)),
        ([CORE_SELF, UNSURE], ("escalate", "validator_inconclusive")),
    ],
)
def test_attributions_to_route(attributions, expected):
    assert validator_route(attributions) == expected


@pytest.mark.parametrize(
    ("per_round", "limit", "stuck"),
    [
        ([{"b1"}, {"b1"}, {"b1"}], 3, ["b1"]),  # REQ-05 failure: the same bug 3 rounds in a row
        ([{"b1"}, {"b1"}], 3, []),  # not yet 3 rounds
        ([{"b1"}, {"b2"}, {"b1"}], 3, []),  # not in a row
        ([{"b1", "b2"}, {"b1", "b2"}, {"b2"}], 3, ["b2"]),
        ([{"b9"}, {"b1"}, {"b1"}, {"b1"}], 3, ["b1"]),  # only the last `limit` rounds count
        ([set(), set(), set()], 3, []),
        ([{"b1"}, {"b1"}], 2, ["b1"]),
    ],
)
def test_same_bug_rounds_in_a_row(per_round, limit, stuck):
    assert stuck_bugs(per_round, limit) == stuck


def _validated(route, attributions=(), **kw) -> ValidationOutcome:
    return ValidationOutcome(ok=route == "done", run_id="val-1", route=route, attributions=list(attributions), **kw)


FAST = _validated("fast_lane", [CODER], units_to_fix=["u1"], feedback={"u1": "fix the wall check"})
REPLAN = _validated("full_replan", [PLANNING])
ESCALATE = _validated("escalate", [UNSURE], blocked_reason="validator_inconclusive")
SKILL_UPDATE = _validated("skill_update", [SKILL], feedback={"u1": "the skill forgot the wall"})


@pytest.mark.parametrize(
    ("result", "loop_round", "stuck", "expected"),
    [
        (_validated("done"), 0, [], ("done", None)),
        (_validated("done"), 4, ["b1"], ("done", None)),  # green is green, whatever came before
        (FAST, 0, [], ("next_round", None)),  # REQ-05 happy: fast lane -> the coder, round 0 -> 1
        (REPLAN, 0, [], ("next_round", None)),  # REQ-05 boundary: full_replan -> the planner
        (ESCALATE, 0, [], ("block", "validator_inconclusive")),
        (SKILL_UPDATE, 0, [], ("skill_update", None)),  # REQ-08: a skill defect goes to the SkillEditor
        (SKILL_UPDATE, 2, ["b3"], ("block", "not_converging")),  # the same bug again: the skill did not fix it
        (_validated("escalate", [UNSURE]), 1, [], ("block", "validator_inconclusive")),
        (FAST, 4, [], ("block", "not_converging")),  # the last allowed round failed
        (FAST, 2, ["b1"], ("block", "not_converging")),  # REQ-05 failure: the same bug 3 rounds
        (ESCALATE, 2, ["b4"], ("block", "not_converging")),  # non-convergence is reported first
    ],
)
def test_validation_to_next_step(result, loop_round, stuck, expected):
    step = after_validation(result, loop_round, max_rounds=5, stuck=stuck)
    assert (step.action, step.reason) == expected


def test_a_block_for_rounds_counts_the_rounds_run_not_the_limit():
    """A resumed task runs past its limit: its note agrees with the evidence pack's "Rounds so far" (walk5)."""
    assert after_validation(FAST, 0, max_rounds=1, stuck=[]).summary == "still failing after 1 round (the limit is 1)"
    assert after_validation(FAST, 1, max_rounds=1, stuck=[]).summary == "still failing after 2 rounds (the limit is 1)"


def test_fast_lane_sends_only_the_named_units_with_their_feedback_to_the_coder():
    step = after_validation(FAST, 0, max_rounds=5, stuck=[])
    plan = step.plan
    assert (plan.loop_round, plan.need_plan, plan.units) == (1, False, ["u1"])
    assert plan.feedback == {"u1": "fix the wall check"}
    assert step.summary == "fast_lane -> round 1 (u1)"


def test_full_replan_goes_to_the_planner_with_the_root_causes():
    plan = after_validation(REPLAN, 1, max_rounds=5, stuck=[]).plan
    assert (plan.loop_round, plan.need_plan, plan.units, plan.feedback) == (2, True, None, {})
    assert plan.plan_feedback == PLANNING.root_cause_detail


@pytest.mark.parametrize(
    ("reason", "active", "need_plan", "units"),
    [
        ("plan_inconsistent", ["u1"], True, None),  # a plan problem: re-plan with the person's note
        ("not_converging", ["u2"], False, ["u2"]),  # otherwise the units with active bugs
        ("validator_inconclusive", [], False, ["u1", "u2"]),  # none active: every unit
    ],
)
def test_human_resume_to_next_round(reason, active, need_plan, units):
    step = after_human(reason, "stuck on b1", "use a set", 1, active, ["u1", "u2"])
    assert step.action == "next_round"
    assert (step.plan.loop_round, step.plan.need_plan, step.plan.units) == (2, need_plan, units)
    if need_plan:
        assert step.plan.plan_feedback == "use a set"
    else:
        assert all("use a set" in text and "stuck on b1" in text for text in step.plan.feedback.values())


def _update(ok: bool) -> SkillUpdateOutcome:
    note = "the gate passed" if ok else "unit u2 turned red with the new skill"
    return SkillUpdateOutcome(ok=ok, bug_id="b3", unit_id="u1", skill="coder", iteration_id="si-1", note=note)


@pytest.mark.parametrize(
    ("update", "result", "loop_round", "expected"),
    [
        (_update(True), SKILL_UPDATE, 0, ("next_round", None)),  # applied: recode with the new skill
        (_update(False), SKILL_UPDATE, 0, ("block", "skill_defect")),  # rejected: a person decides
        (_update(True), SKILL_UPDATE, 4, ("block", "not_converging")),  # no round left to use it
        (_update(False), SKILL_UPDATE, 4, ("block", "skill_defect")),  # the rejection is the news
    ],
)
def test_skill_update_to_next_step(update, result, loop_round, expected):
    step = after_skill_update(update, result, loop_round, max_rounds=5)
    assert (step.action, step.reason) == expected


def test_applied_skill_recodes_the_attributed_units_with_their_feedback():
    step = after_skill_update(_update(True), SKILL_UPDATE, 0, max_rounds=5)
    assert (step.plan.loop_round, step.plan.need_plan, step.plan.units) == (1, False, ["u1"])
    assert step.plan.feedback == {"u1": "the skill forgot the wall"}
    replan = after_skill_update(_update(True), _validated("skill_update", [SKILL, PLANNING]), 0, max_rounds=5)
    assert replan.plan.need_plan and replan.plan.units is None
