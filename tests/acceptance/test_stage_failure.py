"""A stage that fails for good, and a backend that cannot run: the task never stays "running" with nobody
running it, a misconfigured run writes nothing, and a deployed-style run takes its credentials from the
Prefect blocks."""

from __future__ import annotations

import json

import pytest
from _loop_helpers import CALC, CalcModel, role_of
from conftest import make_repo, playbook_variant, turn
from fakes.messages_server import FakeMessagesServer

from graphlemon.devloop.loop import run_devloop
from graphlemon.devloop.stages import Stages
from graphlemon.models import EscalationRecord, TaskEvent, UsageRecord
from graphlemon.stages.session import LoopConfig, LoopSession
from graphlemon.taskboard import TaskBoard

API_KEY = "sk-ant-test-blocks-0123456789"


@pytest.mark.system
def test_a_stage_that_fails_for_good_blocks_the_task_with_the_error_and_resume_finishes_it(tmp_path):
    project = make_repo(tmp_path / "calc", CALC / "repo")

    def api_down(data):  # the coder of `add` cannot reach its model
        turn(data, role="coder", unit="add")["raise"] = {"error": "executor_error", "message": "API unreachable"}

    task = TaskBoard(project.ledger).create("Build calc")
    broken = LoopSession(project, task.task_id, LoopConfig(playbook=playbook_variant(tmp_path, CALC, api_down)))
    final = run_devloop(broken, Stages(broken.run))
    assert (final.status, final.blocked_reason) == ("blocked_pending_human", "stage_failed")
    assert final.resume_status == "coding" and "EXECUTOR_ERROR" in final.note and "API unreachable" in final.note
    [pack] = project.ledger.read_as("escalation", EscalationRecord)
    assert pack.blocked_reason == "stage_failed" and "API unreachable" in pack.summary_md
    planner_turns = sum(u.role == "planner" for u in project.ledger.read_as("usage", UsageRecord))

    TaskBoard(project.ledger).manual_resume(task.task_id, note="the API is back")
    fixed = LoopSession(project, task.task_id, LoopConfig(playbook=CALC / "playbook.yaml"))
    assert run_devloop(fixed, Stages(fixed.run)).status == "done"
    assert sum(u.role == "planner" for u in project.ledger.read_as("usage", UsageRecord)) == planner_turns
    statuses = [e.status for e in project.ledger.read_as("task", TaskEvent)]
    assert statuses[statuses.index("blocked_pending_human") + 1] == "coding"  # back where it stopped


@pytest.mark.system
@pytest.mark.parametrize(
    ("executor", "env", "says"),
    [
        ("anthropic", {"ANTHROPIC_API_KEY": ""}, "needs an API key"),
        ("claude_code", {"GRAPHLEMON_CLAUDE_BIN": "/nonexistent/claude"}, "is not on PATH"),
    ],
)
def test_a_backend_that_cannot_run_is_refused_before_anything_is_written(tmp_path, cli, executor, env, says):
    project = make_repo(tmp_path / "calc", CALC / "repo")
    root = str(project.root)
    run = cli("run", "Build calc", "--executor", executor, "--engine", "direct", "--project", root, env=env)
    assert run.returncode == 2 and run.stderr.startswith("error[INVALID_PARAM]:") and says in run.stderr
    assert project.ledger.read("task") == []

    board = TaskBoard(project.ledger)
    blocked = board.create("Build calc")
    board.transition(blocked.task_id, "planning")
    board.transition(blocked.task_id, "blocked_pending_human", blocked_reason="stage_failed")
    before = project.ledger.read("task")
    resume = cli("resume", blocked.task_id, "--executor", executor, "--engine", "direct", "--project", root, env=env)
    assert resume.returncode == 2 and says in resume.stderr
    assert project.ledger.read("task") == before  # the block stays, with nobody told it was resumed


@pytest.mark.system
@pytest.mark.slow
def test_a_prefect_run_takes_the_api_key_from_the_anthropic_credentials_block(tmp_path, prefect_harness, monkeypatch):
    from graphlemon.blocks.credentials import AnthropicCredentials
    from graphlemon.flows.devloop import devloop

    project = make_repo(tmp_path / "calc", CALC / "repo")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with FakeMessagesServer(api_key=API_KEY) as server:  # answers 401 to any other key
        server.responder = CalcModel()
        AnthropicCredentials.register_type_and_schema()
        AnthropicCredentials(api_key=API_KEY, base_url=server.base_url).save("default", overwrite=True)
        try:
            final = devloop(goal="Build calc", project=str(project.root), executor="anthropic")
        finally:
            AnthropicCredentials.delete("default")  # other tests read the environment
    assert final["status"] == "done", json.dumps(final)
    assert {role_of(r.body["system"]) for r in server.messages_requests} >= {"planner", "coder", "tester"}
