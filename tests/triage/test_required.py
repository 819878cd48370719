"""A request field the SDD's table marks optional, refused when left out (required.py); and a step with no request of
its own whose error reports answers it got is no missing answer (healthy.answered_report)."""

from __future__ import annotations

import pytest

from graphlemon.triage.rule_classifier import classify
from graphlemon.triage.run_context import load_run

from .runbuilder import RUN_ID, build_project

API, CLI = "registry-api", "artifact-cli"
TABLE = (
    "| field | required | meaning |\n|---|---|---|\n| `username` | yes | account |\n| `password` | yes | secret |\n"
    "| `scope` | no | `pull` or `push`; `pull` when absent |\n"
)


def _login(tmp_path, *, body: dict, answer: dict, contract_400: str = "username, password or scope missing",
           table: str = TABLE):  # fmt: skip
    sdd = f"# Registry\n\n## {API}\n\n`POST /v2/tokens` with a JSON body:\n\n{table}\nAnswers 201; 400 when a required field is missing.\n\n## {CLI}\n\nLogs in.\n"
    contracts = {
        API: {"unit_id": API, "exports": {"http": [{"method": "POST", "path": "/v2/tokens",
              "responses": {"201": {"body": {"token": "string"}}, "400": contract_400}}]}},
        CLI: {"unit_id": CLI, "exports": {"functions": [{"name": "login", "signature": "artifact-cli login"}]},
              "consumes": [{"unit_id": API, "method": "POST", "path": "/v2/tokens", "responses": {"201": {"body": {"token": "string"}}}}]},
    }  # fmt: skip
    trace = [{"ts": "2026-12-03T10:00:05Z", "case": "login", "step": 0, "unit_id": API, "method": "POST",
              "url": "http://127.0.0.1:9090/v2/tokens", "request_body": body, "status": 400, "response_body": answer}]  # fmt: skip
    failure = {"case": "login", "involves": [CLI, API], "expected": {"value": "exit 0"},
               "got": {"value": "exit 1", "error": f"error: registry rejected login: 400 {answer}"}}  # fmt: skip
    units = [{"unit_id": API, "code": ["registry"]}, {"unit_id": CLI, "code": ["cli"], "depends_on": [API]}]
    p = build_project(tmp_path / "p", units=units, files={"cli/x.py": "X = 1\n"}, sdd=sdd, failure=failure,
                      trace=trace, contracts=contracts)  # fmt: skip
    return classify(load_run(p, RUN_ID))


SENT = {"username": "ci", "password": "***"}
REFUSED = {"error": "request violates contract: scope is required"}


def test_a_provider_whose_contract_requires_an_optional_field_is_its_contract_mismatch(tmp_path):
    f = _login(tmp_path, body=SENT, answer=REFUSED)
    assert (f.category, f.affected, f.rule) == ("contract_mismatch", [API], "contract:required_differs")
    assert f.confidence >= 0.8


def test_a_provider_whose_contract_agrees_with_the_sdd_is_its_implementation(tmp_path):
    f = _login(tmp_path, body=SENT, answer=REFUSED, contract_400="username or password missing")
    assert (f.category, f.affected, f.rule) == ("impl_bug", [API], "impl:required_differs")


@pytest.mark.parametrize(
    ("body", "answer"),
    [
        ({"username": "ci"}, REFUSED),  # a required field is missing too: the refusal may be right
        (SENT, {"error": "bad request"}),  # the refusal does not name the left-out field
        ({"username": "ci", "password": "***", "scope": "pull"}, REFUSED),  # nothing was left out
    ],
    ids=["required-missing", "unnamed", "sent"],
)
def test_control_no_required_verdict(tmp_path, body, answer):
    assert _login(tmp_path, body=body, answer=answer).rule != "contract:required_differs"


@pytest.mark.parametrize(
    "table",
    [
        "| field | <b>required</b> |\n|---|---|\n| `scope` | <script>no</script> |\n",
        "| field | meaning |\n|---|---|\n| `scope` | no |\n",  # no "required" column
        "| `scope` | required |\n|---|\n" + "| x |\n" * 5000,  # one column, huge
        "| field | required |\n|---|---|\n| `scope` | yes no |\n",  # both stances in one cell: none
    ],
    ids=["markup", "no-column", "huge", "both"],
)
def test_hostile_tables_degrade_without_a_confident_wrong_verdict(tmp_path, table):
    f = _login(tmp_path, body=SENT, answer=REFUSED, table=table)
    assert f.rule != "contract:required_differs" or f.affected == [API]


def test_a_reported_error_of_an_answered_step_is_not_a_missing_answer(tmp_path):
    f = _login(tmp_path, body=SENT, answer={"error": "bad request"}, table="")
    assert f.rule != "infra:no_response"
