"""REQ-07: the Claude Code executor (claude_code backend) runs the DevLoop; no --bare; classifier blocks.

The `claude` on PATH is the fake (tests/fakes/fake_claude.py): it speaks Claude Code's
stream-json, writes the files a behaviour names in its cwd (the unit's worktree) and
answers `--json-schema` with the structured output the stage's model expects. The
behaviours are the calc playbook's turns, picked by the role's skill and the unit.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from _loop_helpers import CALC, claude_behaviour, claude_calc, script_turn
from conftest import make_repo
from fakes.claude import FakeClaude, denials, when

from graphlemon.agents import AgentSettings
from graphlemon.agents.automode_denials import classifier_counts
from graphlemon.agents.claude_code import ClaudeCodeExecutor
from graphlemon.models import OutcomeRecord, TaskEvent, UsageRecord
from graphlemon.nodes import NodeTracker
from graphlemon.taskboard import TaskBoard

pytestmark = pytest.mark.system


def _broken_mul_then_fixed() -> list[dict]:
    broken = script_turn("coder", "mul")
    broken.writes = {"calc/mul.py": (CALC / "files" / "code" / "mul_broken.py").read_text()}
    tester_mul = claude_behaviour(script_turn("tester", "mul"))
    # the fake takes the first behaviour that fits: mul's coder gets the broken one on attempt 1
    return [claude_behaviour(broken), *claude_calc(), tester_mul]


@pytest.fixture(scope="module")
def claude_run(prefect_harness, tmp_path_factory):
    """calc through the Prefect `devloop` flow with executor claude_code: mul is wrong once, then fixed."""
    from graphlemon.flows.devloop import devloop

    tmp = tmp_path_factory.mktemp("req07")
    project = make_repo(tmp / "calc", CALC / "repo")
    fake = FakeClaude(tmp)
    fake.queue(*_broken_mul_then_fixed())
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GRAPHLEMON_CLAUDE_BIN", str(fake.bin))
        fake.setenv(mp)
        final = devloop(goal="Build calc", project=str(project.root), executor="claude_code", config={})
    return project, fake, final


def test_happy_the_calc_loop_runs_end_to_end_on_claude_code_through_prefect(claude_run):
    project, fake, final = claude_run
    assert final["status"] == "done", final
    assert fake.pending == 0  # every scripted turn was used, none twice, no extra call
    task_id = final["task_id"]
    statuses = [e.status for e in project.ledger.read_as("task", TaskEvent) if e.task_id == task_id]
    assert statuses[:3] == ["created", "queued", "planning"] and statuses[-1] == "done"
    assert any(e.flow_run_id for e in project.ledger.read_as("task", TaskEvent) if e.task_id == task_id)
    # the turns really ran in Claude Code, in the right folders, and changed the worktrees
    usage = [u for u in project.ledger.read_as("usage", UsageRecord) if u.task_id == task_id]
    assert usage and {u.executor for u in usage} == {"claude_code"}
    assert {u.role for u in usage} == {"planner", "coder", "tester"}
    cwds = {c["cwd"] for c in fake.calls}
    assert f"{project.state_dir}/worktrees/{task_id}/_scratch-planner" in cwds  # the planner: a scratch work tree
    assert str(project.root) not in cwds  # no turn runs in the person's own work tree
    assert {f"{project.state_dir}/worktrees/{task_id}/{u}" for u in ("add", "mul")} <= cwds
    assert "a * b" in (project.root / "calc" / "mul.py").read_text()  # merged into main after the fix
    tests = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "tests"], cwd=project.root, capture_output=True, text=True
    )
    assert tests.returncode == 0, tests.stdout
    # REQ-03 on this backend: mul reflected, retried and went green on attempt 2; the bug it opened is verified
    mul = next(n for n in NodeTracker(project.ledger).for_task(task_id) if n.stage == "coder" and n.unit_id == "mul")
    assert mul.status == "done" and mul.attempt == 2
    from graphlemon.bugs import BugTracker

    bugs = BugTracker(project.ledger).list(task_id=task_id)
    assert bugs and {b.status for b in bugs} == {"verified"}
    # the tester's TodoWrite list became its todo list, so the self-check accepted the turn
    [tester_out] = [o.value for o in project.ledger.read_as("outcome", OutcomeRecord)
                    if o.node_exec_id == mul.node_exec_id and o.name == "a1-tester"]  # fmt: skip
    assert tester_out["accepted"] is True and tester_out["executor"] == "claude_code"


def test_boundary_claude_is_never_started_with_bare(claude_run, tmp_path):
    _, fake, _ = claude_run
    assert len(fake.calls) == 7
    for call in fake.calls:
        argv = call["argv"]
        assert "--bare" not in argv
        assert argv[:4] == ["-p", "--output-format", "stream-json", "--verbose"]
        assert "--append-system-prompt" in argv and "--json-schema" in argv
    probe_fake = FakeClaude(tmp_path)  # the usage-limit probe is a normal start too
    probe_fake.queue(when({"steps": [{"result": {"result": "ok"}}]}, stdin="Reply with the single word"))
    with pytest.MonkeyPatch.context() as mp:
        probe_fake.setenv(mp)
        executor = ClaudeCodeExecutor(AgentSettings.from_env(backend="claude_code", claude_bin=str(probe_fake.bin)))
        assert executor.probe("claude-sonnet-4-5")
    [probe] = probe_fake.calls
    assert "--bare" not in probe["argv"] and probe["argv"][:2] == ["-p", "--output-format"]


def test_failure_three_classifier_denials_block_the_task_and_a_manual_resume_resets_the_counts(tmp_path, cli):
    project = make_repo(tmp_path / "calc", CALC / "repo")
    fake = FakeClaude(tmp_path)
    coder_add = script_turn("coder", "add")
    fake.queue(
        when(denials(3, finish=False), prompt=coder_add.skill_marks()),  # add's coder is denied 3 times in a row
        *claude_calc(),
    )
    env = {**fake.env(), "GRAPHLEMON_CLAUDE_BIN": str(fake.bin)}
    run = cli("run", "Build calc", "--project", str(project.root), "--executor", "claude_code", "--engine", "direct",
              "--json", env=env)  # fmt: skip
    assert run.returncode == 1, run.stderr
    blocked = json.loads(run.stdout)
    task_id = blocked["task_id"]
    assert blocked["status"] == "blocked_pending_human" and blocked["blocked_reason"] == "classifier_blocked"
    assert "denied 3 action(s) in a row" in blocked["note"]
    assert classifier_counts(project.ledger, task_id) == (3, 3)

    resumed = cli("resume", task_id, "--project", str(project.root), "--executor", "claude_code", "--engine", "direct",
                  "--note", "the rm -rf was not needed", "--json", env=env)  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr + resumed.stdout
    assert json.loads(resumed.stdout)["status"] == "done"
    assert classifier_counts(project.ledger, task_id) == (0, 0)  # reset by the person's resume, then no denial
    assert fake.pending == 0
    events = [e for e in project.ledger.read_as("task", TaskEvent) if e.task_id == task_id]
    assert [e.blocked_reason for e in events if e.status == "blocked_pending_human"] == ["classifier_blocked"]
    assert TaskBoard(project.ledger).get(task_id).status == "done"
