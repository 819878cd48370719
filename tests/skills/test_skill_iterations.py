"""Skill iterations (REQ-08) without a loop: the skills repository, the rules of propose / gate / rollback,
the gate's verdict, and the `skills` report. Real git repositories, a real ledger, in-memory DuckDB."""

from __future__ import annotations

import subprocess

import pytest

from graphlemon import analytics
from graphlemon.bugs import BugTracker
from graphlemon.errors import ErrorCode, GraphLemonError
from graphlemon.lifecycle import check
from graphlemon.models import SkillGateResult, UsageRecord
from graphlemon.project import open_project
from graphlemon.skills import ROLES, load_skill
from graphlemon.skills.iteration import SkillIterations, skill_log
from graphlemon.skills.repo import SkillRepo, pin_for_task, repin
from graphlemon.stages.skill_editor import judge
from graphlemon.testrun.result_models import TestCase, TestFailure, TestRunResult

PASSED = SkillGateResult(ok=True, note="the gate passed")


def _skill_bug(project, unit="mul", test="tests/mul/test_mul.py::test_product", role=None) -> str:
    tracker = BugTracker(project.ledger)
    bug_id, _ = tracker.open(title=f"{test} failed", source="unit_test", unit_id=unit, test_name=test, task_id="t1")
    fields = {"root_cause_category": "skill_defect", "root_cause_detail": "the skill never asks to check operators"}
    tracker.update(bug_id, by="validator", **fields, **({"skill_role": role} if role else {}))
    return bug_id


def _log(project) -> list[str]:
    out = subprocess.run(
        ["git", "log", "--format=%s"], cwd=SkillRepo(project.state_dir).path, capture_output=True, text=True
    )
    return out.stdout.splitlines()


def test_init_seeds_a_separate_skills_repository_from_the_built_ins(git_repo, cli_in_process):
    assert cli_in_process("init", str(git_repo)).returncode == 0  # `graphlemon init` seeds it (init_project does not)
    project = open_project(git_repo)
    repo = SkillRepo(project.state_dir)
    assert repo.exists() and _log(project) == ["seed: the built-in skills"]
    assert all(repo.text_at(role, repo.head()) == load_skill(role) for role in ROLES)
    target = subprocess.run(["git", "status", "--porcelain"], cwd=project.root, capture_output=True, text=True)
    assert target.stdout == ""  # the target repository's history and status stay clean
    assert pin_for_task(project.state_dir, project.ledger, "t1") == repo.head()


def test_apply_then_rollback_is_two_new_commits_and_a_later_iteration_must_be_rolled_back_first(project):
    its = SkillIterations(project.state_dir, project.ledger)
    seed = its.repo.head()
    first = its.propose("coder", _skill_bug(project), "You are the Coder agent. v2\n", author="human", rationale="r1")
    assert first.status == "proposed" and first.parent_commit == seed and "1 file changed" in first.diff_stat
    its.start_gate(first.iteration_id)
    its.apply(first.iteration_id, PASSED)
    second = its.propose(
        "coder", _skill_bug(project, test="t2"), "You are the Coder agent. v3\n", author="human", rationale="r2"
    )
    its.start_gate(second.iteration_id)
    its.apply(second.iteration_id, PASSED)

    with pytest.raises(GraphLemonError) as exc:
        its.rollback(first.iteration_id)
    assert exc.value.code == ErrorCode.INVALID_TRANSITION and second.iteration_id in exc.value.message
    its.rollback(second.iteration_id)
    its.rollback(first.iteration_id)
    assert its.repo.text_at("coder", its.repo.head()) == load_skill("coder")
    assert len(_log(project)) == 5  # seed, two iterations, two reverts: history is never rewritten
    assert [it.status for it in skill_log(project.state_dir, project.ledger, "coder")] == ["rolled_back"] * 2
    with pytest.raises(GraphLemonError) as exc:
        its.rollback(first.iteration_id)
    assert exc.value.code == ErrorCode.INVALID_TRANSITION


def test_a_bug_blamed_on_another_roles_skill_cannot_change_this_one(project):
    its = SkillIterations(project.state_dir, project.ledger)
    bug_id = _skill_bug(project, role="tester")
    with pytest.raises(GraphLemonError) as exc:
        its.propose("coder", bug_id, "x\n", author="human", rationale="r")
    assert exc.value.code == ErrorCode.INVALID_PARAM and "tester skill" in exc.value.message
    with pytest.raises(GraphLemonError) as exc:
        its.propose("tester", bug_id, load_skill("tester"), author="human", rationale="r")
    assert "same as the current one" in exc.value.message  # nothing to commit
    assert its.list() == [] and len(_log(project)) == 1


def test_rejected_reverts_its_commit_and_the_lifecycle_has_no_way_back():
    check("skill_iteration", None, "proposed")
    for frm, to in (("rejected", "applied"), ("proposed", "applied"), ("rolled_back", "applied")):
        with pytest.raises(GraphLemonError):
            check("skill_iteration", frm, to)


def _run(cases: dict[str, str], crashed: bool = False) -> TestRunResult:
    return TestRunResult(
        ok=all(s == "passed" for s in cases.values()), framework="pytest", command="pytest", exit_code=0,
        duration_ms=1, crashed=crashed, cases=[TestCase(name=n, file=n.split("::")[0], status=s) for n, s in cases.items()],
        failures=[TestFailure(name=n, file=n.split("::")[0]) for n, s in cases.items() if s == "failed"],
    )  # fmt: skip


UNITS = {"add": ["tests/add/"], "mul": ["tests/mul/"]}
BUG = "tests/mul/test_mul.py::test_product"
BEFORE = _run({"tests/add/test_add.py::test_sum": "passed", BUG: "failed"})


@pytest.mark.parametrize(
    ("after", "ok", "newly_red"),
    [
        ({"tests/add/test_add.py::test_sum": "passed", BUG: "passed"}, True, []),
        ({"tests/add/test_add.py::test_sum": "failed", BUG: "passed"}, False, ["add"]),  # broke a green unit
        ({"tests/add/test_add.py::test_sum": "passed", BUG: "failed"}, False, []),  # the bug is still there
        ({"tests/add/test_add.py::test_sum": "passed"}, False, []),  # the bug's test vanished: not a pass
    ],
)
def test_gate_verdict(after, ok, newly_red):
    gate = judge(BEFORE, _run(after), BUG, UNITS, "ne-x")
    assert (gate.ok, gate.newly_red, gate.green_before) == (ok, newly_red, ["add"])


def test_gate_refuses_when_the_bugs_test_already_passes_with_the_old_skill():
    green = {"tests/add/test_add.py::test_sum": "passed", BUG: "passed"}
    for after in (_run(green), None):  # replayed or not: a test green before proves nothing
        gate = judge(_run(green), after, BUG, UNITS, "ne-x")
        assert not gate.ok and gate.note.startswith("refused: the bug's test") and "already passes" in gate.note
    assert not judge(BEFORE, _run(green), None, UNITS, "ne-x").ok  # no test named: nothing to show failing


def test_one_bug_drives_one_standing_change_and_at_most_three_iterations(project):
    its = SkillIterations(project.state_dir, project.ledger)
    bug_id = _skill_bug(project)
    first = its.propose("coder", bug_id, "You are the Coder agent. v2\n", author="human", rationale="r")
    with pytest.raises(GraphLemonError) as exc:  # still proposed: a second change of the same bug waits for it
        its.propose("coder", bug_id, "v3\n", author="human", rationale="r")
    assert exc.value.code == ErrorCode.INVALID_TRANSITION and first.iteration_id in exc.value.message
    its.start_gate(first.iteration_id)
    its.apply(first.iteration_id, PASSED)
    with pytest.raises(GraphLemonError) as exc:
        its.propose("coder", bug_id, "v3\n", author="human", rationale="r")
    assert "roll it back first" in exc.value.message
    its.rollback(first.iteration_id)
    for text in ("v3\n", "v4\n"):
        it = its.propose("coder", bug_id, text, author="human", rationale="r")
        its.start_gate(it.iteration_id)
        its.reject(it.iteration_id, SkillGateResult(ok=False, note="still red"))
    head = its.repo.head()
    with pytest.raises(GraphLemonError) as exc:
        its.propose("coder", bug_id, "v5\n", author="human", rationale="r")
    assert exc.value.code == ErrorCode.INVALID_TRANSITION and "already drove 3 iterations" in exc.value.message
    assert its.repo.head() == head and len(its.list()) == 3  # nothing written
    its.check_trigger("coder", _skill_bug(project, test="tests/mul/test_mul.py::test_zero"))  # another bug may


def test_a_rollback_moves_the_pin_of_every_task_that_ran_the_rolled_back_skill(project):
    its = SkillIterations(project.state_dir, project.ledger)
    seed = pin_for_task(project.state_dir, project.ledger, "t1")
    assert pin_for_task(project.state_dir, project.ledger, "t-other") == seed
    it = its.propose("coder", _skill_bug(project), "You are the Coder agent. v2\n", author="human", rationale="r")
    its.start_gate(it.iteration_id)
    its.apply(it.iteration_id, PASSED)
    repin(project.ledger, "t1", it.commit, it.iteration_id)
    rolled = its.rollback(it.iteration_id)
    assert pin_for_task(project.state_dir, project.ledger, "t1") == rolled.revert_commit
    assert its.repo.text_at("coder", rolled.revert_commit) == load_skill("coder")
    assert pin_for_task(project.state_dir, project.ledger, "t-other") == seed  # never ran it: untouched
    assert "t1" in rolled.history[-1] and "t-other" not in rolled.history[-1]


@pytest.mark.system
def test_skills_report_counts_iterations_and_bugs_per_skill_version(project, cli):
    its = SkillIterations(project.state_dir, project.ledger)
    seed = pin_for_task(project.state_dir, project.ledger, "t1")
    project.ledger.append(
        UsageRecord(call_id="c1", task_id="t1", unit_id="mul", role="coder", model="scripted", executor="scripted",
                    skill_commit=seed)
    )  # fmt: skip
    applied = its.propose("coder", _skill_bug(project), "You are the Coder agent. v2\n", author="human", rationale="r")
    its.start_gate(applied.iteration_id)
    its.apply(applied.iteration_id, PASSED)
    rejected = its.propose("coder", _skill_bug(project, test="t2"), "v3\n", author="skill-editor", rationale="r")
    its.start_gate(rejected.iteration_id)
    its.reject(rejected.iteration_id, SkillGateResult(ok=False, newly_red=["add"], note="add turned red"))

    report = analytics.build_report("skills", project.root)
    [row] = report.section("by_role").to_dict("records")
    assert (row["skill"], row["iterations"], row["applied"], row["rejected"]) == ("coder", 2, 1, 1)
    assert list(report.section("iterations")["status"]) == ["applied", "rejected"]
    [version] = report.section("bugs_per_version").to_dict("records")
    assert version["skill_commit"] == seed[:12] and version["bugs"] == 2  # both opened under the seed's coder turn
    out = cli("report", "skills", "--json", "-p", str(project.root))
    assert out.returncode == 0 and '"by_role"' in out.stdout


@pytest.mark.system
def test_skills_update_refuses_unreadable_or_empty_text_and_a_bug_of_no_task_before_writing(project, cli, tmp_path):
    tracker = BugTracker(project.ledger)
    bug_id, _ = tracker.open(title="t failed", source="unit_test", unit_id="mul", test_name="tests/mul/t.py::t")
    tracker.update(bug_id, by="validator", root_cause_category="skill_defect", root_cause_detail="d")
    head = SkillRepo(project.state_dir).head()
    files = {"bad.md": b"\xff\xfe not utf-8", "empty.md": b"  \n", "ok.md": b"You are the Coder. v2\n"}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    for name, says in (("bad.md", "is not UTF-8 text"), ("empty.md", "is empty"), ("ok.md", "belongs to no task")):
        out = cli("skills", "update", "coder", "--bug", bug_id, "--file", str(tmp_path / name), "-p", str(project.root))
        assert out.returncode == 2 and out.stderr.startswith("error[INVALID_PARAM]") and says in out.stderr, out.stderr
    assert SkillRepo(project.state_dir).head() == head and not project.ledger.read("skill_iteration")
