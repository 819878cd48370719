"""REQ-05: org-level routing: fast_lane -> coder, full_replan -> planner, non-convergence -> a human, queue keeps moving."""

from __future__ import annotations

import threading
import time

import pytest
from conftest import CALC, broken_mul, playbook_variant, run_flow

from graphlemon.models import TaskEvent, TimelineEvent
from graphlemon.nodes import NodeTracker
from graphlemon.taskboard import TaskBoard

pytestmark = pytest.mark.system


def test_happy_fast_lane_fix_and_loop_round_zero_to_one(snake_run):
    project, final = snake_run
    assert final["status"] == "done" and final["loop_round"] == 1
    rounds = [e.loop_round for e in project.ledger.read_as("task", TaskEvent) if e.task_id == final["task_id"] and e.loop_round is not None]
    assert rounds[0] == 0 and rounds[-1] == 1
    routed = [e for e in project.ledger.read_as("timeline", TimelineEvent) if e.event == "routed"]
    assert [e.summary for e in routed] == ["fast_lane -> round 1 (collision)"]
    nodes = NodeTracker(project.ledger).for_task(final["task_id"])
    assert not [n for n in nodes if n.stage == "planner" and n.loop_round == 1]  # fast lane skips the planner
    assert {n.unit_id for n in nodes if n.stage == "coder" and n.loop_round == 1} == {"collision", "game"}


def test_boundary_full_replan_goes_back_to_the_planner(replan_run):
    project, final = replan_run
    assert final["status"] == "done" and final["loop_round"] == 1
    planner_rounds = sorted(n.loop_round for n in NodeTracker(project.ledger).for_task(final["task_id"]) if n.stage == "planner")
    assert planner_rounds == [0, 1]
    routed = [e.summary for e in project.ledger.read_as("timeline", TimelineEvent) if e.event == "routed"]
    assert routed == ["full_replan -> round 1"]


def test_failure_same_bug_three_rounds_blocks_and_the_queue_moves_on(calc, tmp_path, prefect_harness):
    stuck = playbook_variant(tmp_path, CALC, lambda d: broken_mul(d, attempts=None))
    board = TaskBoard(calc.ledger)
    results: dict[str, dict] = {}
    first = threading.Thread(target=lambda: results.setdefault("a", run_flow(calc, "Build calc", stuck, max_unit_attempts=1)))
    first.start()
    deadline = time.monotonic() + 120
    while not board.list() and time.monotonic() < deadline:
        time.sleep(0.05)
    results["b"] = run_flow(calc, "Build calc (second goal)", CALC / "playbook.yaml")  # queued until the first stops
    first.join(timeout=300)
    a, b = results["a"], results["b"]
    assert a["status"] == "blocked_pending_human" and a["blocked_reason"] == "not_converging" and a["loop_round"] == 2
    assert b["status"] == "done"
    blocked_at = next(e.ts for e in calc.ledger.read_as("task", TaskEvent) if e.task_id == a["task_id"] and e.status == "blocked_pending_human")
    b_started = next(e.ts for e in calc.ledger.read_as("task", TaskEvent) if e.task_id == b["task_id"] and e.status == "planning")
    assert b_started >= blocked_at
