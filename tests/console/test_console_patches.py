"""The console's SDD-patch approval page (`/patches`, graphlemon/console/routes_patches.py) in real headless Chromium:
the patch that waits, its diff as text (markup and bidi characters shown, never interpreted), one click to approve,
through the same domain call as `graphlemon approve-patch`. Screenshots under the test's tmp dir and
tests/.screenshots/."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest
from browser_kit import SHOTS, chromium_path
from triage.runbuilder import RUN_ID, TABLE, appointments_project

from graphlemon.artifacts import ArtifactStore
from graphlemon.console.app import ConsoleSettings
from graphlemon.console.project_registry import ProjectRegistry
from graphlemon.console.server import BackgroundServer
from graphlemon.models import TimelineEvent
from graphlemon.triage import triage_run

TOKEN = "p" * 32


@pytest.fixture
def project(tmp_path):
    sdd = TABLE.replace("already taken |", "taken <b>not markup</b> \u202egnirts\u202c |") + (
        "\n## Changelog\n\n- v2: `POST /appointments` refuses a taken slot with 409 (was 400).\n"
    )
    handle = appointments_project(tmp_path / "clinic", sdd)
    ArtifactStore(handle.ledger).write("sdd", sdd, title="Software design")
    assert not triage_run(handle, RUN_ID).record.will_auto_apply
    return handle, RUN_ID


@pytest.fixture
def server(tmp_path, project):
    registry = ProjectRegistry(tmp_path / "config")
    registry.register(project[0])
    srv = BackgroundServer(ConsoleSettings(token=TOKEN, registry=registry)).start()
    yield srv
    srv.stop()


def test_a_person_reads_the_diff_and_approves_the_patch_with_one_click(server, project, tmp_path):
    from playwright.sync_api import sync_playwright

    handle, run_id = project
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path(), args=["--no-sandbox", "--disable-gpu"])
        try:
            pg = browser.new_page(viewport={"width": 1300, "height": 900})
            errors: list[str] = []
            pg.on("pageerror", lambda exc: errors.append(str(exc)))
            pg.goto(f"{server.url}/?token={TOKEN}")  # the printed URL: the token goes to the cookie
            pg.goto(f"{server.url}/patches?project={handle.project_id}")
            card = pg.locator(f"section.patch[data-run='{run_id}']")
            card.wait_for()
            text = card.inner_text()
            assert "Waits for a person: the SDD also speaks of POST /appointments" in text
            assert "+> patch (update_contract): POST /appointments" in text
            assert "<b>not markup</b>" in text and "<U+202E>gnirts<U+202C>" in text  # text, never HTML or bidi
            assert pg.locator("pre.diff .add").count() >= 1
            _shot(pg, tmp_path, "waiting")
            card.locator("button").click()
            card.locator(".done").wait_for()
            assert "Approved: the SDD is now art-sdd-" in card.inner_text() and card.locator("button").count() == 0
            _shot(pg, tmp_path, "approved")
            assert not errors, errors
        finally:
            browser.close()
    latest = ArtifactStore(handle.ledger).latest("sdd")
    assert latest.version == 2
    events = [
        e.event for e in handle.ledger.read_as("timeline", TimelineEvent) if e.ref in (run_id, latest.artifact_id)
    ]
    assert events == ["sdd_patch_approved", "human_action"]


def test_the_approval_needs_the_token_and_answers_with_the_domains_errors(server, project):
    handle, run_id = project
    url = f"{server.url}/api/projects/{handle.project_id}/patches/{run_id}/approve"
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(urllib.request.Request(url, data=b"{}", method="POST"))
    assert refused.value.code == 403
    headers = {"X-GraphLemon-Token": TOKEN, "Content-Type": "application/json"}
    ok = json.loads(
        urllib.request.urlopen(urllib.request.Request(url, data=b"{}", headers=headers, method="POST")).read()
    )
    assert ok["artifact_id"].startswith("art-sdd-")
    with pytest.raises(urllib.error.HTTPError) as again:
        urllib.request.urlopen(urllib.request.Request(url, data=b"{}", headers=headers, method="POST"))
    assert json.loads(again.value.read())["error"]["code"] == "INVALID_TRANSITION"
    listed = json.loads(urllib.request.urlopen(f"{server.url}/api/projects/{handle.project_id}/patches").read())
    assert listed["patches"] == []


def _shot(pg, tmp_path: Path, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    for folder in (tmp_path, SHOTS):
        pg.screenshot(path=str(folder / f"test_console_patches-{name}.png"), full_page=True)
