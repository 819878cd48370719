"""Issue 47 (the fresh-clone walk-through): a task run by more than one Prefect flow run links every one of them on
its page. As the walker did it: a real `graphlemon run --engine prefect` on the scripted calc goal (labelled
scripted: the loop's plumbing, not a model's work), a real `graphlemon stop`, a real `graphlemon resume --engine
prefect` to the end; then the console's task view, checked against the flow runs GraphLemon's local Prefect server
knows for the task.

The earlier fix linked the flow runs whose lease events took or adopted the lease; a `graphlemon resume` takes the
lease as its process (no flow run yet) and its flow run names itself on it by renewing it (`drive`), so only the run
that created the task was linked."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from graphlemon import local_server
from graphlemon.console.app import ConsoleSettings, create_app
from graphlemon.console.project_registry import ProjectRegistry
from graphlemon.models import TimelineEvent
from graphlemon.project import init_project
from graphlemon.taskboard import TaskBoard

ROOT = Path(__file__).resolve().parents[2]
CALC = ROOT / "tests" / "acceptance" / "fixtures" / "calc"
TOKEN = "j" * 32
pytestmark = [pytest.mark.slow, pytest.mark.system]


def graphlemon(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "graphlemon", *args], capture_output=True, text=True,
                          timeout=timeout, start_new_session=True)  # fmt: skip


def prefect_flow_run(url: str, flow_run_id: str) -> dict:
    with urllib.request.urlopen(f"{url}/flow_runs/{flow_run_id}", timeout=30) as response:
        return json.loads(response.read())


def test_a_task_stopped_and_resumed_through_prefect_links_each_flow_run_that_held_it(tmp_path):
    repo = tmp_path / "calc"
    shutil.copytree(CALC / "repo", repo)
    for cmd in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "starting code"]):
        subprocess.run(["git", *cmd], cwd=repo, check=True)
    handle = init_project(repo).project
    scripted = ["--project", str(repo), "--executor", "scripted", "--playbook", str(CALC / "playbook.yaml"),
                "--engine", "prefect", "--quiet"]  # fmt: skip
    first = subprocess.Popen([sys.executable, "-m", "graphlemon", "run", "Build calc", *scripted],
                             start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 300
        while not any(e.event == "planned" for e in handle.ledger.read_as("timeline", TimelineEvent)):
            assert first.poll() is None and time.monotonic() < deadline, first.stdout.read() if first.stdout else ""
            time.sleep(0.1)
        (task,) = TaskBoard(handle.ledger).all().values()
        stop = graphlemon("stop", task.task_id, "--project", str(repo), "--note", "check the plan")
        assert stop.returncode == 0, stop.stdout + stop.stderr
        first.wait(timeout=120)
    finally:
        if first.poll() is None:
            os.killpg(first.pid, 9)
            first.wait()
    assert TaskBoard(handle.ledger).get(task.task_id).blocked_reason == "stopped_by_person"
    resumed = graphlemon("resume", task.task_id, *scripted, "--note", "the plan is fine")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert TaskBoard(handle.ledger).get(task.task_id).status == "done"

    registry = ProjectRegistry(tmp_path / "console-config")
    registry.register(handle)
    with TestClient(create_app(ConsoleSettings(token=TOKEN, registry=registry)), base_url="http://127.0.0.1:8766",
                    cookies={"graphlemon_console": TOKEN}) as console:  # fmt: skip
        view = console.get(f"/api/projects/{handle.project_id}/tasks/{task.task_id}").json()
    linked = [r["flow_run_id"] for r in view["flow_runs"]]
    assert len(linked) == 2 and len(set(linked)) == 2, view["flow_runs"]  # the run that created it, and the resume's
    url = local_server.status(Path(os.environ["GRAPHLEMON_CONFIG_DIR"]) / "prefect-server")["url"]
    assert url, "GraphLemon's local Prefect server is not running"
    for run_id in linked:  # each one is a devloop flow run of this task in Prefect's API
        run = prefect_flow_run(url, run_id)
        assert task.task_id in run["name"], run["name"]
    assert all(r["url"] and r["url"].endswith(f"/runs/flow-run/{r['flow_run_id']}") for r in view["flow_runs"])
