"""Scale-out seam (docs/scale.md): unit loops as runs of the `unit-loop` deployment on a work pool.

A real Prefect server, the pool `graphlemon` and two process workers (at most two runs each) on
this machine, sharing its filesystem. Two goals of two projects run at once with
`unit_runner=work_pool`: their four units per round go to the pool, spread over both workers,
and each finishes exactly as the in-process run does (same statuses, rounds, nodes, tree).
"""

from __future__ import annotations

import contextvars
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import SNAKE, SNAKE_GOAL, make_repo, run_flow

from graphlemon.nodes import NodeTracker

pytestmark = pytest.mark.slow


def _tree(project) -> str:
    return subprocess.run(
        ["git", "rev-parse", "HEAD^{tree}"], cwd=project.root, capture_output=True, text=True, check=True
    ).stdout.strip()


def _nodes(project, task_id) -> list[tuple]:
    return sorted((n.stage, n.unit_id or "", n.loop_round, n.attempt, n.status) for n in NodeTracker(project.ledger).for_task(task_id))


def test_two_goals_run_their_unit_loops_on_two_workers_like_in_process(snake_run, tmp_path_factory):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterName
    from prefect.settings import PREFECT_API_URL, temporary_settings
    from prefect_stack import running_stack

    base, in_process = snake_run
    tmp = tmp_path_factory.mktemp("scale")
    projects = [make_repo(tmp / name / "snake", SNAKE / "repo") for name in ("a", "b")]
    with running_stack(tmp / "stack", ("unit-loop",), workers=2, limit=2) as stack:
        with temporary_settings(updates={PREFECT_API_URL: stack.url}):

            def one(project):
                return run_flow(project, SNAKE_GOAL, SNAKE / "playbook.yaml", max_unit_attempts=2, unit_runner="work_pool")

            with ThreadPoolExecutor(2) as pool:
                finals = list(pool.map(lambda p: contextvars.copy_context().run(one, p), projects))
            with get_client(sync_client=True) as client:
                runs = client.read_flow_runs(
                    deployment_filter=DeploymentFilter(name=DeploymentFilterName(any_=["unit-loop"]))
                )
        logs = {n: (tmp / "stack" / f"worker-{n}.log").read_text() for n in (1, 2)}
    for project, final in zip(projects, finals, strict=True):
        assert (final["status"], final["loop_round"]) == (in_process["status"], in_process["loop_round"])
        assert _nodes(project, final["task_id"]) == _nodes(base, in_process["task_id"])
        assert _tree(project) == _tree(base)  # the same code merged into main
    assert len(runs) == 2 * sum(1 for n in _nodes(base, in_process["task_id"]) if n[0] == "coder")
    assert all(r.state.type.value == "COMPLETED" for r in runs), [(r.name, r.state.name) for r in runs]
    by_worker = {n: {str(r.id) for r in runs if re.search(str(r.id), log)} for n, log in logs.items()}
    assert all(by_worker.values()), f"one worker ran every unit loop: {by_worker}"
    assert by_worker[1] | by_worker[2] == {str(r.id) for r in runs}
