"""The console's SDD-patch approval page (`/patches`, graphlemon/console/routes_patches.py) in real headless Chromium:
the patch that waits, its diff as text (markup and bidi characters shown, never interpreted), one click to approve,
through the same domain call as `graphlemon approve-patch`. Screenshots under the test's tmp dir and
tests/.screenshots/ (the shared console, registry and page fixtures of tests/conftest.py)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest
from triage.runbuilder import RUN_ID, TABLE, appointments_project

from graphlemon.artifacts import ArtifactStore
from graphlemon.models import TimelineEvent
from graphlemon.triage import triage_run

pytestmark = pytest.mark.system  # a console server and Chromium


@pytest.fixture
def project(tmp_path, registry):
    sdd = TABLE.replace("already taken |", "taken <b>not markup</b> \u202egnirts\u202c |") + (
        "\n## Changelog\n\n- v2: `POST /appointments` refuses a taken slot with 409 (was 400).\n"
    )
    handle = appointments_project(tmp_path / "clinic", sdd)
    ArtifactStore(handle.ledger).write("sdd", sdd, title="Software design")
    assert not triage_run(handle, RUN_ID).record.will_auto_apply
    registry.register(handle)
    return handle


def test_a_person_reads_the_diff_and_approves_the_patch_with_one_click(page, server, project):
    page.goto(f"{server.url}/patches?project={project.project_id}")
    card = page.locator(f"section.patch[data-run='{RUN_ID}']")
    card.wait_for()
    text = card.inner_text()
    assert "Waits for a person: the SDD also speaks of POST /appointments" in text
    assert "+> patch (update_contract): POST /appointments" in text
    assert "<b>not markup</b>" in text and "<U+202E>gnirts<U+202C>" in text  # text, never HTML or bidi
    assert page.locator("pre.diff .add").count() >= 1
    page.shot("waiting")
    card.locator("button").click()
    card.locator(".done").wait_for()
    assert "Approved: the SDD is now art-sdd-" in card.inner_text() and card.locator("button").count() == 0
    page.shot("approved")
    latest = ArtifactStore(project.ledger).latest("sdd")
    assert latest.version == 2
    events = [
        e.event for e in project.ledger.read_as("timeline", TimelineEvent) if e.ref in (RUN_ID, latest.artifact_id)
    ]
    assert events == ["sdd_patch_approved", "human_action"]


def test_the_approval_needs_the_token_and_answers_with_the_domains_errors(server, project):
    url = f"{server.url}/api/projects/{project.project_id}/patches/{RUN_ID}/approve"
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(urllib.request.Request(url, data=b"{}", method="POST"))
    assert refused.value.code == 403
    headers = {"X-GraphLemon-Token": server.settings.token, "Content-Type": "application/json"}
    ok = json.loads(
        urllib.request.urlopen(urllib.request.Request(url, data=b"{}", headers=headers, method="POST")).read()
    )
    assert ok["artifact_id"].startswith("art-sdd-")
    with pytest.raises(urllib.error.HTTPError) as again:
        urllib.request.urlopen(urllib.request.Request(url, data=b"{}", headers=headers, method="POST"))
    assert json.loads(again.value.read())["error"]["code"] == "INVALID_TRANSITION"
    listing = urllib.request.Request(f"{server.url}/api/projects/{project.project_id}/patches", headers=headers)
    listed = json.loads(urllib.request.urlopen(listing).read())  # reads need the token too
    assert listed["patches"] == []
