"""REQ-15: the deploy supervisor, blue-green, on a copy of GraphLemon's own repository.

The happy path is self-development end to end: the copy carries a planted core_engine bug (check_plan inverted);
the `devloop` flow runs on it with the scripted playbook examples/selfdev (the tester's real pytest run finds the
bug, the validator attributes it to core_engine, the self-hosted project routes it to the Coder, round 1 fixes it,
the validator passes it, the DevLoop merges it into main) and then starts the `deploy-supervisor` flow for that
merge commit by itself: nobody picks the commit, reviews the code or presses a button.

Real parts only: a git repository holding GraphLemon's code, instances checked out as git worktrees and served by
`graphlemon serve` (their own code first on PYTHONPATH), Debian's HAProxy switched over its runtime API, the
canary task (the scripted snake demo, run by the candidate's code), the `deploy-supervisor` Prefect flow under
the session test harness. Every process is stopped by PID at the end, also on failure.

The canary task takes about a minute here; it runs for real in the happy path and in path A. The later
deployments change only README.md, so their canary reuses the passing run of the same code tree (recorded as
`reused_from`; the rule is the supervisor's, see docs/deploy.md). Each test still stages, starts, checks, switches
and monitors its own candidate.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path

import pytest
from deploy_stack import (
    GOOD_LINE,
    PLANNER,
    PLANTED_LINE,
    SELFDEV_GOAL,
    SELFDEV_PLAYBOOK,
    LoadClient,
    copy_graphlemon,
    docs_commit,
    edit_and_commit,
    git,
)

from graphlemon.bugs import BugTracker
from graphlemon.deploy import instances
from graphlemon.deploy.deployments import ROLLBACK_FAILED_MESSAGE
from graphlemon.deploy.haproxy import pid_alive, stop_group
from graphlemon.deploy.self_deploy import deploy_merged, merged_commit
from graphlemon.deploy.supervisor import DeployConfig, Supervisor
from graphlemon.devloop.loop import run_devloop
from graphlemon.devloop.stages import Stages
from graphlemon.models import LEDGER_FILES, RunRecord, TaskEvent, TimelineEvent, utcnow
from graphlemon.project import init_project, open_project
from graphlemon.stages.session import LoopSession, LoopSettings
from graphlemon.taskboard import TaskBoard

HAPPY = ["staged", "candidate_starting", "health_check_running", "health_check_passed", "cutover_in_progress",
         "live", "monitoring", "monitoring_window_clean", "finalized"]  # fmt: skip


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Env:
    def __init__(self, repo: Path, sup: Supervisor, planted: str) -> None:
        self.repo, self.sup, self.planted = repo, sup, planted
        self.ledger = sup.project.ledger

    @property
    def port(self) -> int:
        return self.sup.config.public_port

    def through_proxy(self) -> str | None:
        return instances.read_health(self.port).commit


@pytest.fixture(scope="module")
def deploy_env(tmp_path_factory):
    if shutil.which("haproxy") is None and not Path("/usr/sbin/haproxy").exists():
        pytest.fail("Debian's haproxy is not installed: `make fixtures` installs it (apt-get install haproxy)")
    base = tmp_path_factory.mktemp("req15")
    repo = copy_graphlemon(base / "graphlemon")
    handle = init_project(repo).project
    planted = edit_and_commit(repo, PLANNER, GOOD_LINE, PLANTED_LINE,
                              "planner: check_plan reports units the SDD mentions")  # the planted core_engine bug  # fmt: skip
    # the validator's history before any deployment: 7 of 8 validations passed; with the fixing devloop's two
    # (round 0 red, round 1 green) the approval-rate baseline is 8 of 10
    past = utcnow() - timedelta(hours=1)
    handle.ledger.append(*[RunRecord(run_id=f"val-{i}", scope="validation", ok=i < 7, ts=past) for i in range(8)])
    config = DeployConfig(public_port=_free_port(), monitor_window_s=3, monitor_interval_s=0.5, start_timeout_s=120,
                          canary_engine="direct", canary_timeout_s=900)  # fmt: skip
    sup = Supervisor(handle, config)
    sup.bootstrap("HEAD")
    try:
        yield Env(repo, sup, planted)
    finally:
        pids = {d.pid for d in sup.book.all().values() if d.pid} | {d.previous_pid for d in sup.book.all().values()
                                                                   if d.previous_pid}  # fmt: skip
        sup.shutdown()
        for pid in pids:
            if pid_alive(pid):
                stop_group(pid)


def _fix_with_the_devloop_direct(env: Env) -> str:
    """The happy path's fix without Prefect (for a later test run on its own): the DevLoop in this process, then
    the direct engine's deploy step. Returns the task id."""
    task = TaskBoard(env.ledger).create(SELFDEV_GOAL)
    session = LoopSession.start(env.sup.project, task.task_id, executor="scripted", playbook=SELFDEV_PLAYBOOK,
                                max_unit_attempts=1)  # fmt: skip
    assert run_devloop(session, Stages(session.run)).status == "done"
    assert deploy_merged(env.sup.project, task.task_id).status == "finalized"
    return task.task_id


def _ensure_fixed(env: Env) -> None:
    """The later tests start from a live instance without the planted bug (the happy test leaves it so)."""
    if PLANTED_LINE in (Path(env.sup.state().live.dir) / PLANNER).read_text():
        _fix_with_the_devloop_direct(env)


def _push_validator_rate_when_monitoring(env: Env, deployment_id: str, failed: int = 5) -> threading.Thread:
    """Once the candidate is monitored, the validator rejects `failed` runs in a row (approval rate 0 vs 0.8)."""

    def push() -> None:
        deadline = time.monotonic() + 60
        while env.sup.book.get(deployment_id).status != "monitoring" and time.monotonic() < deadline:
            time.sleep(0.05)
        env.ledger.append(*[RunRecord(run_id=f"val-{deployment_id}-{i}", scope="validation", ok=False)
                            for i in range(failed)])  # fmt: skip

    thread = threading.Thread(target=push, daemon=True)
    thread.start()
    return thread


def _statuses(dep) -> list[str]:
    return [e.status for e in dep.timeline]


def _ledger_lines(env: Env) -> dict[str, list[str]]:
    return {kind: [r.model_dump_json() for r in env.ledger.read(kind)] for kind in LEDGER_FILES}


# -- happy -------------------------------------------------------------------------------------------------


@pytest.mark.system
def test_happy_core_engine_bug_fixed_by_the_devloop_merged_then_staged_to_finalized_with_no_human(
    deploy_env, prefect_harness
):
    from graphlemon.flows.devloop import devloop

    env = deploy_env
    assert open_project(env.repo).meta.settings.self_hosted  # bootstrap marked GraphLemon's repository
    before = env.sup.state().live
    assert env.through_proxy() == env.planted
    load = LoadClient(env.port).start()
    try:
        # one devloop flow run: the task, then (self-hosted, done, merged) the deploy-supervisor flow as a subflow
        result = devloop(goal=SELFDEV_GOAL, project=str(env.repo), executor="scripted",
                         playbook=str(SELFDEV_PLAYBOOK), config=LoopSettings(max_unit_attempts=1))  # fmt: skip
    finally:
        load.stop()
    task = TaskBoard(env.ledger).get(result["task_id"])
    assert (task.status, task.loop_round) == ("done", 1)
    # the fix is the coder's, merged by the DevLoop: the merge's first parent is the planted commit
    merge = merged_commit(env.ledger, task.task_id)
    assert merge == git(env.repo, "rev-parse", "HEAD")
    assert git(env.repo, "rev-list", "--parents", "-n", "1", merge).split()[1] == env.planted
    assert GOOD_LINE in git(env.repo, "show", f"{merge}:{PLANNER}")
    fixes = git(env.repo, "log", "--format=%s", f"{env.planted}..{merge}^2", "--", PLANNER).splitlines()
    assert any(subject.startswith("coder: check-plan attempt 2") for subject in fixes), fixes
    # the bug: found by the tester's real run, attributed core_engine, routed to the Coder, fixed and verified
    bugs = BugTracker(env.ledger).list(task_id=task.task_id)
    assert bugs and {(b.unit_id, b.root_cause_category, b.suggested_route, b.status) for b in bugs} == {
        ("check-plan", "core_engine", "fast_lane", "verified")}  # fmt: skip
    timeline = [e for e in env.ledger.read_as("timeline", TimelineEvent) if e.task_id == task.task_id]
    assert [e.summary for e in timeline if e.event == "routed"] == ["fast_lane -> round 1 (check-plan)"]
    assert all(r.ok for r in env.ledger.read_as("run", RunRecord) if r.run_id == f"val-{task.task_id}-r1")
    # the supervisor deployed that merge: staged ... finalized
    dep = next(d for d in env.sup.book.all().values() if d.commit == merge)
    assert dep.task_id == task.task_id
    assert _statuses(dep) == HAPPY, dep.timeline
    assert [e.ref for e in timeline if e.event == "deployed"] == [dep.deployment_id]
    # no human step anywhere: no person moved the task or the deployment, nothing was blocked
    events = [e for e in env.ledger.read_as("task", TaskEvent) if e.task_id == task.task_id]
    assert "blocked_pending_human" not in {e.status for e in events}
    assert [e.status for e in events if "human" in e.by] == ["created"]  # filing the goal; no person after it
    assert {e.by for e in dep.timeline} == {"supervisor"}
    signals = env.sup.book.signals(dep.deployment_id)
    canary = next(s for s in signals if s.signal == "canary_task")
    assert canary.ok and canary.reused_from is None and "task done" in canary.detail
    assert {s.signal for s in signals if s.phase == "monitoring"} == {
        "health_endpoint", "process_restarts", "task_error_rate", "validator_approval_rate"}  # fmt: skip
    assert all(s.ok for s in signals)
    live = env.sup.state().live
    assert live.commit == merge and env.through_proxy() == merge and pid_alive(live.pid)
    assert GOOD_LINE in (Path(live.dir) / PLANNER).read_text()  # the live instance runs the fixed check_plan
    assert not pid_alive(before.pid)  # finalize stopped the previous instance
    assert env.sup.state().standby is None
    assert load.failed == [] and load.commits() == [env.planted, merge]


# -- path A ----------------------------------------------------------------------------------------------------


@pytest.mark.system
def test_path_a_failed_canary_stops_candidate_reverts_and_files_a_core_engine_bug(deploy_env):
    env = deploy_env
    _ensure_fixed(env)
    live = env.sup.state().live
    bad = edit_and_commit(env.repo, PLANNER, GOOD_LINE, PLANTED_LINE, "planner: simplify check_plan")
    dep = env.sup.deploy(bad)
    assert _statuses(dep) == ["staged", "candidate_starting", "health_check_running", "health_check_failed",
                              "rolled_back"]  # fmt: skip
    canary = next(s for s in env.sup.book.signals(dep.deployment_id) if s.signal == "canary_task")
    assert not canary.ok and "expected 'done'" in canary.detail
    assert not pid_alive(dep.pid)  # the candidate was stopped
    # git revert of the candidate's commit, on main
    assert git(env.repo, "rev-parse", "HEAD") == dep.revert_commit
    assert git(env.repo, "log", "-1", "--format=%s").startswith('Revert "planner: simplify check_plan"')
    assert GOOD_LINE in (env.repo / PLANNER).read_text()
    bug = BugTracker(env.ledger).get(dep.bug_id)
    assert bug.root_cause_category == "core_engine" and bug.source == "deploy_supervisor"
    assert "canary_task" in bug.detail and bad in bug.root_cause_detail
    # the live instance was never touched
    after = env.sup.state().live
    assert (after.pid, after.port, after.commit) == (live.pid, live.port, live.commit) and pid_alive(live.pid)
    assert env.through_proxy() == live.commit


# -- path B ----------------------------------------------------------------------------------------------------


@pytest.mark.system
def test_path_b_approval_rate_anomaly_puts_the_previous_instance_back(deploy_env, prefect_harness):
    from prefect.client.orchestration import get_client

    env = deploy_env
    _ensure_fixed(env)
    previous = env.sup.state().live
    candidate = docs_commit(env.repo, "path B candidate")
    with get_client(sync_client=True) as client:
        flow_runs_before = len(client.read_flow_runs(limit=200))
    dep = env.sup.stage(candidate)
    dep = env.sup.health_check(dep.deployment_id)
    assert dep.status == "health_check_passed"
    assert env.sup.cutover(dep.deployment_id).status == "live" and env.through_proxy() == candidate
    before = _ledger_lines(env)
    pusher = _push_validator_rate_when_monitoring(env, dep.deployment_id)
    dep = env.sup.monitor(dep.deployment_id)
    pusher.join(5)
    assert dep.status == "anomaly_detected" and "validator_approval_rate" in dep.note
    rate = [s for s in env.sup.book.signals(dep.deployment_id) if s.signal == "validator_approval_rate" and not s.ok]
    assert rate and rate[-1].value == 0 and rate[-1].baseline == pytest.approx(0.8) and rate[-1].threshold == 0.2
    dep = env.sup.rollback(dep.deployment_id)
    assert _statuses(dep) == HAPPY[:7] + ["anomaly_detected", "rolled_back"]
    # the previous instance (still running) is live again; the candidate is stopped
    live = env.sup.state().live
    assert (live.pid, live.port, live.commit) == (previous.pid, previous.port, previous.commit)
    assert env.through_proxy() == previous.commit and not pid_alive(dep.pid)
    assert git(env.repo, "log", "-1", "--format=%s") == 'Revert "docs: path B candidate"'
    bug = BugTracker(env.ledger).get(dep.bug_id)
    assert bug.root_cause_category == "core_engine" and "validator_approval_rate" in bug.detail
    # no data lost: every record written before the rollback is still there, unchanged and in order
    after = _ledger_lines(env)
    for kind, lines in before.items():
        assert after[kind][: len(lines)] == lines, kind
    assert len(after["task"]) == len(before["task"]) and len(after["node"]) == len(before["node"])
    with get_client(sync_client=True) as client:
        assert len(client.read_flow_runs(limit=200)) == flow_runs_before


# -- failure: the rollback itself fails ----------------------------------------------------------------------


@pytest.mark.system
def test_failure_damaged_previous_instance_ends_blocked_with_rollback_failed(deploy_env):
    env = deploy_env
    _ensure_fixed(env)
    previous = env.sup.state().live
    candidate = docs_commit(env.repo, "failure candidate")
    head_before = candidate
    dep = env.sup.stage(candidate)
    assert env.sup.health_check(dep.deployment_id).status == "health_check_passed"
    assert env.sup.cutover(dep.deployment_id).status == "live"
    # the previous instance dies and its directory is damaged
    stop_group(previous.pid)
    shutil.rmtree(Path(previous.dir) / "graphlemon")
    pusher = _push_validator_rate_when_monitoring(env, dep.deployment_id)
    assert env.sup.monitor(dep.deployment_id).status == "anomaly_detected"
    pusher.join(5)
    dep = env.sup.rollback(dep.deployment_id)
    assert _statuses(dep)[-3:] == ["anomaly_detected", "rollback_failed", "blocked_pending_human"]
    assert dep.blocked_reason == "rollback_failed"
    assert "automatic recovery itself failed" in dep.what_to_do() and "not a request to review" in dep.what_to_do()
    assert previous.dir in dep.what_to_do()
    # the service stays up on the candidate; nothing was reverted
    assert env.through_proxy() == candidate and git(env.repo, "rev-parse", "HEAD") == head_before
    # `graphlemon deploy status` says it plainly
    cli = subprocess.run([sys.executable, "-m", "graphlemon", "deploy", "status", "-p", str(env.repo)],
                         capture_output=True, text=True, env={**os.environ, "COLUMNS": "400"})  # fmt: skip
    assert cli.returncode == 0, cli.stderr
    assert "blocked_pending_human" in cli.stdout and ROLLBACK_FAILED_MESSAGE in cli.stdout
    assert "review" not in cli.stdout.replace("not a request to review", "")
    # a person removes the damaged directory and runs the rollback again: it is checked out anew and served
    git(env.repo, "worktree", "remove", "--force", previous.dir)
    cli = subprocess.run([sys.executable, "-m", "graphlemon", "deploy", "rollback", "-p", str(env.repo),
                          "--start-timeout", "180"],
                         capture_output=True, text=True, env={**os.environ, "COLUMNS": "400"})  # fmt: skip
    assert cli.returncode == 0, cli.stdout + cli.stderr
    dep = env.sup.book.get(dep.deployment_id)
    assert dep.status == "rolled_back" and env.through_proxy() == previous.commit


# -- zero downtime -----------------------------------------------------------------------------------------------


@pytest.mark.system
def test_zero_downtime_no_failed_request_through_cutover_and_rollback(deploy_env):
    env = deploy_env
    _ensure_fixed(env)
    previous = env.sup.state().live.commit
    candidate = docs_commit(env.repo, "zero-downtime candidate")
    load = LoadClient(env.port).start()
    try:
        dep = env.sup.deploy(candidate)
        assert dep.status == "finalized"
        time.sleep(0.5)
        dep = env.sup.rollback(dep.deployment_id, by="human")  # the previous instance was stopped: restarted
        assert dep.status == "rolled_back"
        time.sleep(0.5)
    finally:
        load.stop()
    assert load.failed == []
    assert load.commits() == [previous, candidate, previous]
    assert load.ok > 50
