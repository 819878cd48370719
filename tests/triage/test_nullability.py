"""Whether an answer's field may be null, compared by structure (nullability.py): a GraphQL schema in the SDD, a
`null` the SDD's prose states, and each contract's type descriptor."""

from __future__ import annotations

import pytest

from graphlemon.triage import triage_run
from graphlemon.triage.nullability import sdl_fields, stance
from graphlemon.triage.rule_classifier import classify
from graphlemon.triage.run_context import load_run

from .runbuilder import RUN_ID, build_project

GRAPH, SIGNS = "venue-graph", "door-signage"
SCHEMA = """```graphql
type Room {
  id: ID!
  name: String!
  capacity: Int!
}
type Query { room(id: ID!): Room }
```
"""


def _venue(tmp_path, *, provided: str, consumed: str, value, schema: str = SCHEMA, sdd_bytes: bytes | None = None):
    sdd = f"# Venue\n\n## {GRAPH}\n\nGraphQL at `POST /graphql`. Schema:\n\n{schema}\n## {SIGNS}\n\n`GET /signs/{{room_id}}` answers 200.\n"
    contracts = {
        GRAPH: {"unit_id": GRAPH, "exports": {"http": [{"method": "POST", "path": "/graphql", "responses": {
            "200": {"body": {"data": {"room": {"name": "String!", "capacity": provided}}}}}}]}},
        SIGNS: {"unit_id": SIGNS, "exports": {"http": [{"method": "GET", "path": "/signs/{room_id}", "responses": {"200": {"body": {"text": "string"}}}}]},
                "consumes": [{"unit_id": GRAPH, "method": "POST", "path": "/graphql", "responses": {
                    "200": {"body": {"data": {"room": {"name": "String!", "capacity": consumed}}}}}}]},
    }  # fmt: skip
    trace = [
        {"ts": "2026-12-03T10:00:05Z", "case": "atrium", "step": 0, "unit_id": GRAPH, "method": "POST",
         "url": "http://127.0.0.1:4000/graphql", "status": 200,
         "response_body": {"data": {"room": {"name": "Atrium", "capacity": value}}}},
        {"ts": "2026-12-03T10:00:05Z", "case": "atrium", "step": 0, "unit_id": SIGNS, "method": "GET",
         "url": "http://127.0.0.1:8700/signs/atrium", "status": 500, "response_body": "Internal Server Error"},
    ]  # fmt: skip
    failure = {
        "case": "atrium", "involves": [SIGNS, GRAPH], "request": {"method": "GET", "path": "/signs/atrium"},
        "expected": {"status": 200, "body": {"text": "Atrium · standing"}}, "got": {"status": 500},
    }  # fmt: skip
    units = [{"unit_id": GRAPH, "code": ["graph"]}, {"unit_id": SIGNS, "code": ["signage"], "depends_on": [GRAPH]}]
    p = build_project(tmp_path / "p", units=units, files={"signage/app.py": "X = 1\n"}, sdd=sdd, failure=failure,
                      trace=trace, contracts=contracts)  # fmt: skip
    if sdd_bytes is not None:
        (p.root / ".graphlemon" / "artifacts" / "sdd" / "sdd.md").write_bytes(sdd_bytes)
    return p


def test_a_provider_contract_that_makes_a_non_null_schema_field_nullable_is_its_mismatch(tmp_path):
    r = triage_run(_venue(tmp_path, provided="Int (nullable)", consumed="Int!", value=None), RUN_ID).record
    assert (r.category, r.affected_units) == ("contract_mismatch", [GRAPH])
    assert r.confidence >= 0.8
    assert any("capacity: Int!" in e for e in r.evidence)


def test_a_consumer_that_departs_from_the_schema_is_blamed_instead(tmp_path):
    r = triage_run(_venue(tmp_path, provided="Int!", consumed="Int | null", value=0), RUN_ID).record
    assert (r.category, r.affected_units) == ("contract_mismatch", [SIGNS])


@pytest.mark.parametrize(
    ("provided", "value"),
    [("Int!", None), ("Int (nullable)", 12)],
    ids=["provider-agrees-with-sdd", "answer-not-what-its-contract-says"],
)
def test_control_no_nullability_verdict_without_a_departing_contract_the_run_followed(tmp_path, provided, value):
    finding = classify(load_run(_venue(tmp_path, provided=provided, consumed="Int!", value=value), RUN_ID))
    assert finding.rule != "contract:nullable_differs"


@pytest.mark.parametrize(
    "schema",
    [
        "```graphql\ntype Room { capacity: Int! \n```\n",  # unclosed
        "```graphql\n<b>type</b> Room { capacity: <i>Int</i> }}}} ]] ((\n```\n",  # markup, stray closers
        "```graphql\n" + "type T { f: [[[[Int!]!]]] }\n" * 20_000 + "```\n",  # huge
        '```graphql\n"""doc { with: Braces! }""" type Room { # capacity: Int\n capacity: Int! }\n```\n',
    ],
    ids=["unclosed", "markup", "huge", "strings-and-comments"],
)
def test_hostile_schemas_never_crash_and_give_no_confident_wrong_blame(tmp_path, schema):
    r = triage_run(
        _venue(tmp_path, provided="Int (nullable)", consumed="Int!", value=None, schema=schema), RUN_ID
    ).record
    assert r.category in ("contract_mismatch", "impl_bug", "spec_ambiguous", "infra_flake")
    assert not (r.affected_units == [SIGNS] and r.confidence >= 0.8)


def test_an_sdd_that_is_not_utf8_degrades(tmp_path):
    raw = b"# Venue\n\n## venue-graph\n\n```graphql\ntype Room { capacity: Int\xff! }\n```\n"
    p = _venue(tmp_path, provided="Int (nullable)", consumed="Int!", value=None, sdd_bytes=raw)
    r = triage_run(p, RUN_ID).record
    assert not (r.affected_units == [SIGNS] and r.confidence >= 0.8)


def test_type_descriptors_state_nullability_by_their_tokens():
    assert stance("Int!") is False and stance("String! — the name") is False
    assert stance("Int (nullable)") and stance("string | null (null on the last page)") and stance("int?")
    assert stance('string — empty string "" on the last page') is False
    assert stance("string") is None and stance("") is None and stance("x" * 300_000) is None


def test_the_schema_tokenizer_reads_fields_arguments_lists_and_skips_comments():
    sdl = 'type Q {\n  room(id: ID!, "x": Int): Room\n  # gone: Int!\n  tags: [String!]!\n}\ninput I { n: Int }\n'
    assert list(sdl_fields(sdl, 1)) == [("room", True, 2), ("tags", False, 4), ("n", True, 6)]
