"""Violations reach the person (graphlemon/violations.py): one fold of a task's refused actions, said in the run's
closing lines, `graphlemon status`, the console's task page and the evidence pack; a task with refused actions never
reads as a clean "done"."""

from __future__ import annotations

import json

from starlette.testclient import TestClient

from graphlemon.console.app import ConsoleSettings, create_app
from graphlemon.console.project_registry import ProjectRegistry
from graphlemon.devloop.escalation_pack import evidence_markdown
from graphlemon.models import NodeEvent
from graphlemon.stages.session import LoopSession
from graphlemon.taskboard import TaskBoard
from graphlemon.violations import fold, violation_event, with_refusals

TOKEN = "t" * 32
HOSTILE = "tests/x\u202eyp.txt` [link](http://evil.invalid) <script>alert(1)</script>\x1b[31m"


def _done_task_with_refusals(project, count: int = 3) -> str:
    board = TaskBoard(project.ledger)
    task = board.create("Implement a snake game")
    for status in ("planning", "coding", "validating", "done"):
        board.transition(task.task_id, status)
    other = board.create("another task")
    for i in range(count):
        project.ledger.append(violation_event(f"sandbox: {HOSTILE} #{i}", node_exec_id=f"ne-t{i}", stage="tester",
                                              task_id=task.task_id, unit_id="add", what="test run"))  # fmt: skip
    project.ledger.append(violation_event("sandbox: other", node_exec_id="ne-o", stage="coder", task_id=other.task_id))
    project.ledger.append(NodeEvent(node_exec_id="ne-x", stage="tester", task_id=task.task_id, status="running"))
    return task.task_id


def test_the_fold_counts_only_the_tasks_violations_and_says_them_safely(project):
    task_id = _done_task_with_refusals(project)
    refused = fold(project.ledger.read_as("node", NodeEvent), task_id)
    assert refused.count == 3 and refused.by_stage() == {"tester": 3}
    assert refused.headline() == "3 refused actions (tester 3)"
    assert with_refusals("done", refused) == "done — with 3 refused actions (tester 3)"
    assert with_refusals("done", fold([], task_id)) == "done"
    shown = refused.actions[0].shown
    assert "\u202e" not in shown and "\x1b" not in shown and "\\u202e" in shown and "\\x1b" in shown
    assert len(fold(project.ledger.read_as("node", NodeEvent), task_id).lines(limit=2)) == 3  # 2 and "... 1 more"


def test_status_and_its_json_never_read_as_a_clean_done(project, cli_in_process):
    task_id = _done_task_with_refusals(project)
    table = cli_in_process("status", "--project", str(project.root))
    assert "with 3 refused actions" in table.stdout and f"graphlemon status {task_id[:12]}" in table.stdout
    detail = cli_in_process("status", task_id, "--project", str(project.root), "--wide")
    assert "done — with 3 refused actions (tester 3)" in detail.stdout
    assert "refused actions (3)" in detail.stdout and "\u202e" not in detail.stdout
    data = json.loads(cli_in_process("status", "--project", str(project.root), "--json").stdout)
    by_id = {t["task_id"]: t for t in data["tasks"]}
    assert by_id[task_id]["violations"]["count"] == 3 and by_id[task_id]["violations"]["by_stage"] == {"tester": 3}


def test_the_console_shows_the_count_on_the_dashboard_and_each_action_on_the_task(project, tmp_path):
    task_id = _done_task_with_refusals(project)
    registry = ProjectRegistry(tmp_path / "config")
    registry.register(project)
    app = create_app(ConsoleSettings(token=TOKEN, registry=registry))
    with TestClient(app, base_url="http://127.0.0.1:8766", cookies={"graphlemon_console": TOKEN}) as c:
        rows = c.get(f"/api/projects/{project.project_id}/tasks").json()["tasks"]
        assert {r["task_id"]: r["refused_actions"] for r in rows}[task_id] == 3
        detail = c.get(f"/api/projects/{project.project_id}/tasks/{task_id}").json()
    assert detail["violations"]["count"] == 3 and detail["violations"]["headline"] == "3 refused actions (tester 3)"
    assert all("\u202e" not in a["shown"] for a in detail["violations"]["actions"])


def test_the_evidence_pack_names_each_refused_action_as_text(project):
    task_id = _done_task_with_refusals(project, count=2)
    summary, _ = evidence_markdown(LoopSession(project, task_id), "not_converging", "stuck")
    section = summary.split("## Refused actions", 1)[1].split("\n## ", 1)[0]
    assert "(2 refused actions (tester 2))" in section.splitlines()[0]
    assert "\\[link\\](http://evil.invalid)" in section and "\\<script\\>" in section and "\\`" in section
