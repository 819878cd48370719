"""A person approves an SDD patch that waits (graphlemon/stages/patch_approval.py): the domain call, and
`graphlemon approve-patch` through it. The console's page and its one-click action: tests/console/test_console_patches.py."""

from __future__ import annotations

import json

import pytest

from graphlemon.artifacts import ArtifactStore
from graphlemon.errors import ErrorCode, GraphLemonError
from graphlemon.models import TimelineEvent
from graphlemon.stages.patch_approval import approve, pending_patches, preview
from graphlemon.triage import triage_run

from .runbuilder import RUN_ID, TABLE, appointments_project

CHANGELOG = "\n## Changelog\n\n- v2: `POST /appointments` refuses a taken slot with 409 (was 400).\n"


def waiting_project(root):
    """A triaged run whose contract patch waits for a person (the changelog also speaks of the endpoint's refusals),
    its SDD a recorded artifact as the planner leaves it."""
    project = appointments_project(root, TABLE + CHANGELOG)
    ArtifactStore(project.ledger).write("sdd", TABLE + CHANGELOG, title="Software design")
    record = triage_run(project, RUN_ID).record
    assert record.category == "contract_mismatch" and not record.will_auto_apply and record.patch_review
    return project


def test_a_waiting_patch_is_listed_with_its_diff_approved_once_and_recorded(tmp_path):
    project = waiting_project(tmp_path / "p")
    [waiting] = pending_patches(project)
    assert waiting.run_id == RUN_ID and waiting.units == ["appointments"] and "Changelog" not in (waiting.problem or "")
    assert "+> patch (update_contract): POST /appointments" in waiting.diff and waiting.diff.startswith("--- a/")
    new = approve(project, RUN_ID, by="test")
    store = ArtifactStore(project.ledger)
    assert new.version == 2 and "> patch (update_contract): POST /appointments" in store.read_text(new)
    [event] = [e for e in project.ledger.read_as("timeline", TimelineEvent) if e.event == "sdd_patch_approved"]
    assert event.ref == RUN_ID and new.artifact_id in event.summary
    assert pending_patches(project) == []
    with pytest.raises(GraphLemonError) as again:
        approve(project, RUN_ID)
    assert again.value.code is ErrorCode.INVALID_TRANSITION and store.latest("sdd").version == 2


@pytest.mark.parametrize(("run", "code"), [("run-nope", ErrorCode.RUN_NOT_FOUND), ("../x", ErrorCode.INVALID_PARAM)])
def test_an_unknown_or_malformed_run_is_a_clear_error(tmp_path, run, code):
    project = waiting_project(tmp_path / "p")
    with pytest.raises(GraphLemonError) as err:
        preview(project, run)
    assert err.value.code is code


@pytest.mark.system  # the CLI runs as a subprocess (tests/tier_guard.py)
def test_the_cli_lists_shows_and_approves(tmp_path, cli, cli_in_process):
    project = waiting_project(tmp_path / "p")
    listed = cli("approve-patch", "--project", str(project.root), "--json")
    assert listed.returncode == 0, listed.stderr
    assert [p["run_id"] for p in json.loads(listed.stdout)["pending"]] == [RUN_ID]
    shown = cli_in_process("approve-patch", "--project", str(project.root), "--run", RUN_ID, "--show")
    assert shown.returncode == 0 and "+> patch (update_contract)" in shown.stdout and "approved" not in shown.stdout
    done = cli_in_process("approve-patch", "--project", str(project.root), "--run", RUN_ID, "--json")
    assert done.returncode == 0 and json.loads(done.stdout)["approved"].startswith("art-sdd-")
    again = cli_in_process("approve-patch", "--project", str(project.root), "--run", RUN_ID)
    assert again.returncode == 1 and "error[INVALID_TRANSITION]" in again.stderr and "approved already" in again.stderr
