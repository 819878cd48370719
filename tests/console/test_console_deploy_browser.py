"""The console's deploy page (REQ-15) in real headless Chromium: a deployment's state machine, signals and
timeline, and the plain message when the automatic rollback itself failed. The deployments are written by the
supervisor's own ledger calls (DeploymentBook), the same records a real deployment leaves
(tests/acceptance/test_req15_deploy.py drives real ones)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from browser_kit import SHOTS, chromium_path

from graphlemon.console.app import ConsoleSettings
from graphlemon.console.project_registry import ProjectRegistry
from graphlemon.console.server import BackgroundServer
from graphlemon.deploy.deployments import ROLLBACK_FAILED_MESSAGE, DeploymentBook
from graphlemon.models import DeployHealthSignal
from graphlemon.project import init_project

pytestmark = pytest.mark.system

PREVIOUS, CANDIDATE = "a" * 40, "b" * 40


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    repo = tmp_path_factory.mktemp("deploy-page")
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "start"], cwd=repo, check=True)
    handle = init_project(repo).project
    book = DeploymentBook(handle.ledger)
    # one finalized deployment, then one whose rollback failed
    first = book.stage(
        commit=PREVIOUS,
        instance_dir="/srv/instances/" + PREVIOUS,
        previous_commit="c" * 40,
        task_id="task-20260101-000000-ab12",
    )  # the merge of a DevLoop task (self-hosted)
    for status in ("candidate_starting", "health_check_running", "health_check_passed", "cutover_in_progress",
                   "live", "monitoring", "monitoring_window_clean", "finalized"):  # fmt: skip
        book.move(first.deployment_id, status)
    dep = book.stage(commit=CANDIDATE, instance_dir="/srv/instances/" + CANDIDATE, previous_commit=PREVIOUS,
                     previous_instance_dir="/srv/instances/" + PREVIOUS)  # fmt: skip
    for status in ("candidate_starting", "health_check_running", "health_check_passed", "cutover_in_progress",
                   "live", "monitoring"):  # fmt: skip
        book.move(dep.deployment_id, status, duration_ms=12)
    book.record(
        DeployHealthSignal(deployment_id=dep.deployment_id, phase="health_check", signal="canary_task", ok=True,
                           value=61.2, detail="task done, bugs as expected"),
        DeployHealthSignal(deployment_id=dep.deployment_id, phase="monitoring", signal="health_endpoint", ok=True,
                           value=200, detail="HTTP 200"),
        DeployHealthSignal(deployment_id=dep.deployment_id, phase="monitoring", signal="validator_approval_rate",
                           ok=False, value=0.0, baseline=0.8, threshold=0.2,
                           detail="0.00 over 5 validations vs baseline 0.80 <b>not markup</b>"),
    )  # fmt: skip
    book.move(dep.deployment_id, "anomaly_detected", note="validator_approval_rate: 0.00 vs 0.80")
    failed = book.move(dep.deployment_id, "rollback_failed", blocked_reason="rollback_failed",
                       note=f"{ROLLBACK_FAILED_MESSAGE} Restarting it failed")  # fmt: skip
    book.move(dep.deployment_id, "blocked_pending_human", blocked_reason="rollback_failed", note=failed.what_to_do())
    return handle, first.deployment_id, dep.deployment_id


@pytest.fixture(scope="module")
def server(tmp_path_factory, project):
    registry = ProjectRegistry(tmp_path_factory.mktemp("deploy-page-config"))
    registry.register(project[0])
    srv = BackgroundServer(ConsoleSettings(token="d" * 32, registry=registry)).start()
    yield srv
    srv.stop()


def test_deploy_page_shows_machine_signals_timeline_and_the_plain_rollback_failure(server, project, tmp_path):
    from playwright.sync_api import sync_playwright

    handle, first_id, dep_id = project
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path(), args=["--no-sandbox", "--disable-gpu"])
        try:
            pg = browser.new_page(viewport={"width": 1400, "height": 1000})
            pg.context.add_cookies([{"name": "graphlemon_console", "value": server.settings.token, "url": server.url}])
            errors: list[str] = []
            pg.on("pageerror", lambda exc: errors.append(str(exc)))
            pg.goto(f"{server.url}/#/p/{handle.project_id}/deploy")
            pg.wait_for_selector("#deploy-machine")
            machine = pg.locator("#deploy-machine")
            assert machine.locator(".state[data-current=yes]").first.inner_text() == "blocked_pending_human"
            visited = pg.eval_on_selector_all("#deploy-machine .state[data-visited=yes]",
                                              "els => [...new Set(els.map(e => e.dataset.state))]")  # fmt: skip
            assert {"monitoring", "anomaly_detected", "rollback_failed", "blocked_pending_human"} <= set(visited)
            assert "finalized" not in visited and "rolled_back" not in visited
            alert = pg.locator("#deploy-alert").inner_text()
            assert "Automatic recovery failed — not a code review" in alert and ROLLBACK_FAILED_MESSAGE in alert
            assert (
                pg.locator("#deploy-signals tr[data-signal=validator_approval_rate]").get_attribute("data-ok") == "no"
            )
            assert "<b>not markup</b>" in pg.locator("#deploy-signals").inner_text()  # text, never HTML
            assert pg.locator("#deploy-timeline li").count() == 10
            assert pg.locator("#deploy-task").count() == 0  # not a DevLoop merge: staged by a person
            _shot(pg, tmp_path, "blocked")
            # the earlier deployment, from the list: finalized, the happy path lit
            pg.click(f'#deploy-list a:text("{first_id}")')
            pg.wait_for_selector("#deploy-machine .state[data-current=yes][data-state=finalized]")
            assert pg.locator("#deploy-alert").count() == 0
            task = pg.locator("#deploy-task")
            assert "The merge of DevLoop task task-20260101-000000-ab12, deployed with no person" in task.inner_text()
            assert task.locator("a").get_attribute("href").endswith("/t/task-20260101-000000-ab12")
            _shot(pg, tmp_path, "finalized")
            assert not errors, errors
        finally:
            browser.close()


def test_deploy_api_unknown_deployment_is_deployment_not_found(server, project):
    import json
    import urllib.error
    import urllib.request

    with pytest.raises(urllib.error.HTTPError) as err:
        url = f"{server.url}/api/projects/{project[0].project_id}/deployments/dep-nope"
        urllib.request.urlopen(urllib.request.Request(url, headers={"X-GraphLemon-Token": "d" * 32}))  # reads too
    assert err.value.code == 404 and json.loads(err.value.read())["error"]["code"] == "DEPLOYMENT_NOT_FOUND"


def _shot(pg, tmp_path: Path, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    for folder in (tmp_path, SHOTS):
        pg.screenshot(path=str(folder / f"test_console_deploy-{name}.png"), full_page=True)
