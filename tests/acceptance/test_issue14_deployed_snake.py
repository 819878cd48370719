"""End to end on the session's real Prefect server and process workers (tests/prefect_stack.py): the `devloop`
deployment is made with `prefect deploy` from a COPY of this repository in another folder, and that folder is
deleted before the workers start (its portable pull step runs the worker's own GraphLemon). One run of the snake goal with the
scripted executor and the Budget Guardrail block `tight` (1,000 tokens):

* the block is honoured: the task starts with that budget and blocks `budget_exceeded` before its first call (11);
* the run is named after its task (1) and, suspended, its state message says why (2);
* `graphlemon budget set` + `graphlemon resume` answer the suspended run: it finishes on its worker and no run is
  left Suspended (6);
* its red tester attempts end in a Failed state named `Red` (red in the UI), the green one Completed;
* every artifact key of the run names the task (14): `<task>-…`.

Headless Chromium (Debian's chromium through Playwright) shoots the Prefect UI on the way: the Resume form of the
suspended run (and its Details tab with the State Message), the finished run's graph, the collision unit's subflow
and its Task Runs tab (the red turns named Red), and the runs list (tests/.screenshots/issue14-prefect-*.png).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SNAKE, SNAKE_GOAL, make_repo
from prefect_stack import told_why_it_waits

from graphlemon.models import BudgetConfig
from graphlemon.taskboard import TaskBoard

pytestmark = pytest.mark.system

pytestmark = [pytest.mark.system, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "tests" / ".screenshots"


def _graphlemon(stack, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "graphlemon", *args], env=stack.env, capture_output=True, text=True,
                          timeout=300, cwd=ROOT)  # fmt: skip


def _save_budget_block(stack) -> None:
    from graphlemon.blocks.budget import BudgetGuardrail

    with stack.client():  # points Block.save at the stack's server
        BudgetGuardrail(limit_type="token_count", limit_value=1000).save("tight", overwrite=True)


def test_happy_a_deployment_from_a_deleted_copy_runs_the_snake_goal_natively(prefect_stack, tmp_path_factory):
    from prefect.client.schemas.filters import (
        ArtifactFilter,
        ArtifactFilterFlowRunId,
        FlowRunFilter,
        FlowRunFilterId,
        FlowRunFilterName,
        FlowRunFilterState,
        FlowRunFilterStateType,
        LogFilter,
        LogFilterTaskRunId,
    )

    stack = prefect_stack
    assert not stack.deployed_from.exists()  # nothing of the deploying folder may be needed at run time
    tmp = tmp_path_factory.mktemp("issue14")
    project = make_repo(tmp / "snake", SNAKE / "repo")
    _save_budget_block(stack)
    with stack.client() as client:
        deployment = client.read_deployment_by_name("devloop/devloop")
        params = {"goal": SNAKE_GOAL, "project": str(project.root), "executor": "scripted",
                  "playbook": str(SNAKE / "playbook.yaml"), "budget_block": "tight",
                  "config": {"max_unit_attempts": 3}}  # fmt: skip
        run = client.create_flow_run_from_deployment(deployment.id, parameters=params)
        stack.wait(client, run.id, done=told_why_it_waits, timeout=300)
        (task,) = TaskBoard(project.ledger).all().values()
        assert (task.status, task.blocked_reason) == ("blocked_pending_human", "budget_exceeded")
        budgets = [b for b in project.ledger.read_as("budget", BudgetConfig) if b.task_id == task.task_id]
        assert [(b.limit_value, b.by) for b in budgets] == [(1000, "budget guardrail block 'tight'")]
        suspended = client.read_flow_run(run.id)
        assert suspended.name == f"devloop · {SNAKE_GOAL} · {task.task_id}"
        assert suspended.state.message.startswith(f"{task.task_id} blocked: budget_exceeded — ")
        assert f"evidence: artifact {task.task_id}-escalation" in suspended.state.message
        ui = UiShots(stack.url, tmp)
        try:
            ui.resume_form(run.id, task.task_id)

            raised = _graphlemon(stack, "budget", "set", task.task_id, "--limit", "1000000", "-p", str(project.root))
            assert raised.returncode == 0 and "queued again" in raised.stdout, raised.stderr
            resumed = _graphlemon(stack, "resume", task.task_id, "-p", str(project.root))
            assert resumed.returncode == 0, resumed.stderr
            assert "resumed the waiting Prefect flow run" in resumed.stdout, resumed.stdout
            state = stack.wait(client, run.id, timeout=600)
            assert (state.type.value, state.name) == ("COMPLETED", "Completed"), f"{state.message}\n{stack.tail()}"
            ran = stack.run_tree(client, run.id)  # the run and its subflows: other tests' runs share the server
            (unit,) = client.read_flow_runs(
                flow_run_filter=FlowRunFilter(
                    id=FlowRunFilterId(any_=ran), name=FlowRunFilterName(any_=["unit collision · round 0"])
                )
            )
            ui.graph_and_list(run.id, unit.id)
        finally:
            ui.close()
        waiting = client.read_flow_runs(
            flow_run_filter=FlowRunFilter(state=FlowRunFilterState(type=FlowRunFilterStateType(any_=["PAUSED"])))
        )
        waiting = [r for r in waiting if r.parameters.get("project") == str(project.root)]
        assert waiting == [], [(r.name, r.state.name) for r in waiting]  # the CLI left no suspended run behind
        testers = [
            t for t in client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=ran)))
            if t.name.startswith("tester ")
        ]  # fmt: skip
        logs = client.read_logs(log_filter=LogFilter(task_run_id=LogFilterTaskRunId(any_=[t.id for t in testers])))
        artifacts = client.read_artifacts(artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=ran)))
        keys = {a.key for a in artifacts if a.key}
    scope = f"{task.task_id}-"
    assert {"brd", "sdd", "bugs", "progress", "escalation"} <= {k.removeprefix(scope) for k in keys}
    assert all(k.startswith(scope) for k in keys), sorted(keys)  # every key names its task (point 14)
    task = TaskBoard(project.ledger).get(task.task_id)
    assert task.status == "done"
    red = sorted(t.name for t in testers if t.state.name == "Red")
    assert red == ["tester collision · attempt 1", "tester collision · attempt 2"], [
        (t.name, t.state.name) for t in testers
    ]
    assert all(t.state.type.value == ("FAILED" if t.state.name == "Red" else "COMPLETED") for t in testers)
    assert {t.state.name for t in testers} == {"Red", "Completed"}
    unit_of = {t.id: t.name.split()[1] for t in testers}  # a tester logs its own unit's timeline, no other unit's
    story = [(unit_of[log.task_run_id], log.message) for log in logs if log.message.startswith(("unit_", "test_"))]
    assert story and all(f"[{unit}]" in message for unit, message in story), story
    assert any(m.startswith("test_failed [collision]") for _, m in story)
    data = json.loads(_graphlemon(stack, "budget", "show", task.task_id, "--json", "-p", str(project.root)).stdout)
    assert data["limit"] == 1_000_000 and data["used"] > 1000  # it ran on the raised budget, not the block's again


class UiShots:
    """Headless Chromium on the stack's Prefect UI; every page is saved as tests/.screenshots/issue14-prefect-*.png
    (and in the test's tmp dir)."""

    def __init__(self, api_url: str, tmp: Path) -> None:
        from playwright.sync_api import sync_playwright

        chromium = shutil.which("chromium") or shutil.which("chromium-browser")
        assert chromium, "Debian's chromium is not installed: `make fixtures` installs it (apt-get install chromium)"
        self.ui, self.tmp = api_url.removesuffix("/api"), tmp
        self._pw = sync_playwright().start()
        self._browser = self._pw.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        self.page = self._browser.new_page(viewport={"width": 1500, "height": 1000})

    def shot(self, name: str, full_page: bool = False) -> None:
        SHOTS.mkdir(parents=True, exist_ok=True)
        for folder in (self.tmp, SHOTS):
            self.page.screenshot(path=str(folder / f"issue14-prefect-{name}.png"), full_page=full_page)

    def resume_form(self, run_id, task_id: str) -> None:
        """The suspended run's page, then its Resume form: the description says why, the note says where it goes."""
        self.page.goto(f"{self.ui}/runs/flow-run/{run_id}", wait_until="networkidle")
        self.page.get_by_text("Suspended").first.wait_for(timeout=60_000)
        self.shot("suspended-run")
        self.page.get_by_text("Details", exact=True).first.click()  # the Details tab shows the State Message
        self.page.get_by_text("State Message").first.wait_for(timeout=30_000)
        self.page.get_by_text(f"{task_id} blocked: budget_exceeded").first.wait_for(timeout=30_000)
        self.shot("suspended-details")
        self.page.get_by_role("button", name="Resume").first.click()
        dialog = self.page.get_by_role("dialog")
        dialog.get_by_text(f"{task_id} is blocked: budget_exceeded").wait_for(timeout=30_000)
        dialog.get_by_text("It reaches the coder").first.wait_for(timeout=30_000)
        self.shot("resume-form")
        self.page.keyboard.press("Escape")

    def graph_and_list(self, run_id, unit_run_id) -> None:
        """The finished run's graph (planner, one subflow per unit and round, validator, integrator), the collision
        unit's subflow (its coder/tester turns, the red ones named Red) and the runs list."""
        for name, shown_id, text in (("run-graph", run_id, "Completed"), ("unit-subflow", unit_run_id, "tester")):
            self.page.goto(f"{self.ui}/runs/flow-run/{shown_id}", wait_until="networkidle")
            self.page.get_by_text(text).first.wait_for(timeout=60_000)
            self.page.wait_for_timeout(3000)  # the graph canvas draws after the data arrives
            self.shot(name)
        self.page.get_by_text("Task Runs", exact=True).first.click()  # the unit's turns with their state names
        self.page.get_by_text("Red").first.wait_for(timeout=30_000)
        self.shot("unit-task-runs", full_page=True)
        self.page.goto(f"{self.ui}/runs", wait_until="networkidle")
        self.page.get_by_text("devloop ·").first.wait_for(timeout=60_000)
        self.shot("runs-list", full_page=True)

    def close(self) -> None:
        self._browser.close()
        self._pw.stop()
