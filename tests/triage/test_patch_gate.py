"""A contract_mismatch's SDD patch is applied without a person only when two sides confirm it and the whole SDD says
nothing else about the element it changes (patch_gate.py, sdd_element.py); otherwise it waits for a person."""

from __future__ import annotations

import pytest

from graphlemon.triage import triage_run
from graphlemon.triage.decider import KEPT, MEASURED
from graphlemon.triage.findings import Element
from graphlemon.triage.sdd_element import other_statements

from .runbuilder import RUN_ID, TABLE, appointments_project


@pytest.fixture(autouse=True)
def status_kept(monkeypatch):
    """The gate, given a kept status mechanism. contract:status_differs is not kept today (8 of 11 right on unseen
    sets): the gate's whole-SDD scan is what any kept contract mechanism's patch must still pass."""
    monkeypatch.setitem(KEPT, "contract:status_differs", MEASURED["contract:status_differs"])


def test_a_patch_of_a_mechanism_below_the_bar_waits_for_a_person(tmp_path, monkeypatch):
    monkeypatch.delitem(KEPT, "contract:status_differs")
    record = triage_run(_project(tmp_path, TABLE), RUN_ID).record
    assert (record.category, record.affected_units) == ("contract_mismatch", ["appointments"])
    assert record.confidence < 0.8 and not record.will_auto_apply and record.proposed_sdd_patch is not None
    m = MEASURED["contract:status_differs"]
    assert f"only contract:status_differs shows it, and that mechanism was right {m.right} of {m.fired} times" in (
        record.patch_review or ""
    )


def test_a_statement_under_a_base_path_is_the_same_element(tmp_path):
    extra = "\n## Changelog\n\n- v2: `POST /api/v2/appointments` now refuses a taken slot with 422.\n"
    record = triage_run(_project(tmp_path, TABLE + extra), RUN_ID).record
    assert record.category == "contract_mismatch" and not record.will_auto_apply
    assert "the SDD also speaks of POST /appointments" in record.patch_review


def _project(tmp_path, sdd: str, *, traced: bool = True, got: int = 400):
    return appointments_project(tmp_path / "p", sdd, traced=traced, got=got)


def test_the_sdds_one_statement_confirmed_by_the_trace_is_applied_without_a_person(tmp_path):
    record = triage_run(_project(tmp_path, TABLE), RUN_ID).record
    assert (record.category, record.affected_units) == ("contract_mismatch", ["appointments"])
    assert record.confidence >= 0.8 and record.will_auto_apply and record.patch_review is None


@pytest.mark.parametrize(
    ("extra", "where"),
    [
        ("\n## Changelog\n\n- v2: `POST /appointments` now refuses a taken slot with 422.\n", "Changelog"),
        ("\n## Errata\n\nThe refusal of POST /appointments/ is 400 (bad request), not 409.\n", "Errata"),
        ("\n### Policies\n\nEvery refusal of a booking is answered 422.\n", "prose in the unit's section"),
        ("\n## Errors\n\n| endpoint | status |\n|---|---|\n| POST /appointments | 400 |\n", "another table"),
    ],
)
def test_another_statement_of_the_same_element_anywhere_sends_the_patch_to_a_person(tmp_path, extra, where):
    record = triage_run(_project(tmp_path, TABLE + extra), RUN_ID).record
    assert record.category == "contract_mismatch" and not record.will_auto_apply, where
    assert record.patch_review and "the SDD also speaks of POST /appointments" in record.patch_review


def test_a_statement_of_another_endpoint_is_not_the_same_element(tmp_path):
    extra = "\n## Changelog\n\n- v3: `GET /appointments/{id}` answers 404 for an unknown booking.\n"
    record = triage_run(_project(tmp_path, TABLE + extra), RUN_ID).record
    assert record.will_auto_apply and record.patch_review is None


def test_a_later_decision_on_the_same_path_with_another_class_sends_the_patch_to_a_person(tmp_path):
    # a decision log naming the path with a 2xx may settle the very situation the 4xx row states
    extra = "\n## Decision log\n\n- D-7: `POST /appointments` for a taken slot answers 200 with the existing booking.\n"
    record = triage_run(_project(tmp_path, TABLE + extra), RUN_ID).record
    assert record.category == "contract_mismatch" and not record.will_auto_apply and record.confidence < 0.8
    assert "Decision log" not in (record.patch_review or "x") and "sdd.md:" in (record.patch_review or "")


def test_only_two_sides_is_not_enough(tmp_path):
    # the run answered 422, which neither the SDD (409) nor the contract (400) states: nothing confirms either side
    record = triage_run(_project(tmp_path, TABLE, traced=False, got=422), RUN_ID).record
    assert record.category == "contract_mismatch" and not record.will_auto_apply
    assert record.patch_review and "only the two sides" in record.patch_review


def test_the_scan_reads_every_document_block_by_block():
    docs = [("a.md", TABLE), ("b.md", "# Release notes\n\n1. `POST /appointments` refusals: 422 since v2.\n")]
    element = Element("a.md:10", "POST", "/appointments", (409,), unit="appointments")
    assert [(b.rel, b.first) for b in other_statements(docs, element, ["appointments"])] == [("b.md", 3)]


def test_a_statement_outside_the_providers_section_sends_the_patch_to_a_person(tmp_path):
    shared = (  # no unit's section: whose statement is it?
        "# Clinic\n\n## Shared endpoints\n\n| endpoint | status | when |\n|---|---|---|\n"
        "| POST /appointments | 201 | booked |\n| POST /appointments | 409 | the slot is taken |\n"
    )
    record = triage_run(_project(tmp_path, shared), RUN_ID).record
    assert record.category == "contract_mismatch" and not record.will_auto_apply
    assert "is not in appointments's section" in (record.patch_review or "")
