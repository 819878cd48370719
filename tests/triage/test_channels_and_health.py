"""Message subjects compared by structure (messages.py), and environment signals the run contradicts (healthy.py):
a time-out while every call was answered, a kill that ends the unit's own loop of identical requests."""

from __future__ import annotations

import json

import pytest

from graphlemon.errors import GraphLemonError
from graphlemon.triage import triage_run
from graphlemon.triage.messages import channels, matches
from graphlemon.triage.run_context import load_run
from graphlemon.triage.signals import without_frames

from .runbuilder import RUN_ID, build_project

PUB, SUB = "order-intake", "kitchen-display"
PUB_CODE = (
    'SUBJECT = "kitchen.orders.created"\n\n\ndef publish(nc, payload):\n    return nc.publish(SUBJECT, payload)\n'
)


def _sdd(subject: str) -> str:
    return (
        f"# Kitchen\n\n## {PUB}\n\n`POST /orders` answers 201; then it publishes the order on the NATS subject "
        f"`{subject}`.\n\n## {SUB}\n\nSubscribes to `{subject}`; `GET /tickets` answers 200 with the open tickets.\n"
    )


def _kitchen(tmp_path, *, published: str, subscribed: str, sdd_subject: str, pub_contract: str | None = None):
    contracts = {
        PUB: {"unit_id": PUB, "exports": {"events": [{"transport": "nats", "subject": published, "payload": {"order_id": "string"}}]}},
        SUB: {"unit_id": SUB, "exports": {"http": [{"method": "GET", "path": "/tickets", "responses": {"200": {"body": []}}}]},
              "subscribes": [{"transport": "nats", "subject": subscribed, "unit_id": PUB}]},
    }  # fmt: skip
    failure = {
        "case": "ticket-after-order", "step": 1, "involves": [SUB, PUB],
        "request": {"method": "GET", "path": "/tickets"},
        "expected": {"status": 200, "body": [{"order_id": "o-1"}]},
        "got": {"status": 200, "body": [], "error": "TimeoutError: ticket for order o-1 did not appear within 5000 ms"},
    }  # fmt: skip
    trace = [
        {"ts": "2026-12-03T10:00:01Z", "case": "ticket-after-order", "step": 0, "unit_id": PUB, "method": "POST",
         "url": "http://127.0.0.1:8801/orders", "status": 201, "response_body": {"order_id": "o-1"}},
        {"ts": "2026-12-03T10:00:05Z", "case": "ticket-after-order", "step": 1, "unit_id": SUB, "method": "GET",
         "url": "http://127.0.0.1:8802/tickets", "status": 200, "response_body": []},
    ]  # fmt: skip
    units = [{"unit_id": PUB, "code": ["intake"]}, {"unit_id": SUB, "code": ["kds"], "depends_on": [PUB]}]
    project = build_project(tmp_path / "p", units=units, files={"intake/app.py": PUB_CODE}, sdd=_sdd(sdd_subject),
                            failure=failure, trace=trace, contracts=contracts)  # fmt: skip
    if pub_contract is not None:
        (project.root / ".graphlemon" / "units" / PUB / "contract.json").write_bytes(pub_contract.encode("latin-1"))
    return project


def test_a_publisher_on_another_subject_than_the_sdds_is_its_contract_mismatch(tmp_path):
    p = _kitchen(tmp_path, published="kitchen.order.created", subscribed="kitchen.orders.created",
                 sdd_subject="kitchen.orders.created")  # fmt: skip
    r = triage_run(p, RUN_ID).record
    assert (r.category, r.affected_units) == ("contract_mismatch", [PUB])
    assert r.confidence >= 0.8
    assert any("kitchen.order.created" in e for e in r.evidence)


def test_a_subscriber_on_another_subject_than_the_sdds_is_blamed_instead(tmp_path):
    p = _kitchen(tmp_path, published="kitchen.orders.created", subscribed="kitchen.order.created",
                 sdd_subject="kitchen.orders.created")  # fmt: skip
    r = triage_run(p, RUN_ID).record
    assert (r.category, r.affected_units) == ("contract_mismatch", [SUB])


@pytest.mark.parametrize("subscribed", ["kitchen.orders.created", "kitchen.*.created", "kitchen.>"])
def test_control_a_subscription_that_receives_the_publishers_subject_is_no_finding(tmp_path, subscribed):
    p = _kitchen(
        tmp_path, published="kitchen.orders.created", subscribed=subscribed, sdd_subject="kitchen.orders.created"
    )
    r = triage_run(p, RUN_ID).record
    assert "subject" not in (r.root_cause or "").split("contract.json disagrees")[0]
    assert not (r.category == "contract_mismatch" and r.confidence >= 0.8)
    assert not (r.category == "infra_flake" and r.confidence >= 0.8)  # every call was answered


def test_when_the_sdd_names_neither_subject_nobody_is_blamed_confidently(tmp_path):
    p = _kitchen(tmp_path, published="kitchen.order.created", subscribed="kitchen.orders.created",
                 sdd_subject="orders")  # fmt: skip
    r = triage_run(p, RUN_ID).record
    assert r.confidence < 0.8


@pytest.mark.parametrize(
    "text",
    [
        "{not json",
        '{"unit_id": "order-intake", "exports": {"events": [{"subject": "kitchen.\xe9\xff.created"}]}}',
        '{"unit_id": "order-intake", "exports": {"events": "<script>alert(1)</script>"}, "subscribes": [1, null]}',
        json.dumps({"unit_id": PUB, "exports": {"events": [{"subject": "x." * 600_000}]}}),
    ],
    ids=["malformed", "not-utf8", "markup", "huge"],
)
def test_hostile_contracts_degrade_without_a_confident_subject_verdict(tmp_path, text):
    p = _kitchen(tmp_path, published="kitchen.order.created", subscribed="kitchen.orders.created",
                 sdd_subject="kitchen.orders.created")  # fmt: skip
    ctx = load_run(p, RUN_ID)
    (p.root / ".graphlemon" / "units" / PUB / "contract.json").write_bytes(text.encode("latin-1", errors="replace"))
    published = [c for c in channels(ctx) if c.unit == PUB]  # read from the file as it is now
    assert all(c.role == "publishes" for c in published)
    try:
        record = triage_run(p, RUN_ID).record
    except GraphLemonError as exc:  # a contract.json that is not JSON / not UTF-8 is refused with its error code
        assert exc.code == "INVALID_PARAM"
        return
    assert not (record.category == "contract_mismatch" and record.affected_units == [PUB] and record.confidence >= 0.8)


def test_subjects_match_token_by_token():
    assert matches("a.*.c", "a.b.c") and matches("a.>", "a.b.c") and matches("a/+/c", "a/b/c")
    assert not matches("a.*", "a.b.c") and not matches("a.b", "a.b.c") and not matches("a.>", "a")


def test_a_stack_frames_file_and_line_is_not_an_address():
    assert "16" not in without_frames("tests/x/test_tickets.py:16: in test_t")
    assert "db.internal:5432" in without_frames("connect ETIMEDOUT db.internal:5432")


# -- a kill that ends the unit's own loop ----------------------------------------------------------------------

JOB, API = "fee-reminders", "members-api"


def _reminders(tmp_path, *, pages: list[tuple[str, dict]], error: str):
    trace = [
        {"ts": "2026-12-03T10:00:03Z", "case": "nightly", "step": 0, "unit_id": API, "method": "GET",
         "url": f"http://127.0.0.1:8090/members/overdue{'?cursor=' + cursor if cursor else ''}", "status": 200,
         "response_body": page}
        for cursor, page in pages
    ]  # fmt: skip
    failure = {
        "case": "nightly",
        "involves": [JOB, API],
        "expected": {"value": 3},
        "got": {"value": 4512, "error": error},
    }
    units = [{"unit_id": API, "code": ["members"]}, {"unit_id": JOB, "code": ["reminders"], "depends_on": [API]}]
    sdd = f"# Fees\n\n## {API}\n\n`GET /members/overdue` lists overdue members.\n\n## {JOB}\n\nWalks all pages.\n"
    return build_project(tmp_path / "p", units=units, files={"members/app.py": "X = 1\n"}, sdd=sdd, failure=failure,
                         trace=trace, log=f"2026-12-03T10:01:03Z [cron] {error}\n")  # fmt: skip


KILL = "cron job fee-reminders exceeded its 60 s budget; killed with SIGKILL (exit 137)"


def _page(asked: str, n: int, cursor) -> tuple[str, dict]:
    return asked, {"members": [{"member_id": f"m-{n}"}], "next_cursor": cursor}


def test_a_kill_after_the_units_own_repeated_identical_requests_is_not_a_confident_flake(tmp_path):
    round_ = [_page("", 1, "p2"), _page("p2", 2, "")]
    p = _reminders(tmp_path, pages=round_ * 3, error=KILL)
    r = triage_run(p, RUN_ID).record
    assert not (r.category == "infra_flake" and r.confidence >= 0.8)


def test_control_a_kill_during_distinct_requests_stays_an_environment_failure(tmp_path):
    p = _reminders(tmp_path, pages=[_page("", 1, "p2"), _page("p2", 2, "p3"), _page("p3", 3, None)], error=KILL)
    r = triage_run(p, RUN_ID).record
    assert (r.category, r.confidence >= 0.8) == ("infra_flake", True)


def test_control_a_time_out_on_a_call_that_got_no_answer_stays_an_environment_failure(tmp_path):
    p = _kitchen(tmp_path, published="kitchen.orders.created", subscribed="kitchen.orders.created",
                 sdd_subject="kitchen.orders.created")  # fmt: skip
    path = p.root / ".graphlemon" / "integration" / "runs" / RUN_ID / "http-trace.ndjson"
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    lines[1] = {**lines[1], "status": None, "response_body": None, "error": "connect ETIMEDOUT 127.0.0.1:8802"}
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    r = triage_run(p, RUN_ID).record
    assert (r.category, r.confidence >= 0.8) == ("infra_flake", True)


# -- a case's own deadline while its step was answered ------------------------------------------------------------


def _poll(tmp_path, *, answered: bool):
    unit = "telemetry-export"
    entry = {"ts": "2026-12-03T10:00:05Z", "case": "export", "step": 1, "unit_id": unit, "method": "GET",
             "url": "http://127.0.0.1:8240/exports/ex-1"}  # fmt: skip
    entry |= {"status": 202, "response_body": {"state": "completed"}} if answered else {"error": "socket hang up"}
    got = {"status": 202, "body": {"state": "completed"}} if answered else {}
    failure = {"case": "export", "step": 1, "involves": [unit], "request": {"method": "GET", "path": "/exports/ex-1"},
               "expected": {"status": 200, "body": {"state": "done"}},
               "got": {**got, "error": "Timeout of 15000ms exceeded"}}  # fmt: skip
    sdd = f'# Exports\n\n## {unit}\n\n`GET /exports/{{id}}` answers 202 while running, 200 `{{"state": "done"}}` once written.\n'
    return build_project(tmp_path / "p", units=[{"unit_id": unit, "code": ["export"]}], files={"export/a.py": "X = 1\n"},
                         sdd=sdd, failure=failure, trace=[entry])  # fmt: skip


def test_a_deadline_of_the_case_while_its_step_was_answered_is_no_missing_answer(tmp_path):
    r = triage_run(_poll(tmp_path, answered=True), RUN_ID).record
    assert r.category != "infra_flake"


def test_control_a_step_that_got_no_answer_stays_a_missing_answer(tmp_path):
    r = triage_run(_poll(tmp_path, answered=False), RUN_ID).record
    assert r.category == "infra_flake"
