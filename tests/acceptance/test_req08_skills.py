"""REQ-08: a skill_defect bug drives a skill change that is a git commit, gated, audited and reversible.

calc (its acceptance cases, scripted executor): the mul coder writes `a + b` on its first attempt and
the validator blames the Coder's skill from all three perspectives. The SkillEditor (scripted)
appends a rule to the coder skill; the gate replays the mul coder node with the new skill in a
throw-away worktree. Scripted output proves the plumbing and the decisions, not model quality.
"""

from __future__ import annotations

import json
import subprocess

import pytest
from conftest import CALC, broken_mul, playbook_variant, run_flow, verdict

from graphlemon.bugs import BugTracker
from graphlemon.cli import main
from graphlemon.errors import ErrorCode, GraphLemonError
from graphlemon.models import EscalationRecord, SkillRecord, UsageRecord
from graphlemon.skills.iteration import SkillIterations, skill_log
from graphlemon.skills.repo import SkillRepo

RULE = "6. Before you finish, check every operator against the formula the SDD states for it."
SKILL_EDITOR = {
    "name": "skill-editor appends a rule to the coder skill",
    "match": {"role": "skill-editor"},
    "usage": {"input_tokens": 900, "output_tokens": 400},
    "actions": [{"tool": "read_file", "args": {"path": "coder.md"}, "save_as": "skill"}],
    "output": {
        "text": "${skill.content}\n# LESSONS\n\n" + RULE + "\n",
        "rationale": "The coder skill never asks to check an operator against the SDD's formula; the rule does.",
    },
}


def _skill_defect(data: dict, *, break_add_on_replay: bool = False) -> None:
    broken_mul(data, attempts=(1,))
    verdict(data, "skill_defect", "skill_defect", "skill_defect")
    data["turns"].append(SKILL_EDITOR)
    if break_add_on_replay:  # the coder with the new skill fixes mul but breaks the add unit
        data["turns"].insert(
            0,
            {
                "match": {"role": "coder", "unit": "mul", "attempt": 2},
                "actions": [
                    {"write_file": {"path": "calc/mul.py", "from_file": "files/code/mul.py"}},
                    {"write_file": {"path": "calc/add.py", "from_file": "files/code/add_broken_by_mul.py"}},
                ],
                "output": {"summary": "mul, and add rewritten", "files": ["calc/mul.py", "calc/add.py"]},
            },
        )


def _commits(project) -> list[str]:
    out = subprocess.run(
        ["git", "log", "--format=%H %s"], cwd=SkillRepo(project.state_dir).path, capture_output=True, text=True
    )
    return out.stdout.splitlines()


def _cli(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


@pytest.mark.system
def test_happy_skill_defect_updates_the_skill_in_one_commit_the_gate_passes_and_the_task_ends_done(
    calc, tmp_path, prefect_harness, capsys
):
    seed = _commits(calc)
    assert len(seed) == 1 and "seed" in seed[0]  # `graphlemon init` seeded the skills repository
    final = run_flow(calc, "Build calc", playbook_variant(tmp_path, CALC, _skill_defect), max_unit_attempts=1)
    assert final["status"] == "done"

    [it] = skill_log(calc.state_dir, calc.ledger)
    bugs = BugTracker(calc.ledger).list(task_id=final["task_id"], unit_id="mul")
    assert it.status == "applied" and it.skill == "coder" and it.author == "skill-editor"
    assert it.triggered_by_bug_id in {b.bug_id for b in bugs}
    assert it.gate and it.gate.ok and it.gate.bug_test_passed and it.gate.green_before == ["add"]
    commits = _commits(calc)
    assert len(commits) == 2 and commits[0].split()[0] == it.commit  # exactly one new commit
    assert it.iteration_id in commits[0] and it.triggered_by_bug_id in commits[0]
    assert RULE in SkillRepo(calc.state_dir).text_at("coder", it.commit)

    # every turn carries the skill commit it ran with: the mul coder before the change ran the seed, after it the new one
    usage = [u for u in calc.ledger.read_as("usage", UsageRecord) if u.task_id == final["task_id"]]
    assert all(u.skill_commit for u in usage)
    mul_coders = [u.skill_commit for u in usage if u.role == "coder" and u.unit_id == "mul"]
    assert mul_coders[0] == it.parent_commit and mul_coders[-1] == it.commit
    pins = [r for r in calc.ledger.read_as("skill", SkillRecord) if r.event == "pinned"]
    assert [p.commit for p in pins] == [it.parent_commit, it.commit]

    code, out, _ = _cli(capsys, "skills", "log", "coder", "--json", "-p", str(calc.root))
    assert code == 0
    [row] = json.loads(out)
    assert row["iteration_id"] == it.iteration_id and row["triggered_by_bug_id"] == it.triggered_by_bug_id
    code, out, _ = _cli(capsys, "skills", "show", it.iteration_id, "-p", str(calc.root))
    assert code == 0 and RULE in out and it.triggered_by_bug_id in out, _

    # rolled back as a new commit: history kept, the text is the seed's again
    code, out, _ = _cli(capsys, "skills", "rollback", it.iteration_id, "-p", str(calc.root))
    assert code == 0, out
    repo = SkillRepo(calc.state_dir)
    assert len(_commits(calc)) == 3 and repo.text_at("coder", repo.head()) == repo.text_at("coder", it.parent_commit)
    assert SkillIterations(calc.state_dir, calc.ledger).get(it.iteration_id).status == "rolled_back"


def test_boundary_a_skill_update_without_its_bug_is_refused_and_nothing_changes(calc, tmp_path, capsys):
    iterations = SkillIterations(calc.state_dir, calc.ledger)
    head = iterations.repo.head()
    new = tmp_path / "coder.md"
    new.write_text("You are the Coder agent. Be careful.\n")
    with pytest.raises(GraphLemonError) as exc:
        iterations.propose("coder", None, new.read_text(), author="human", rationale="better")
    assert exc.value.code == ErrorCode.INVALID_PARAM and "triggered_by_bug_id" in exc.value.message
    code, _, err = _cli(capsys, "skills", "update", "coder", "--file", str(new), "-p", str(calc.root))
    assert code == 2 and err.startswith("error[INVALID_PARAM]") and "bug" in err
    code, _, err = _cli(
        capsys, "skills", "update", "coder", "--bug", "bug-nope", "--file", str(new), "-p", str(calc.root)
    )
    assert code == 2 and err.startswith("error[BUG_NOT_FOUND]")
    bug_id = BugTracker(calc.ledger).report(title="mul is wrong", description="mul(3, 3) gave 6", unit_id="mul")
    code, _, err = _cli(capsys, "skills", "update", "coder", "--bug", bug_id, "--file", str(new), "-p", str(calc.root))
    assert code == 2 and "not to a skill defect" in err
    assert iterations.repo.head() == head and iterations.list() == []
    assert not calc.ledger.read("skill_iteration")


def test_failure_rolling_back_an_unknown_iteration_is_iteration_not_found(calc, capsys):
    code, _, err = _cli(capsys, "skills", "rollback", "si-does-not-exist", "-p", str(calc.root))
    assert code == 2 and err.startswith("error[ITERATION_NOT_FOUND]")
    code, _, err = _cli(capsys, "skills", "show", "si-does-not-exist", "-p", str(calc.root))
    assert code == 2 and err.startswith("error[ITERATION_NOT_FOUND]")


@pytest.mark.system
def test_gate_a_skill_that_turns_another_unit_red_is_rejected_reverted_and_the_task_blocks_with_evidence(
    calc, tmp_path, prefect_harness
):
    def edit(data):
        _skill_defect(data, break_add_on_replay=True)

    final = run_flow(calc, "Build calc", playbook_variant(tmp_path, CALC, edit), max_unit_attempts=1)
    assert final["status"] == "blocked_pending_human" and final["blocked_reason"] == "skill_defect"
    [it] = skill_log(calc.state_dir, calc.ledger)
    assert it.status == "rejected" and it.gate and not it.gate.ok and it.gate.newly_red == ["add"]
    repo = SkillRepo(calc.state_dir)
    commits = _commits(calc)
    assert len(commits) == 3 and commits[0].split()[0] == it.revert_commit  # the proposal, then its revert
    assert repo.text_at("coder", repo.head()) == repo.text_at("coder", it.parent_commit)
    [pack] = [e for e in calc.ledger.read_as("escalation", EscalationRecord) if e.task_id == final["task_id"]]
    assert it.iteration_id in pack.summary_md and "newly red units: add" in pack.summary_md
    assert RULE in pack.summary_md and "### old coder skill" in pack.summary_md  # both versions
    # the task never ran on the rejected skill: its pin did not move
    pins = [r.commit for r in calc.ledger.read_as("skill", SkillRecord) if r.event == "pinned"]
    assert pins == [it.parent_commit]
