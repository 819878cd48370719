"""The agent path with the scripted executor: the self-check accepts a sound proposal, rejects fabricated
evidence and rule breaks, retries once, and falls back to the seed's spec_ambiguous / 0.3 verdict."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graphlemon.agents import build_executor
from graphlemon.models import UsageRecord
from graphlemon.triage import triage_run
from graphlemon.triage.agent import failure_context
from graphlemon.triage.run_context import load_run

PLAYBOOKS = Path(__file__).resolve().parents[1] / "fixtures" / "triage" / "playbooks"
SCENARIO = "cm01_expired_token_accepted"


def run(s, playbook: str):
    return triage_run(s.project, s.run_id, executor=build_executor("scripted", playbook=PLAYBOOKS / playbook))


def test_a_sound_proposal_is_accepted(scenario):
    s = scenario(SCENARIO)
    outcome = run(s, "good-verdict.yaml")
    o, r = outcome.output, outcome.record
    assert o.ok and not o.fallback and outcome.rejected == [] and outcome.rule == "agent"
    assert (r.category, r.affected_units, r.confidence) == ("contract_mismatch", ["profile-be"], 0.7)
    assert r.executor == "scripted" and o.evidence_verified
    # only the rules' contract:status_differs backs it, a mechanism below the decider's bar: a person approves, and
    # the verdict is lowered below auto-apply (its premise is not checked)
    assert not o.will_auto_apply and r.patch_review and "only contract:status_differs shows it" in r.patch_review
    assert r.patch_review.startswith("the SDD also speaks of")
    assert (
        o.tokens_used
        == 9823
        == sum(u.input_tokens + u.output_tokens for u in s.project.ledger.read_as("usage", UsageRecord))
    )
    assert json.loads((s.run_dir / "triage.json").read_text())["root_cause"].startswith("profile-be decodes the JWT")


def test_fabricated_evidence_is_rejected_twice_then_the_fallback(scenario):
    s = scenario(SCENARIO)
    outcome = run(s, "fabricated-evidence.yaml")
    o, r = outcome.output, outcome.record
    assert not o.ok and o.fallback and outcome.rule == "agent:fallback"
    assert (r.category, r.confidence, r.affected_units, r.proposed_sdd_patch) == ("spec_ambiguous", 0.3, [], None)
    assert not r.will_auto_apply and r.l3_question and r.evidence_verified  # the fallback's own evidence is real
    first, second = outcome.rejected
    assert [v.item for v in first] == [4] and "quote not found" in first[0].detail
    assert "refused" in " ".join(v.detail for v in second if v.item == 4)
    assert any(v.item == 10 and v.detail.startswith("read_file:") and "passwd" in v.detail for v in second)
    assert "failed the self-check" in r.fallback_reason and o.tokens_used == 17600
    written = json.loads((s.run_dir / "triage.json").read_text())
    assert written["fallback"] is True and written["category"] == "spec_ambiguous"


def test_a_rejected_proposal_is_retried_with_its_violations(scenario):
    s = scenario(SCENARIO)
    outcome = run(s, "retry-fixes-it.yaml")
    assert outcome.output.ok and outcome.record.category == "contract_mismatch"
    assert sorted({v.item for v in outcome.rejected[0]}) == [3, 5, 7, 9]  # it has no write tool: nothing to revert
    # the agent tried to write triage.json itself on the retry: the file on disk is the checked verdict
    written = json.loads((s.run_dir / "triage.json").read_text())
    assert "written" not in written and written["executor"] == "scripted"
    assert not (s.run_dir / "history").exists()
    assert (s.root / "services" / "profile" / "server.js").read_text().startswith("const express")
    prompt = failure_context(load_run(s.project, s.run_id), outcome.rejected[0])
    assert "check 3 (root_cause names a concrete behaviour)" in prompt["Your previous proposal was rejected"]
    assert '"case": "login-then-profile"' in prompt["Failure Context"]


@pytest.mark.system
def test_cli_with_the_scripted_executor(scenario, cli):
    s = scenario(SCENARIO)
    proc = cli(
        "triage",
        "--project",
        str(s.root),
        "--run",
        s.run_id,
        "--executor",
        "scripted",
        "--playbook",
        str(PLAYBOOKS / "fabricated-evidence.yaml"),
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert (out["ok"], out["fallback"], out["category"], out["confidence"], out["executor"]) == (
        False,
        True,
        "spec_ambiguous",
        0.3,
        "scripted",
    )


PROBES = Path(__file__).resolve().parents[1] / "fixtures" / "triage" / "red45d_probes"


@pytest.mark.parametrize(
    ("name", "probe", "why"),
    [
        # the kernel's OOM line, and the rules' reading of it points to the environment: two readings, a person
        ("rdd45_kiln_log_host_antivirus_oom", "p8-impl-on-host-oom.yaml", "the rules' findings point elsewhere"),
        # an erratum replaces the table the agent cites; the rules read a contract disagreement, not this unit's bug
        ("rdd22_bistro_reservations_errata_by_operation_name", "p3-impl-on-superseded-table.yaml", "point elsewhere"),
        ("rdd24_clinic_slots_deprecated_html_section", "p7-impl-deprecated-section.yaml", "a person"),
    ],
)
def test_an_agents_recode_without_a_second_reading_waits_for_a_person(scenario, name, probe, why):
    # red45d's probes (issue 45's fourth red team): wrong impl_bug verdicts whose every quote verifies
    s = scenario(name)
    outcome = triage_run(s.project, s.run_id, executor=build_executor("scripted", playbook=PROBES / probe))
    r = outcome.record
    assert r.category == "impl_bug" and r.evidence_verified and r.executor == "scripted"
    assert not r.will_auto_apply and r.confidence <= 0.7
    assert any(h.startswith("the re-code waits for a person: ") and why in h for h in outcome.hints)
