"""REQ-01: the org graph's three nodes can be triggered; task lifecycle; max_concurrent_goals; INVALID_PARAM."""

from __future__ import annotations

import re
import threading
import time

import pytest
from conftest import CALC, run_flow

from graphlemon import lifecycle
from graphlemon.errors import ErrorCode, GraphLemonError
from graphlemon.models import TaskEvent
from graphlemon.nodes import NodeTracker
from graphlemon.taskboard import TaskBoard

pytestmark = pytest.mark.system


def task_events(project, task_id: str) -> list[TaskEvent]:
    return [e for e in project.ledger.read_as("task", TaskEvent) if e.task_id == task_id]


def test_happy_snake_goal_runs_planner_coder_validator_through_the_lifecycle(snake_run):
    project, final = snake_run
    assert final["status"] == "done", final
    statuses = [e.status for e in task_events(project, final["task_id"])]
    assert statuses[:3] == ["created", "queued", "planning"] and statuses[-1] == "done"
    for before, after in zip(statuses, statuses[1:], strict=False):
        if before != after:
            lifecycle.check("task", before, after)  # every step was a legal edge
    assert {"coding", "integrating", "validating"} <= set(statuses)
    stages = {n.stage for n in NodeTracker(project.ledger).for_task(final["task_id"])}
    assert {"planner", "coder", "validator"} <= stages
    assert any(e.flow_run_id for e in task_events(project, final["task_id"]))  # the Prefect flow run carrying it


def test_happy_artifact_keys_read_as_the_task_and_what_they_hold(snake_run, prefect_harness):
    """Every artifact of the run is keyed `<task>-…` (never the project's opaque id first): a unit's tests
    `task-…-unit-collision-tests`, then `-progress`, `-bugs`, the plan's documents."""
    from prefect_stack import artifacts_keyed

    project, final = snake_run
    task_id = final["task_id"]
    keys = {a.key for a in artifacts_keyed(prefix=f"{task_id}-")}
    expected = {f"{task_id}-unit-{unit}-tests" for unit in ("board", "collision", "game", "scoring")}
    assert expected | {f"{task_id}-progress", f"{task_id}-bugs", f"{task_id}-brd"} <= keys, sorted(keys)
    assert not artifacts_keyed(prefix=f"{project.project_id}-{task_id}")  # the old, opaque shape is gone
    assert all(re.fullmatch(r"[a-z0-9-]+", k) for k in keys)  # Prefect's rule for keys


def test_boundary_second_goal_stays_queued_while_the_first_runs(calc, prefect_harness):
    board = TaskBoard(calc.ledger)
    results: dict[str, dict] = {}
    first = threading.Thread(target=lambda: results.setdefault("a", run_flow(calc, "Build calc", CALC / "playbook.yaml")))
    first.start()
    deadline = time.monotonic() + 120
    while not board.list(status=["planning", "coding", "integrating", "validating"]) and time.monotonic() < deadline:
        time.sleep(0.05)
    [task_a] = board.list()
    second = threading.Thread(target=lambda: results.setdefault("b", run_flow(calc, "Build calc again", CALC / "playbook.yaml")))
    second.start()
    while len(board.list()) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    seen_queued_while_a_ran = False
    while first.is_alive():
        statuses = {t.task_id: t.status for t in board.all().values()}
        task_b = next(t for t in statuses if t != task_a.task_id)
        if statuses[task_a.task_id] != "done":
            assert statuses[task_b] == "queued", "the second goal started while the first still ran"
            seen_queued_while_a_ran = True
        time.sleep(0.05)
    first.join()
    second.join(timeout=300)
    assert seen_queued_while_a_ran
    assert results["a"]["status"] == "done" and results["b"]["status"] == "done"
    a_done = next(e.ts for e in task_events(calc, task_a.task_id) if e.status == "done")
    b_started = next(e.ts for e in task_events(calc, results["b"]["task_id"]) if e.status == "planning")
    assert b_started >= a_done


@pytest.mark.parametrize("goal", ["", "   \n\t"])
def test_failure_empty_goal_is_invalid_param_and_creates_nothing(calc, cli, prefect_harness, goal):
    with pytest.raises(GraphLemonError) as info:
        TaskBoard(calc.ledger).create(goal)
    assert info.value.code == ErrorCode.INVALID_PARAM
    with pytest.raises(GraphLemonError) as info:
        run_flow(calc, goal, CALC / "playbook.yaml")
    assert info.value.code == ErrorCode.INVALID_PARAM
    out = cli("run", goal, "--project", str(calc.root), "--playbook", str(CALC / "playbook.yaml"))
    assert out.returncode == 2 and out.stderr.startswith("error[INVALID_PARAM]")
    assert calc.ledger.read("task") == []
