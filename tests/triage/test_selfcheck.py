"""The self-check: each of the ten items catches its defect; a sound verdict passes."""

from __future__ import annotations

import pytest

from graphlemon.triage.verdict import TodoItem
from graphlemon.triage.verdict_selfcheck import changed_since, self_check, snapshot

RUN = "run-int-20260513-1230"
EVIDENCE = [
    ".graphlemon/artifacts/sdd/sdd.md:18: 401 if token expired or its signature does not verify",
    '.graphlemon/units/profile-be/contract.json: "path": "/api/profile/me"',
]
GOOD = {
    "run_id": RUN,
    "root_cause": "profile-be returns 200 for an expired token where the SDD requires 401; its contract declares only 200/404",
    "category": "contract_mismatch",
    "affected_units": ["profile-be"],
    "proposed_sdd_patch": {
        "target_section": "#unit-profile-be",
        "op": "update_contract",
        "text": "401 on an expired token",
    },
    "confidence": 0.82,
    "evidence": EVIDENCE,
}
DONE = [TodoItem(id=f"step-00{i}", title=f"step {i}", status="done") for i in range(1, 6)]


@pytest.fixture
def root(scenario):
    return scenario("cm01_expired_token_accepted").root


def check(root, proposal, todolist=DONE, changed=(), output_error=None):
    violations, _ = self_check(
        proposal, root=root, run_id=RUN, unit_ids=["auth-be", "profile-be"], todolist=todolist,
        changed_files=list(changed), output_error=output_error,
    )  # fmt: skip
    return sorted({v.item for v in violations}), violations


def test_a_sound_verdict_passes(root):
    assert check(root, GOOD) == ([], [])


@pytest.mark.parametrize(
    "change, item",
    [
        ({"confidence": 1.7}, 1),
        ({"root_cause": "auth-be bug"}, 2),
        ({"root_cause": "The integration test failed and profile-be needs fixing"}, 3),
        ({"root_cause": "profile-be has a problem with the profile endpoint"}, 3),
        ({"evidence": ['.graphlemon/units/profile-be/contract.json: "401": "invalid_token"']}, 4),
        ({"evidence": []}, 4),
        ({"evidence": ["../../etc/passwd: root:x:0:0:root:/root"]}, 4),
        ({"proposed_sdd_patch": None}, 5),
        ({"category": "impl_bug"}, 5),
        ({"category": "spec_ambiguous", "proposed_sdd_patch": None, "affected_units": [], "confidence": 0.8}, 6),
        ({"affected_units": ["profile-be", "payments"]}, 7),
        ({"category": "infra_flake", "proposed_sdd_patch": None}, 7),
        ({"affected_units": []}, 7),
        ({"category": "unknown"}, 8),
    ],
)
def test_each_item_catches_its_defect(root, change, item):
    items, violations = check(root, {**GOOD, **change})
    assert item in items, violations


def test_todolist_must_exist_and_be_done(root):
    assert check(root, GOOD, todolist=None)[0] == [9]
    unfinished = [*DONE[:4], TodoItem(id="step-005", title="write", status="in_progress")]
    assert check(root, GOOD, todolist=unfinished)[0] == [9]


def test_writing_anything_but_triage_json_is_a_violation(root):
    allowed = f".graphlemon/integration/runs/{RUN}/triage.json"
    assert check(root, GOOD, changed=[allowed])[0] == []
    items, violations = check(root, GOOD, changed=[allowed, "services/profile/server.js"])
    assert items == [10] and "services/profile/server.js" in violations[0].detail


def test_executor_output_error_is_a_schema_violation(root):
    items, violations = check(root, None, output_error="the output does not match TriageVerdict: category: invalid")
    assert 1 in items and 8 in items


def test_snapshot_sees_writes_but_not_the_ledger(root):
    before = snapshot(root)
    (root / ".graphlemon" / "usage.ndjson").write_text("{}\n")  # executors append usage: not the agent's write
    (root / ".graphlemon" / "logs").mkdir(exist_ok=True)
    (root / ".graphlemon" / "logs" / "t.ndjson").write_text("{}\n")
    assert changed_since(before, root) == []
    (root / "services" / "profile" / "server.js").write_text("// rewritten\n")
    (root / "new.txt").write_text("x")
    assert changed_since(before, root) == ["new.txt", "services/profile/server.js"]
