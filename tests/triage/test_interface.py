"""The interface model: the SDD read with a markdown parser (tables, inline text, OpenAPI / JSON blocks), and the
structural comparison's typed findings on real scenario runs."""

from __future__ import annotations

import json
import keyword

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from graphlemon.triage.interface import Operation, Quote
from graphlemon.triage.interface_sdd import sdd_operations

UNITS = ["ledger-svc"]


def ops(text: str, units: list[str] = UNITS) -> list[Operation]:
    return sdd_operations([("sdd.md", text)], units)


def same_interface(a: Operation, b: Operation) -> bool:
    """Two statements describe the same interface: endpoint, statuses, fields per status and limits."""
    return (
        (a.method, a.template) == (b.method, b.template)
        and set(a.statuses) == set(b.statuses)
        and {s: set(a.fields_for(s)) for s in a.statuses} == {s: set(b.fields_for(s)) for s in b.statuses}
        and {(x.count, x.status) for x in a.limits} == {(x.count, x.status) for x in b.limits}
    )


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


WRITERS = [as_inline, as_table, as_openapi_yaml, as_openapi_json, as_heading_and_bullets]


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


def test_a_quantity_is_neither_a_call_count_nor_a_status():
    (op,) = ops("## ledger-svc\n\n`POST /files` answers 201; files up to 5 MB, over 100 pages → 422.\n")
    assert set(op.statuses) == {201, 422} and not op.limits  # "up to 5 MB" limits no calls; "100" is no status
    (op,) = ops("## ledger-svc\n\n`GET /a` answers 200 with a JSON object; 404 when unknown.\n")
    assert set(op.statuses) == {200, 404} and not op.limits  # "200 with a JSON" counts nothing


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
    """One answer's shape as an example, in JSON and in YAML."""
    return [("json", json.dumps(dict.fromkeys(names, "x"))), ("yaml", yaml.safe_dump(dict.fromkeys(names, "x")))]


_declarable = _ident.filter(lambda n: not keyword.iskeyword(n))  # a field a Python class can declare


@settings(max_examples=30, deadline=None)
@given(st.lists(_declarable, min_size=1, max_size=5, unique=True), st.sampled_from([200, 201]))
def test_an_answer_shown_as_an_example_has_its_fields(names, status):
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
        ("tr2_14_ferry_departure_field_two_names", "fields_disagree", "spec_ambiguous", ()),
        ("bn02_ferry_departures_route_renamed", "path_differs", "contract_mismatch", ("ferry-schedule",)),
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


@pytest.mark.parametrize(
    ("name", "rule", "blamed"),
    [
        ("fb02_stock_path_renamed_consumer", "contract:path_differs", ["storefront"]),
        ("fb03_class_booking_openapi_201", "contract:status_differs", ["classes"]),
        ("fb04_loans_fourth_checkout_words", "impl:limit_violated", ["loans"]),
        ("fb06_sensor_reading_missing_field", "impl:field_missing", ["sensors"]),
        ("tr2_05_bookmark_other_owner_403", "impl:status_unproduced", ["bookmarks"]),
        ("fa06_episode_unpublish_202", "impl:status_differs", ["episodes"]),
    ],
)
def test_each_kept_interface_mechanism_decides_alone(scenario, name, rule, blamed):
    from graphlemon.triage.decider import classify
    from graphlemon.triage.run_context import load_run

    s = scenario(name)
    verdict = classify(load_run(s.project, s.run_id))
    assert (verdict.rule, verdict.affected) == (rule, blamed) and verdict.rule.split(":")[0] in verdict.category


def test_a_contract_field_the_sdd_lists_is_a_suggestion_not_a_verdict(scenario):
    from graphlemon.triage.decider import classify
    from graphlemon.triage.run_context import load_run

    s = scenario("fb01_parcel_eta_table_field")  # contract:field_missing: right 5 of 8 on sets it was not shaped on
    verdict = classify(load_run(s.project, s.run_id))
    assert (verdict.category, verdict.confidence) == ("contract_mismatch", 0.6)
    assert [f.rule for f in verdict.facts] == ["contract:field_missing"] and "suggested" in verdict.hints[0]


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


def test_the_same_operation_stated_twice_gathers_its_facts():
    (op,) = ops(
        "## ledger-svc\n\n`GET /entries` answers 200 `{items}`.\n\nLater: `GET /entries` with a bad cursor answers 400.\n"
    )
    assert set(op.statuses) == {200, 400} and op.statuses[400].line == 5


def test_operation_signature_is_readable():
    (op,) = ops("## ledger-svc\n\n`GET /entries/{id}` → 200 `{id, amount}`; 404.\n")
    assert op.signature() == "GET /entries/{id} → 200 {amount, id}, 404"


@pytest.mark.parametrize("code_found", [True, False])
def test_a_route_the_code_does_not_serve_is_a_finding_only_when_its_routes_were_parsed(scenario, code_found):
    from graphlemon.triage.decider import classify
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
    verdict = classify(load_run(s.project, s.run_id))  # impl:path_differs is no kept mechanism: a fact at most
    assert verdict.rule == "facts:only"
    assert [(f.rule, f.affected) for f in verdict.facts] == ([("impl:path_differs", ["stock"])] if code_found else [])


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


def test_a_nested_object_in_an_inline_answer_is_a_fields_value_not_the_answer():
    [op] = ops("## ledger-svc\n\n`GET /accounts/{id}/moves` → `200 {id, moves: [{amount, at: {day, hour}}], total}`\n")
    assert sorted(op.fields_for(200)) == ["id", "moves", "total"]


@pytest.mark.parametrize(
    "text",
    [
        "`POST /api/v2/rentals` answers 202 Accepted. The 201 in the table above is wrong.",
        "`POST /api/v2/rentals` answers 202, no longer 201.",
        "`POST /api/v2/rentals` answers 202 instead of 201.",
    ],
)
def test_a_status_the_sentence_denies_is_not_stated(text):
    (op,) = ops(f"## ledger-svc\n\n{text}\n")
    assert sorted(op.statuses) == [202]


def test_a_condition_with_not_is_no_denial():
    (op,) = ops("## ledger-svc\n\n`GET /shelves/{id}/books` on a shelf that does not exist answers 200.\n")
    assert sorted(op.statuses) == [200]
