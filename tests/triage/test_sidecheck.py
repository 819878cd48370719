"""Consumer or provider: the side of an upstream call that departs from the SDD's statement of the endpoint is
blamed (statuses, paths, nested answer fields); without an agreed statement, or with two that disagree, the
verdict stays below auto-apply; hostile documents degrade the verdict, never crash it."""

from __future__ import annotations

import json

import pytest

from graphlemon.triage import triage_run
from graphlemon.triage.interface import field_paths
from graphlemon.triage.interface_sdd import sdd_operations

from .runbuilder import RUN_ID, build_project

PROVIDER, CONSUMER = "seat-ledger", "box-office"
UNITS = [
    {"unit_id": PROVIDER, "code": ["ledger"], "framework": "flask"},
    {"unit_id": CONSUMER, "code": ["office"], "depends_on": [PROVIDER], "framework": "flask"},
]
LEDGER_CODE = """from flask import Flask, jsonify

app = Flask(__name__)
HELD = set()


@app.post("/shows/<show_id>/holds")
def hold(show_id):
    if show_id in HELD:
        return jsonify(error="already held"), {held}
    HELD.add(show_id)
    return jsonify(hold_id="h-1"), 201
"""
OFFICE_CODE = """import requests
from flask import Flask, jsonify

app = Flask(__name__)


@app.post("/tickets/<show_id>")
def ticket(show_id):
    r = requests.post(f"http://127.0.0.1:9101/shows/{show_id}/holds", timeout=3)
    if r.status_code in (201, 409):
        return jsonify(notice="held"), 200
    return jsonify(error="hold failed"), 500
"""


def _contract(unit: str, path: str, responses: dict, consumes: list | None = None, description: str = "") -> dict:
    ep = {"method": "POST", "path": path, "description": description, "responses": responses}
    return {"unit_id": unit, "exports": {"http": [ep]}, "consumes": consumes or []}


def _project(tmp_path, sdd: str, *, provider_statuses=("201", "400"), consumer_statuses=("201", "409"),
             got: int = 400, provider_path="/shows/{show_id}/holds", description: str = ""):  # fmt: skip
    call = "/shows/s-9/holds"
    trace = [
        {"ts": "2026-12-03T10:00:05Z", "case": "second-hold", "step": 0, "unit_id": PROVIDER, "method": "POST",
         "url": f"http://127.0.0.1:9101{call}", "status": got, "response_body": {"error": "already held"}},
        {"ts": "2026-12-03T10:00:05Z", "case": "second-hold", "step": 0, "unit_id": CONSUMER, "method": "POST",
         "url": "http://127.0.0.1:9102/tickets/s-9", "status": 500, "response_body": {"error": "hold failed"}},
    ]  # fmt: skip
    contracts = {
        PROVIDER: _contract(PROVIDER, provider_path, {s: "answer" for s in provider_statuses}, description=description),
        CONSUMER: _contract(
            CONSUMER, "/tickets/<show_id>", {"200": "held"},
            [{"unit_id": PROVIDER, "method": "POST", "path": "/shows/{show_id}/holds",
              "responses": {s: "answer" for s in consumer_statuses}}],
        ),
    }  # fmt: skip
    failure = {
        "case": "second-hold", "description": "holding a held show again still tells the buyer it is held",
        "involves": [CONSUMER, PROVIDER], "request": {"method": "POST", "path": "/tickets/s-9"},
        "expected": {"status": 200}, "got": {"status": 500, "body": {"error": "hold failed"}},
    }  # fmt: skip
    files = {"ledger/app.py": LEDGER_CODE.replace("{held}", str(got)), "office/app.py": OFFICE_CODE}
    return build_project(tmp_path / "p", units=UNITS, files=files, sdd=sdd, failure=failure, trace=trace,
                         contracts=contracts)  # fmt: skip


def _verdict(project):
    return triage_run(project, RUN_ID).record


SDD_409 = f"""# Theatre

## {PROVIDER}

`POST /shows/{{show_id}}/holds` answers 201 with the hold; a show that is already held is answered 409.

## {CONSUMER}

`POST /tickets/<show_id>` answers 200 when the seat is held.
"""


def test_a_provider_whose_contract_lacks_the_sdds_status_the_consumer_awaits_is_blamed(tmp_path):
    r = _verdict(_project(tmp_path, SDD_409))
    assert (r.category, r.affected_units) == ("contract_mismatch", [PROVIDER])
    assert r.confidence >= 0.8 and r.will_auto_apply  # the SDD and the consumer agree; the trace shows the 400
    assert "409" in r.root_cause and r.proposed_sdd_patch is not None
    assert any("sdd.md" in e for e in r.evidence) and any(f"units/{PROVIDER}/contract.json" in e for e in r.evidence)


def test_a_consumer_that_does_not_accept_the_sdds_status_is_blamed(tmp_path):
    sdd = SDD_409.replace("409", "400")
    r = _verdict(_project(tmp_path, sdd))
    assert (r.category, r.affected_units) == ("contract_mismatch", [CONSUMER])
    assert r.confidence >= 0.8  # the SDD and the provider's contract agree on 400


def test_a_consumer_that_does_not_take_one_of_several_refusals_is_blamed_below_auto_apply(tmp_path):
    """The SDD states 400 and 404: the 400 the consumer does not take may be meant for another situation."""
    sdd = SDD_409.replace("is answered 409.", "is answered 400; an unknown show is answered 404.")
    r = _verdict(_project(tmp_path, sdd, provider_statuses=("201", "400", "404"), consumer_statuses=("201", "404")))
    assert (r.category, r.affected_units) == ("contract_mismatch", [CONSUMER])
    assert r.confidence < 0.8 and not r.will_auto_apply


def test_an_sdd_that_states_both_statuses_blames_the_provider_below_auto_apply(tmp_path):
    sdd = SDD_409.replace("is answered 409.", "is answered 409; a malformed body is answered 400.")
    r = _verdict(_project(tmp_path, sdd))
    assert (r.category, r.affected_units) == ("contract_mismatch", [PROVIDER])
    assert r.confidence < 0.8 and not r.will_auto_apply


OPENAPI_400 = f"""# {PROVIDER} API

```yaml
paths:
  /shows/{{show_id}}/holds:
    post:
      responses:
        "201": {{description: held}}
        "400": {{description: already held}}
```
"""


def test_a_provider_lacking_the_sdds_status_is_blamed_below_auto_apply_when_the_consumer_took_the_answer(tmp_path):
    sdd = SDD_409.replace("is answered 409.", "is answered 409; a malformed body is answered 400.")
    r = _verdict(_project(tmp_path, sdd, consumer_statuses=("201", "400", "409")))
    assert (r.category, r.affected_units) == ("contract_mismatch", [PROVIDER])
    assert r.confidence < 0.8 and "409" in r.root_cause


@pytest.mark.parametrize(
    ("sdd", "second"),
    [
        (f"# Theatre\n\n## {PROVIDER}\n\nHolds seats.\n", None),  # no statement of the endpoint
        (SDD_409, OPENAPI_400),  # two documents: the prose says 409, the OpenAPI document 400
    ],
    ids=["sdd-silent", "documents-disagree"],
)
def test_without_one_agreed_statement_the_verdict_goes_to_a_person(tmp_path, sdd, second):
    p = _project(tmp_path, sdd)
    if second:
        (p.root / ".graphlemon/artifacts/sdd/api.md").write_text(second)
    r = _verdict(p)
    assert r.category == "contract_mismatch" and r.confidence < 0.8 and not r.will_auto_apply


def test_a_renamed_route_sharing_only_a_parameters_place_is_the_providers(tmp_path):
    """The SDD and the consumer call /shows/{id}/holds; the provider's contract says /reservations/{id}."""
    p = _project(tmp_path, SDD_409, got=404, provider_path="/reservations/{show_id}")
    r = _verdict(p)
    assert (r.category, r.affected_units) == ("contract_mismatch", [PROVIDER])
    assert "/reservations/{show_id}" in r.root_cause


# -- hostile documents: the verdict degrades, it never crashes ------------------------------------------------


def _hostile_sdds() -> list[tuple[str, bytes]]:
    broken_yaml = "```yaml\npaths:\n  /shows/{show_id}/holds:\n    post:\n      responses: {409: [\n```\n"
    broken_json = '```json\n{"paths": {"/shows/{show_id}/holds": {"post": {"responses": {"409": \n```\n'
    markup = (
        "<table><tr><td>POST /shows/{show_id}/holds</td><td><b>409</b></td></tr></table>\n"
        "<!-- POST /shows/{show_id}/holds 400 --><script>alert(409)</script>\n"
    )
    huge = "Seats are held for a while. " * 20_000  # 560 KB of prose without a statement of the endpoint
    return [
        ("broken-yaml", f"# T\n\n## {PROVIDER}\n\n{broken_yaml}".encode()),
        ("broken-json", f"# T\n\n## {PROVIDER}\n\n{broken_json}".encode()),
        ("markup", f"# T\n\n## {PROVIDER}\n\n{markup}".encode()),
        ("not-utf8", f"# T\n\n## {PROVIDER}\n\n".encode() + b"\xff\xfe POST /shows/{show_id}/holds \x80 409\n"),
        ("huge", f"# T\n\n## {PROVIDER}\n\n{huge}\n".encode()),
    ]


@pytest.mark.parametrize(("name", "sdd"), _hostile_sdds(), ids=[n for n, _ in _hostile_sdds()])
def test_a_hostile_sdd_degrades_to_low_confidence(tmp_path, name, sdd):
    p = _project(tmp_path, "placeholder")
    (p.root / ".graphlemon/artifacts/sdd/sdd.md").write_bytes(sdd)
    r = _verdict(p)
    assert r.evidence_verified and r.confidence < 0.8 and not r.will_auto_apply, (name, r.root_cause)


def test_a_contract_description_that_looks_like_markup_is_only_text(tmp_path):
    p = _project(tmp_path, SDD_409, description="<script>409</script> | POST /x | 400 {a, b} ```yaml\n: [")
    r = _verdict(p)
    assert (r.category, r.affected_units) == ("contract_mismatch", [PROVIDER])


def test_a_malformed_contract_is_a_clear_error_and_nothing_is_written(tmp_path):
    from graphlemon.errors import GraphLemonError

    p = _project(tmp_path, SDD_409)
    (p.root / f".graphlemon/units/{PROVIDER}/contract.json").write_text('{"unit_id": "seat-ledger", "exports": {')
    with pytest.raises(GraphLemonError) as err:
        triage_run(p, RUN_ID)
    assert err.value.code == "INVALID_PARAM" and "contract.json" in err.value.message
    assert not (p.root / f".graphlemon/integration/runs/{RUN_ID}/triage.json").exists()


# -- the readers the check relies on ----------------------------------------------------------------------------


def test_a_signature_set_off_as_a_plain_code_block_is_read_and_a_program_is_not():
    indented = "## svc\n\nDepartures.\n\n    GET /crossings/{route}/departures  ->  200 {route, departures}\n" \
               "                                       ->  404 if the route is unknown\n"  # fmt: skip
    (op,) = sdd_operations([("sdd.md", indented)], ["svc"])
    assert (op.method, op.path, sorted(op.statuses), sorted(op.fields_for(200))) == (
        "GET", "/crossings/{route}/departures", [200, 404], ["departures", "route"],
    )  # fmt: skip
    assert op.at.line == 5
    program = "## svc\n\n```python\n@app.get('/crossings/{route}')\ndef f():\n    return 200\n```\n"
    assert sdd_operations([("sdd.md", program)], ["svc"]) == []


def test_a_table_of_dotted_paths_lists_nested_answer_fields():
    text = "## svc\n\n`GET /houses/{id}` answers 200.\n\n| path | type |\n|---|---|\n| `id` | string |\n" \
           "| `reading.humidity_pct` | number |\n"  # fmt: skip
    (op,) = sdd_operations([("sdd.md", text)], ["svc"])
    assert sorted(op.fields_for(200)) == ["id", "reading.humidity_pct"]


def test_field_paths_name_nested_objects_and_stay_bounded():
    assert field_paths({"a": 1, "b": {"c": {"d": 2}}, "e": [{"f": 1}]}) == ["a", "b", "e", "b.c", "b.c.d"]
    deep: dict = {}
    node = deep
    for _ in range(1000):
        node["x"] = {}
        node = node["x"]
    assert len(field_paths(deep)) <= 4
    wide = {f"k{i}": {str(j): j for j in range(100)} for i in range(1000)}
    assert len(field_paths(wide)) <= 500
    assert json.dumps(field_paths({"\udcff<b>": {"\x00": 1}}))


# -- request inputs: a header for a query parameter ------------------------------------------------------------

HIVE, MONITOR = "hive-scale", "hive-watch"


def _input_project(tmp_path, sdd: str, *, provider_request, consumer_request):
    weight = "/hives/{hive_id}/weight"
    units = [{"unit_id": HIVE, "code": ["scale"], "framework": "flask"},
             {"unit_id": MONITOR, "code": ["watch"], "depends_on": [HIVE], "framework": "flask"}]  # fmt: skip
    answer = {"200": {"body": {"weight_kg": "number"}}, "401": "no key"}
    contracts = {
        HIVE: {"unit_id": HIVE, "exports": {"http": [
            {"method": "GET", "path": weight, **_inputs(provider_request), "responses": answer}]}},
        MONITOR: {"unit_id": MONITOR, "exports": {"http": [{"method": "GET", "path": "/alerts/:id", "responses": {"200": "ok"}}]},
                  "consumes": [{"unit_id": HIVE, "method": "GET", "path": weight, "request": consumer_request,
                                "responses": answer}]},
    }  # fmt: skip
    trace = [
        {"ts": "2026-12-03T10:00:05Z", "case": "alert", "step": 0, "unit_id": HIVE, "method": "GET",
         "url": "http://127.0.0.1:9501/hives/h1/weight", "request_headers": {"X-Hive-Key": "k"}, "status": 401,
         "response_body": {"error": "unauthorized"}},
        {"ts": "2026-12-03T10:00:05Z", "case": "alert", "step": 0, "unit_id": MONITOR, "method": "GET",
         "url": "http://127.0.0.1:9502/alerts/h1", "status": 500, "response_body": {"error": "scale answered 401"}},
    ]  # fmt: skip
    failure = {"case": "alert", "description": "a weight drop raises an alert", "involves": [MONITOR, HIVE],
               "request": {"method": "GET", "path": "/alerts/h1"}, "expected": {"status": 200},
               "got": {"status": 500, "body": {"error": "scale answered 401"}}}  # fmt: skip
    files = {"scale/app.py": "from flask import Flask\napp = Flask(__name__)\n",
             "watch/app.py": "from flask import Flask\napp = Flask(__name__)\n"}  # fmt: skip
    return build_project(tmp_path / "p", units=units, files=files, sdd=sdd, failure=failure, trace=trace,
                         contracts=contracts)  # fmt: skip


def _inputs(request) -> dict:
    """An endpoint's inputs as `request: {...}`, or OpenAPI's `parameters: [...]` when given so."""
    return request if isinstance(request, dict) and "parameters" in request else {"request": request}


def _hive_sdd(names: str) -> str:
    return (f"# Bees\n\n## {HIVE}\n\nEvery request carries the key {names}; a wrong key is 401.\n\n"
            f"- `GET /hives/{{hive_id}}/weight` → 200 `{{weight_kg}}`\n\n## {MONITOR}\n\nRaises alerts.\n")  # fmt: skip


HEADER = {"headers": {"X-Hive-Key": "string"}}
QUERY = {"query": {"key": "string"}}


@pytest.mark.parametrize(
    ("names", "provider_request", "consumer_request", "blamed"),
    [
        ("in the `X-Hive-Key` header", QUERY, HEADER, HIVE),  # the SDD and the consumer: a header
        ("as the `?key=` query parameter", QUERY, HEADER, MONITOR),  # the SDD and the provider: a query parameter
        ("in the `X-Hive-Key` header", QUERY, None, HIVE),  # a consumer that declares nothing: what it sent
        ("in the `X-Hive-Key` header", {"parameters": [{"name": "key", "in": "query"}]}, HEADER, HIVE),  # OpenAPI's
        ("in the `X-Hive-Key` header or as `?key=`", QUERY, HEADER, None),  # the SDD names both: no side departs
        ("in the `X-Hive-Key` header", "not an object", ["x"], None),  # a malformed request section is no input
    ],
    ids=["provider-departs", "consumer-departs", "consumer-as-traced", "openapi-parameters", "sdd-names-both",
         "malformed-request"],
)
def test_an_input_sent_where_the_provider_does_not_read_it_blames_the_side_the_sdd_does_not_name(
    tmp_path, names, provider_request, consumer_request, blamed
):
    r = _verdict(_input_project(tmp_path, _hive_sdd(names), provider_request=provider_request,
                                consumer_request=consumer_request))  # fmt: skip
    patch = r.proposed_sdd_patch.text if r.proposed_sdd_patch else ""
    if blamed:
        assert (r.category, r.affected_units) == ("contract_mismatch", [blamed]) and "input_differs" in patch
    else:
        assert "input_differs" not in patch


# -- the provider's code reads another header than the one the SDD names and the request carried ---------------

STUDIO = "studio-api"
PY_READER = """from flask import Flask, jsonify, request

app = Flask(__name__)


@app.before_request
def check_key():
    if request.headers.get("{read}") != "k-1":
        return jsonify(error="bad_key"), 401


@app.post("/bookings")
def book():
    return jsonify(booking_id="b-1"), 201
"""
JS_READER = """const express = require('express');
const app = express();
app.use((req, res, next) => (req.get('{read}') === 'k-1' ? next() : res.status(401).json({ error: 'bad_key' })));
app.post('/bookings', (req, res) => res.status(201).json({ booking_id: 'b-1' }));
app.listen(5560);
"""


def _header_project(tmp_path, code: str, rel: str, *, contract_header: str | None = None):
    sdd = f"# Studio\n\n## {STUDIO}\n\nEvery request carries the key in the `X-Studio-Key` header.\n\n" \
          f"- `POST /bookings` → 201 `{{booking_id}}`; 401 without the key.\n"  # fmt: skip
    ep = {"method": "POST", "path": "/bookings", "responses": {"201": "booked", "401": "bad key"}}
    if contract_header:
        ep["request"] = {"headers": {contract_header: "string"}}
    headers = {"Content-Type": "application/json", "X-Studio-Key": "k-1"}
    trace = [{"ts": "2026-12-03T10:00:05Z", "case": "book", "step": 0, "unit_id": STUDIO, "method": "POST",
              "url": "http://127.0.0.1:5560/bookings", "request_headers": headers, "status": 401,
              "response_body": {"error": "bad_key"}}]  # fmt: skip
    failure = {"case": "book", "description": "a request with the key books", "involves": [STUDIO],
               "request": {"method": "POST", "path": "/bookings", "headers": headers}, "expected": {"status": 201},
               "got": {"status": 401, "body": {"error": "bad_key"}}}  # fmt: skip
    return build_project(tmp_path / "p", units=[{"unit_id": STUDIO, "code": ["studio"]}], files={rel: code},
                         sdd=sdd, failure=failure, trace=trace,
                         contracts={STUDIO: {"unit_id": STUDIO, "exports": {"http": [ep]}}})  # fmt: skip


@pytest.mark.parametrize(("code", "rel"), [(PY_READER, "studio/app.py"), (JS_READER, "studio/app.js")])
def test_code_that_reads_another_header_than_the_sdd_names_is_the_providers_bug(tmp_path, code, rel):
    r = _verdict(_header_project(tmp_path, code.replace("{read}", "X-Api-Key"), rel))
    assert (r.category, r.affected_units) == ("impl_bug", [STUDIO])
    assert any(e.startswith(f"{rel}:") and "X-Api-Key" in e for e in r.evidence)
    assert "X-Studio-Key" in r.root_cause


def test_a_contract_that_declares_the_codes_header_is_the_mismatch(tmp_path):
    code = PY_READER.replace("{read}", "X-Api-Key")
    r = _verdict(_header_project(tmp_path, code, "studio/app.py", contract_header="X-Api-Key"))
    assert (r.category, r.affected_units) == ("contract_mismatch", [STUDIO])


@pytest.mark.parametrize(
    "code",
    [PY_READER.replace("{read}", "X-Studio-Key"),  # it reads the SDD's header: the 401 has another reason
     "def broken(:\n    request.headers.get('X-Api-Key')\n",  # not Python: nothing is read
     "x = request.headers[some_name]\n"],  # a computed name is not seen
)  # fmt: skip
def test_no_header_finding_without_a_read_of_another_named_header(tmp_path, code):
    r = _verdict(_header_project(tmp_path, code, "studio/app.py"))
    assert "reads the header" not in r.root_cause


@pytest.mark.parametrize("mutate", ["not-utf8", "huge", "markup"])
def test_a_hostile_code_file_gives_no_header_finding_and_never_crashes(tmp_path, mutate):
    code = PY_READER.replace("{read}", "X-Api-Key")
    p = _header_project(tmp_path, code, "studio/app.py")
    path = p.root / "studio/app.py"
    if mutate == "not-utf8":
        path.write_bytes(b"\xff\xfe" + code.encode())  # read with replacement: no longer Python
    elif mutate == "huge":
        path.write_text(code + "# padding\n" * 250_000)  # 2.5 MB: not parsed
    else:
        path.write_text("<script>request.headers.get('X-Api-Key')</script>\n" + "<b>" * 10_000)
    r = _verdict(p)
    assert r.evidence_verified and "reads the header" not in r.root_cause


def test_a_code_that_reads_several_other_headers_is_blamed_below_auto_apply(tmp_path):
    """Two headers read where the SDD names one: which one stands for the SDD's is not shown."""
    code = PY_READER.replace('request.headers.get("{read}")', 'request.headers.get("X-Api-Key") or request.headers["X-Tenant"]')
    r = _verdict(_header_project(tmp_path, code, "studio/app.py"))
    assert (r.category, r.affected_units) == ("impl_bug", [STUDIO]) and r.confidence < 0.8
