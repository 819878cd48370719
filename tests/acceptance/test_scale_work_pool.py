"""Scale-out seam (docs/scale.md): unit loops as runs of the `unit-loop` deployment on a work pool.

The session's real Prefect stack (tests/prefect_stack.py): the pool `graphlemon` and two process workers
(at most three runs each) on this machine, sharing its filesystem. Two goals of two projects run at once with
`unit_runner=work_pool`: their four units per round go to the pool, spread over both workers,
and each finishes exactly as the in-process run does (same statuses, rounds, nodes, tree).
"""

from __future__ import annotations

import subprocess
from collections import Counter

import pytest
from conftest import SNAKE, SNAKE_GOAL, make_repo

from graphlemon.nodes import NodeTracker
from graphlemon.taskboard import TaskBoard

pytestmark = pytest.mark.system

pytestmark = [pytest.mark.system, pytest.mark.slow]


def _tree(project) -> str:
    return subprocess.run(
        ["git", "rev-parse", "HEAD^{tree}"], cwd=project.root, capture_output=True, text=True, check=True
    ).stdout.strip()


def _nodes(project, task_id) -> list[tuple]:
    return sorted(
        (n.stage, n.unit_id or "", n.loop_round, n.attempt, n.status)
        for n in NodeTracker(project.ledger).for_task(task_id)
    )


def test_two_goals_run_their_unit_loops_on_two_workers_like_in_process(snake_run, prefect_stack, tmp_path_factory):
    from prefect.client.schemas.filters import (
        DeploymentFilter,
        DeploymentFilterName,
        FlowRunFilter,
        FlowRunFilterParentFlowRunId,
    )

    base, in_process = snake_run
    tmp = tmp_path_factory.mktemp("scale")
    projects = [make_repo(tmp / name / "snake", SNAKE / "repo") for name in ("a", "b")]
    with prefect_stack.client() as client:
        devloop = client.read_deployment_by_name("devloop/devloop")
        goals = [
            client.create_flow_run_from_deployment(devloop.id, parameters={
                "goal": SNAKE_GOAL, "project": str(p.root), "executor": "scripted",
                "playbook": str(SNAKE / "playbook.yaml"),
                "config": {"max_unit_attempts": 2, "unit_runner": "work_pool"}})
            for p in projects
        ]  # fmt: skip
        for run in goals:
            state = prefect_stack.wait(client, run.id, timeout=900)
            assert state.type.value == "COMPLETED", f"{state.message}\n{prefect_stack.tail()}"
        units = client.read_flow_runs(
            flow_run_filter=FlowRunFilter(parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[r.id for r in goals])),
            deployment_filter=DeploymentFilter(name=DeploymentFilterName(any_=["unit-loop"])),
        )
    logs = {n: prefect_stack.worker_log(n).read_text() for n in (1, 2)}
    for project in projects:
        (task,) = TaskBoard(project.ledger).all().values()
        assert (task.status, task.loop_round) == (in_process["status"], in_process["loop_round"])
        assert _nodes(project, task.task_id) == _nodes(base, in_process["task_id"])
        assert _tree(project) == _tree(base)  # the same code merged into main
    assert len(units) == 2 * sum(1 for n in _nodes(base, in_process["task_id"]) if n[0] == "coder")
    blocked = sum(1 for n in _nodes(base, in_process["task_id"]) if n[0] == "coder" and n[4] == "blocked")
    states = Counter((r.state.type.value, r.state.name) for r in units)
    assert states == {("COMPLETED", "Completed"): len(units) - 2 * blocked, ("FAILED", "Blocked"): 2 * blocked}, states
    by_worker = {n: {str(r.id) for r in units if str(r.id) in log} for n, log in logs.items()}
    assert all(by_worker.values()), f"one worker ran every unit loop: {by_worker}"
    assert by_worker[1] | by_worker[2] == {str(r.id) for r in units}
