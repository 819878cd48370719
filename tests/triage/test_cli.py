"""`graphlemon triage` as a real process: the rules every verdict obeys, the human output, and its errors."""

from __future__ import annotations

import json

import pytest

from graphlemon.triage.decider import MEASURED

pytestmark = pytest.mark.system  # `graphlemon triage` as a real process

# one scenario of each kind of verdict: the kept mechanisms and the facts for a person (the whole corpus is the
# benchmark's: benchmarks/bench_triage.py)
SAMPLE = ["ib01_missing_user_500", "cm01_expired_token_accepted", "fb02_stock_path_renamed_consumer",
          "fb04_loans_fourth_checkout_words", "if02_port_clash_500", "sa03_delete_missing_contradiction"]  # fmt: skip


@pytest.mark.parametrize("name", SAMPLE)
def test_every_verdict_obeys_the_triage_rules(scenario, cli, cli_in_process, name):
    s = scenario(name)
    run = cli if name == SAMPLE[0] else cli_in_process  # one real process; the others through the same entry point
    proc = run("triage", "--project", str(s.root), "--run", s.run_id, "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["ok"] and out["evidence_verified"] and not out["fallback"]
    assert (out["proposed_sdd_patch"] is not None) == (out["category"] == "contract_mismatch")
    assert not out["will_auto_apply"] or (out["confidence"] >= 0.8 and out["category"] != "spec_ambiguous")
    assert out["method"] == "rules" and out["rule"] in [*MEASURED, "facts:only"]
    assert len(out["root_cause"]) >= 20 and out["tokens_used"] == 0 and out["executor"] == "none"
    if out["category"] == "spec_ambiguous":
        assert out["confidence"] < 0.6 and out["l3_question"]
    written = json.loads((s.run_dir / "triage.json").read_text())
    assert written["root_cause"] == out["root_cause"] and out["triage_ref"].endswith(f"{s.run_id}/triage.json")


def test_human_output(scenario, cli):
    s = scenario("cm01_expired_token_accepted")
    proc = cli("triage", "--run", s.run_id, cwd=s.root)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("contract_mismatch  confidence 0.60")  # the patch waits: below auto-apply
    assert "proposed SDD patch (update_contract #unit-profile-be)" in proc.stdout
    assert "hint: the SDD patch waits for a person: the SDD also speaks of GET /api/profile/me" in proc.stdout
    assert "only contract:status_differs shows it" in proc.stdout


def test_missing_run_directory_is_a_clear_error(scenario, cli):
    s = scenario("if01_backend_killed")
    proc = cli("triage", "--project", str(s.root), "--run", "run-int-does-not-exist", "--json")
    assert proc.returncode == 2 and proc.stdout == ""
    assert "error[RUN_NOT_FOUND]: no integration run 'run-int-does-not-exist'" in proc.stderr
    assert "known runs: run-int-20260513-1700" in proc.stderr


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


def test_help(cli):
    proc = cli("triage", "--help")
    assert proc.returncode == 0 and "--run" in proc.stdout and "--executor" in proc.stdout


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
