"""The interface model: the SDD read with a markdown parser (tables, inline text, OpenAPI / JSON blocks), and the
structural comparison's typed findings on real scenario runs."""

from __future__ import annotations

import json
import keyword

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from graphlemon.triage.interface import Operation, Quote, same_interface
from graphlemon.triage.interface_sdd import sdd_operations, states_a_bound

UNITS = ["ledger-svc"]


def ops(text: str, units: list[str] = UNITS) -> list[Operation]:
    return sdd_operations([("sdd.md", text)], units)


# -- generated interfaces, written four ways -----------------------------------------------------------------

_ident = st.from_regex(r"[a-z][a-z0-9_]{1,10}", fullmatch=True)
_segment = st.from_regex(r"[a-z][a-z0-9-]{1,8}", fullmatch=True)


@st.composite
def interfaces(draw) -> dict:
    method = draw(st.sampled_from(["GET", "POST", "PUT", "PATCH", "DELETE"]))
    segments = draw(st.lists(_segment, min_size=1, max_size=3))
    params = draw(st.lists(_ident, min_size=0, max_size=2, unique=True))
    path = "/" + "/".join([*segments, *(f"{{{p}}}" for p in params)])
    success = draw(st.sampled_from([200, 201, 202, 204]))
    errors = draw(st.lists(st.sampled_from([400, 401, 403, 404, 409, 410, 422, 429]), max_size=3, unique=True))
    fields = {
        s: draw(st.lists(_ident, min_size=0 if s >= 400 else 1, max_size=4, unique=True)) for s in [success, *errors]
    }
    if success == 204:
        fields[204] = []
    return {"method": method, "path": path, "fields": fields}


def as_inline(i: dict) -> str:
    answers = "; ".join(
        f"{s} `{{{', '.join(f)}}}`" if f else str(s) for s, f in i["fields"].items()
    )  # `GET /x` → 200 `{a, b}`; 404
    return f"# API\n\n## ledger-svc\n\n`{i['method']} {i['path']}` answers {answers}.\n"


def as_table(i: dict) -> str:
    rows = "\n".join(
        f"| {i['method']} | {i['path']} | {s} | {'`{' + ', '.join(f) + '}`' if f else '(no body)'} |"
        for s, f in i["fields"].items()
    )
    return f"# API\n\n## ledger-svc\n\n| method | path | status | body |\n|---|---|---|---|\n{rows}\n"


def _openapi(i: dict) -> dict:
    responses = {
        str(s): {"description": "answer"}
        | (
            {"content": {"application/json": {"schema": {"properties": {n: {"type": "string"} for n in f}}}}}
            if f
            else {}
        )
        for s, f in i["fields"].items()
    }
    return {"openapi": "3.0.0", "paths": {i["path"]: {i["method"].lower(): {"responses": responses}}}}


def as_openapi_yaml(i: dict) -> str:
    return f"# API\n\n## ledger-svc\n\n```yaml\n{yaml.safe_dump(_openapi(i), sort_keys=False)}```\n"


def as_openapi_json(i: dict) -> str:
    return f"# API\n\n## ledger-svc\n\n```json\n{json.dumps(_openapi(i), indent=2)}\n```\n"


def as_heading_and_bullets(i: dict) -> str:
    bullets = "\n".join(
        f"- `{s}` — body `{{{', '.join(f)}}}`" if f else f"- `{s}` — no body" for s, f in i["fields"].items()
    )
    return f"# API\n\n## ledger-svc\n\n### {i['method']} {i['path']}\n\nResponses:\n\n{bullets}\n"


def as_endpoint_list_yaml(i: dict) -> str:
    responses = {s: ({"body": dict.fromkeys(f, "string")} if f else "answer") for s, f in i["fields"].items()}
    doc = {"endpoints": [{"method": i["method"], "path": i["path"], "responses": responses}]}
    return f"# API\n\n## ledger-svc\n\n```yaml\n{yaml.safe_dump(doc, sort_keys=False)}```\n"


WRITERS = [as_inline, as_table, as_openapi_yaml, as_openapi_json, as_heading_and_bullets, as_endpoint_list_yaml]


@settings(max_examples=40, deadline=None)
@given(interfaces())
def test_tables_inline_and_openapi_describe_the_same_interface(i):
    read = [ops(write(i)) for write in WRITERS]
    assert all(len(r) == 1 for r in read), [write(i) for write in WRITERS]
    first = read[0][0]
    assert (first.method, first.unit, set(first.statuses)) == (i["method"], "ledger-svc", set(i["fields"]))
    assert {s: set(first.fields_for(s)) for s in first.statuses} == {s: set(f) for s, f in i["fields"].items()}
    for other in read[1:]:
        assert same_interface(first, other[0]), (first.signature(), other[0].signature())


@settings(max_examples=40, deadline=None)
@given(interfaces(), st.text(max_size=200))
def test_any_surrounding_prose_or_markup_never_breaks_the_reader(i, noise):
    text = as_table(i) + "\n" + noise + "\n" + as_inline(i).split("\n", 1)[1]
    for op in ops(text):  # whatever the noise says, the reader returns operations with quotable lines
        assert op.at.line >= 1 and all(q.line >= 1 for q in op.statuses.values())


# -- one fact each ---------------------------------------------------------------------------------------------


def test_a_field_table_under_an_endpoint_lists_its_answer_fields():
    (op,) = ops(
        "## ledger-svc\n\n**GET /entries/{entry_id}**: 200 with the body below, 404 when unknown.\n\n"
        "| field | type |\n|---|---|\n| entry_id | string |\n| amount_cents | integer |\n"
    )
    assert op.fields_for(200).keys() == {"entry_id", "amount_cents"}
    assert op.fields_for(200)["amount_cents"] == Quote("sdd.md", 8)


def test_a_limit_in_words_with_the_status_beyond_it():
    (op,) = ops("## ledger-svc\n\n`POST /exports` answers 202. No more than four exports a day; the fifth is 429.\n")
    assert [(x.count, x.status) for x in op.limits] == [(4, 429)]


# A cap on a request's quantity, written the ways an SDD writes it: each reads as the same limit.
_CAP_FORMS = (
    "at most {n} {u}", "up to {n} {u}", "no more than {n} {u}", "a maximum of {n} {u}", "{n} {u} or less",
    "anything more than {n} {u} is refused with 422", "a body over {n} {u} answers 413",
)  # fmt: skip


@settings(max_examples=40, deadline=None)
@given(
    st.integers(min_value=1, max_value=999),
    st.sampled_from([("MB", "bytes"), ("KB", "bytes"), ("bytes", "bytes"), ("characters", "length")]),
)
def test_a_cap_on_a_quantity_reads_the_same_in_every_wording(n, unit):
    word, measure = unit
    read = []
    for form in _CAP_FORMS:
        (op,) = ops(f"## ledger-svc\n\n`POST /files` answers 201; {form.format(n=n, u=word)}.\n")
        (limit,) = op.limits
        read.append((limit.measure, limit.bound, limit.count, limit.count_max))
        assert limit.allows(limit.count) and not limit.allows((limit.count_max or limit.count) + 1), form
    assert len(set(read)) == 1 and read[0][:2] == (measure, "max"), read


def test_a_range_bounds_both_sides_and_a_bare_bound_is_no_status():
    (op,) = ops(
        "## ledger-svc\n\n`POST /bookings` answers 201; parties of between 1 and 8 guests, over 100 nights → 422.\n"
    )
    assert [(x.measure, x.bound, x.count) for x in op.limits] == [
        ("value", "min", 1),
        ("value", "max", 8),
        ("value", "max", 100),
    ]
    assert set(op.statuses) == {201, 422}  # "over 100" is a bound, not a status
    (op,) = ops("## ledger-svc\n\n`GET /a` answers 200 with a JSON object; 404 when unknown.\n")
    assert set(op.statuses) == {200, 404} and not op.limits  # "200 with a JSON" counts nothing


def test_a_limit_outside_any_endpoint_holds_for_its_units_endpoints():
    (a, b) = ops(
        "## ledger-svc\n\n`PUT /a` answers 201.\n\n`PUT /b` answers 201.\n\n### Files\n\nFiles up to 5 MB are kept.\n"
    )
    assert [x.unit_wide for x in a.limits] == [True] and b.limits == a.limits


@settings(max_examples=40, deadline=None)
@given(interfaces())
def test_fields_listed_in_prose_are_the_success_answers_fields(i):
    success = min(i["fields"])
    names = i["fields"][success]
    if not names:
        return
    spans = ", ".join(f"`{n}`" for n in names[:-1]) + (" and " if len(names) > 1 else "") + f"`{names[-1]}`"
    bare = ", ".join(names[:-1]) + (" and " if len(names) > 1 else "") + names[-1]
    forms = [f"answers {success} with a JSON object containing {spans}"]
    forms += [f"answers {success} with the fields {bare}"] if len(names) > 1 else []  # one bare word is no list
    for text in forms:
        (op,) = ops(f"## ledger-svc\n\n`{i['method']} {i['path']}` {text}.\n")
        assert set(op.fields_for(success)) == set(names), text


def _shapes(names: list[str]) -> list[tuple[str, str]]:
    """One answer's shape four ways: an example, a JSON Schema, a TypeScript interface, a Python dataclass."""
    return [
        ("json", json.dumps(dict.fromkeys(names, "x"))),
        ("json", json.dumps({"type": "object", "properties": {n: {"type": "string"} for n in names}})),
        ("ts", "interface Answer {\n" + "".join(f"  {n}?: string;\n" for n in names) + "}"),
        ("python", "@dataclass\nclass Answer:\n" + "".join(f"    {n}: str\n" for n in names)),
    ]


_declarable = _ident.filter(lambda n: not keyword.iskeyword(n))  # a field a Python class can declare


@settings(max_examples=30, deadline=None)
@given(st.lists(_declarable, min_size=1, max_size=5, unique=True), st.sampled_from([200, 201]))
def test_an_answer_shown_as_example_schema_or_type_has_the_same_fields(names, status):
    for language, block in _shapes(names):
        (op,) = ops(f"## ledger-svc\n\n`GET /entries/{{id}}` answers {status}:\n\n```{language}\n{block}\n```\n")
        assert set(op.fields_for(status)) == set(names), (language, block)


def test_statuses_in_words_and_braces_before_any_status_are_the_request():
    (op,) = ops(
        "## ledger-svc\n\n`POST /entries` with `{amount}` answers 201 `{entry_id}`; an unknown account is not found.\n"
    )
    assert set(op.statuses) == {201, 404} and set(op.fields_for(201)) == {"entry_id"}


def test_the_innermost_heading_naming_a_unit_owns_its_operations():
    read = ops(
        "# ledger\n\n## ledger-svc\n\n- `GET /a` → 200\n\n## audit\n\n- `GET /b` → 200\n", ["ledger-svc", "audit"]
    )
    assert [(o.unit, o.path) for o in read] == [("ledger-svc", "/a"), ("audit", "/b")]


@pytest.mark.parametrize(
    "text",
    [
        "",
        "```json\n{not json\n```\n",
        "```yaml\npaths: [1, 2\n```\n",
        "```yaml\npaths:\n  /x: 5\n```\n",
        "```python\ndef f():\n    return {'a': 1}\n```\n",
        "| a |\n|---|\n",
        "<section data-unit-id='x'>GET /x 200</section>",
        "\ufeff\x00\udcff GET /x 999 {",
    ],
)
def test_hostile_documents_give_no_operation_or_a_quotable_one(text):
    for op in ops(text):
        assert op.at.line >= 1


# -- the comparison on scenario runs ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "kind", "category", "blamed"),
    [
        ("fb01_parcel_eta_table_field", "field_missing", "contract_mismatch", ("tracking-api",)),
        ("fb02_stock_path_renamed_consumer", "path_differs", "contract_mismatch", ("storefront",)),
        ("fb03_class_booking_openapi_201", "status_differs", "contract_mismatch", ("classes",)),
        ("fb04_loans_fourth_checkout_words", "limit_violated", "impl_bug", ("loans",)),
        ("fb06_sensor_reading_missing_field", "field_missing", "impl_bug", ("sensors",)),
        ("tr2_05_bookmark_other_owner_403", "status_unproduced", "impl_bug", ("bookmarks",)),
        ("tr2_07_review_text_too_long_accepted", "limit_violated", "impl_bug", ("reviews",)),
        ("tr2_08_attachment_within_limit_refused", "limit_violated", "impl_bug", ("mailroom",)),
        ("tr2_09_display_name_two_lengths", "limits_disagree", "spec_ambiguous", ()),
        ("tr2_10_table_party_size_range", "limit_violated", "impl_bug", ("tables",)),
        ("tr2_11_forecast_fields_in_prose", "field_missing", "contract_mismatch", ("forecasts",)),
        ("tr2_12_history_page_size_over_cap", "limit_violated", "impl_bug", ("history",)),
        ("fl09_avatar_size_two_statements", "limits_disagree", "spec_ambiguous", ()),
        ("tr2_14_ferry_departure_field_two_names", "fields_disagree", "spec_ambiguous", ()),
        # the consumer/provider side check, request inputs and the code's header reads
        ("bn02_ferry_departures_route_renamed", "path_differs", "contract_mismatch", ("ferry-schedule",)),
        ("bn05_choir_signup_duplicate_409_vs_400", "status_differs", "contract_mismatch", ("rehearsal-roster",)),
        ("bn01_greenhouse_nested_humidity_field", "field_missing", "contract_mismatch", ("climate-api",)),
        ("bn04_apiary_key_header_vs_query", "input_differs", "contract_mismatch", ("apiary-api",)),
        ("bm10_studio_key_header_name", "input_differs", "impl_bug", ("studio-api",)),
        # declared facts (facts_diff.py): a unit and a protobuf field number
        ("bp01_tip_jar_consumer_reads_cents_as_units", "value_differs", "contract_mismatch", ("tip-widget",)),
        ("bp02_beacon_proto_field_renumbered", "value_differs", "contract_mismatch", ("beacon-gw",)),
    ],
)
def test_typed_findings_quote_the_two_lines_that_disagree(scenario, name, kind, category, blamed):
    from graphlemon.triage.agenttools import compare_interfaces, evidence_findings
    from graphlemon.triage.evidence_check import verify_all

    s = scenario(name)
    found = compare_interfaces(s.project, s.run_id)["findings"][0]
    assert (found["kind"], found["category"], tuple(found["blamed"])) == (kind, category, blamed)
    assert found["a"]["at"] != found["b"]["at"]
    assert found["a"]["side"] != found["b"]["side"] or kind.endswith("_disagree")  # the SDD against itself
    lines = {}
    for at in (found["a"]["at"], found["b"]["at"]):
        rel, line = at.rsplit(":", 1)
        lines[at] = f"{at}: {(s.root / rel).read_text().splitlines()[int(line) - 1].strip()[:120]}"
    assert verify_all(s.root, list(lines.values())).ok
    shown = evidence_findings(s.project, list(lines.values()))["shows"]
    assert set(shown) == set(lines.values()) and all(kind in x[0] for x in shown.values())


def test_the_agent_sees_the_sdd_statement_that_decides_the_case(scenario):
    from graphlemon.triage.agenttools import compare_interfaces

    decided = compare_interfaces(scenario("bp09_polish_plural_twelve_files").project, "int-1205-i18n-a1")
    found = decided["sdd_decides"]
    assert found["kind"] == "decided" and found["statement"]["unit"] == "plural-rules"
    assert "12" in found["covers"] and found["rival"] is None
    silent = scenario("fb07_catalog_csv_bom")
    assert compare_interfaces(silent.project, silent.run_id)["sdd_decides"] is None


def test_an_input_the_sdd_never_mentions_goes_to_a_person_at_one_half(scenario):
    from graphlemon.triage import triage_run

    s = scenario("fb07_catalog_csv_bom")
    r = triage_run(s.project, s.run_id).record
    assert (r.category, r.confidence, r.will_auto_apply) == ("spec_ambiguous", 0.5, False)
    assert "U+FEFF" in r.root_cause and "U+FEFF" in r.l3_question


def test_a_verdict_that_misses_the_distinguishing_input_is_capped():
    from graphlemon.triage.findings import Finding
    from graphlemon.triage.interface_diff import DistinguishingInput
    from graphlemon.triage.interface_verdict import MISSED_INPUT_CAP, cap_for_missed_input

    found = DistinguishingInput((("header authorization", "Bearer expired-jwt"),), Quote("t", 1), Quote("t", 2))
    missed = Finding("impl_bug", ["auth"], 0.84, "auth answers 200 where the SDD requires 401", [], "impl:failing")
    touched = Finding(
        "impl_bug", ["auth"], 0.84, "auth accepts an expired-jwt bearer in the authorization header", [], "impl:failing"
    )
    assert cap_for_missed_input(missed, found).confidence == MISSED_INPUT_CAP
    assert cap_for_missed_input(touched, found).confidence == 0.84


def test_a_json_example_after_the_status_it_shows_lists_that_answers_fields():
    (op,) = ops(
        "## ledger-svc\n\n`GET /balance` — example answer (HTTP 200):\n\n"
        '```json\n{\n  "account": "a-1",\n  "cents": 120\n}\n```\n'
    )
    assert op.fields_for(200).keys() == {"account", "cents"} and op.fields_for(200)["cents"].line == 8


def test_a_json_block_with_no_status_named_before_it_is_not_an_answer():
    (op,) = ops('## ledger-svc\n\n`POST /entries` request:\n\n```json\n{"amount": 1}\n```\n\nIt answers 201.\n')
    assert op.fields == {} and set(op.statuses) == {201}


def test_an_openapi_schema_behind_a_ref_gives_its_properties():
    (op,) = ops(
        "## ledger-svc\n\n```yaml\npaths:\n  /accounts/{id}:\n    get:\n      responses:\n        '200':\n"
        "          content:\n            application/json:\n              schema: {$ref: '#/components/schemas/Account'}\n"
        "components:\n  schemas:\n    Account:\n      properties:\n        iban: {type: string}\n        owner: {type: string}\n```\n"
    )
    assert op.fields_for(200).keys() == {"iban", "owner"} and op.fields_for(200)["owner"].line == 17


def test_a_bullet_list_of_code_spans_after_a_status_lists_that_answers_fields():
    (op,) = ops(
        "## ledger-svc\n\n`POST /transfers` books it. Response 201 contains:\n\n"
        "- `transfer_id` — the id\n- `booked_at` — when\n\nRules:\n\n- `amount` must be positive\n"
    )
    assert op.fields_for(201).keys() == {"transfer_id", "booked_at"} and op.fields_for(201)["booked_at"].line == 6


def test_input_values_are_spelled_as_a_text_would_name_them():
    from graphlemon.triage.interface_diff import spellings
    from graphlemon.triage.interface_sides import request_inputs

    assert "byte-order mark" in spellings("U+FEFF") and spellings(";") == ["semicolon"] and spellings("pt") == ["pt"]
    inputs = request_inputs("http://h/x?lang=pt", {"Accept-Language": "de-CH"}, "\ufeffsku;qty\n")
    assert inputs == {
        "query lang": "pt",
        "header accept-language": "de-CH",
        "body's first character": "U+FEFF",
        "body's separators": ";",
    }
    assert "body's first character" not in request_inputs("http://h/x", None, "sku,qty\n")
    typed = request_inputs("http://h/x", None, {"quantity": "2", "gift": False, "note": None})
    assert [typed[f"body field {k}'s type"] for k in ("quantity", "gift", "note")] == ["string", "boolean", "null"]


def test_the_same_operation_stated_twice_gathers_its_facts():
    (op,) = ops(
        "## ledger-svc\n\n`GET /entries` answers 200 `{items}`.\n\nLater: `GET /entries` with a bad cursor answers 400.\n"
    )
    assert set(op.statuses) == {200, 400} and op.statuses[400].line == 5


def test_operation_signature_is_readable():
    (op,) = ops("## ledger-svc\n\n`GET /entries/{id}` → 200 `{id, amount}`; 404.\n")
    assert op.signature() == "GET /entries/{id} → 200 {amount, id}, 404"


@pytest.mark.parametrize("code_found", [True, False])
def test_a_route_the_code_does_not_serve_is_the_providers_bug_only_when_its_routes_were_parsed(scenario, code_found):
    from graphlemon.triage.rule_classifier import classify
    from graphlemon.triage.run_context import load_run

    s = scenario("fb02_stock_path_renamed_consumer")
    consumer = s.root / ".graphlemon/units/storefront/contract.json"
    consumer.write_text(consumer.read_text().replace("/v1/inventory/", "/v1/stock/"))
    trace = s.run_dir / "http-trace.ndjson"
    trace.write_text(trace.read_text().replace("/v1/inventory/", "/v1/stock/"))
    server = s.root / "stock/src/server.js"
    if code_found:
        server.write_text(server.read_text().replace("'/v1/stock/:sku'", "'/v1/stocks/:sku'"))
    else:
        server.unlink()  # no route parsed at all: the code side says nothing
    finding = classify(load_run(s.project, s.run_id))
    assert (finding.rule == "impl:path_differs") == code_found
    if code_found:
        assert (finding.category, finding.affected, finding.confidence) == ("impl_bug", ["stock"], 0.85)


def test_the_agents_extract_evidence_says_what_each_cited_line_shows(scenario):
    from graphlemon.agents import SandboxPolicy, ToolContext
    from graphlemon.agents.sandbox import Sandbox
    from graphlemon.agents.tools import call_tool

    s = scenario("fb03_class_booking_openapi_201")
    ctx = ToolContext(
        project=s.project, sandbox=Sandbox(SandboxPolicy(root=s.root, writable=[])), role="bug-triager",
        node_exec_id="ne-1", task_id="t-1", unit_id=None, run_id=s.run_id,
    )  # fmt: skip
    spec = '.graphlemon/artifacts/sdd/gym.md:12: "201":'
    contract = (
        ".graphlemon/units/classes/contract.json:9: "
        + (s.root / ".graphlemon/units/classes/contract.json").read_text().splitlines()[8].strip()
    )
    outcome = call_tool(
        ctx,
        "extract_evidence",
        {"evidence": [spec, contract, f"{s.run_dir.relative_to(s.root)}/result.json: book-a-seat"]},
    )
    assert outcome.ok, outcome.content
    out = outcome.content
    assert out["ok"] and [f["kind"] for f in out["findings"]] == ["status_differs"]
    assert set(out["shows"]) == {spec, contract} and "answers 201" in out["shows"][spec][0]


def test_two_statements_name_one_answers_field_two_ways_only_when_one_replaces_the_other():
    from graphlemon.triage.interface_diff import _rival_list

    table = "| field | meaning |\n|---|---|\n| `id` | x |\n| `eta` | y |\n"
    (renamed,) = ops(
        f"## ledger-svc\n\n`GET /a` answers 200:\n\n{table}\nThe 200 answer, for example:\n\n```json\n"
        + '{"id": 1, "arrival": 2}\n```\n'
    )
    assert _rival_list(renamed, 200, "eta", {"id", "arrival"}) == "arrival"
    (added,) = ops(f"## ledger-svc\n\n`GET /a` answers 200:\n\n{table}\nThe answer also includes `currency`.\n")
    assert _rival_list(added, 200, "currency", {"id", "eta"}) is None


def test_a_block_labelled_response_shows_the_success_answer_and_one_labelled_request_does_not():
    text = (
        "## ledger-svc\n\n### GET /entries/{id}\n\nAnswers 200, or 404 when unknown.\n\n"
        'Request headers:\n\n```json\n{"X-Tenant": "t1"}\n```\n\nResponse:\n\n```json\n{"entry_id": "e1"}\n```\n'
    )
    (op,) = ops(text)
    assert set(op.fields_for(200)) == {"entry_id"}


@pytest.mark.parametrize(
    ("text", "sizes"),
    [("an 8 MB photo", [(8e6, 8 * 2**20)]), ("a photo of 12 cats", []), ("between 1 and 2 KB", []), ("", [])],
)
def test_the_size_a_case_states(text, sizes):
    from graphlemon.triage.interface_sdd import stated_sizes

    assert stated_sizes(text) == sizes


def test_a_unit_wide_limit_holds_for_the_endpoints_whose_resource_it_names():
    from graphlemon.triage.interface_diff import _about

    (avatar,) = ops("## ledger-svc\n\n`PUT /profiles/{user}/avatar` answers 201.\n")
    assert _about("Profile images (avatars and banners) of up to 5 MB are accepted.", avatar.template)
    assert not _about("Exports are limited to 10 MB.", avatar.template)


def test_a_nested_object_in_an_inline_answer_is_a_fields_value_not_the_answer():
    [op] = ops("## ledger-svc\n\n`GET /accounts/{id}/moves` → `200 {id, moves: [{amount, at: {day, hour}}], total}`\n")
    assert sorted(op.fields_for(200)) == ["id", "moves", "total"]


def test_an_openapi_parameters_bounds_are_value_limits_with_the_refusal_it_states():
    (op,) = ops(
        "## ledger-svc\n\n```yaml\nopenapi: 3.1.0\npaths:\n  /entries:\n    get:\n      parameters:\n"
        "        - name: per_page\n          in: query\n          schema: {type: integer, minimum: 5, exclusiveMaximum: true, maximum: 250}\n"
        "      responses:\n        '200': {description: a page}\n        '422': {description: out of range}\n```\n"
    )
    bounds = sorted((x.bound, x.count, x.strict, x.status, x.measure) for x in op.limits)
    assert bounds == [("max", 250, True, 422, "value"), ("min", 5, False, 422, "value")]
    assert all("per_page" in x.statement for x in op.limits)
    assert op.limits[0].allows(249) and not op.limits[0].allows(250)


@pytest.mark.parametrize(
    ("text", "bounds"),
    [
        ("| exports per account, rolling day | 12 | 429 |", True),
        ("No more than two renewals a month; a third answers 409.", True),
        ("Anything above 8 MB is refused with 413.", True),
        ("Creating a ticket answers 201 with `{id}`.", False),
        ("A ticket nobody opened answers 404 `{error}`.", False),
    ],
)
def test_a_statement_that_bounds_a_quantity(text, bounds):
    assert states_a_bound(text) is bounds
