"""A field's unit or date format compared by structure (measures.py): an SDD table row or list item, each
contract's type descriptor or response description, and the traced values (a JSON body, a CSV read by `csv`)."""

from __future__ import annotations

import pytest

from graphlemon.triage import triage_run
from graphlemon.triage.measures import measure_of
from graphlemon.triage.rule_classifier import classify
from graphlemon.triage.run_context import load_run

from .runbuilder import RUN_ID, build_project

FARM, PANEL = "print-farm", "farm-panel"
TABLE = (
    "| field | type | meaning |\n|---|---|---|\n| `job_id` | string | as requested |\n"
    "| `estimated_duration` | integer | remaining time in **minutes** |\n"
)


def _farm(tmp_path, *, provided: str, consumed: str, value, sdd_table: str = TABLE):
    sdd = f"# Farm\n\n## {FARM}\n\n`GET /jobs/{{job_id}}` answers 200 with the job.\n\n{sdd_table}\n## {PANEL}\n\n`GET /panel/{{id}}` answers 200.\n"
    contracts = {
        FARM: {"unit_id": FARM, "exports": {"http": [{"method": "GET", "path": "/jobs/{job_id}", "responses": {
            "200": {"body": {"job_id": "string", "estimated_duration": provided}}}}]}},
        PANEL: {"unit_id": PANEL, "exports": {"http": [{"method": "GET", "path": "/panel/{id}", "responses": {"200": {"body": {"line": "string"}}}}]},
                "consumes": [{"unit_id": FARM, "method": "GET", "path": "/jobs/{job_id}", "responses": {
                    "200": {"body": {"job_id": "string", "estimated_duration": consumed}}}}]},
    }  # fmt: skip
    trace = [
        {"ts": "2026-12-03T10:00:05Z", "case": "eta", "step": 0, "unit_id": FARM, "method": "GET",
         "url": "http://127.0.0.1:8601/jobs/j-1", "status": 200, "response_body": {"job_id": "j-1", "estimated_duration": value}},
        {"ts": "2026-12-03T10:00:05Z", "case": "eta", "step": 0, "unit_id": PANEL, "method": "GET",
         "url": "http://127.0.0.1:8602/panel/j-1", "status": 200, "response_body": {"line": "ready in 5400 min"}},
    ]  # fmt: skip
    failure = {
        "case": "eta", "involves": [PANEL, FARM], "request": {"method": "GET", "path": "/panel/j-1"},
        "expected": {"status": 200, "body": {"line": "ready in 90 min"}},
        "got": {"status": 200, "body": {"line": "ready in 5400 min"}},
    }  # fmt: skip
    units = [{"unit_id": FARM, "code": ["farm"]}, {"unit_id": PANEL, "code": ["panel"], "depends_on": [FARM]}]
    return build_project(tmp_path / "p", units=units, files={"panel/app.py": "X = 1\n"}, sdd=sdd, failure=failure,
                         trace=trace, contracts=contracts)  # fmt: skip


def test_a_provider_giving_a_field_in_another_unit_than_the_sdds_is_its_mismatch(tmp_path):
    r = triage_run(
        _farm(tmp_path, provided="integer (seconds remaining)", consumed="integer (minutes)", value=5400), RUN_ID
    ).record
    assert (r.category, r.affected_units) == ("contract_mismatch", [FARM])
    assert r.confidence >= 0.8


def test_a_consumer_reading_another_unit_than_the_sdds_is_blamed_instead(tmp_path):
    r = triage_run(
        _farm(tmp_path, provided="integer (minutes)", consumed="integer, in seconds", value=90), RUN_ID
    ).record
    assert (r.category, r.affected_units) == ("contract_mismatch", [PANEL])


@pytest.mark.parametrize(
    ("provided", "table"),
    [
        ("integer (minutes remaining)", TABLE),  # every side agrees
        ("integer (seconds remaining)", TABLE.replace("**minutes**", "minutes or seconds")),  # the SDD states two
        ("integer (kilobytes)", TABLE),  # another dimension: not comparable
    ],
    ids=["agree", "sdd-two-units", "other-dimension"],
)
def test_control_no_measure_verdict(tmp_path, provided, table):
    finding = classify(
        load_run(_farm(tmp_path, provided=provided, consumed="integer (minutes)", value=90, sdd_table=table), RUN_ID)
    )
    assert finding.rule != "contract:measure_differs"


@pytest.mark.parametrize(
    "table",
    [
        "| `estimated_duration` | <b>minutes</b> | <script>x</script> |\n|---|\n| | |\n",
        "| broken | table\n|---|---|---|---|\n" * 2000,
        "\xff\xfe `estimated_duration` in **minutes** \udcff",
    ],
    ids=["markup", "huge-malformed", "undecodable"],
)
def test_hostile_sdd_tables_never_crash(tmp_path, table):
    r = triage_run(_farm(tmp_path, provided="integer (seconds)", consumed="integer (minutes)", value=5400,
                         sdd_table=table.encode("utf-8", "replace").decode("utf-8", "replace")), RUN_ID).record  # fmt: skip
    assert not (r.affected_units == [PANEL] and r.confidence >= 0.8)


def test_measures_are_unit_words_or_date_patterns():
    assert measure_of("integer (seconds remaining)") == ("time", "seconds")
    assert measure_of("remaining time in **minutes**") == ("time", "minutes")
    assert measure_of("text/csv: date,station — date as DD/MM/YYYY") == ("date", "%d/%m/%Y")
    assert measure_of("ISO date `YYYY-MM-DD`") == ("date", "%Y-%m-%d")
    assert measure_of("?month=YYYY-MM") is None  # no day: not a date pattern
    assert measure_of("seconds or minutes") is None and measure_of("x" * 300_000) is None


def test_a_csv_date_column_is_judged_by_parsing_its_values(tmp_path):
    """The SDD's ISO date and the provider's DD/MM/YYYY: blamed only when the CSV's dates parse as the provider's
    format and not as the SDD's (a value such as 2026-11-01 is the SDD's, whatever the contract says)."""
    sdd = ("# Gauges\n\n## gauge-export\n\n`GET /daily.csv` answers 200, text/csv.\n\n- `date`: calendar date `YYYY-MM-DD`\n"
           "\n## flood-model\n\n`POST /runs` answers 201; 422 for a row it cannot parse.\n")  # fmt: skip
    contracts = {
        "gauge-export": {"unit_id": "gauge-export", "exports": {"http": [{"method": "GET", "path": "/daily.csv",
                         "responses": {"200": "text/csv: date,mm — date as DD/MM/YYYY"}}]}},
        "flood-model": {"unit_id": "flood-model", "exports": {"http": [{"method": "POST", "path": "/runs", "responses": {"201": {"body": {"n": "integer"}}}}]},
                        "consumes": [{"unit_id": "gauge-export", "method": "GET", "path": "/daily.csv", "responses": {"200": "text/csv: date (YYYY-MM-DD),mm"}}]},
    }  # fmt: skip
    units = [
        {"unit_id": "gauge-export", "code": ["g"]},
        {"unit_id": "flood-model", "code": ["m"], "depends_on": ["gauge-export"]},
    ]
    failure = {"case": "run", "involves": ["flood-model", "gauge-export"], "request": {"method": "POST", "path": "/runs"},
               "expected": {"status": 201}, "got": {"status": 422, "body": {"error": "bad csv row 1"}}}  # fmt: skip

    def run(tmp, csv_body):
        trace = [
            {"case": "run", "unit_id": "gauge-export", "method": "GET", "url": "http://127.0.0.1:5010/daily.csv", "status": 200, "response_body": csv_body},
            {"case": "run", "unit_id": "flood-model", "method": "POST", "url": "http://127.0.0.1:5020/runs", "status": 422, "response_body": {"error": "bad csv row 1"}},
        ]  # fmt: skip
        p = build_project(
            tmp, units=units, files={"m/x.py": "X = 1\n"}, sdd=sdd, failure=failure, trace=trace, contracts=contracts
        )
        return classify(load_run(p, RUN_ID))

    blamed = run(tmp_path / "a", "date,mm\n01/11/2026,3.2\n02/11/2026,4.4\n")
    assert (blamed.category, blamed.affected, blamed.rule) == (
        "contract_mismatch",
        ["gauge-export"],
        "contract:measure_differs",
    )
    iso = run(tmp_path / "b", "date,mm\n2026-11-01,3.2\n")
    assert iso.rule != "contract:measure_differs"
    garbage = run(tmp_path / "c", 'date,mm\n"unterminated,\x00\n<b>1</b>,2\n')
    assert garbage.rule != "contract:measure_differs"
