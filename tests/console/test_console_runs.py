"""Human actions in the console finish the job: a raised budget, a manual_resume or an idle task start the run
`graphlemon resume` would (a real detached process on the scripted snake demo); a project that cannot run a goal
is refused before anything starts; a run that dies at start is shown failed with its output."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from graphlemon.console.app import TOKEN_HEADER, ConsoleSettings, create_app
from graphlemon.console.launch import LAUNCH_DIR, launches
from graphlemon.console.project_registry import ProjectRegistry
from graphlemon.models import TimelineEvent
from graphlemon.project import init_project
from graphlemon.taskboard import TaskBoard

ROOT = Path(__file__).resolve().parents[2]
SNAKE = ROOT / "examples" / "snake"
TOKEN = "r" * 32


@pytest.fixture
def registry(tmp_path: Path) -> ProjectRegistry:
    return ProjectRegistry(tmp_path / "config")


@pytest.fixture
def client(registry):
    app = create_app(ConsoleSettings(token=TOKEN, registry=registry))
    with TestClient(app, base_url="http://127.0.0.1:8766", cookies={"graphlemon_console": TOKEN}) as c:
        yield c  # as a browser that opened the printed URL: its cookie reads, its header steers


def post(client, path, body=None):
    return client.post(path, json=body or {}, headers={TOKEN_HEADER: TOKEN})


def snake_repo(tmp_path: Path, registry: ProjectRegistry):
    repo = tmp_path / "snake"
    shutil.copytree(SNAKE / "repo", repo)
    for cmd in (["init", "-q", "-b", "main"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit",
                                                              "-qm", "empty snake package"]):  # fmt: skip
        subprocess.run(["git", *cmd], cwd=repo, check=True)
    handle = init_project(repo).project
    registry.register(handle)
    return handle


def budget_blocked_snake(tmp_path: Path, registry: ProjectRegistry):
    """The snake demo stopped by a 12,000-token budget (its planner and first unit fit, the next call does not)."""
    handle = snake_repo(tmp_path, registry)
    subprocess.run([sys.executable, "-m", "graphlemon", "run", "Implement a snake game", "--engine", "direct",
                    "--playbook", str(SNAKE / "playbook.yaml"), "--budget-tokens", "12000", "--quiet",
                    "--project", str(handle.root)], capture_output=True, timeout=300)  # fmt: skip
    (task,) = TaskBoard(handle.ledger).all().values()
    assert (task.status, task.blocked_reason) == ("blocked_pending_human", "budget_exceeded")
    return handle, task.task_id


def wait_until(check, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.3)
    raise AssertionError(f"{what}: not reached after {timeout} s")


@pytest.mark.system
@pytest.mark.slow
def test_raising_the_budget_of_a_budget_blocked_task_runs_it_to_done(client, registry, tmp_path):
    handle, tid = budget_blocked_snake(tmp_path, registry)
    url = f"/api/projects/{handle.project_id}/tasks/{tid}"
    before = client.get(url).json()
    assert before["actions"] == ["resume", "budget", "abandon"] and before["run"]["state"] is None
    res = post(client, f"{url}/budget", {"limit": 200000})
    body = res.json()
    assert res.status_code == 200 and body["requeued"] is True and body["run"]["mode"] == "local"
    wait_until(lambda: TaskBoard(handle.ledger).get(tid).status == "done", 300, "the resumed run finishes")
    run = wait_until(lambda: (r := client.get(f"{url}/run").json())["launch"]["state"] == "ended" and r, 30, "exit")
    assert run["launch"]["returncode"] == 0 and run["state"] is None and run["actions"] == []
    actions = [e for e in handle.ledger.read_as("timeline", TimelineEvent) if e.event == "human_action"]
    assert len(actions) == 1 and "budget raised to 200,000 tokens" in actions[0].summary
    assert actions[0].ref == body["run"]["launch_id"]


@pytest.mark.system
def test_a_queued_task_nothing_runs_is_idle_and_a_run_that_dies_at_start_is_shown_failed(client, project, registry):
    registry.register(project)
    tid = TaskBoard(project.ledger).create("Implement a snake game").task_id  # no run recorded its executor
    url = f"/api/projects/{project.project_id}/tasks/{tid}"
    idle = client.get(url).json()
    assert idle["run"] == {"state": "idle", "lease": None, "launch": None, "last_run": None} and idle["actions"][0] == "run"
    board = client.get(f"/api/projects/{project.project_id}/tasks").json()
    assert board["tasks"][0]["run"] == "idle" and board["spend"] == {"tokens": 0, "cost_usd": 0.0, "tasks": 1}
    started = post(client, f"{url}/run").json()["run"]
    failed = wait_until(lambda: (r := client.get(f"{url}/run").json())["launch"]["state"] == "failed" and r, 60, "fail")
    launch = failed["launch"]
    assert launch["launch_id"] == started["launch_id"] and launch["returncode"] == 2
    assert "error[INVALID_PARAM]" in launch["log_tail"] and "playbook" in launch["log_tail"]
    assert failed["state"] == "idle" and "run" in failed["actions"]  # still offered: the page says why it failed


def test_actions_follow_the_task_state_and_refuse_what_does_not_apply(client, project, registry):
    registry.register(project)
    board = TaskBoard(project.ledger)
    done = board.create("finished").task_id
    for st in ("planning", "coding", "validating", "done"):
        board.transition(done, st)
    url = f"/api/projects/{project.project_id}/tasks/{done}"
    assert client.get(url).json()["actions"] == []
    refused = post(client, f"{url}/run")
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "INVALID_TRANSITION"
    assert not (project.state_dir / LAUNCH_DIR).exists()  # nothing started
    gone = board.create("dropped").task_id
    post(client, f"/api/projects/{project.project_id}/tasks/{gone}/abandon", {"note": "not needed"})
    view = client.get(f"/api/projects/{project.project_id}/tasks/{gone}").json()
    assert view["actions"] == [] and view["timeline"][-1]["summary"] == "abandoned: not needed"
    assert post(client, f"/api/projects/{project.project_id}/tasks/task-nope/run").status_code == 404


def test_a_goal_on_a_repository_without_commits_is_refused_and_a_first_commit_fixes_it(client, registry, tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "notes.txt").write_text("the starting code\n")
    added = post(client, "/api/projects", {"path": str(plain), "git_init": True}).json()
    assert added["git_initialised"] is True and added["has_commit"] is False
    pid = added["project_id"]
    goal = {"goal": "Implement a snake game", "executor": "scripted", "playbook": str(SNAKE / "playbook.yaml"),
            "engine": "direct"}  # fmt: skip
    refused = post(client, f"/api/projects/{pid}/goals", goal)
    err = refused.json()["error"]
    assert refused.status_code == 400 and err["code"] == "INVALID_PARAM" and "HEAD is unborn" in err["message"]
    assert err["fix"] == "first_commit"
    state = plain / ".graphlemon"
    assert not (state / LAUNCH_DIR).exists() and not (state / "tasks.ndjson").exists()  # nothing started
    commit = post(client, f"/api/projects/{pid}/first-commit").json()["commit"]
    files = subprocess.run(["git", "show", "--name-only", "--format=", commit], cwd=plain, capture_output=True,
                           text=True, check=True).stdout.split()  # fmt: skip
    assert files == ["notes.txt"]  # the folder's files, never GraphLemon's own state
    again = post(client, f"/api/projects/{pid}/first-commit")
    assert again.status_code == 400 and "already has commits" in again.json()["error"]["message"]


def test_adding_a_plain_folder_with_consent_can_make_its_first_commit(client, tmp_path):
    plain = tmp_path / "fresh"
    plain.mkdir()
    (plain / "main.py").write_text("print('hi')\n")
    added = post(client, "/api/projects", {"path": str(plain), "git_init": True, "first_commit": True}).json()
    assert added["has_commit"] is True and len(added["first_commit"]) == 40


def test_a_goal_on_a_folder_whose_git_is_gone_is_refused_with_what_to_do(client, registry, tmp_path):
    handle = snake_repo(tmp_path, registry)
    shutil.rmtree(handle.root / ".git")
    goal = {"goal": "Implement a snake game", "executor": "scripted", "playbook": str(SNAKE / "playbook.yaml")}
    refused = post(client, f"/api/projects/{handle.project_id}/goals", goal)
    err = refused.json()["error"]
    assert err["code"] == "GIT_ERROR" and "git init" in err["message"] and "fix" not in err
    assert not (handle.state_dir / LAUNCH_DIR).exists()


@pytest.mark.system
def test_a_goal_launch_is_followed_to_its_task(client, registry, tmp_path):
    handle = snake_repo(tmp_path, registry)
    goal = {"goal": "Implement a snake game", "executor": "scripted", "playbook": str(SNAKE / "playbook.yaml"),
            "engine": "direct", "budget_tokens": 6000}  # fmt: skip
    started = post(client, f"/api/projects/{handle.project_id}/goals", goal).json()
    url = f"/api/projects/{handle.project_id}/launches/{started['launch_id']}"
    view = wait_until(lambda: (v := client.get(url).json())["state"] != "running" and v, 120, "the run ends")
    tid = view["task_id"]
    assert view["state"] == "ended" and TaskBoard(handle.ledger).get(tid).blocked_reason == "budget_exceeded"
    [record] = [x for x in launches(handle) if x.launch_id == started["launch_id"]]
    assert record.kind == "goal" and record.returncode == 1  # blocked: `graphlemon run`'s exit 1
    assert client.get(f"/api/projects/{handle.project_id}/launches/.x").status_code == 400


def test_manual_resume_in_a_folder_whose_git_is_gone_is_refused_before_the_task_changes(client, registry, tmp_path):
    handle = snake_repo(tmp_path, registry)
    board = TaskBoard(handle.ledger)
    tid = board.create("Implement a snake game").task_id
    board.transition(tid, "planning")
    board.transition(tid, "blocked_pending_human", blocked_reason="not_converging")
    shutil.rmtree(handle.root / ".git")
    refused = post(client, f"/api/projects/{handle.project_id}/tasks/{tid}/resume", {"note": "go on"})
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "GIT_ERROR"
    assert board.get(tid).status == "blocked_pending_human" and not (handle.state_dir / LAUNCH_DIR).exists()


@pytest.mark.system
def test_manual_resume_of_a_task_prefect_ran_hands_the_note_to_graphlemon_resume(client, registry, tmp_path):
    """A deployed run may wait in Prefect for this very decision: `graphlemon resume --note` answers it (or resumes
    the task), so the console changes nothing itself and starts that command with the note."""
    import os
    import signal

    handle = snake_repo(tmp_path, registry)
    board = TaskBoard(handle.ledger)
    tid = board.create("Implement a snake game").task_id
    board.transition(tid, "planning", flow_run_id="0d5e1c8e-0000-4000-8000-000000000001")
    board.transition(tid, "blocked_pending_human", blocked_reason="not_converging")
    res = post(client, f"/api/projects/{handle.project_id}/tasks/{tid}/resume", {"note": "-- the wall is outside"})
    pid = int(res.json()["run"]["ref"])
    try:
        assert res.status_code == 200 and board.get(tid).status == "blocked_pending_human"  # left to the command
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        assert b"--engine" in cmdline and cmdline[cmdline.index(b"--engine") + 1] == b"prefect"
        assert b"--note=-- the wall is outside" in cmdline
    finally:
        os.kill(pid, signal.SIGTERM)  # the process this test started: no Prefect run wanted here
    done = board.create("finished").task_id
    for st in ("planning", "coding", "validating", "done"):
        board.transition(done, st, flow_run_id="0d5e1c8e-0000-4000-8000-000000000002")
    refused = post(client, f"/api/projects/{handle.project_id}/tasks/{done}/resume", {})
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "INVALID_TRANSITION"


def test_a_task_links_every_prefect_flow_run_that_ran_it():
    """The flow run that created the task and each one that took its lease later (a resume, a deployment run), once
    each, oldest first; a console's short hold and a refused starter are no flow run of it."""
    from datetime import timedelta

    from graphlemon.console.views import flow_runs
    from graphlemon.models import LeaseEvent, TaskEvent, utcnow

    t0 = utcnow()
    records = {
        "task": [TaskEvent(task_id="t1", status="queued", flow_run_id="run-a", ts=t0),
                 TaskEvent(task_id="t1", status="planning", flow_run_id="run-a", ts=t0 + timedelta(seconds=1)),
                 TaskEvent(task_id="t2", status="queued", flow_run_id="run-x", ts=t0)],
        "lease": [LeaseEvent(task_id="t1", lease_id="l1", event="taken", flow_run_id="run-a", ts=t0),
                  LeaseEvent(task_id="t1", lease_id="l2", event="refused", flow_run_id="run-c", ts=t0 + timedelta(seconds=5)),
                  LeaseEvent(task_id="t1", lease_id="l3", event="adopted", flow_run_id="run-b", ts=t0 + timedelta(seconds=9)),
                  LeaseEvent(task_id="t1", lease_id="l4", event="taken", holder="console: run it now", ts=t0)],
    }  # fmt: skip
    assert [r["flow_run_id"] for r in flow_runs(records, "t1")] == ["run-a", "run-b"]
