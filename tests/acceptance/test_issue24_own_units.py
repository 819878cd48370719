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

from graphlemon.bugs import fold
from graphlemon.models import BugEvent, TaskEvent, TimelineEvent
from graphlemon.nodes import node_exec_id
from graphlemon.stages.outcomes import ValidationOutcome
from graphlemon.stages.own_state import own_state
from graphlemon.stages.session import LoopConfig, LoopSession
from graphlemon.taskboard import TaskBoard

pytestmark = pytest.mark.system

GRAPHLEMON = str(Path(sys.executable).parent / "graphlemon")
PLAYBOOK = SNAKE / "playbook.yaml"


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


def _started(project, goal: str, deadline: float) -> None:
    """Wait until the task of `goal` has left the queue: its run holds the project's goal slot."""
    while not [t for t in TaskBoard(project.ledger).all().values()
               if t.goal_text == goal and t.status not in ("created", "queued")]:  # fmt: skip
        assert time.monotonic() < deadline, f"the run of {goal!r} never started"
        time.sleep(0.1)


def test_two_direct_runs_take_turns_and_the_second_is_not_done_while_its_unit_is_red_under_the_first_tasks_bugs(
    tmp_path,
):
    """A (max one round) stays red with two open bugs filed under A; B, started while A runs, waits for the goal
    slot, then finds collision red in its own round 0, fixes it itself, and is done."""
    project = make_repo(tmp_path / "snake", SNAKE / "repo")
    env = {**os.environ, "COLUMNS": "200"}
    env.pop("ANTHROPIC_API_KEY", None)
    base = [GRAPHLEMON, "run", "--engine", "direct", "--playbook", str(PLAYBOOK), "--max-unit-attempts", "2",
            "--quiet", "--project", str(project.root)]  # fmt: skip
    first = subprocess.Popen([*base, SNAKE_GOAL, "--max-rounds", "1"], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)  # fmt: skip
    _started(project, SNAKE_GOAL, time.monotonic() + 120)
    second = subprocess.Popen([*base, "Goal B"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out_a, err_a = first.communicate(timeout=600)
    out_b, err_b = second.communicate(timeout=600)
    assert "Traceback" not in err_a + err_b
    assert "waits for a goal slot" not in err_a and "waits for a goal slot" in err_b  # the second waited

    by_goal = {t.goal_text: t for t in TaskBoard(project.ledger).all().values()}
    a, b = by_goal[SNAKE_GOAL], by_goal["Goal B"]
    events = project.ledger.read_as("task", TaskEvent)

    def span(task_id: str) -> tuple:  # from leaving the queue to its last status
        times = [e.ts for e in events if e.task_id == task_id and e.status not in ("created", "queued")]
        return min(times), max(times)

    (_, a_end), (b_start, _) = span(a.task_id), span(b.task_id)
    assert a_end <= b_start  # one goal at a time on the project (max_concurrent_goals = 1)
    assert (a.status, a.blocked_reason) == ("blocked_pending_human", "not_converging") and first.returncode == 1
    bugs_when_a_ended = fold(e for e in project.ledger.read_as("bug", BugEvent) if e.ts <= a_end).values()
    assert {x.task_id for x in bugs_when_a_ended if x.status == "open"} == {a.task_id}  # open, filed under A

    b_session = LoopSession(project, b.task_id, LoopConfig(playbook=PLAYBOOK))
    r0 = b_session.load_outcome(node_exec_id(b.task_id, "validator", loop_round=0), ValidationOutcome)
    assert r0 is not None and not r0.ok and r0.route == "fast_lane"  # collision is red in B: B's to fix
    assert r0.units_to_fix == ["collision"]
    assert {x.bug_id for x in r0.attributions} <= {x.bug_id for x in b_session.bugs.list(task_id=a.task_id)}
    assert b.status == "done"
    for task in (a, b):
        _assert_never_done_while_red(project, LoopSession(project, task.task_id, LoopConfig(playbook=PLAYBOOK)))
    timeline = [e for e in project.ledger.read_as("timeline", TimelineEvent) if e.task_id == b.task_id]
    assert [e.event for e in timeline].count("validated") >= 2  # B's own red unit sent it round again
