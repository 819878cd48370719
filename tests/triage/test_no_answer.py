"""A step that got no answer, or a dependency's refusal: the unit's own code (a panic while serving, a request a
live unit never answered) against the environment (nothing listening, an outside service throttling)."""

from __future__ import annotations

import pytest

from graphlemon.triage import triage_run

from .runbuilder import RUN_ID, build_project

UNIT = "berth-queue"
GO_CODE = """package main

import "net/http"

var queues = map[string][]string{"b-1": {"MV Tern"}}

func next(w http.ResponseWriter, r *http.Request) {
	q := queues[r.PathValue("berth")]
	w.Write([]byte(q[0]))
}
"""


def _entry(case: str, path: str, **answer) -> dict:
    return {"ts": "2026-12-03T10:00:05Z", "case": case, "step": 0, "unit_id": UNIT, "method": "GET",
            "url": f"http://127.0.0.1:9301{path}", "duration_ms": 3, **answer}  # fmt: skip


def _project(tmp_path, *, error: str, log: str, trace: list[dict], expected: int = 200, got: dict | None = None):
    failure = {
        "case": "empty-berth", "description": "an empty berth has no next vessel", "involves": [UNIT],
        "request": {"method": "GET", "path": "/berths/b-2/next"}, "expected": {"status": expected},
        "got": got or {"error": error},
    }  # fmt: skip
    sdd = f"# Harbour\n\n## {UNIT}\n\n`GET /berths/{{berth}}/next` answers 200 with the next vessel.\n"
    units = [{"unit_id": UNIT, "code": ["berthq"]}]
    return build_project(tmp_path / "p", units=units, files={"berthq/main.go": GO_CODE}, sdd=sdd, failure=failure,
                         trace=trace, log=log)  # fmt: skip


PANIC = (
    "2026-12-03T10:00:05Z [berth-queue] http: panic serving 127.0.0.1:50211: runtime error: index out of range [0]\n"
    "2026-12-03T10:00:05Z [berth-queue] main.next({0x7a3f08, 0xc0001a2000}, 0xc0001b4140)\n"
    "2026-12-03T10:00:05Z [berth-queue] \t/srv/berthq/main.go:9 +0x1f9\n"
)


def test_a_panic_in_the_units_own_go_code_while_serving_is_its_bug(tmp_path):
    error = 'Get "http://127.0.0.1:9301/berths/b-2/next": EOF'
    p = _project(tmp_path, error=error, log=PANIC, trace=[_entry("empty-berth", "/berths/b-2/next", error=error)])
    r = triage_run(p, RUN_ID).record
    assert (r.category, r.affected_units) == ("impl_bug", [UNIT])
    assert any(e.startswith("berthq/main.go:9:") for e in r.evidence)


def test_a_crash_before_listening_is_not_read_as_serving_the_request(tmp_path):
    """A refused connection: nothing listened, so a trace in the log is not the request's."""
    error = "connect ECONNREFUSED 127.0.0.1:9301"
    p = _project(tmp_path, error=error, log=PANIC, trace=[_entry("empty-berth", "/berths/b-2/next", error=error)])
    r = triage_run(p, RUN_ID).record
    assert r.category != "impl_bug" or r.confidence < 0.8


@pytest.mark.parametrize("answered_after", [True, False])
def test_a_timeout_from_a_unit_that_answered_the_calls_around_it_is_its_handler(tmp_path, answered_after):
    error = "Error: Timeout of 5000ms exceeded (no response headers received)"
    trace = [
        _entry("full-berth", "/berths/b-1/next", status=200, response_body="MV Tern"),
        _entry("empty-berth", "/berths/b-2/next", error=error),
    ]
    if answered_after:
        trace.append(_entry("unknown-berth", "/berths/zz/next", status=404, response_body={"error": "unknown"}))
    r = triage_run(_project(tmp_path, error=error, log="", trace=trace), RUN_ID).record
    if answered_after:
        assert (r.category, r.affected_units) == ("impl_bug", [UNIT])
        assert r.confidence < 0.8 and "never answered" in r.root_cause  # a person confirms: the handler is not read
    else:  # nothing shows the unit was still up after the call: the environment may have failed
        assert r.category == "infra_flake"


THROTTLED = (
    "2026-12-03T10:00:05Z [berth-queue] tide service refused: 429 Too Many Requests {\"error\": \"daily quota\"}\n"
    "2026-12-03T10:00:05Z [berth-queue] GET /berths/b-2/next 503\n"
)


@pytest.mark.parametrize(("expected", "category"), [(200, "infra_flake"), (429, None)])
def test_a_throttling_status_no_unit_answered_is_an_outside_service(tmp_path, expected, category):
    """The unit answered 503; the 429 in its log was answered by no service of the project, so by an outside
    one — unless the case expects 429 itself (then it is the answer under test, not the environment)."""
    got = {"status": 503, "body": {"error": "tides unavailable"}}
    trace = [_entry("empty-berth", "/berths/b-2/next", status=503, response_body={"error": "tides unavailable"})]
    p = _project(tmp_path, error="", log=THROTTLED, trace=trace, expected=expected, got=got)
    r = triage_run(p, RUN_ID).record
    if category:
        assert r.category == category and any("429 Too Many Requests" in e for e in r.evidence)
    else:
        assert r.category != "infra_flake"


# -- an answer that lacks the item on the request's bound ------------------------------------------------------

LOG_UNIT = "tide-log"
TIDE_CODE = """from flask import Flask, jsonify, request

app = Flask(__name__)
READINGS = [{"on": "2026-03-01", "cm": 310}, {"on": "2026-03-03", "cm": 295}]


@app.get("/gauges/<gauge>/readings")
def readings(gauge):
    lo, hi = request.args["from"], request.args["to"]
    return jsonify(gauge=gauge, readings=[r for r in READINGS if lo <= r["on"] < hi])
"""


@pytest.mark.parametrize(
    ("says", "category"),
    [("every reading between the two dates, both dates included", "impl_bug"),
     ("every reading between the two dates", "spec_ambiguous")],
)  # fmt: skip
def test_the_one_item_on_the_requests_bound_missing_is_read_by_what_the_sdd_says_of_bounds(tmp_path, says, category):
    path = "/gauges/g1/readings?from=2026-03-01&to=2026-03-03"
    want = {"gauge": "g1", "readings": [{"on": "2026-03-01", "cm": 310}, {"on": "2026-03-03", "cm": 295}]}
    got = {"gauge": "g1", "readings": [{"on": "2026-03-01", "cm": 310}]}
    trace = [{"ts": "2026-12-03T10:00:05Z", "case": "two-days", "step": 0, "unit_id": LOG_UNIT, "method": "GET",
              "url": f"http://127.0.0.1:9401{path}", "status": 200, "response_body": got}]  # fmt: skip
    failure = {"case": "two-days", "description": "both days' readings are listed", "involves": [LOG_UNIT],
               "request": {"method": "GET", "path": path}, "expected": {"status": 200, "body": want},
               "got": {"status": 200, "body": got}}  # fmt: skip
    sdd = f"# Tides\n\n## {LOG_UNIT}\n\n`GET /gauges/{{gauge}}/readings?from=&to=` answers 200 `{{gauge, readings}}` with {says}.\n"
    p = build_project(tmp_path / "p", units=[{"unit_id": LOG_UNIT, "code": ["tides"], "framework": "flask"}],
                      files={"tides/app.py": TIDE_CODE}, sdd=sdd, failure=failure, trace=trace)  # fmt: skip
    r = triage_run(p, RUN_ID).record
    assert r.category == category and r.confidence < 0.8
    assert "2026-03-03" in (r.root_cause + (r.l3_question or ""))
    if category == "impl_bug":
        assert r.affected_units == [LOG_UNIT] and any("both dates included" in e for e in r.evidence)


# -- a boolean field the SDD defines by another field of the same answer ---------------------------------------

SKY, SCHED = "sky-watch", "slot-planner"


@pytest.mark.parametrize(
    ("cover", "observable", "blamed"),
    # only an answer that contradicts the definition; a basis sent as a string is no number to compare
    [(0.82, True, SKY), (0.1, True, None), (0.82, False, None), ("0.82", True, None)],
)
def test_an_answer_that_contradicts_the_sdds_definition_of_its_flag_is_its_providers_bug(
    tmp_path, cover, observable, blamed
):
    sdd = (f"# Observatory\n\n## {SKY}\n\n`GET /sites/{{site}}/now` → 200 `{{site, cloud_cover, observable}}`.\n"
           f"`observable` is true exactly when cloud_cover is below 0.3.\n\n## {SCHED}\n\n"
           f"`POST /slots` answers 409 when the sky is not observable, 201 otherwise.\n")  # fmt: skip
    upstream = {"site": "roque", "cloud_cover": cover, "observable": observable}
    trace = [
        {"ts": "2026-12-03T10:00:05Z", "case": "cloudy", "step": 0, "unit_id": SKY, "method": "GET",
         "url": "http://127.0.0.1:9110/sites/roque/now", "status": 200, "response_body": upstream},
        {"ts": "2026-12-03T10:00:05Z", "case": "cloudy", "step": 0, "unit_id": SCHED, "method": "POST",
         "url": "http://127.0.0.1:9120/slots", "status": 201, "response_body": {"slot_id": "s-1"}},
    ]  # fmt: skip
    failure = {"case": "cloudy", "description": "no slot while overcast", "involves": [SCHED, SKY],
               "request": {"method": "POST", "path": "/slots"}, "expected": {"status": 409},
               "got": {"status": 201, "body": {"slot_id": "s-1"}}}  # fmt: skip
    units = [{"unit_id": SKY, "code": ["sky"]}, {"unit_id": SCHED, "code": ["sched"], "depends_on": [SKY]}]
    p = build_project(tmp_path / "p", units=units, files={"sky/x.py": "", "sched/y.py": ""}, sdd=sdd,
                      failure=failure, trace=trace)  # fmt: skip
    r = triage_run(p, RUN_ID).record
    if blamed:
        assert (r.category, r.affected_units) == ("impl_bug", [blamed]) and r.confidence < 0.8
        assert any('"cloud_cover": 0.82' in e for e in r.evidence)
    else:
        assert "defines observable" not in r.root_cause


def test_hostile_answers_leave_the_bound_and_flag_rules_silent(tmp_path):
    """A list too long to search is left alone; a short one with the item on the bound is found."""
    from graphlemon.triage.boundary import boundary_item
    from graphlemon.triage.matching import Call
    from graphlemon.triage.rundir import IntegrationFailure

    items = [{"on": f"d{i}"} for i in range(5000)]
    failure = IntegrationFailure.model_validate({
        "case": "c", "step": 0, "request": {"method": "GET", "path": "/r?to=d4999"},
        "expected": {"status": 200, "body": {"rows": items}}, "got": {"status": 200, "body": {"rows": items[:-1]}},
    })  # fmt: skip
    call = Call("GET", "/r", "u", 200, {"rows": items[:-1]}, None, None, True)
    assert boundary_item(failure, call) is None
    small = failure.model_copy(update={"expected": failure.expected.model_copy(update={"body": {"rows": items[-3:]}})})
    assert boundary_item(small, Call("GET", "/r", "u", 200, {"rows": items[-3:-1]}, None, None, True)) is not None


def test_a_frame_in_a_symlink_that_leads_out_of_the_project_is_not_attributed(tmp_path):
    outside = tmp_path / "outside.go"
    outside.write_text("package secret\n" * 20)
    error = 'Get "http://127.0.0.1:9301/berths/b-2/next": EOF'
    log = PANIC.replace("/srv/berthq/main.go:9", "/srv/berthq/link.go:9")
    p = _project(tmp_path, error=error, log=log, trace=[_entry("empty-berth", "/berths/b-2/next", error=error)])
    (p.root / "berthq" / "link.go").symlink_to(outside)
    r = triage_run(p, RUN_ID).record
    assert not any("link.go" in e or "secret" in e for e in r.evidence)
    assert not r.fallback  # the rule never cited it (the self-check would refuse the quote and fall back)
