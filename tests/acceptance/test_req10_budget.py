"""REQ-10: the per-task budget guardrail (token_count / cost_usd), c_budget_config_update, and its own blocked_reason.

The happy and boundary cases run the calc loop on the anthropic backend (the real SDK)
against the fake Messages server, through the CLI (`graphlemon run --budget-tokens`,
`graphlemon budget set|show`, `graphlemon resume`) in subprocesses; the fake model
answers each role from the calc playbook. The failure case shows that a plan usage
limit and an exhausted budget end in two different blocked reasons.
"""

from __future__ import annotations

import json
import re

import pytest
from _loop_helpers import CALC, CalcModel, role_of
from conftest import make_repo, playbook_variant
from fakes.messages_server import FakeMessagesServer

from graphlemon.agents.budget import budget_status, update_budget
from graphlemon.devloop.loop import run_devloop
from graphlemon.devloop.stages import Stages
from graphlemon.errors import ErrorCode, GraphLemonError
from graphlemon.models import BudgetConfig, EscalationRecord, TaskEvent, UsageRecord
from graphlemon.stages.session import LoopConfig, LoopSession
from graphlemon.stages.usage_limit_wait import SimulatedClock
from graphlemon.taskboard import TaskBoard

API_KEY = "sk-ant-test-budget-0123456789"
LIMIT = 10000  # room for the planner's two calls (~8.1k tokens, the second estimated at ~9.4k), not for a coder's first one (~3.8k)


@pytest.fixture
def server():
    with FakeMessagesServer(api_key=API_KEY) as fake:
        fake.responder = CalcModel()
        yield fake


@pytest.fixture
def blocked(tmp_path, server, cli):
    """`graphlemon run --budget-tokens LIMIT` on calc with the anthropic backend: blocked by the budget."""
    project = make_repo(tmp_path / "calc", CALC / "repo")
    env = {"ANTHROPIC_API_KEY": API_KEY, "ANTHROPIC_BASE_URL": server.base_url}

    def graphlemon(*args: str):
        return cli(*args, "--project", str(project.root), env=env)

    run = graphlemon("run", "Build calc", "--executor", "anthropic", "--engine", "direct", "--budget-tokens",
                     str(LIMIT), "--json")  # fmt: skip
    assert run.returncode == 1, run.stderr
    return project, json.loads(run.stdout), graphlemon


def task_usage(project, task_id: str) -> list[UsageRecord]:
    return [u for u in project.ledger.read_as("usage", UsageRecord) if u.task_id == task_id]


def total(records: list[UsageRecord]) -> int:
    return sum(u.input_tokens + u.output_tokens + u.cache_read_tokens + u.cache_write_tokens for u in records)


@pytest.mark.system
def test_happy_a_small_token_budget_blocks_before_the_call_that_would_cross_it(blocked, server):
    project, task, graphlemon = blocked
    assert task["status"] == "blocked_pending_human" and task["blocked_reason"] == "budget_exceeded"
    usage = task_usage(project, task["task_id"])
    sent = server.messages_requests
    assert len(sent) >= 1 and len(sent) == len(usage)  # it ran until the limit; every request sent was accounted
    assert total(usage) <= LIMIT
    m = re.search(rf"about (\d+) input tokens .* budget of {LIMIT:,} tokens \(used ([\d,]+) tokens\); the call was not sent",
                  task["note"])  # fmt: skip
    used = int(m[2].replace(",", "")) if m else None
    assert m and used == total(usage) and int(m[1]) + used > LIMIT  # the refused call would have crossed
    assert {role_of(r.body["system"]) for r in sent} == {"planner"}  # the coder's call never reached the server
    [pack] = [e for e in project.ledger.read_as("escalation", EscalationRecord) if e.task_id == task["task_id"]]
    assert pack.blocked_reason == "budget_exceeded" and "graphlemon budget set" in pack.summary_md
    shown = graphlemon("budget", "show", task["task_id"], "--json")
    assert shown.returncode == 0, shown.stderr
    view = json.loads(shown.stdout)
    assert (view["limit_type"], view["limit"], view["used"]) == ("token_count", LIMIT, total(usage))
    assert view["remaining"] == LIMIT - total(usage) and view["blocked_reason"] == "budget_exceeded"


@pytest.mark.system
def test_boundary_raising_the_budget_makes_the_task_schedulable_and_resume_finishes_it(blocked, server):
    project, task, graphlemon = blocked
    task_id = task["task_id"]
    used = total(task_usage(project, task_id))
    too_low = json.loads(graphlemon("budget", "set", task_id, "--limit", str(used - 1), "--json").stdout)
    assert too_low["requeued"] is False and too_low["task_status"] == "blocked_pending_human"
    raised = graphlemon("budget", "set", task_id, "--limit", "200000", "--json")
    assert raised.returncode == 0, raised.stderr
    view = json.loads(raised.stdout)
    assert view["requeued"] is True and view["task_status"] == "queued" and view["limit"] == 200000
    before = len(server.messages_requests)

    resumed = graphlemon("resume", task_id, "--executor", "anthropic", "--engine", "direct", "--json")
    assert resumed.returncode == 0, resumed.stderr + resumed.stdout
    assert json.loads(resumed.stdout)["status"] == "done"
    assert {role_of(r.body["system"]) for r in server.messages_requests[before:]} == {"coder", "tester"}
    assert total(task_usage(project, task_id)) <= 200000
    statuses = [e.status for e in project.ledger.read_as("task", TaskEvent) if e.task_id == task_id]
    assert statuses[-6:] == ["blocked_pending_human", "queued", "coding", "integrating", "validating", "done"]
    limits = [b.limit_value for b in project.ledger.read_as("budget", BudgetConfig) if b.task_id == task_id]
    assert limits == [LIMIT, used - 1, 200000]  # every change is a record (append-only)


def test_failure_a_plan_usage_limit_and_an_exhausted_budget_are_two_different_reasons(tmp_path):
    def loop(name: str, edit, limit: int, clock=None):
        project = make_repo(tmp_path / name, CALC / "repo")
        task = TaskBoard(project.ledger).create("Build calc")
        update_budget(project.ledger, task.task_id, limit)
        session = LoopSession(project, task.task_id, LoopConfig(playbook=playbook_variant(tmp_path, CALC, edit)))
        if clock is not None:
            session.executor.clock = clock
        final = run_devloop(session, Stages(session.run))
        return project, final, [e.status for e in project.ledger.read_as("task", TaskEvent)]

    def quota(data):  # add's coder keeps hitting the plan's session limit
        data["turns"].insert(0, {"match": {"role": "coder", "unit": "add"}, "raise": {"error": "quota_exceeded"}})

    project, by_quota, statuses = loop("quota", quota, 1_000_000, SimulatedClock())
    assert by_quota.blocked_reason == "usage_limit_wait_timeout" and "waiting_for_quota" in statuses
    assert budget_status(project.ledger, by_quota.task_id).remaining > 0  # the budget had room: not its path

    project, by_budget, statuses = loop("budget", lambda data: None, 2000)  # the planner spends 1800 tokens
    assert by_budget.blocked_reason == "budget_exceeded" and "waiting_for_quota" not in statuses
    assert budget_status(project.ledger, by_budget.task_id).used <= 2000
    assert by_quota.blocked_reason != by_budget.blocked_reason


@pytest.mark.system
@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["budget", "set", "task-nope", "--limit", "100"], "TASK_NOT_FOUND"),
        (["budget", "show", "task-nope"], "TASK_NOT_FOUND"),
        (["budget", "set", "{task}", "--limit", "0"], "INVALID_PARAM"),
        (["budget", "set", "{task}", "--limit", "1.5"], "INVALID_PARAM"),
        (["budget", "set", "{task}", "--limit", "nan", "--type", "cost_usd"], "INVALID_PARAM"),
        (["budget", "set", "{task}", "--limit", "5", "--type", "bananas"], "INVALID_PARAM"),
        (["run", "Build calc", "--engine", "direct", "--playbook", str(CALC / "playbook.yaml"), "--budget-tokens", "0"],
         "INVALID_PARAM"),
        (["run", "Build calc", "--engine", "direct", "--playbook", str(CALC / "playbook.yaml"), "--budget-tokens", "9",
          "--budget-usd", "1"], "INVALID_PARAM"),
    ],
)  # fmt: skip
def test_failure_bad_budget_input_is_a_clear_error_and_writes_nothing(tmp_path, cli, args, code):
    project = make_repo(tmp_path / "calc", CALC / "repo")
    task = TaskBoard(project.ledger).create("Build calc")
    before = (project.ledger.read("task"), project.ledger.read("budget"))
    out = cli(*[a.replace("{task}", task.task_id) for a in args], "--project", str(project.root))
    assert out.returncode == 2 and out.stderr.startswith(f"error[{code}]"), out.stderr
    assert (project.ledger.read("task"), project.ledger.read("budget")) == before


def test_failure_a_budget_on_a_finished_task_is_refused(tmp_path):
    project = make_repo(tmp_path / "calc", CALC / "repo")
    board = TaskBoard(project.ledger)
    task = board.create("Build calc")
    board.transition(task.task_id, "abandoned")
    with pytest.raises(GraphLemonError) as info:
        update_budget(project.ledger, task.task_id, 1000)
    assert info.value.code == ErrorCode.INVALID_PARAM and project.ledger.read("budget") == []
