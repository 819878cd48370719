"""triage_run's rules: one file and one ledger line, history/, second triage, auto-apply, clear errors."""

from __future__ import annotations

import json
import shutil

import pytest

from graphlemon.bugs import BugTracker
from graphlemon.errors import GraphLemonError
from graphlemon.models import TriageRecord
from graphlemon.triage import failure_signature, find_similar_bug, triage_run, verify_all
from graphlemon.triage.run_context import load_run
from graphlemon.triage.rundir import IntegrationFailure
from graphlemon.triage.verdict_selfcheck import snapshot


def ledger_sizes(root):
    return {p.name: len(p.read_text().splitlines()) for p in (root / ".graphlemon").glob("*.ndjson")}


def test_writes_only_triage_json_and_one_ledger_record(scenario):
    s = scenario("ib01_missing_user_500")
    before, lines_before = snapshot(s.root), ledger_sizes(s.root)
    outcome = triage_run(s.project, s.run_id)
    after = snapshot(s.root)
    changed = sorted(rel for rel in set(before) | set(after) if before.get(rel) != after.get(rel))
    assert changed == [f".graphlemon/integration/runs/{s.run_id}/triage.json"]
    lines_after = ledger_sizes(s.root)
    assert lines_after.pop("triage.ndjson") == lines_before.pop("triage.ndjson", 0) + 1
    assert lines_after == lines_before
    written = json.loads((s.run_dir / "triage.json").read_text())
    assert written["category"] == outcome.output.category == "impl_bug"
    assert written["failure_signature"].startswith("sig-")
    assert [r.run_id for r in s.project.ledger.read_as("triage", TriageRecord)] == [s.run_id]
    assert verify_all(s.root, written["evidence"]).ok


def test_retriage_archives_the_old_triage_json_under_history(scenario):
    s = scenario("cm01_expired_token_accepted")
    triage_run(s.project, s.run_id)
    first = (s.run_dir / "triage.json").read_text()
    second = triage_run(s.project, s.run_id)
    archived = list((s.run_dir / "history").glob("triage-*.json"))
    assert [p.read_text() for p in archived] == [first]
    assert second.record.category == "contract_mismatch"  # the same run again is a resume, not a second triage


def copy_run(s, new_id: str) -> None:
    """The Integrator reran the same cases after the loop acted on the verdict: same failure, new run id."""
    new = s.run_dir.parent / new_id
    shutil.copytree(s.run_dir, new, ignore=shutil.ignore_patterns("triage.json", "history"))
    result = json.loads((new / "result.json").read_text())
    result["run_id"] = new_id
    (new / "result.json").write_text(json.dumps(result, indent=2))


def test_second_triage_of_the_same_failure_escalates(scenario, keep):
    keep("contract:path_differs")
    s = scenario("fb02_stock_path_renamed_consumer")  # contract:path_differs, kept here: auto-applied
    first = triage_run(s.project, s.run_id)
    assert first.record.category == "contract_mismatch" and first.record.will_auto_apply
    copy_run(s, "int-0912-1500")
    second = triage_run(s.project, "int-0912-1500")
    assert second.rule == "spec:second_triage"
    assert second.record.category == "spec_ambiguous" and second.record.affected_units == []
    assert second.record.failure_signature == first.record.failure_signature
    assert second.record.confidence < 0.5 and not second.record.will_auto_apply
    assert second.record.evidence_verified
    assert any(f"runs/{s.run_id}/triage.json" in e for e in second.record.evidence)
    assert "contract_mismatch" in second.record.root_cause and second.record.l3_question


def test_second_triage_is_also_seen_through_the_bug_ledger(scenario):
    s = scenario("ib07_delete_answers_200")
    signature = failure_signature(load_run(s.project, s.run_id).result.failures[0])
    tracker = BugTracker(s.project.ledger)
    bug_id, _ = tracker.open(
        title="DELETE answers 200",
        source="integration",
        unit_id="tasks-api",
        test_name="delete-task-cancels-reminders",
        run_id="run-int-0615-1600",
        signature=signature,
    )
    tracker.update(bug_id, category="impl_bug", by="loop")  # the LoopController recorded an earlier verdict
    outcome = triage_run(s.project, s.run_id)
    assert outcome.record.category == "spec_ambiguous" and outcome.rule == "spec:second_triage"
    assert any(e.startswith(".graphlemon/bugs.ndjson:") for e in outcome.record.evidence)
    assert outcome.record.evidence_verified


def test_low_confidence_is_never_auto_applied(scenario, keep):
    s = scenario("sa03_delete_missing_contradiction")  # status_unproduced at 0.7: a verdict, below auto-apply
    outcome = triage_run(s.project, s.run_id)
    assert outcome.record.category == "impl_bug" and outcome.record.confidence < 0.8
    assert outcome.record.will_auto_apply is False
    keep("contract:path_differs")
    s2 = scenario("fb02_stock_path_renamed_consumer")  # a kept mechanism at >= 0.8, every quote verified
    kept = triage_run(s2.project, s2.run_id)
    assert kept.record.confidence >= 0.8 and kept.record.will_auto_apply is True


def test_failure_signature_ignores_what_was_got():
    base = {
        "case": "c",
        "step": 1,
        "involves": ["b", "a"],
        "request": {"method": "get", "path": "/x/1?q=2"},
        "expected": {"status": 404},
    }
    one = IntegrationFailure.model_validate({**base, "got": {"status": 500}})
    two = IntegrationFailure.model_validate({**base, "got": {"status": 200}, "involves": ["a", "b"]})
    other = IntegrationFailure.model_validate({**base, "expected": {"status": 410}})
    assert failure_signature(one) == failure_signature(two) != failure_signature(other)


def test_find_similar_bug(project):
    tracker = BugTracker(project.ledger)
    exact, _ = tracker.open(
        title="user missing gives 500", source="integration", unit_id="users-be", test_name="t1", signature="sig-1"
    )
    similar, _ = tracker.open(
        title="unknown user id answers 500 not 404", source="unit_test", unit_id="users-be", test_name="t2"
    )
    tracker.open(title="avatar upload is slow", source="unit_test", unit_id="users-be", test_name="t3")
    bugs = list(tracker.all().values())
    assert [b.bug_id for b in find_similar_bug(bugs, "sig-1")] == [exact]
    found = find_similar_bug(bugs, "sig-1", unit_ids=["users-be"], text="an unknown user id answers 500 instead of 404")
    assert [b.bug_id for b in found] == [exact, similar]


def test_large_process_log_is_windowed_around_the_failure(scenario):
    s = scenario("if05_db_etimedout")
    result = json.loads((s.run_dir / "result.json").read_text())
    result["failures"][0]["ts"] = "2026-06-28T19:15:33Z"
    (s.run_dir / "result.json").write_text(json.dumps(result))
    log = s.run_dir / "process.log"
    with log.open("w") as fh:
        for i in range(160_000):
            fh.write(
                f"2026-06-28T18:{i % 60:02d}:00Z [inventory] GET /inventory/TEA-0{i % 9} 200 1.2 ms (noise line {i})\n"
            )
        fh.write("2026-06-28T19:15:30Z [runner] OSError: [Errno 28] No space left on device: '/var/tmp'\n")
    assert log.stat().st_size > 10 * 1024 * 1024
    assert len(load_run(s.project, s.run_id).log) < 20  # ±30 s around the failure, not 160,000 lines
    outcome = triage_run(s.project, s.run_id)
    assert outcome.record.category == "infra_flake" and outcome.record.evidence_verified
    assert any(":160001:" in e and "No space left" in e for e in outcome.record.evidence)  # the file's own line


@pytest.mark.parametrize(
    "break_it, code, words",
    [
        (lambda s: shutil.rmtree(s.run_dir), "RUN_NOT_FOUND", "does not exist"),
        (lambda s: (s.run_dir / "result.json").unlink(), "RUN_NOT_FOUND", "no result.json"),
        (lambda s: (s.run_dir / "result.json").write_text("{not json"), "INVALID_PARAM", "result.json"),
        (
            lambda s: (s.run_dir / "result.json").write_text(json.dumps({"run_id": s.run_id, "ok": True})),
            "INVALID_PARAM",
            "no failures",
        ),
        (lambda s: (s.root / ".graphlemon" / "units.json").unlink(), "INVALID_PARAM", "units.json"),
        (
            lambda s: (s.run_dir / "http-trace.ndjson").write_text('{"case": 1}\n'),
            "INVALID_PARAM",
            "http-trace.ndjson:1",
        ),
        (
            lambda s: (s.root / ".graphlemon/units/users-be/contract.json").write_text('{"exports": []}'),
            "INVALID_PARAM",
            "contract.json",
        ),
    ],
)
def test_bad_inputs_fail_clearly_and_write_nothing(scenario, break_it, code, words):
    s = scenario("ib01_missing_user_500")
    break_it(s)
    before = snapshot(s.root)
    with pytest.raises(GraphLemonError) as err:
        triage_run(s.project, s.run_id)
    assert err.value.code == code and words in err.value.message
    assert snapshot(s.root) == before and not s.project.ledger.read("triage")


@pytest.mark.parametrize("run_id", ["", "../../etc", "/abs", "a/b", "x" * 200, "..", "run id"])
def test_hostile_run_ids_are_refused(scenario, run_id):
    s = scenario("ib01_missing_user_500")
    with pytest.raises(GraphLemonError) as err:
        triage_run(s.project, run_id)
    assert err.value.code == "INVALID_PARAM"


def test_symlinked_run_dir_leaving_the_project_is_refused(scenario, tmp_path):
    s = scenario("ib01_missing_user_500")
    outside = tmp_path / "elsewhere"
    shutil.move(str(s.run_dir), outside)
    s.run_dir.symlink_to(outside)
    with pytest.raises(GraphLemonError) as err:
        triage_run(s.project, s.run_id)
    assert err.value.code == "SANDBOX_VIOLATION"


def test_code_is_read_from_the_integration_worktree(scenario):
    s = scenario("ib06_bff_turns_404_into_500")
    worktree = s.root / ".graphlemon" / "worktrees" / "t-1" / "_integration"
    worktree.mkdir(parents=True)
    for folder in ("bff", "users_api"):
        shutil.move(str(s.root / folder), worktree / folder)
    outcome = triage_run(s.project, s.run_id, code_root=worktree)
    assert (outcome.record.category, outcome.record.affected_units) == ("impl_bug", ["web-bff"])
    assert any(
        e.startswith(".graphlemon/worktrees/t-1/_integration/bff/dashboard.js:") for e in outcome.record.evidence
    )
    assert outcome.record.evidence_verified
    with pytest.raises(GraphLemonError) as err:
        triage_run(s.project, s.run_id, code_root=s.root.parent)
    assert err.value.code == "INVALID_PARAM"
