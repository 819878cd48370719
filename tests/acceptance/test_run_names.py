"""Runs GraphLemon creates carry their final name from creation (flows/run_names.py): a console goal's deployment
run on a real Prefect server, and the names the flows give themselves when they start (the same rule)."""

from __future__ import annotations

import pytest
from conftest import SNAKE, SNAKE_GOAL, make_repo

from graphlemon.flows.run_names import devloop_run_name, unit_run_name
from graphlemon.taskboard import TaskBoard


@pytest.mark.system
@pytest.mark.slow
def test_a_console_goal_is_created_with_its_final_name_and_its_task(tmp_path, monkeypatch):
    from prefect_stack import running_stack

    from graphlemon.console.launch import DEPLOYMENT, check_goal, start_goal

    project = make_repo(tmp_path / "snake", SNAKE / "repo")
    goal = f"  {SNAKE_GOAL}\nwith   a  score board and a very long description after it  "
    (tmp_path / "stack").mkdir()
    with running_stack(tmp_path / "stack", ("devloop",), workers=0) as stack, stack.client() as client:
        monkeypatch.setenv("PREFECT_API_URL", stack.url)
        request = check_goal(goal, "scripted", str(SNAKE / "playbook.yaml"), "prefect")
        started = start_goal(project, request)
        assert started.mode == "deployment"
        run = client.read_flow_run(started.ref)  # no worker: what the run looks like before any code of it ran
        task = TaskBoard(project.ledger).get(run.parameters["task_id"])
        assert task.status == "queued" and task.goal_text == goal.strip()
        assert run.name == devloop_run_name(goal, task.task_id)
        assert run.name == f"devloop · {SNAKE_GOAL} with a score board and a… · {task.task_id}"

        from prefect.exceptions import ObjectNotFound

        from graphlemon.flows.console_launch import start_devloop_run

        with pytest.raises(ObjectNotFound):
            start_devloop_run("devloop/no-such-deployment", project, request)
        (orphan,) = [t for t in TaskBoard(project.ledger).all().values() if t.task_id != task.task_id]
        assert orphan.status == "abandoned" and "not created" in (orphan.note or "")
        assert client.read_deployment_by_name(DEPLOYMENT)  # the stack is fine: only the name was wrong


def test_names_follow_one_rule():
    assert devloop_run_name("Implement a snake game", None) == "devloop · Implement a snake game"
    assert devloop_run_name("x" * 60, "task-1") == f"devloop · {'x' * 47}… · task-1"
    assert unit_run_name("board", 0) == "unit board · round 0"
    assert unit_run_name("board", 2, "l2a1") == "unit board · round 2 · L2 reset 1"
