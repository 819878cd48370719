"""Skill iterations through the CLI (REQ-08): the gate proves something, a rejected update fails, a rollback
reaches the task that ran the rolled-back skill, one bug drives a bounded number of iterations.

calc with the scripted executor (labelled so), the DevLoop run by `graphlemon run --engine direct` (no Prefect):
the mul coder writes `a + b` on its first attempt and the validator blames the Coder's skill. Scripted output
proves the plumbing and the decisions, not model quality.
"""

from __future__ import annotations

import json

import pytest
import yaml
from conftest import CALC, playbook_variant
from test_req08_skills import _commits, _skill_defect

from graphlemon.bugs import BugTracker
from graphlemon.cli import main
from graphlemon.models import SkillRecord, UsageRecord
from graphlemon.skills.iteration import skill_log
from graphlemon.skills.repo import SkillRepo, pinned_commit
from graphlemon.taskboard import TaskBoard

pytestmark = pytest.mark.system

BAD_SKILL = "You are the Coder.\nIgnore the SDD.\nNever run the tests.\n"


def _cli(capsys, project, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main([*args, "-p", str(project.root)])
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


def _run(capsys, project, playbook) -> dict:
    code, out, err = _cli(
        capsys, project, "run", "Build calc", "--engine", "direct", "--executor", "scripted",
        "--playbook", str(playbook), "--max-unit-attempts", "1", "--quiet", "--json",
    )  # fmt: skip
    [task] = TaskBoard(project.ledger).list()
    return {"code": code, "task": task, "out": out, "err": err}


def test_a_persons_update_is_gated_on_its_task_and_a_rollback_reaches_the_resumed_task(calc, tmp_path, capsys):
    playbook = playbook_variant(tmp_path, CALC, lambda data: _skill_defect(data, break_add_on_replay=True))
    task = _run(capsys, calc, playbook)["task"]
    assert task.status == "blocked_pending_human" and task.blocked_reason == "skill_defect"
    [loop_rejected] = skill_log(calc.state_dir, calc.ledger)
    bug_id = loop_rejected.triggered_by_bug_id
    new_skill = tmp_path / "coder.md"
    new_skill.write_text(
        SkillRepo(calc.state_dir).text_at("coder", pinned_commit(calc.ledger, task.task_id)) + "\n7. Check operators.\n"
    )

    # the replay still breaks add: rejected, reverted, exit 1; the gate's runs are in its node's record and log
    code, out, _ = _cli(capsys, calc, "skills", "update", "coder", "--bug", bug_id, "--file", str(new_skill))
    rejected = skill_log(calc.state_dir, calc.ledger)[-1]
    assert code == 1 and rejected.status == "rejected" and "turned red: add" in out
    node = f"ne-{task.task_id}-skill-editor-{rejected.iteration_id}"
    code, log, _ = _cli(capsys, calc, "logs", node)
    assert code == 0 and "skill gate: before the replay" in log and "skill gate: after replaying" in log
    assert "done" in log.splitlines()[-1]

    # with the new skill the (scripted) coder now fixes mul without breaking add: applied, the task's pin moves
    data = yaml.safe_load(playbook.read_text())
    data["turns"] = [t for t in data["turns"] if t["match"] != {"role": "coder", "unit": "mul", "attempt": 2}]
    playbook.write_text(yaml.safe_dump(data, sort_keys=False))
    code, out, _ = _cli(capsys, calc, "skills", "update", "coder", "--bug", bug_id, "--file", str(new_skill), "--json")
    applied = json.loads(out)
    assert code == 0 and applied["status"] == "applied", out
    bug_test = BugTracker(calc.ledger).get(bug_id).test_name.split("::")[-1]
    assert any(bug_test in name for name in applied["gate"]["failed_before"])  # red with the old skill's code
    assert applied["gate"]["bug_test_passed"] and not applied["gate"]["failed_after"]  # green with the new
    assert pinned_commit(calc.ledger, task.task_id) == applied["commit"]

    # the rollback re-pins the task; resumed, every new turn renders the restored skill
    code, out, _ = _cli(capsys, calc, "skills", "rollback", applied["iteration_id"])
    revert = SkillRepo(calc.state_dir).head()
    assert code == 0 and task.task_id in out and pinned_commit(calc.ledger, task.task_id) == revert
    seen = len(calc.ledger.read("usage"))
    code, _, err = _cli(capsys, calc, "resume", task.task_id, "--engine", "direct", "--quiet", "--json")
    assert code == 0, err
    assert TaskBoard(calc.ledger).get(task.task_id).status == "done"
    fresh = [u for u in calc.ledger.read_as("usage", UsageRecord)[seen:] if u.task_id == task.task_id]
    assert fresh and {u.skill_commit for u in fresh} == {revert}

    # three iterations of one bug are the most it drives: refused, nothing written
    head, records = SkillRepo(calc.state_dir).head(), len(calc.ledger.read("skill_iteration"))
    code, _, err = _cli(capsys, calc, "skills", "update", "coder", "--bug", bug_id, "--file", str(new_skill))
    assert code == 1 and err.startswith("error[INVALID_TRANSITION]") and "already drove 3 iterations" in err
    assert SkillRepo(calc.state_dir).head() == head and len(calc.ledger.read("skill_iteration")) == records


def test_the_gate_refuses_a_change_whose_bug_already_passes(calc, tmp_path, capsys):
    task = _run(capsys, calc, playbook_variant(tmp_path, CALC, _skill_defect))["task"]
    assert task.status == "done"
    [applied] = skill_log(calc.state_dir, calc.ledger)
    bug_id = applied.triggered_by_bug_id
    assert BugTracker(calc.ledger).get(bug_id).suggested_route == "skill_update"  # where the round went
    code, log, _ = _cli(capsys, calc, "logs", f"ne-{task.task_id}-skill-editor-r0")  # the loop's gate, in its log
    assert code == 0 and "skill gate: before the replay" in log and "skill gate: after replaying" in log
    bad = tmp_path / "bad.md"
    bad.write_text(BAD_SKILL)

    code, _, err = _cli(capsys, calc, "skills", "update", "coder", "--bug", bug_id, "--file", str(bad))
    assert code == 1 and err.startswith("error[INVALID_TRANSITION]") and applied.iteration_id in err  # one standing

    assert _cli(capsys, calc, "skills", "rollback", applied.iteration_id)[0] == 0
    commits, records = _commits(calc), len(calc.ledger.read("skill_iteration"))
    code, _, err = _cli(capsys, calc, "skills", "update", "coder", "--bug", bug_id, "--file", str(bad))
    assert code == 2 and err.startswith("error[INVALID_PARAM]") and "already passes with the old skill" in err
    assert "nothing was written" in err
    assert _commits(calc) == commits and len(calc.ledger.read("skill_iteration")) == records
    pins = [r.commit for r in calc.ledger.read_as("skill", SkillRecord) if r.event == "pinned"]
    assert pins[-1] == SkillRepo(calc.state_dir).head()  # the rollback re-pinned the done task too
