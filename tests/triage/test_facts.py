"""Declared facts compared across sides (facts.py, facts_diff.py): the same interface written as a markdown table,
as an inline clause or as a JSON Schema property yields the same facts; a refinement never contradicts; the
category follows from which sides agree."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphlemon.triage.facts import contract_facts, declared, sdd_facts, template_of, versioned
from graphlemon.triage.rule_classifier import classify
from graphlemon.triage.run_context import load_run

from .runbuilder import RUN_ID, build_project


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("string", "string (IANA)"),
        ("number", "number (0..1)"),
        ("datetime", "datetime (RFC 3339, UTC)"),
        ("integer", "number"),
        ("integer (cents)", "integer, the amount in cents"),
        ("ENABLED|DISABLED", "ENABLED|DISABLED|PERCENTAGE"),
        ("integer|null", "integer"),
    ],
)
def test_a_refinement_never_contradicts(a, b):
    assert declared(a).contradicts(declared(b)) is None
    assert declared(b).contradicts(declared(a)) is None


@pytest.mark.parametrize(
    ("a", "b", "aspect"),
    [
        ("decimal (euros)", "integer (cents)", "unit"),
        ("number, percent 0..100", "number, fraction 0..1", "unit"),
        ("enabled|disabled|percentage", "ENABLED|DISABLED|PERCENTAGE", "enum"),
        ("integer, 0..100", "integer, 1..5", "range"),
        ("integer (seconds)", "integer (minutes)", "unit"),
        ("string", "integer", "type"),
    ],
)
def test_contradictions_name_their_aspect(a, b, aspect):
    assert declared(a).contradicts(declared(b)) == aspect


def test_key_templates_compare_by_layout_and_a_listing_prefix_agrees():
    sdd = template_of("exports/{yyyy}/{mm}/{dd}/{tenant}.csv.gz")
    writer = template_of("s3://bucket/exports/{tenant}/{yyyy-mm-dd}.csv.gz")
    reader = template_of("exports/{yyyy}/{mm}/{dd}/")
    assert sdd is not None and writer is not None and reader is not None
    assert template_of("exports/{yyyy}-{mm}-{dd}.csv") == template_of("exports/{yyyy-mm-dd}.csv")
    from graphlemon.triage.facts import Declared

    assert Declared(template=sdd).contradicts(Declared(template=writer)) == "template"
    assert Declared(template=sdd).contradicts(Declared(template=reader)) is None
    assert template_of("/tips/{tip_id}") is None  # an HTTP path is an endpoint, not a key layout


def test_field_numbers_from_a_proto_block_and_a_contract_description():
    sdd = "# X\n\n```proto\nmessage Reading {\n  int32 battery_pct = 4;\n  sint32 rssi_dbm = 5;\n}\n```\n"
    facts = {f.subject: f for f in sdd_facts("sdd.md", sdd, {"battery_pct", "rssi_dbm"})}
    assert (facts["battery_pct"].declared.tag, facts["rssi_dbm"].declared.tag) == (4, 5)
    assert facts["battery_pct"].at.line == 5
    contract = json.dumps({"unit_id": "gw", "exports": {"functions": [{"name": "Latest",
                           "description": "Reading{rssi_dbm=4 (sint32), battery_pct=5 (int32)}"}]}})  # fmt: skip
    said = {f.subject: f.declared for f in contract_facts("c.json", contract)}
    assert (said["rssi_dbm"].tag, said["battery_pct"].tag) == (4, 5)
    assert said["rssi_dbm"].contradicts(facts["rssi_dbm"].declared) == "tag"


def test_an_example_declares_nothing():
    sdd = "# X\n\n`progress` (number): how far it has run, e.g. `42 %` on the status page.\n"
    (fact,) = sdd_facts("sdd.md", sdd, {"progress"})
    assert fact.declared.unit is None and fact.declared.type == "number"


_NAMES = st.from_regex(r"[a-z]{3,8}_[a-z]{2,6}", fullmatch=True)
_VALUES = st.lists(st.from_regex(r"[A-Za-z]{3,8}", fullmatch=True), min_size=2, max_size=4, unique=True)


@settings(max_examples=60, deadline=None)
@given(
    name=_NAMES,
    type_=st.sampled_from(["integer", "number", "string"]),
    unit=st.sampled_from([None, "cents", "euros", "seconds", "minutes", "percent", "fraction", "celsius"]),
    bounds=st.one_of(st.none(), st.tuples(st.integers(-50, 50), st.integers(51, 500))),
    values=st.one_of(st.none(), _VALUES),
)
def test_a_table_an_inline_clause_and_a_json_schema_state_the_same_facts(name, type_, unit, bounds, values):
    words = ", ".join(
        x
        for x in (
            f"in {unit}" if unit else "",
            f"{bounds[0]}..{bounds[1]}" if bounds else "",
            "one of " + ", ".join(f"`{v}`" for v in values) if values else "",
        )
        if x
    )
    table = f"# S\n\n| field | type | meaning |\n|---|---|---|\n| `{name}` | {type_} | {words} |\n"
    inline = f"# S\n\n`{name}` is a {type_} {words}.\n"
    schema = {"type": type_, "description": f"in {unit}" if unit else ""}
    if bounds:
        schema |= {"minimum": bounds[0], "maximum": bounds[1]}
    if values:
        schema["enum"] = values
    block = "# S\n\n```json\n" + json.dumps({"properties": {name: schema}}, indent=2) + "\n```\n"
    read = [[f.declared for f in sdd_facts("s.md", text, {name})] for text in (table, inline, block)]
    assert read[0] == read[1] == read[2]
    (d,) = read[0]
    assert d.type == type_ and d.range == (tuple(float(b) for b in bounds) if bounds else None)
    assert d.enum == (tuple(values) if values else None) and (d.unit is None) == (unit is None)


@pytest.mark.parametrize(
    "sdd",
    ["", "|", "| `x` |\n|---|\n| `state` |", "```proto\nint32 = ;\n```", "```json\n{\"state\": {\"enum\": 5}}\n```",
     "`state` " * 5000, "\x00\ufffd`state` is `A`, `B`", "{" * 3000 + "/" + "}" * 3000],
)  # fmt: skip
def test_hostile_sdd_text_never_crashes(sdd):
    sdd_facts("s.md", sdd, {"state"})
    contract_facts("c.json", sdd)


# -- through the decision flow ---------------------------------------------------------------------------------

SENSOR, PANEL = "sensor-hub", "hvac-panel"


def _hvac(tmp_path, *, sdd_says: str, provides: str, consumes: str, value, extra: str = ""):
    """A sensor hub publishing an MQTT payload read by a panel; the panel shows a wrong temperature."""
    sdd = (
        f"# Climate\n\n## {SENSOR}\n\nPublishes `site/+/climate` with the payload below.\n\n"
        f"| field | type | meaning |\n|---|---|---|\n| `room` | string | room id |\n| `temp` | number | {sdd_says} |\n\n"
        f"## {PANEL}\n\n`GET /panel/{{room}}` answers 200 `{{room, label}}`.\n{extra}"
    )
    contracts = {
        SENSOR: {"unit_id": SENSOR, "publishes": [{"topic": "site/+/climate", "payload": {"room": "string", "temp": provides}}]},
        PANEL: {"unit_id": PANEL, "exports": {"http": [{"method": "GET", "path": "/panel/{room}", "responses": {"200": {"body": {"label": "string"}}}}]},
                "subscribes": [{"unit_id": SENSOR, "topic": "site/+/climate", "payload": {"room": "string", "temp": consumes}}]},
    }  # fmt: skip
    trace = [
        {"ts": "2026-12-05T05:00:01Z", "case": "label", "step": 0, "unit_id": PANEL, "method": "GET",
         "url": "http://127.0.0.1:8801/panel/r1", "status": 200, "response_body": {"room": "r1", "label": "70.7 °C", "temp": value}},
    ]  # fmt: skip
    failure = {
        "case": "label", "involves": [PANEL, SENSOR], "request": {"method": "GET", "path": "/panel/r1"},
        "expected": {"status": 200, "body": {"label": "21.5 °C"}},
        "got": {"status": 200, "body": {"label": "70.7 °C"}},
    }  # fmt: skip
    units = [{"unit_id": SENSOR, "code": ["hub"]}, {"unit_id": PANEL, "code": ["panel"], "depends_on": [SENSOR]}]
    project = build_project(tmp_path / "p", units=units, files={"panel/app.py": "X = 1\n"}, sdd=sdd,
                            failure=failure, trace=trace, contracts=contracts)  # fmt: skip
    return classify(load_run(project, RUN_ID))


def test_the_side_the_sdd_does_not_back_is_blamed(tmp_path):
    f = _hvac(tmp_path, sdd_says="degrees **Celsius**", provides="number (fahrenheit)", consumes="number, celsius", value=70.7)
    assert (f.category, f.affected, f.rule) == ("contract_mismatch", [SENSOR], "contract:value_differs")
    assert f.patch is not None and any("temp" in e for e in f.evidence)


def test_a_traced_value_that_fits_only_the_blamed_side_is_no_confirmation_of_a_unit(tmp_path):
    # a temperature in either unit is a number: the trace cannot tell which side it fits
    f = _hvac(tmp_path, sdd_says="degrees Celsius", provides="number (celsius)", consumes="number (fahrenheit)", value=21.5)
    assert (f.category, f.affected) == ("contract_mismatch", [PANEL]) and f.confidence < 0.8


def test_units_disagreeing_where_the_sdd_states_neither_is_a_question(tmp_path):
    f = _hvac(tmp_path, sdd_says="the room temperature", provides="number (fahrenheit)", consumes="number (celsius)", value=70.7)
    assert (f.category, f.affected, f.rule) == ("spec_ambiguous", [], "spec:value_differs")
    assert f.l3_question and "temp" in f.l3_question


def test_a_refinement_between_sides_decides_nothing(tmp_path):
    f = _hvac(tmp_path, sdd_says="degrees Celsius", provides="number", consumes="number (celsius, -40..85)", value=21.5)
    assert f.rule != "contract:value_differs" and f.rule != "spec:value_differs"


def test_a_confirmed_departure_reaches_auto_apply(tmp_path):
    sdd = "# Flags\n\n## flags-api\n\n`GET /flags/{key}` answers 200 `{key, state}`.\n\n`state` is one of `ON`, `OFF`.\n\n## shop\n\n`GET /shop` answers 200.\n"
    contracts = {
        "flags-api": {"unit_id": "flags-api", "exports": {"http": [{"method": "GET", "path": "/flags/{key}", "responses": {"200": {"body": {"key": "string", "state": "on|off"}}}}]}},
        "shop": {"unit_id": "shop", "exports": {"http": [{"method": "GET", "path": "/shop", "responses": {"200": {"body": {"v": "string"}}}}]},
                 "consumes": [{"unit_id": "flags-api", "method": "GET", "path": "/flags/{key}", "responses": {"200": {"body": {"key": "string", "state": "ON|OFF"}}}}]},
    }  # fmt: skip
    trace = [
        {"ts": "2026-12-05T05:00:01Z", "case": "c", "step": 0, "unit_id": "flags-api", "method": "GET",
         "url": "http://127.0.0.1:8802/flags/new", "status": 200, "response_body": {"key": "new", "state": "on"}},
        {"ts": "2026-12-05T05:00:01Z", "case": "c", "step": 0, "unit_id": "shop", "method": "GET",
         "url": "http://127.0.0.1:8803/shop", "status": 200, "response_body": {"v": "v1"}},
    ]  # fmt: skip
    failure = {"case": "c", "involves": ["shop", "flags-api"], "request": {"method": "GET", "path": "/shop"},
               "expected": {"status": 200, "body": {"v": "v2"}}, "got": {"status": 200, "body": {"v": "v1"}}}  # fmt: skip
    units = [{"unit_id": "flags-api", "code": ["f"]}, {"unit_id": "shop", "code": ["s"], "depends_on": ["flags-api"]}]
    project = build_project(tmp_path / "p", units=units, files={"s/app.py": "X = 1\n"}, sdd=sdd, failure=failure,
                            trace=trace, contracts=contracts)  # fmt: skip
    f = classify(load_run(project, RUN_ID))
    assert (f.category, f.affected) == ("contract_mismatch", ["flags-api"])
    assert f.confidence >= 0.8  # "on" fits flags-api's declaration and not the SDD's


@pytest.mark.parametrize(
    ("written", "subject", "version"),
    [
        ("urn:parcel:tracking:v2", "urn:parcel:tracking:v*", "v2"),
        ("application/vnd.acme.order.v1+json", "application/vnd.acme.order.v*+json", "v1"),
        ("/api/v1/quotes", None, None),  # an HTTP path is an endpoint, compared as one
        ("v2", None, None),
        ("http://schemas.xmlsoap.org/soap/envelope/", None, None),
    ],
)
def test_a_versioned_name_is_a_subject_with_a_version(written, subject, version):
    found = versioned(written)
    assert (found or (None, None)) == (subject, version)


def test_a_namespace_in_an_sdd_paragraph_and_a_contract_description_compare_by_version():
    sdd = "# X\n\nElements are qualified in the namespace **`urn:parcel:tracking:v2`** (v1 was retired).\n"
    (spec,) = [f for f in sdd_facts("s.md", sdd, set()) if f.subject.startswith("name ")]
    contract = json.dumps({"unit_id": "p", "exports": {"http": [{"method": "POST", "path": "/ws",
                           "description": "SOAP 1.1 Track, namespace urn:parcel:tracking:v1"}]}})  # fmt: skip
    (said,) = [f for f in contract_facts("c.json", contract) if f.subject == spec.subject]
    assert said.declared.contradicts(spec.declared) == "version"


def test_a_type_word_in_prose_is_no_type():
    sdd = "# X\n\n- `tracking_no` — the carrier's tracking number\n- `progress` (number): how far it has run\n"
    facts = {f.subject: f.declared for f in sdd_facts("s.md", sdd, {"tracking_no", "progress"})}
    assert "tracking_no" not in facts and facts["progress"].type == "number"


def test_an_sdd_stating_both_values_is_a_question_citing_its_two_lines(tmp_path):
    f = _hvac(tmp_path, sdd_says="degrees Celsius", provides="number (fahrenheit)", consumes="number (celsius)",
              value=70.7, extra="\nThe panel reads `temp` in degrees Fahrenheit.\n")  # fmt: skip
    assert (f.category, f.affected, f.confidence) == ("spec_ambiguous", [], 0.55)
    assert len([e for e in f.evidence if "sdd.md" in e]) == 2  # both SDD statements, not the units' lines
