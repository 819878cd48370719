"""What a Prefect client reads of a devloop run (docs/devloop.md): a red tester attempt is a FAILED task run named
`Red`, a green one COMPLETED; a unit that ends blocked is a FAILED subflow run named `Blocked`; a devloop run that ends
with its task blocked for a person is CANCELLED named `Blocked` (never a green Completed); resumed, every stage
the ledger already holds is a CACHED run whose message names its outcome record. The Prefect UI of the same server
shows it so: screenshots of the retried unit's Task Runs tab and of the resumed run's graph and task runs (saved under
the test's tmp folder and tests/.screenshots/)."""

from __future__ import annotations

import re

import pytest
from browser_kit import launched_chromium, shooting_page
from conftest import CALC, broken_mul, playbook_variant, run_flow, verdict

from graphlemon.taskboard import TaskBoard

pytestmark = pytest.mark.system


@pytest.fixture
def page(request, tmp_path):
    for browser in launched_chromium():
        yield from shooting_page(browser, request, tmp_path, viewport=(1400, 1000))


def _runs(client, task_id: str):
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterName

    runs = client.read_flow_runs(flow_run_filter=FlowRunFilter(name=FlowRunFilterName(like_=task_id)))
    return sorted(runs, key=lambda r: r.created)


def _subflows(client, flow_run_id):
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterParentFlowRunId

    return client.read_flow_runs(
        flow_run_filter=FlowRunFilter(parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[flow_run_id]))
    )


def _task_runs(client, flow_run_id):
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    return client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))


def _tab(page, ui: str, flow_run_id, tab: str, shot: str) -> None:
    """The flow run's page in the Prefect UI, `tab` open, saved as `shot` once its list has rendered."""
    from playwright.sync_api import expect

    page.goto(f"{ui}/runs/flow-run/{flow_run_id}")
    page.locator(".p-tab", has_text=tab).click()
    expect(page.locator(".state-list-item").first).to_be_visible(timeout=30_000)
    page.wait_for_timeout(1500)  # the run graph above the tabs draws into a canvas a little later
    page.shot(shot)


def _row(page, name: str):
    """The UI's list row (task or subflow run) of the run named exactly `name`."""
    return page.locator(".state-list-item").filter(has=page.get_by_text(name, exact=True))


def test_red_attempts_fail_blocked_units_fail_resumed_stages_are_cached(calc, tmp_path, prefect_harness, page):
    from playwright.sync_api import expect
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL

    def edit(data):
        broken_mul(data, attempts=(1, 2))  # red on the unit's first two attempts (one per round), green on the third
        verdict(data, "coder", "planning", "coder")  # the validator cannot agree: a person decides

    playbook = playbook_variant(tmp_path, CALC, edit)
    first = run_flow(calc, "Build calc", playbook, max_unit_attempts=1)
    assert (first["status"], first["blocked_reason"]) == ("blocked_pending_human", "validator_inconclusive")
    task_id = first["task_id"]
    TaskBoard(calc.ledger).manual_resume(task_id, note="mul must multiply")
    assert run_flow(calc, None, playbook, task_id=task_id, max_unit_attempts=2)["status"] == "done"

    with get_client(sync_client=True) as client:
        devloops = [r for r in _runs(client, task_id) if r.name.startswith("devloop")]
        assert len(devloops) == 2, [r.name for r in devloops]
        before, after = devloops
        # the run that ended with its task blocked is not a green Completed: Cancelled, named for why, with the reason
        assert (before.state.type.value, before.state.name) == ("CANCELLED", "Blocked"), before.state
        assert before.state.message.startswith("validator_inconclusive: ") and "graphlemon resume" in before.state.message
        units = {u.name: u for u in _subflows(client, before.id)}
        assert (units["unit mul · round 0"].state.type.value, units["unit mul · round 0"].state.name) == (
            "FAILED", "Blocked")  # fmt: skip
        red = {t.name: (t.state.type.value, t.state.name) for t in _task_runs(client, units["unit mul · round 0"].id)}
        assert red["tester mul · attempt 1"] == ("FAILED", "Red"), red

        resumed = {u.name: u for u in _subflows(client, after.id)}
        retried = resumed["unit mul · round 1"]
        green = {t.name: (t.state.type.value, t.state.name) for t in _task_runs(client, retried.id)}
        assert green["tester mul · attempt 1"] == ("FAILED", "Red"), green  # a red attempt, then its green retry
        assert green["tester mul · attempt 2"] == ("COMPLETED", "Completed"), green
        reused = resumed["unit mul · round 0"].state  # replayed from its outcome record: red then, red still
        assert (reused.type.value, reused.name) == ("FAILED", "Cached"), reused
        assert reused.message.startswith(f"reused outcomes.ndjson#ne-{task_id}-coder-mul-r0/outcome: recorded red")
        cached = {t.name: t.state.message for t in _task_runs(client, after.id) if t.state.name == "Cached"}
        assert {"planner · round 0", "validator · round 0"} <= set(cached), cached
        assert f"outcomes.ndjson#ne-{task_id}-planner-r0/outcome" in cached["planner · round 0"]

    ui = PREFECT_API_URL.value().removesuffix("/api")
    _tab(page, ui, retried.id, "Task Runs", "unit-task-runs")  # the red attempt red, its retry green
    expect(_row(page, "tester mul · attempt 1")).to_have_class(re.compile(r"state-list-item--failed"))
    expect(_row(page, "tester mul · attempt 1").locator(".state-badge")).to_have_text("Red")
    expect(_row(page, "tester mul · attempt 2")).to_have_class(re.compile(r"state-list-item--completed"))
    _tab(page, ui, after.id, "Task Runs", "resumed-task-runs")  # the graph, and the stages reused from the ledger
    for stage in ("planner · round 0", "validator · round 0"):
        expect(_row(page, stage).locator(".state-badge")).to_have_text("Cached")
    _tab(page, ui, before.id, "Task Runs", "blocked-run")  # its badge grey, named Blocked
    expect(page.locator(".state-badge").first).to_have_text("Blocked")
    _tab(page, ui, after.id, "Subflow Runs", "resumed-subflow-runs")  # the unit blocked before: reused, still red
    expect(_row(page, "unit mul · round 0").locator(".state-badge")).to_have_text("Cached")
    expect(_row(page, "unit mul · round 0")).to_have_class(re.compile(r"state-list-item--failed"))
