"""Tester stage: the sample units (tests/fixtures/tester/) on real code, self-check, coverage, sandbox, CLI.

The scripted executor supplies the tester's turns (labelled `executor: scripted`):
these tests prove the stage's plumbing and decisions, not a model's quality.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from graphlemon.agents import build_executor
from graphlemon.bugs import BugTracker
from graphlemon.models import NodeEvent, RunRecord, TimelineEvent
from graphlemon.project import init_project
from graphlemon.stages.tester import TesterResult, run_tester

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "tester" / "todo_fastapi"


@pytest.fixture
def todo(tmp_path: Path):
    repo = tmp_path / "todo"
    shutil.copytree(FIXTURE / "repo", repo)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-qm", "todo service"], cwd=repo, check=True)
    project = init_project(repo).project
    shutil.copytree(FIXTURE / "state", project.state_dir, dirs_exist_ok=True)
    return project


def scripted(name: str = "playbook.yaml"):
    return build_executor("scripted", playbook=FIXTURE / name)


def fix_code(project, variant: str) -> None:
    shutil.copy(FIXTURE / "code" / variant, project.root / "todo" / "app.py")


@pytest.mark.system
def test_sample_a_is_red_with_a_hint_and_a_bug_a_repeat_reuses_it_and_sample_b_fixes_it(todo):
    """Samples A and B in one story (each of its runs starts from the one before, as the loop runs them)."""
    out = run_tester(todo, "todo-be", executor=scripted(), mode="test", attempt=1)
    assert not out.ok and out.executor == "scripted" and out.accepted, out.self_check_violations
    assert (out.summary.total, out.summary.passed, out.summary.failed) == (6, 5, 1)
    [failure] = out.failures
    assert failure.test.endswith("test_ac2_http400_missing_title_rejected")
    assert (failure.expected, failure.got) == ("400", "500")
    assert "undefined" in failure.hint and "title" in failure.hint
    assert out.bugs_opened == [failure.bug_id] and out.next_action == "retry_coder"
    assert out.acceptance_coverage == 1.0 and out.contract_coverage == 1.0
    bug = BugTracker(todo.ledger).get(failure.bug_id)
    assert (bug.status, bug.source, bug.unit_id, bug.severity) == ("open", "unit_test", "todo-be", "high")
    result = TesterResult.model_validate_json((todo.root / out.result_ref).read_text())
    assert result.failures[0].bug_id == failure.bug_id and result.next_action == "retry_coder"
    run_dir = (todo.root / out.result_ref).parent
    assert (run_dir / "stdout.txt").exists()
    [record] = todo.ledger.read_as("run", RunRecord)
    assert record.scope == "unit" and record.failures[0].bug_id == failure.bug_id
    events = {e.event for e in todo.ledger.read_as("timeline", TimelineEvent) if e.ref == out.run_id}
    assert events == {"unit_tested", "test_failed"}
    assert out.tokens_used == 2450  # the playbook's simulated usage, recorded as executor scripted
    # the same failure again reuses the open bug
    again = run_tester(todo, "todo-be", executor=scripted(), mode="retry", attempt=2)
    assert again.failures[0].bug_id == failure.bug_id
    assert again.bugs_opened == [] and len(BugTracker(todo.ledger).all()) == 1
    # sample B: the loop hands the bug to the coder, whose fix makes the next retry green and fixes the bug
    bug_id = failure.bug_id
    BugTracker(todo.ledger).transition(bug_id, "fixing", by="loop")
    fix_code(todo, "app_fixed.py")
    out = run_tester(todo, "todo-be", executor=scripted(), mode="retry", attempt=2)  # the playbook has 2 attempts
    assert out.ok and out.next_action == "pass" and out.failures == []
    assert [(t.id, t.from_, t.to) for t in out.bugs_transitioned] == [(bug_id, "fixing", "fixed")]
    bug = BugTracker(todo.ledger).get(bug_id)
    assert bug.status == "fixed" and bug.fix_refs == [out.run_id]
    assert json.loads(out.model_dump_json(by_alias=True))["bugs_transitioned"][0]["from"] == "fixing"


@pytest.mark.system
def test_sample_c_syntax_error_crashes_then_escalates_to_the_coder(todo):
    fix_code(todo, "app_syntax_error.py")
    first = run_tester(todo, "todo-be", executor=scripted(), mode="test", attempt=1)
    assert first.crashed and not first.ok and first.next_action == "retry_tester"
    bug = BugTracker(todo.ledger).get(first.bugs_opened[0])
    assert bug.source == "unit_test_infra"
    result = TesterResult.model_validate_json((todo.root / first.result_ref).read_text())
    assert result.crash_reason and "SyntaxError" in (result.crash_reason + result.stdout_tail)
    assert ((todo.root / first.result_ref).parent / "stderr.txt").exists()
    second = run_tester(todo, "todo-be", executor=None, mode="retry", attempt=1)
    assert second.crashed and second.next_action == "retry_coder"


@pytest.mark.system
def test_whole_module_mock_is_rejected_by_the_self_check(todo):
    out = run_tester(todo, "todo-be", executor=scripted("playbook_mocked.yaml"), mode="test")
    assert not out.accepted
    assert any(v.startswith("6:") and "todo.app" in v for v in out.self_check_violations)
    transcripts = list((todo.state_dir / "logs").rglob("tester-*.ndjson"))
    assert len(transcripts) == 2  # the rejected turn was retried once, with the violations as feedback
    assert todo.ledger.read_as("run", RunRecord)[-1].run_id == out.run_id  # only the retried turn was recorded


@pytest.mark.system
def test_coverage_below_one_is_reported(todo):
    out = run_tester(todo, "todo-be", executor=scripted("playbook_partial.yaml"), mode="test")
    assert out.acceptance_coverage == pytest.approx(2 / 3)
    assert out.contract_coverage == pytest.approx(2 / 3)  # 201 and 400 have tests, 200 has none; 500 never counts
    result = TesterResult.model_validate_json((todo.root / out.result_ref).read_text())
    assert result.uncovered_criteria == ["AC3"] and result.uncovered_statuses == [200]
    assert any(v.startswith("10:") for v in out.self_check_violations) and not out.accepted


@pytest.mark.system
def test_writing_the_code_under_test_is_refused_and_recorded(todo):
    before = (todo.root / "todo" / "app.py").read_text()
    out = run_tester(todo, "todo-be", executor=scripted("playbook_escape.yaml"), mode="test")
    assert (todo.root / "todo" / "app.py").read_text() == before
    violations = [e for e in todo.ledger.read_as("node", NodeEvent) if e.event == "violation"]
    assert violations and violations[0].error_code == "SANDBOX_VIOLATION" and "todo/app.py" in violations[0].error
    assert any(v.startswith("5:") for v in out.self_check_violations)


@pytest.mark.system
def test_a_finished_run_resumes_without_rerunning_and_the_same_code_and_tests_give_the_same_result(todo):
    """One first run serves three facts: resume returns it, reruns agree, a resume of an undecodable result fails."""
    from graphlemon.errors import ErrorCode, GraphLemonError

    done = run_tester(todo, "todo-be", executor=scripted(), mode="test", attempt=1)  # writes the tests
    runs_before = len(todo.ledger.read_as("run", RunRecord))
    resumed = run_tester(todo, "todo-be", executor=None, mode="resume", resume_token=done.run_id)
    assert resumed.run_id == done.run_id and resumed.mode == "resume" and resumed.summary == done.summary
    assert len(todo.ledger.read_as("run", RunRecord)) == runs_before

    first = run_tester(todo, "todo-be", executor=None, mode="retry", attempt=2)
    again = run_tester(todo, "todo-be", executor=None, mode="retry", attempt=2)
    volatile = {"run_id", "duration_ms", "stdout_tail", "tokens_used", "mode"}
    a = TesterResult.model_validate_json((todo.root / first.result_ref).read_text()).model_dump(exclude=volatile)
    b = TesterResult.model_validate_json((todo.root / again.result_ref).read_text()).model_dump(exclude=volatile)
    assert a == b

    result = todo.state_dir / "units" / "todo-be" / "runs" / done.run_id / "result.json"
    result.write_bytes(b"\xff" + result.read_bytes())
    with pytest.raises(GraphLemonError) as err:
        run_tester(todo, "todo-be", executor=None, mode="resume", resume_token=done.run_id)
    assert err.value.code is ErrorCode.INVALID_PARAM and "result.json: not UTF-8 (byte 0xff" in err.value.message


@pytest.mark.system
@pytest.mark.parametrize("rel", ["units.json", "units/todo-be/contract.json"])
def test_a_unit_file_that_is_not_utf8_is_invalid_param(todo, cli, rel):
    path = todo.state_dir / rel
    path.write_bytes(path.read_bytes().replace(b"{", b"{\xff", 1))
    proc = cli("tester", "run", "--unit", "todo-be", "--executor", "none", "--project", str(todo.root))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.startswith("error[INVALID_PARAM]: ") and f"{path.name}: not UTF-8" in proc.stderr


@pytest.mark.system
def test_cli_runs_the_three_samples(todo, cli, cli_in_process):
    root = str(todo.root)
    playbook = str(FIXTURE / "playbook.yaml")
    a = cli("tester", "run", "--project", root, "--unit", "todo-be", "--playbook", playbook, "--json")
    assert a.returncode == 1, a.stderr
    out_a = json.loads(a.stdout)
    assert out_a["summary"]["failed"] == 1 and out_a["failures"][0]["bug_id"] and out_a["executor"] == "scripted"
    fix_code(todo, "app_fixed.py")
    b = cli("tester", "run", "--project", root, "--unit", "todo-be", "--mode", "retry", "--attempt", "2",
            "--playbook", playbook, "--json")  # fmt: skip
    assert b.returncode == 0, b.stderr
    assert json.loads(b.stdout)["bugs_transitioned"][0]["to"] == "fixed"
    fix_code(todo, "app_syntax_error.py")
    c = cli("tester", "run", "--project", root, "--unit", "todo-be", "--playbook", playbook, "--json")
    assert c.returncode == 1 and json.loads(c.stdout)["next_action"] == "retry_tester"
    table = cli("tester", "run", "--project", root, "--unit", "todo-be", "--executor", "none", "--mode", "retry")
    assert "crashed" in table.stdout
    # refusals in this process (one as a real process: test_a_unit_file_that_is_not_utf8_is_invalid_param)
    bad = cli_in_process("tester", "run", "--project", root, "--unit", "nope", "--executor", "none")
    assert bad.returncode == 2 and bad.stderr.startswith("error[UNIT_NOT_FOUND]")
    bad_mode = cli_in_process("tester", "run", "--project", root, "--unit", "todo-be", "--mode", "later")
    assert bad_mode.returncode == 2 and "INVALID_PARAM" in bad_mode.stderr
