"""Issue 44: expected stops are states, not exceptions, and Prefect never retries what GraphLemon already retried.

Each run here is what a person starts: the console launches `graphlemon run --engine prefect` (a real process on
GraphLemon's local Prefect server), and the test reads what the person would see: the launch's output, the console's
task view, and every log line of the task's flow runs (the devloop run, its unit subflows and their task runs) from
the server's API. A budget stop inside a unit subflow and a model API that keeps answering 529 (the anthropic backend
against the local fake Messages server) end the task blocked, with a message and a state, and no `Traceback`
anywhere; the blocked run is not a green Completed; the backend's tries are the only tries."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
from fakes.messages_server import FakeMessagesServer, overloaded
from starlette.testclient import TestClient

from graphlemon import local_server
from graphlemon.console.app import TOKEN_HEADER, ConsoleSettings, create_app
from graphlemon.console.project_registry import ProjectRegistry
from graphlemon.project import init_project
from graphlemon.taskboard import TaskBoard

ROOT = Path(__file__).resolve().parents[2]
SNAKE = ROOT / "examples" / "snake"
TOKEN = "s" * 32
API_KEY = "sk-ant-test-issue44-0123456789"
pytestmark = [pytest.mark.slow, pytest.mark.system]


@pytest.fixture
def console(tmp_path):
    registry = ProjectRegistry(tmp_path / "console-config")
    with TestClient(create_app(ConsoleSettings(token=TOKEN, registry=registry)), base_url="http://127.0.0.1:8766",
                    cookies={"graphlemon_console": TOKEN}) as c:  # reads need the token too
        c.registry = registry
        yield c


def snake(tmp_path: Path, registry: ProjectRegistry):
    repo = tmp_path / "snake"
    shutil.copytree(SNAKE / "repo", repo)
    for cmd in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "the starting code"]):
        subprocess.run(["git", *cmd], cwd=repo, check=True)
    handle = init_project(repo).project
    registry.register(handle)
    return handle


def launched(console, handle, goal: dict, timeout: float = 420) -> dict:
    """A goal started from the console (a detached `graphlemon run`), followed until its process ended."""
    res = console.post(f"/api/projects/{handle.project_id}/goals", json=goal, headers={TOKEN_HEADER: TOKEN})
    assert res.status_code == 200, res.text
    url = f"/api/projects/{handle.project_id}/launches/{res.json()['launch_id']}"
    deadline = time.monotonic() + timeout
    while (view := console.get(url).json())["state"] == "running":
        assert time.monotonic() < deadline, "the run did not end"
        time.sleep(0.5)
    return view


def api(url: str, path: str, body: dict) -> list[dict]:
    request = urllib.request.Request(f"{url}{path}", data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})  # fmt: skip
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def flow_runs_of(url: str, task_id: str) -> list[dict]:
    """The task's devloop runs and every subflow run under them."""
    runs = api(url, "/flow_runs/filter", {"flow_runs": {"name": {"like_": task_id}}})
    ids = [r["id"] for r in runs]
    while ids:
        children = api(url, "/flow_runs/filter", {"flow_runs": {"parent_flow_run_id": {"any_": ids}}})
        runs += children
        ids = [r["id"] for r in children]
    return runs


def logs_of(url: str, runs: list[dict]) -> str:
    lines = api(url, "/logs/filter", {"logs": {"flow_run_id": {"any_": [r["id"] for r in runs]}}, "limit": 200})
    return "\n".join(line["message"] for line in lines)


def local_api() -> str:
    status = local_server.status(Path(os.environ["GRAPHLEMON_CONFIG_DIR"]) / "prefect-server")
    assert status["url"], status
    return status["url"]


def no_traceback_anywhere(console, handle, view: dict, task_id: str, url: str) -> tuple[list[dict], str]:
    output = (handle.state_dir / view["log"]).read_text()
    page = console.get(f"/api/projects/{handle.project_id}/tasks/{task_id}").text
    runs = flow_runs_of(url, task_id)
    logs = logs_of(url, runs)
    for where, text in (("the run's output", output), ("the console", page), ("the flow runs' logs", logs)):
        assert "Traceback" not in text, f"a traceback in {where}:\n{text[-4000:]}"
    return runs, logs


def test_a_budget_stop_inside_a_unit_subflow_is_a_state_with_a_message(console, tmp_path):
    handle = snake(tmp_path, console.registry)
    goal = {"goal": "Implement a snake game", "executor": "scripted", "playbook": str(SNAKE / "playbook.yaml"),
            "engine": "prefect", "budget_tokens": 12000}  # the planner and the first unit fit, the next turn does not
    view = launched(console, handle, goal)
    task = TaskBoard(handle.ledger).get(view["task_id"])
    assert (task.status, task.blocked_reason) == ("blocked_pending_human", "budget_exceeded")
    assert view["state"] == "ended" and view["returncode"] == 1  # blocked, as designed: not "failed"
    runs, logs = no_traceback_anywhere(console, handle, view, task.task_id, local_api())
    by_name = {r["name"]: r["state"] for r in runs}
    devloop = next(s for n, s in by_name.items() if n.startswith("devloop"))
    assert (devloop["type"], devloop["name"]) == ("CANCELLED", "Blocked"), devloop  # not a green Completed
    assert devloop["message"].startswith("budget_exceeded: ") and f"graphlemon resume {task.task_id}" in devloop["message"]
    stopped = [s for n, s in by_name.items() if n.startswith("unit ") and s["type"] == "CANCELLED"]
    assert stopped and stopped[0]["name"] == "Budget exceeded", by_name  # the unit subflow it stopped in
    assert "Finished in state Budget exceeded(" in logs and "type=CANCELLED" in logs  # a message, not a traceback


def test_a_backend_that_gives_up_is_retried_by_nobody_else_and_blocks_the_task_without_a_traceback(console, tmp_path):
    handle = snake(tmp_path, console.registry)
    with FakeMessagesServer(api_key=API_KEY) as server:
        server.responder = lambda body: overloaded()  # 529 to every request
        env = {"ANTHROPIC_API_KEY": API_KEY, "ANTHROPIC_BASE_URL": server.base_url, "GRAPHLEMON_RETRY_MAX": "2",
               "GRAPHLEMON_RETRY_BASE_DELAY_S": "0.01", "GRAPHLEMON_RETRY_MAX_DELAY_S": "0.05"}  # fmt: skip
        with pytest.MonkeyPatch.context() as mp:
            for name, value in env.items():
                mp.setenv(name, value)
            view = launched(console, handle, {"goal": "Implement a snake game", "executor": "anthropic",
                                              "engine": "prefect"})  # fmt: skip
        tries = len(server.messages_requests)
    task = TaskBoard(handle.ledger).get(view["task_id"])
    assert (task.status, task.blocked_reason) == ("blocked_pending_human", "stage_failed")
    assert "giving up after 3 attempt(s)" in task.note
    assert tries == 3  # the backend's 1 + 2 retries, and no retry of the whole turn by Prefect
    runs, logs = no_traceback_anywhere(console, handle, view, task.task_id, local_api())
    devloop = next(r["state"] for r in runs if r["name"].startswith("devloop"))
    assert (devloop["type"], devloop["name"]) == ("FAILED", "Stage failed")
    assert "EXECUTOR_ERROR" in logs and "Retry 1/" not in logs
