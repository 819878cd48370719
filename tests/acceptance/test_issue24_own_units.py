"""Issue 24.1: a task is never `done` while one of its own units is red, whatever task its bugs are filed under,
and a second direct-engine run on a project waits for a goal slot instead of running alongside the first."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import SNAKE, SNAKE_GOAL, make_repo

from graphlemon.devloop.loop import run_devloop
from graphlemon.devloop.stages import Stages
from graphlemon.models import TaskEvent, TimelineEvent
from graphlemon.nodes import node_exec_id
from graphlemon.stages.outcomes import ValidationOutcome
from graphlemon.stages.own_state import own_state
from graphlemon.stages.session import LoopConfig, LoopSession
from graphlemon.taskboard import TaskBoard

pytestmark = pytest.mark.system

GRAPHLEMON = str(Path(sys.executable).parent / "graphlemon")
PLAYBOOK = SNAKE / "playbook.yaml"


def _run(project, goal: str, **config) -> LoopSession:
    task = TaskBoard(project.ledger).create(goal)
    session = LoopSession(project, task.task_id, LoopConfig(playbook=PLAYBOOK, **config))
    run_devloop(session, Stages(session.run))
    return session


def _tracked(root: Path) -> set[str]:
    out = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True, check=True).stdout
    return set(out.split())


def _assert_never_done_while_red(project, session: LoopSession) -> None:
    """Every validation that said "all green" saw every unit of the task green in the task itself."""
    task = TaskBoard(project.ledger).get(session.task_id)
    for r in range(task.loop_round + 1):
        stored = session.load_outcome(node_exec_id(session.task_id, "validator", loop_round=r), ValidationOutcome)
        if stored is not None and stored.ok:
            assert r == task.loop_round and task.status == "done"
    if task.status == "done":
        assert own_state(session).green, own_state(session)
        assert {"snake/collision.py", "snake/game.py"} <= _tracked(project.root)  # the work reached HEAD


def test_a_task_whose_unit_stays_red_is_not_done_though_its_bugs_belong_to_another_task(tmp_path):
    project = make_repo(tmp_path / "snake", SNAKE / "repo")
    first = _run(project, SNAKE_GOAL, max_unit_attempts=2, max_loop_rounds=1)
    a = TaskBoard(project.ledger).get(first.task_id)
    assert (a.status, a.blocked_reason) == ("blocked_pending_human", "not_converging")
    assert {b.task_id for b in first.bugs.list(status="open")} == {a.task_id}  # two open, filed under A

    second = _run(project, "Goal B on the same project", max_unit_attempts=2)
    r0 = second.load_outcome(node_exec_id(second.task_id, "validator", loop_round=0), ValidationOutcome)
    assert r0 is not None and not r0.ok and r0.route == "fast_lane"  # collision is red in B: B's to fix
    assert r0.units_to_fix == ["collision"]
    assert {x.bug_id for x in r0.attributions} <= {b.bug_id for b in first.bugs.list(task_id=a.task_id)}
    _assert_never_done_while_red(project, second)
    assert TaskBoard(project.ledger).get(second.task_id).status == "done"


def test_two_direct_runs_started_together_take_turns_and_neither_is_done_while_red(tmp_path):
    project = make_repo(tmp_path / "snake", SNAKE / "repo")
    env = {**os.environ, "COLUMNS": "200"}
    env.pop("ANTHROPIC_API_KEY", None)
    base = [GRAPHLEMON, "run", "--engine", "direct", "--playbook", str(PLAYBOOK), "--max-unit-attempts", "2",
            "--quiet", "--project", str(project.root)]  # fmt: skip
    first = subprocess.Popen([*base, SNAKE_GOAL, "--max-rounds", "1"], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)  # fmt: skip
    time.sleep(0.3)
    second = subprocess.Popen([*base, "Goal B"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out_a, err_a = first.communicate(timeout=600)
    out_b, err_b = second.communicate(timeout=600)
    assert "Traceback" not in err_a + err_b
    assert ("waits for a goal slot" in err_a) != ("waits for a goal slot" in err_b)  # whichever came second waited

    by_goal = {t.goal_text: t for t in TaskBoard(project.ledger).all().values()}
    a, b = by_goal[SNAKE_GOAL], by_goal["Goal B"]
    events = project.ledger.read_as("task", TaskEvent)

    def span(task_id: str) -> tuple:  # from leaving the queue to its last status
        times = [e.ts for e in events if e.task_id == task_id and e.status not in ("created", "queued")]
        return min(times), max(times)

    (a_start, a_end), (b_start, b_end) = span(a.task_id), span(b.task_id)
    assert a_end <= b_start or b_end <= a_start  # one goal at a time on the project (max_concurrent_goals = 1)
    assert a.status == "blocked_pending_human" and first.returncode == 1
    for task in (a, b):
        _assert_never_done_while_red(project, LoopSession(project, task.task_id, LoopConfig(playbook=PLAYBOOK)))
    timeline = [e for e in project.ledger.read_as("timeline", TimelineEvent) if e.task_id == b.task_id]
    assert [e.event for e in timeline].count("validated") >= 2  # B's own red unit sent it round again
