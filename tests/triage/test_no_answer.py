"""A step that got no answer: the unit's own code panicked while serving it (impl:uncaught), against nothing
listening (a refused connection says nothing of the request)."""

from __future__ import annotations

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


def test_a_5xx_relayed_from_an_upstream_unit_is_the_upstream_units_exception(tmp_path):
    units = [{"unit_id": "gateway", "code": ["gateway"]}, {"unit_id": "inventory", "code": ["inventory"]}]
    files = {"gateway/app.py": "def part(sku):\n    raise UpstreamFailed(500)\n",
             "inventory/main.py": "LEVELS = {}\ndef stock(sku):\n    return LEVELS[sku]\n"}  # fmt: skip
    failure = {"case": "unknown-part", "involves": ["gateway", "inventory"], "expected": {"status": 404},
               "request": {"method": "GET", "path": "/parts/X"}, "got": {"status": 500, "body": "Internal Server Error"}}  # fmt: skip
    trace = [{"case": "unknown-part", "step": 0, "unit_id": "inventory", "method": "GET", "status": 500,
              "url": "http://127.0.0.1:8201/stock/X", "response_body": "Internal Server Error"},
             {"case": "unknown-part", "step": 0, "unit_id": "gateway", "method": "GET", "status": 500,
              "url": "http://127.0.0.1:8200/parts/X", "response_body": "Internal Server Error"}]  # fmt: skip
    log = "".join(f"2026-12-03T10:00:05Z {x}\n" for x in (
        "[inventory] Traceback (most recent call last):", '[inventory]   File "/srv/inventory/main.py", line 3, in stock',
        "[inventory] KeyError: 'X'", "[gateway] Traceback (most recent call last):",
        '[gateway]   File "/srv/gateway/app.py", line 2, in part', "[gateway] app.UpstreamFailed: 500"))  # fmt: skip
    project = build_project(tmp_path / "p", units=units, files=files, sdd="# Parts\n\n## gateway\n\n`GET /parts/{sku}` answers 404 for an unknown part.\n",
                            failure=failure, trace=trace, log=log)  # fmt: skip
    outcome = triage_run(project, RUN_ID)
    assert (outcome.record.category, outcome.record.affected_units, outcome.rule) == ("impl_bug", ["inventory"], "impl:uncaught")
