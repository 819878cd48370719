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
