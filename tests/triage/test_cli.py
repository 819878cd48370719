"""`graphlemon triage` as a real process on every corpus scenario, and its errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "triage"
SCENARIOS = sorted(p.name for p in CORPUS.iterdir() if (p / "expected.json").is_file())
# Dev scenarios whose verdict rested on a word-list entry that existed for that scenario alone and was
# removed. The miss stays visible here instead of being hidden by a new entry; if a general rule
# gets it right again, this assertion fails and the entry goes.
KNOWN_MISSES = {"ib03_unknown_book_prose": "matched the SDD only through the phrase 'not in the' (→ c:missing)"}
SPLIT = {n: json.loads((CORPUS / n / "expected.json").read_text()).get("split", "dev") for n in SCENARIOS}
HOLDOUT = {n for n, split in SPLIT.items() if split == "holdout"}
# "before" / "after": written before / after the rules compared interfaces by structure; scored as sets.
SCORED_AS_A_SET = {n for n, split in SPLIT.items() if split != "dev"}


def _family(name: str) -> str:
    """The letters before a scenario's number: `cm` of `cm01_expired_token_accepted`."""
    return name[: len(name) - len(name.lstrip("abcdefghijklmnopqrstuvwxyz"))]


# The first scenario of each family runs as a real process; the others go through the same entry point in this
# process (a process start costs seconds: a hundred of them, minutes).
REAL_PROCESS = {min(n for n in SCENARIOS if _family(n) == family) for family in map(_family, SCENARIOS)}


@pytest.mark.system
@pytest.mark.parametrize("name", SCENARIOS)
def test_cli_triages_every_scenario(scenario, cli, cli_in_process, name):
    s = scenario(name)
    run = cli if name in REAL_PROCESS else cli_in_process
    proc = run("triage", "--project", str(s.root), "--run", s.run_id, "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    if name not in SCORED_AS_A_SET:  # held-out and fresh scenarios are scored together, not one by one
        right = (out["category"], sorted(out["affected_units"])) == (s.category, sorted(s.affected_units))
        assert right == (name not in KNOWN_MISSES), out["root_cause"]
    # the rules every verdict obeys
    assert out["ok"] and out["evidence_verified"] and not out["fallback"]
    assert (out["proposed_sdd_patch"] is not None) == (out["category"] == "contract_mismatch")
    assert out["will_auto_apply"] == (out["confidence"] >= 0.8 and out["category"] != "spec_ambiguous")
    assert out["method"] == "rules"
    assert len(out["root_cause"]) >= 20 and out["tokens_used"] == 0 and out["executor"] == "none"
    if out["category"] == "spec_ambiguous":
        assert out["confidence"] < 0.6 and out["l3_question"]
    written = json.loads((s.run_dir / "triage.json").read_text())
    assert written["root_cause"] == out["root_cause"] and out["triage_ref"].endswith(f"{s.run_id}/triage.json")


# Held-out batches: (right, total) when the rule they test was frozen. A batch may not get worse.
#   http:           hcm/hib/hsa/hif, written after the first triager was frozen (goal >= 90 %: 11/12)
#   python-library: hpl*, written before the call-level rule (callfindings / fitfindings): 5/6,
#                   so the combined held-out score is 16/18 = 89 %, just under the 90 % goal.
HOLDOUT_AT_FREEZE = {"http": (11, 12), "python-library": (5, 6)}


def _batch(name: str) -> str:
    return "python-library" if name.startswith("hpl") else "http"


def test_holdout_accuracy_does_not_regress(scenario):
    from graphlemon.triage.rule_classifier import classify
    from graphlemon.triage.run_context import load_run

    right: dict[str, list[bool]] = {"http": [], "python-library": []}
    for name in sorted(HOLDOUT):
        s = scenario(name)
        finding = classify(load_run(s.project, s.run_id))
        right[_batch(name)].append(
            (finding.category, sorted(finding.affected)) == (s.category, sorted(s.affected_units))
        )
    for batch, (was, total) in HOLDOUT_AT_FREEZE.items():
        assert len(right[batch]) == total and sum(right[batch]) >= was, (batch, right[batch])
    assert sum(right["http"]) / len(right["http"]) >= 0.9  # the goal on the first held-out batch


@pytest.mark.system
def test_human_output(scenario, cli):
    s = scenario("cm06_quota_429_vs_503")
    proc = cli("triage", "--run", s.run_id, cwd=s.root)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("contract_mismatch  confidence")
    assert "proposed SDD patch (update_contract #unit-search-api)" in proc.stdout
    assert "search.md:12: When the provider says our quota is spent" in proc.stdout


@pytest.mark.system
def test_missing_run_directory_is_a_clear_error(scenario, cli):
    s = scenario("if01_backend_killed")
    proc = cli("triage", "--project", str(s.root), "--run", "run-int-does-not-exist", "--json")
    assert proc.returncode == 2 and proc.stdout == ""
    assert "error[RUN_NOT_FOUND]: no integration run 'run-int-does-not-exist'" in proc.stderr
    assert "known runs: run-int-20260513-1700" in proc.stderr


@pytest.mark.system
@pytest.mark.parametrize(
    "args, words",
    [
        (["--run", "../../etc"], "INVALID_PARAM"),
        (["--run", "x", "--executor", "gpt"], "unknown executor 'gpt'"),
        (["--run", "x", "--playbook", "p.yaml"], "--playbook is only for --executor scripted"),
        (["--run", "x", "--executor", "scripted"], "needs a playbook"),
    ],
)
def test_bad_arguments(scenario, cli, args, words):
    s = scenario("if01_backend_killed")
    proc = cli("triage", "--project", str(s.root), *args)
    assert proc.returncode == 2 and words in proc.stderr


@pytest.mark.system
def test_help(cli):
    proc = cli("triage", "--help")
    assert proc.returncode == 0 and "--run" in proc.stdout and "--executor" in proc.stdout


@pytest.mark.system
@pytest.mark.parametrize(
    "rel",
    [
        ".graphlemon/integration/runs/{run}/result.json",
        ".graphlemon/units/profile-fe/contract.json",
        ".graphlemon/units.json",
    ],
)
def test_a_file_that_is_not_utf8_is_invalid_param_and_nothing_is_written(scenario, cli, rel):
    s = scenario("ib01_missing_user_500")
    path = s.root / rel.format(run=s.run_id)
    path.write_bytes(path.read_bytes().replace(b"{", b"{\xff", 1))
    ledger = {p.name: p.read_bytes() for p in (s.root / ".graphlemon").glob("*.ndjson")}
    proc = cli("triage", "--project", str(s.root), "--run", s.run_id, "--json")
    assert proc.returncode == 2 and proc.stdout == "" and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("error[INVALID_PARAM]: ") and path.name in proc.stderr and "not UTF-8" in proc.stderr
    assert not (s.run_dir / "triage.json").exists()
    assert {p.name: p.read_bytes() for p in (s.root / ".graphlemon").glob("*.ndjson")} == ledger


def test_the_tester_reads_units_json_the_same_way(tmp_path):
    from graphlemon.errors import ErrorCode, GraphLemonError
    from graphlemon.units import UnitFiles

    state = tmp_path / ".graphlemon"
    state.mkdir()
    (state / "units.json").write_bytes(b'{"units": [{"unit_id": "caf\xe9"}]}')
    with pytest.raises(GraphLemonError) as err:
        UnitFiles(state).units()
    assert err.value.code is ErrorCode.INVALID_PARAM and "units.json: not UTF-8 (byte 0xe9" in err.value.message


# Fresh sets (right, total) on the rule path now. "before" shaped the interface comparison; "after", "final" and
# "last" were each written against frozen rules (their scores then: 9/12, 9/12, 9/12; docs/triage.md), and each
# prompted general fixes, so these numbers are no longer unseen ones. None may be wrong at >= 0.8, and a scenario
# labelled with a `max_confidence` (mixed evidence a person should see) may not exceed it.
# The blind sets likewise: their misses prompted general rules (the consumer/provider side check, no-answer
# verdicts, bounds, request inputs, derived flags; blind4: contradicted environment signals, message subjects,
# nullability, units and date formats), so "now" is tuned on; 24/24, 20/24, 23/24, 20/24 may not get worse. Their authors'
# `max_confidence` labels are not asserted (a spec_ambiguous verdict at 0.55 exceeds a 0.5 label): only the
# four sets above were written with the rules' confidence scale.
FRESH_NOW = {"before": 12, "after": 12, "final": 12, "last": 12, "blind": 24, "blind2": 20, "blind3": 23, "blind4": 20}
CAPPED = ("before", "after", "final", "last")


def test_fresh_sets_do_not_regress_and_are_never_confidently_wrong(scenario):
    from graphlemon.triage.rule_classifier import classify
    from graphlemon.triage.run_context import load_run

    right = dict.fromkeys(FRESH_NOW, 0)
    for name in sorted(n for n, split in SPLIT.items() if split in FRESH_NOW):
        s = scenario(name)
        finding = classify(load_run(s.project, s.run_id))
        ok = (finding.category, sorted(finding.affected)) == (s.category, sorted(s.affected_units))
        right[SPLIT[name]] += ok
        assert ok or finding.confidence < 0.8, (name, finding.category, finding.confidence)
        cap = json.loads((CORPUS / name / "expected.json").read_text()).get("max_confidence")
        assert cap is None or SPLIT[name] not in CAPPED or finding.confidence <= cap, (name, finding.confidence)
    assert all(right[split] >= n for split, n in FRESH_NOW.items()), right
