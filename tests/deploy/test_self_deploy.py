"""Self-development (REQ-15): the self-hosted project setting, the core_engine attribution in GraphLemon's own
repository, and which merge a finished task is owed a deploy of (graphlemon/deploy/self_deploy.py).

Real files and a real git repository; no process is started (supervisor.json is written as bootstrap leaves it).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from graphlemon.deploy.deployments import DeploymentBook
from graphlemon.deploy.instances import Instance
from graphlemon.deploy.self_deploy import (
    merged_commit,
    pending_self_deploy,
    record_deploy,
    spawn_deploy,
    why_no_deploy,
)
from graphlemon.deploy.supervisor import DeployConfig, SupervisorState
from graphlemon.errors import GraphLemonError
from graphlemon.models import TimelineEvent
from graphlemon.project import init_project, open_project, update_settings
from graphlemon.stages.validator import BugVerdict, Perspective, decide_bug
from graphlemon.taskboard import TaskBoard

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@graphlemon.local"]


@pytest.fixture
def project(tmp_path):
    repo = tmp_path / "graphlemon"
    repo.mkdir()
    subprocess.run([*GIT, "init", "-q", "-b", "main"], cwd=repo, check=True)
    (repo / "README.md").write_text("GraphLemon\n")
    subprocess.run([*GIT, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*GIT, "commit", "-q", "-m", "start"], cwd=repo, check=True)
    return init_project(repo).project


def _done_task(handle, merge: str | None) -> str:
    """A task the loop finished: through its stages to done, the `done` event naming the merge (as loop.finish)."""
    board = TaskBoard(handle.ledger)
    task_id = board.create("fix check_plan").task_id
    for status in ("planning", "coding", "integrating", "validating", "done"):
        board.transition(task_id, status, by="scheduler")
    handle.ledger.append(TimelineEvent(event="done", task_id=task_id, ref=merge, summary="task done in round 1"))
    return task_id


def _bootstrapped(handle, live_commit: str, config: DeployConfig | None = None) -> Path:
    """What `Supervisor.bootstrap` leaves: the project marked self-hosted, supervisor.json with the live instance."""
    root = handle.state_dir / "deploy"
    root.mkdir(parents=True)
    live = Instance(commit=live_commit, dir=str(root / "instances" / live_commit), port=1, pid=1, log="x.log")
    (root / "supervisor.json").write_text(SupervisorState(config=config or DeployConfig(), live=live).model_dump_json())
    update_settings(handle, self_hosted=True, deploy_root=str(root))
    return root


# -- the setting ---------------------------------------------------------------------------------------------


def test_update_settings_writes_project_json_and_the_handle(project):
    assert project.meta.settings.self_hosted is False
    update_settings(project, self_hosted=True, deploy_root="/srv/deploy")
    assert project.meta.settings.self_hosted and project.meta.settings.deploy_root == "/srv/deploy"
    reopened = open_project(project.root).meta
    assert reopened.settings.self_hosted and reopened.project_id == project.project_id
    assert reopened.settings.max_concurrent_goals == 1  # the other settings are kept


@pytest.mark.parametrize(("fields", "what"), [({"self_hosted_x": True}, "self_hosted_x"),
                                               ({"max_concurrent_goals": 0}, "max_concurrent_goals")])  # fmt: skip
def test_a_bad_setting_is_invalid_param_and_changes_nothing(project, fields, what):
    before = (project.state_dir / "project.json").read_text()
    with pytest.raises(GraphLemonError) as err:
        update_settings(project, **fields)
    assert err.value.code == "INVALID_PARAM" and what in err.value.message
    assert (project.state_dir / "project.json").read_text() == before
    assert not list(project.state_dir.glob(".project.json.*"))


# -- the validator's decision: core_engine in GraphLemon's own repository goes to the Coder --------------------


def _core_engine_verdict() -> BugVerdict:
    view = Perspective(category="core_engine", reason="graphlemon/stages/planner.py check_plan is inverted")
    return BugVerdict(unit_id="check-plan", spec=view, code=view, skill=view,
                      root_cause_detail="check_plan reports units the SDD does mention", sdd_section="2")  # fmt: skip


@pytest.mark.parametrize(("self_hosted", "route"), [(False, "escalate"), (True, "fast_lane")])
def test_core_engine_verdict_routes_by_where_the_project_is(self_hosted, route):
    a = decide_bug("b1", "check-plan", _core_engine_verdict(), "## 2 The rule", [], self_hosted=self_hosted)
    assert (a.root_cause_category, a.suggested_route) == ("core_engine", route)


# -- which merge is owed a deploy ------------------------------------------------------------------------------


def test_a_done_merged_task_of_a_self_hosted_project_is_owed_a_deploy_with_the_bootstrap_settings(project):
    config = DeployConfig(public_port=9999, monitor_window_s=3)
    root = _bootstrapped(project, "a" * 40, config)
    task_id = _done_task(project, "b" * 40)
    assert merged_commit(project.ledger, task_id) == "b" * 40
    target = pending_self_deploy(project, task_id)
    assert (target.task_id, target.commit, target.root) == (task_id, "b" * 40, str(root))
    assert target.config == config


def test_no_deploy_outside_graphlemon_s_own_repository(project):
    task_id = _done_task(project, "b" * 40)
    assert pending_self_deploy(project, task_id) is None  # not self-hosted: nothing to deploy


@pytest.mark.parametrize("case", ["not merged", "not done", "no live instance", "already live", "deployed already"])
def test_no_deploy_when_there_is_nothing_to_replace_or_it_was_done(project, case):
    _bootstrapped(project, "a" * 40)
    task_id = _done_task(project, None if case == "not merged" else "b" * 40)
    if case == "not done":
        task_id = TaskBoard(project.ledger).create("another goal").task_id
        project.ledger.append(TimelineEvent(event="done", task_id=task_id, ref="c" * 40))  # a stray event: not done
    if case == "no live instance":
        state_file = Path(project.meta.settings.deploy_root) / "supervisor.json"
        state_file.write_text(json.dumps({**json.loads(state_file.read_text()), "live": None}))
    if case == "already live":
        task_id = _done_task(project, "a" * 40)
    if case == "deployed already":  # a replayed run of the same task deploys once
        DeploymentBook(project.ledger).stage(commit="b" * 40, task_id=task_id)
    assert pending_self_deploy(project, task_id) is None


def test_the_task_timeline_says_what_became_of_its_merge(project):
    task_id = _done_task(project, "b" * 40)
    dep = DeploymentBook(project.ledger).stage(commit="b" * 40, task_id=task_id)
    record_deploy(project.ledger, task_id, "b" * 40, dep)
    record_deploy(project.ledger, task_id, "b" * 40, None, "INVALID_TRANSITION: one deployment at a time")
    events = [e for e in project.ledger.read_as("timeline", TimelineEvent) if e.task_id == task_id][-2:]
    assert [(e.event, e.ref) for e in events] == [("deployed", dep.deployment_id), ("deploy_refused", "b" * 40)]
    assert "staged" in events[0].summary and "one deployment at a time" in events[1].summary


@pytest.mark.system
def test_deploy_status_names_the_task_whose_merge_was_deployed(project):
    import os
    import sys

    task_id = _done_task(project, "b" * 40)
    DeploymentBook(project.ledger).stage(commit="b" * 40, task_id=task_id, note="[not markup]")
    cli = subprocess.run([sys.executable, "-m", "graphlemon", "deploy", "status", "-p", str(project.root)],
                         capture_output=True, text=True, env={**os.environ, "COLUMNS": "300"})  # fmt: skip
    assert cli.returncode == 0, cli.stderr
    assert f"the merge of DevLoop task {task_id}, deployed with no person" in cli.stdout
    assert "[not markup]" in cli.stdout


@pytest.mark.system
def test_deploy_merged_says_why_nothing_is_deployed(project):
    import os
    import sys

    task_id = _done_task(project, "b" * 40)
    cli = subprocess.run([sys.executable, "-m", "graphlemon", "deploy", "merged", task_id, "-p", str(project.root)],
                         capture_output=True, text=True, env={**os.environ, "COLUMNS": "300"})  # fmt: skip
    assert cli.returncode == 0, cli.stderr
    assert f"nothing to deploy for {task_id}: the project is not self-hosted" in cli.stdout
    assert why_no_deploy(project, task_id).startswith("the project is not self-hosted")


@pytest.mark.system
def test_spawned_deploy_runs_in_its_own_session_and_logs_what_it_did(project):
    """What a deployment's devloop run does (a worker's process group may be an instance's that finalize stops)."""
    import os
    import time

    from graphlemon.processes import pid_alive

    task_id = _done_task(project, "b" * 40)
    pid, log = spawn_deploy(project, task_id)
    try:
        assert os.getsid(pid) == pid != os.getsid(0)  # a session (and process group) of its own
        deadline = time.monotonic() + 60
        while pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not pid_alive(pid)
    finally:
        if pid_alive(pid):
            os.killpg(pid, 9)
    assert f"nothing to deploy for {task_id}: the project is not self-hosted" in log.read_text()
    started = [e for e in project.ledger.read_as("timeline", TimelineEvent) if e.event == "deploy_started"]
    assert [(e.task_id, e.ref) for e in started] == [(task_id, str(pid))]
