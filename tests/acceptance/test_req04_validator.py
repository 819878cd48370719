"""REQ-04: the validator attributes root causes from three perspectives, citing the SDD and the code."""

from __future__ import annotations

import pytest
from conftest import CALC, broken_mul, playbook_variant, run_flow, verdict

from graphlemon.bugs import BugTracker
from graphlemon.models import EscalationRecord

pytestmark = pytest.mark.system


def test_happy_planted_wall_bug_is_the_coders_with_sdd_section_and_code_line(snake_run):
    project, final = snake_run
    bugs = BugTracker(project.ledger).list(task_id=final["task_id"], unit_id="collision")
    # the right-wall bug's test passed in L1 attempt 2 (fixed there); the bottom-wall bug reached the validator
    attributed = [b for b in bugs if b.root_cause_category]
    assert attributed and all(b.root_cause_category == "coder" and b.suggested_route == "fast_lane" for b in attributed)
    detail = attributed[0].root_cause_detail
    assert "SDD 3.2" in detail and "snake/collision.py:9" in detail
    assert all(b.status == "verified" for b in bugs)  # fixed in round 1, verified by the last validation


def test_boundary_unspecified_behaviour_is_planning(replan_run):
    project, final = replan_run
    bugs = [b for b in BugTracker(project.ledger).list(task_id=final["task_id"]) if b.root_cause_category]
    assert bugs and {b.root_cause_category for b in bugs} == {"planning"}
    assert {b.suggested_route for b in bugs} == {"full_replan"}


def test_failure_disagreeing_perspectives_escalate_instead_of_guessing(calc, tmp_path, prefect_harness):
    def edit(data):
        broken_mul(data, attempts=None)
        verdict(data, "coder", "planning", "skill_defect")

    final = run_flow(calc, "Build calc", playbook_variant(tmp_path, CALC, edit), max_unit_attempts=1)
    assert final["status"] == "blocked_pending_human" and final["blocked_reason"] == "validator_inconclusive"
    bugs = BugTracker(calc.ledger).list(task_id=final["task_id"], unit_id="mul")
    assert len(bugs) == 2  # mul returns a + b: both product tests fail
    for bug in bugs:
        assert bug.root_cause_category == "inconclusive_escalate" and bug.suggested_route == "escalate"
        assert "perspectives disagree" in bug.root_cause_detail
    [pack] = [e for e in calc.ledger.read_as("escalation", EscalationRecord) if e.task_id == final["task_id"]]
    assert all(b.bug_id in pack.summary_md for b in bugs) and "What to decide" in pack.summary_md
