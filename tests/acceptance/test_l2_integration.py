"""Loop L2: an integration case fails on the merged code, the BugTriager's verdict routes it
(impl_bug -> the affected unit is re-coded), and the rerun passes."""

from __future__ import annotations

import json

import pytest
from conftest import CALC, playbook_variant, run_flow, turn

from graphlemon.models import TimelineEvent, TriageRecord
from graphlemon.nodes import NodeTracker

pytestmark = pytest.mark.system


def with_integration_case(data: dict) -> None:
    planner = turn(data, role="planner")
    planner["actions"][4] = {
        "write_file": {
            "path": ".graphlemon/plan/drafts/plan.json",
            "from_file": "files/plan/plan_with_integration.json",
        }
    }
    data["turns"].insert(0, {"match": {"role": "coder", "unit": "mul", "attempt": 1},
                             "actions": [{"write_file": {"path": "calc/mul.py", "from_file": "files/code/mul_sign_bug.py"}}],
                             "output": {"summary": "mul", "files": ["calc/mul.py"]}})  # fmt: skip
    data["turns"].append({"match": {"role": "integrator"},
                          "actions": [{"write_file": {"path": "tests/integration/test_integration.py", "from_file": "files/tests/test_integration.py"}}],
                          "output": {"tests": ["tests/integration/test_integration.py"]}})  # fmt: skip


# The bug-triager, scripted (its output is labelled scripted): without a model the rules only suggest (no mechanism is
# kept for a re-code, docs/triage.md), so the verdict the loop applies is the agent's, through the same gates.
TRIAGER = {
    "match": {"role": "bug-triager", "attempt": 1},
    "actions": [
        {"tool": "write_todolist", "args": {"items": [{"title": t, "status": "done"} for t in (
            "collect evidence: result.json, SDD, contracts, code", "category_classifier, then review",
            "affected_units", "write triage.json and check evidence")]}},
        {"tool": "category_classifier", "args": {"run_id": "${request.run_id}"}, "expect": "ok"},
    ],
    "output": {
        "run_id": "${request.run_id}", "category": "impl_bug", "affected_units": ["mul"], "confidence": 0.85,
        "root_cause": "mul returns abs(a) * b, so mul(-2, 3) is 6 where the SDD's formula a * b gives -6",
        "evidence": [
            ".graphlemon/artifacts/sdd/sdd-v1.md:7: mul(a, b)` returns a * b",
            ".graphlemon/worktrees/${request.task_id}/_integration/calc/mul.py:4: return abs(a) * b",
            ".graphlemon/integration/runs/${request.run_id}/result.json:29: where 6 = mul(-2, 3)",
        ],
    },
}  # fmt: skip


def with_triager(data: dict) -> None:
    with_integration_case(data)
    data["turns"].append(TRIAGER)


def test_integration_failure_is_triaged_and_the_affected_unit_is_recoded(calc, tmp_path, prefect_harness):
    final = run_flow(calc, "Build calc", playbook_variant(tmp_path, CALC, with_triager))
    assert final["status"] == "done", final
    [verdict] = [t for t in calc.ledger.read_as("triage", TriageRecord)]
    assert verdict.category == "impl_bug" and verdict.affected_units == ["mul"] and verdict.will_auto_apply
    assert (verdict.method, verdict.executor) == ("agent", "scripted") and verdict.evidence_verified
    run_dir = calc.state_dir / "integration" / "runs" / verdict.run_id
    result = json.loads((run_dir / "result.json").read_text())
    assert result["failures"][0]["case"] == "dot-product" and result["failures"][0]["involves"] == ["add", "mul"]
    assert (run_dir / "process.log").read_text().strip() and (run_dir / "triage.json").is_file()
    integrations = [n for n in NodeTracker(calc.ledger).for_task(final["task_id"]) if n.stage == "integrator"]
    assert sorted(n.attempt for n in integrations) == [1, 2]
    recoded = [
        n for n in NodeTracker(calc.ledger).for_task(final["task_id"]) if n.stage == "coder" and n.unit_id == "mul"
    ]
    assert len(recoded) == 2 and recoded[-1].status == "done"  # mul reset and coded again inside round 0
    events = [(e.event, e.summary) for e in calc.ledger.read_as("timeline", TimelineEvent)
              if e.event in ("integrated", "triaged")]  # fmt: skip
    assert events == [
        ("integrated", "round 0 attempt 1: 1 case(s) failed"),
        ("triaged", "round 0 attempt 1: impl_bug -> reset_units"),  # the bug-triager: a node and a task of its own
        ("integrated", "round 0 attempt 2: pass"),
    ]
    triagers = [n for n in NodeTracker(calc.ledger).for_task(final["task_id"]) if n.stage == "bug-triager"]
    assert [(n.attempt, n.status) for n in triagers] == [(1, "done")]
