"""Calibration by construction: confidence rests on verified evidence, a refuted claim only lowers it, and
`will_auto_apply` needs >= 0.8 with every cited claim verified. The agent path is held to the same rules."""

from __future__ import annotations

import json

import yaml
from hypothesis import given
from hypothesis import strategies as st

from graphlemon.agents import build_executor
from graphlemon.triage import triage_run
from graphlemon.triage.calibration import REFUTED_CAP, UNSUPPORTED_CAP, calibrate, may_auto_apply
from graphlemon.triage.evidence_check import EvidenceCheck, EvidenceReport
from graphlemon.triage.verdict import AUTO_APPLY_MIN_CONFIDENCE

RUN = ".graphlemon/integration/runs/r1"
SOURCES = [f"{RUN}/result.json", f"{RUN}/process.log", ".graphlemon/artifacts/sdd/sdd.md", "svc/app.py"]


def report(items: list[tuple[str, bool]]) -> EvidenceReport:
    results = [EvidenceCheck(evidence=f"{f}: quote", ok=ok, hit_file=f if ok else None) for f, ok in items]
    failed = [r for r in results if not r.ok]
    return EvidenceReport(ok=not failed, results=results, failed=failed)


@given(
    confidence=st.floats(0, 1),
    items=st.lists(st.tuples(st.sampled_from(SOURCES), st.booleans()), max_size=6),
    category=st.sampled_from(["contract_mismatch", "impl_bug", "spec_ambiguous", "infra_flake"]),
    fallback=st.booleans(),
)
def test_calibration_never_raises_and_auto_apply_needs_every_claim_verified(confidence, items, category, fallback):
    cal = calibrate(confidence, report(items), RUN)
    assert cal.confidence <= round(confidence, 2)
    refuted = any(not ok for _f, ok in items)
    if refuted or not items:
        assert cal.confidence <= REFUTED_CAP
    if not any(ok and f != f"{RUN}/result.json" for f, ok in items):
        assert cal.confidence <= UNSUPPORTED_CAP
    if may_auto_apply(category, cal, fallback):
        assert cal.confidence >= AUTO_APPLY_MIN_CONFIDENCE and not refuted and items and not fallback
        assert category != "spec_ambiguous"


def test_the_numbers():
    assert AUTO_APPLY_MIN_CONFIDENCE == 0.8
    cal = calibrate(0.95, report([(f"{RUN}/result.json", True), ("svc/app.py", True)]), RUN)
    assert (cal.confidence, cal.reason, cal.cause_sources) == (0.95, None, ("svc/app.py",))
    cal = calibrate(0.95, report([(f"{RUN}/result.json", True)]), RUN)
    assert cal.confidence == UNSUPPORTED_CAP and "only the failure itself" in cal.reason
    cal = calibrate(0.95, report([("svc/app.py", True), ("svc/app.py", False)]), RUN)
    assert cal.confidence == REFUTED_CAP and cal.refuted == 1 and not may_auto_apply("impl_bug", cal, False)
    assert calibrate(0.3, report([]), RUN).confidence == 0.3  # lowering only: a low proposal stays low


def playbook(tmp_path, run_id: str, *, confidence: float, evidence: list[str]):
    todo = [{"title": t, "status": "done"} for t in ("collect", "classify", "affected", "patch", "write")]
    turn = {
        "name": "confident verdict",
        "match": {"role": "bug-triager"},
        "usage": {"input_tokens": 100, "output_tokens": 10},
        "actions": [{"tool": "write_todolist", "args": {"items": todo}}],
        "output": {
            "run_id": run_id,
            "root_cause": "profile-be returns 200 for an expired token where the case expects 401",
            "category": "impl_bug",
            "affected_units": ["profile-be"],
            "proposed_sdd_patch": None,
            "confidence": confidence,
            "evidence": evidence,
        },
    }
    path = tmp_path / "pb.yaml"
    path.write_text(yaml.safe_dump({"version": 1, "turns": [turn]}))
    return build_executor("scripted", playbook=path)


def test_an_agent_verdict_resting_only_on_the_failure_is_not_auto_applied(scenario, tmp_path):
    s = scenario("cm01_expired_token_accepted")
    evidence = [f'.graphlemon/integration/runs/{s.run_id}/result.json: "case": "login-then-profile"']
    outcome = triage_run(s.project, s.run_id, executor=playbook(tmp_path, s.run_id, confidence=0.97, evidence=evidence))
    r, o = outcome.record, outcome.output
    assert o.ok and o.method == "agent" and r.evidence_verified and r.category == "impl_bug"
    assert r.confidence == UNSUPPORTED_CAP and not r.will_auto_apply
    assert any("confidence lowered to 0.6" in h for h in outcome.hints)
    assert json.loads((s.run_dir / "triage.json").read_text())["confidence"] == UNSUPPORTED_CAP


def test_a_confident_agent_verdict_with_a_false_quote_never_auto_applies(scenario, tmp_path):
    s = scenario("cm01_expired_token_accepted")
    evidence = [
        ".graphlemon/artifacts/sdd/sdd.md:18: 401 if token expired or its signature does not verify",
        "services/profile/server.js: jwt.verify(token, SECRET) // verified",  # not in the file
    ]
    outcome = triage_run(s.project, s.run_id, executor=playbook(tmp_path, s.run_id, confidence=0.83, evidence=evidence))
    r = outcome.record
    assert r.fallback and r.category == "spec_ambiguous" and r.confidence <= 0.3 and not r.will_auto_apply
    assert all(4 in {v.item for v in rejected} for rejected in outcome.rejected)


def test_the_rule_path_is_reported_as_rules(scenario):
    s = scenario("ib01_missing_user_500")
    outcome = triage_run(s.project, s.run_id)
    assert outcome.output.method == "rules" and outcome.merged()["method"] == "rules"
