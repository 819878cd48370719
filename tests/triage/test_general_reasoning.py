"""The three classes of failure the issue names, decided from the run's structure, not from shared wording.

Each project here is written for the class it tests, with SDD prose that shares no words with the
case's description, so a verdict cannot come from matching vocabularies.
"""

from __future__ import annotations

from graphlemon.triage import triage_run, verify_all
from graphlemon.triage.backing import backing_service_signals, external_service_signals, unit_ports
from graphlemon.triage.codescan import SourceFile, scan_routes
from graphlemon.triage.rule_classifier import classify
from graphlemon.triage.run_context import load_run

from .runbuilder import RUN_ID, build_project

EXPRESS_CATALOG = """const express = require('express');
const app = express();
const cache = new Map();
const books = new Map([['978-0', { title: 'Dune' }]]);

app.get('/api/books/:isbn', (req, res) => {
  const cached = cache.get('/api/books/' + req.params.isbn);
  if (cached) return res.json(cached);
  const book = books.get(req.params.isbn);
  res.json({ isbn: req.params.isbn, title: book.title });
});

app.listen(4100);
"""
SDD_CATALOG = """# Catalogue

## catalog-api

Entries absent from the shelf list are answered 404 with `{"error": "unknown_isbn"}`.
"""
LOG_CATALOG = """2026-12-03T10:00:01Z [catalog-api] listening on 4100
2026-12-03T10:00:05Z [catalog-api] TypeError: Cannot read properties of undefined (reading 'title')
2026-12-03T10:00:05Z [catalog-api]     at /srv/app/catalog/server.js:10:52
2026-12-03T10:00:05Z [catalog-api]     at Layer.handle [as handle_request] (/srv/app/node_modules/express/lib/router/layer.js:95:5)
"""


def catalog(tmp_path):
    return build_project(
        tmp_path / "catalog",
        units=[{"unit_id": "catalog-api", "code": ["catalog"], "framework": "express"}],
        files={"catalog/server.js": EXPRESS_CATALOG},
        sdd=SDD_CATALOG,
        failure={
            "case": "never-shelved-volume",
            "description": "a volume that was never shelved is refused",
            "involves": ["catalog-api"],
            "request": {"method": "GET", "path": "/api/books/000-0"},
            "expected": {"status": 404},
            "got": {"status": 500, "body": "Internal Server Error"},
        },
        trace=[
            {
                "case": "never-shelved-volume",
                "step": 0,
                "unit_id": "catalog-api",
                "method": "GET",
                "url": "http://127.0.0.1:4100/api/books/000-0",
                "status": 500,
                "response_body": "Internal Server Error",
            }
        ],
        log=LOG_CATALOG,
    )


FASTAPI_ORDERS = """from fastapi import FastAPI

app = FastAPI()
ORDERS = {"o1": {"total": 3}}


@app.get("/orders/{order_id}")
def get_order(order_id: str):
    return {"id": order_id, "total": ORDERS[order_id]["total"]}
"""
TRACEBACK_ORDERS = """2026-12-03T10:00:01Z [orders-api] Uvicorn running on http://127.0.0.1:4200
2026-12-03T10:00:05Z [orders-api] ERROR:    Exception in ASGI application
Traceback (most recent call last):
  File "/usr/lib/python3.11/site-packages/uvicorn/protocols/http/h11_impl.py", line 403, in run_asgi
  File "/srv/orders/app.py", line 9, in get_order
    return {"id": order_id, "total": ORDERS[order_id]["total"]}
KeyError: 'o9'
"""


def orders(tmp_path, log: str, *, expected: int = 404, name: str = "orders"):
    return build_project(
        tmp_path / name,
        units=[
            {"unit_id": "orders-api", "code": ["orders"], "framework": "fastapi"},
            {"unit_id": "stock-api", "code": ["stock"], "framework": "fastapi"},
        ],
        files={"orders/app.py": FASTAPI_ORDERS, "stock/app.py": "from fastapi import FastAPI\napp = FastAPI()\n"},
        sdd='# Shop\n\n## orders-api\n\nAsking for a purchase nobody made: 404 `{"error": "no_such_order"}`.\n',
        failure={
            "case": "ghost-purchase",
            "description": "looking up a receipt that does not exist is refused",
            "involves": ["orders-api"],
            "request": {"method": "GET", "path": "/orders/o9"},
            "expected": {"status": expected},
            "got": {"status": 500, "body": "Internal Server Error"},
        },
        trace=[
            {
                "case": "ghost-purchase",
                "step": 0,
                "unit_id": "stock-api",
                "method": "GET",
                "url": "http://127.0.0.1:4300/stock/o9",
                "status": 200,
                "response_body": {"on_hand": 1},
            },
            {
                "case": "ghost-purchase",
                "step": 0,
                "unit_id": "orders-api",
                "method": "GET",
                "url": "http://127.0.0.1:4200/orders/o9",
                "status": 500,
                "response_body": "Internal Server Error",
            },
        ],
        log=log,
    )


# -- 1. an uncaught exception in the providing unit's own code ------------------------------------


def test_uncaught_exception_in_express_handler_is_impl_bug_without_shared_wording(tmp_path):
    project = catalog(tmp_path)
    outcome = triage_run(project, RUN_ID)
    r = outcome.record
    assert (r.category, r.affected_units, outcome.rule) == ("impl_bug", ["catalog-api"], "impl:uncaught")
    assert "catalog/server.js:10" in r.root_cause and r.evidence_verified
    assert any(e.startswith("catalog/server.js:10: ") for e in r.evidence)
    assert r.confidence >= 0.8 and r.will_auto_apply  # the trace and the code line both verified


def test_uncaught_exception_in_python_handler_names_the_innermost_own_frame(tmp_path):
    project = orders(tmp_path, TRACEBACK_ORDERS)
    finding = classify(load_run(project, RUN_ID))
    assert (finding.category, finding.affected, finding.rule) == ("impl_bug", ["orders-api"], "impl:uncaught")
    assert "orders/app.py:9" in finding.root_cause
    assert verify_all(project.root, finding.evidence).ok


def test_a_5xx_where_success_was_expected_is_not_read_as_a_refusal(tmp_path):
    project = orders(tmp_path, TRACEBACK_ORDERS, expected=200)
    assert classify(load_run(project, RUN_ID)).rule != "impl:uncaught"


# -- 2. a connection that failed to an address no unit serves -------------------------------------

DB_DOWN = (
    TRACEBACK_ORDERS
    + '2026-12-03T10:00:05Z [orders-api] psycopg.OperationalError: connection failed: connection to server at "127.0.0.1", port 5432 failed: Connection refused\n'
)


def test_backing_service_refused_is_infra_flake_even_with_a_5xx_and_a_traceback(tmp_path):
    project = orders(tmp_path, DB_DOWN)
    outcome = triage_run(project, RUN_ID)
    r = outcome.record
    assert (r.category, r.affected_units, outcome.rule) == ("infra_flake", [], "infra:backing_service")
    assert r.evidence_verified and any("port 5432 failed" in e for e in r.evidence)


def test_a_refused_connection_to_another_unit_is_not_a_backing_service(tmp_path):
    log = TRACEBACK_ORDERS + "2026-12-03T10:00:05Z [orders-api] connect ECONNREFUSED 127.0.0.1:4300\n"
    project = orders(tmp_path, log)
    ctx = load_run(project, RUN_ID)
    assert unit_ports(ctx) == {4300: "stock-api", 4200: "orders-api"}
    assert backing_service_signals(ctx, ctx.result.failures[0]) == []
    assert classify(ctx).rule != "infra:backing_service"


def test_a_refusal_without_an_address_says_nothing_about_whose_service(tmp_path):
    project = orders(tmp_path, TRACEBACK_ORDERS + "2026-12-03T10:00:05Z [orders-api] [Errno 111] Connection refused\n")
    ctx = load_run(project, RUN_ID)
    assert backing_service_signals(ctx, ctx.result.failures[0]) == []


def test_redis_and_node_address_spellings(tmp_path):
    for i, line in enumerate(
        (
            "Error 111 connecting to localhost:6379. Connection refused.",
            "Error: connect ETIMEDOUT 172.18.0.3:5432",
            "kafka: connection reset by peer (broker kafka-1.internal:9092)",
        )
    ):
        project = orders(tmp_path, f"2026-12-03T10:00:05Z [orders-api] {line}\n", name=f"o{i}")
        ctx = load_run(project, RUN_ID)
        assert [s.kind for s in backing_service_signals(ctx, ctx.result.failures[0])] == ["backing_service"], line


def test_environment_failures_outside_the_os_vocabulary_are_infra_flake(tmp_path):
    """An expired peer certificate, a stepped clock, a search cluster's full disk, a runtime's timeout error."""
    for i, (line, kind) in enumerate(
        (
            (
                "ssl.SSLCertVerificationError: [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: certificate has expired",
                "certificate_expired",
            ),
            ("2026-12-03T09:58:00Z [host] ntpd[77]: step time server 10.0.0.1 offset -92.3 sec", "clock_stepped"),
            ("opensearch: index [orders] blocked by: [FORBIDDEN/12/index read-only-allow-delete (api)]", "disk_full"),
            ("asyncio.TimeoutError while awaiting the courier quote", "timeout"),
        )
    ):
        log = line if line.startswith("2026") else f"2026-12-03T10:00:05Z [orders-api] {line}"
        project = orders(tmp_path, TRACEBACK_ORDERS + log + "\n", name=f"env{i}")
        finding = classify(load_run(project, RUN_ID))
        assert (finding.category, finding.affected) == ("infra_flake", []), line
        assert finding.rule == f"infra:{kind}", line


def test_an_outside_host_that_throttles_or_fails_is_infra_and_a_unit_answering_503_is_not(tmp_path):
    outside = "2026-12-03T10:00:05Z [orders-api] upstream said 503 Service Unavailable for https://rates.partner.example/v2/fx\n"
    project = orders(tmp_path, TRACEBACK_ORDERS + outside, name="outside")
    ctx = load_run(project, RUN_ID)
    assert [s.kind for s in external_service_signals(ctx, ctx.result.failures[0])] == ["external_service"]
    assert classify(ctx).rule == "infra:external_service"
    own = "2026-12-03T10:00:05Z [orders-api] GET http://127.0.0.1:4300/stock/o9 -> 503 Service Unavailable\n"
    project = orders(tmp_path, TRACEBACK_ORDERS + own, name="own")
    ctx = load_run(project, RUN_ID)
    assert external_service_signals(ctx, ctx.result.failures[0]) == []


def test_a_unit_that_died_on_its_own_import_explains_the_refusals_that_follow(tmp_path):
    log = """2026-12-03T10:00:00Z [orders-api] Traceback (most recent call last):
2026-12-03T10:00:00Z [orders-api]   File "/srv/orders/app.py", line 1, in <module>
2026-12-03T10:00:00Z [orders-api] ModuleNotFoundError: No module named 'orders.pricing'
2026-12-03T10:00:00Z [orders-api] process exited with code 1
2026-12-03T10:00:05Z [runner] GET /orders/o9: connect ECONNREFUSED 127.0.0.1:4999
"""
    project = orders(tmp_path, log, name="died")
    finding = classify(load_run(project, RUN_ID))
    assert (finding.category, finding.affected) == ("impl_bug", ["orders-api"])


# -- 3. handlers located by a parser --------------------------------------------------------------


def test_method_calls_inside_a_handler_are_not_routes():
    routes = scan_routes([SourceFile("catalog/server.js", EXPRESS_CATALOG)], "express")
    assert [(r.method, r.path, r.line) for r in routes] == [("GET", "/api/books/{}", 6)]
    # the handler is the whole arrow function, not "up to the next `.get('`": its last res.json is in it
    assert routes[0].statuses == {200: 8}


def test_map_get_with_a_fallback_and_a_router_in_another_file():
    server = """import express from 'express';
import books from './routes/books';
const app = express();
const defaults = new Map();
const page = defaults.get('/home', 'index');
app.use('/api', books);
"""
    router = """const { Router } = require('express');
const router = Router();
const memo = new Map();
router.get('/books/:id', async (req, res) => {
  const hit = memo.get('/books/' + req.params.id);
  if (!hit) {
    return res.status(404).json({ error: 'unknown' });
  }
  res.statusCode = 203;
  res.send(hit);
});
router.delete('/books/:id', remove);
function remove(req, res) { res.sendStatus(204); }
module.exports = router;
"""
    routes = scan_routes([SourceFile("web/server.js", server), SourceFile("web/routes/books.js", router)], "express")
    found = {(r.method, r.path): sorted(r.statuses) for r in routes}
    # flow-insensitive: "statuses the handler can produce" (a res.send() counts as the default 200)
    assert found == {("GET", "/api/books/{}"): [200, 203, 404], ("DELETE", "/api/books/{}"): [204]}


def test_typescript_handlers_parse():
    src = """import express, { Request, Response } from 'express';
const app = express();
app.post('/api/items', (req: Request, res: Response) => {
  if (!req.body.name) { return res.status(422).json({ error: 'name' }); }
  res.status(201).json({ id: 1 });
});
"""
    routes = scan_routes([SourceFile("svc/app.ts", src)], "express")
    assert [(r.method, r.path, sorted(r.statuses)) for r in routes] == [("POST", "/api/items", [201, 422])]


def test_python_nested_function_statuses_stay_in_their_function():
    src = """from flask import Flask, abort
app = Flask(__name__)

@app.route("/a/<int:x>", methods=["GET", "PUT"])
def a(x):
    def helper():
        abort(418)
    if x < 0:
        abort(404)
    return {"x": x}

@app.post("/b")
def b():
    raise ValueError("boom")
"""
    routes = scan_routes([SourceFile("svc/app.py", src)], "flask")
    found = {(r.method, r.path): (sorted(r.statuses), r.throws_at) for r in routes}
    assert found == {
        ("GET", "/a/{}"): ([200, 404], None),
        ("PUT", "/a/{}"): ([200, 404], None),
        ("POST", "/b"): ([], 14),
    }


def test_javascript_function_definitions_are_parsed_not_pattern_matched():
    from graphlemon.triage.functions import _js_defs

    src = """const memo = new Map();
const mul = (a, b = 1) => memo.get('mul') ?? a * b;
function outer() {
  function mul(z) { return z; }
  return mul(2);
}
exports.add = function (a, ...rest) { return a; };
const text = "function add(x) {}";
"""
    defs = {
        (d.line, d.signature.names() if d.signature else None, d.top_level)
        for d in _js_defs("u", SourceFile("u/m.js", src), "mul")
    }
    assert defs == {(2, ("a", "b"), True), (4, ("z",), False)}
    adds = _js_defs("u", SourceFile("u/m.js", src), "add")
    assert [(d.line, d.signature.names()) for d in adds] == [(7, ("a", "rest"))]  # not the string on line 8


def test_an_upstream_refusal_of_a_request_the_sdd_allows_blames_the_provider_not_its_caller(tmp_path):
    sdd = (
        "# Atlas\n\n## tiles-api\n\n```yaml\nopenapi: 3.0.3\npaths:\n  /tiles:\n    get:\n      parameters:\n"
        "        - name: zoom\n          in: query\n          schema: {type: integer, minimum: 0, maximum: 22}\n"
        "      responses:\n        '200': {description: the tiles}\n        '400': {description: bad zoom}\n```\n\n"
        "## map-web\n\n`GET /map` answers 200 with the tiles at the zoom asked for.\n"
    )
    consumes = {"unit_id": "tiles-api", "method": "GET", "path": "/tiles", "responses": {"200": "tiles"}}
    project = build_project(
        tmp_path / "atlas",
        units=[
            {"unit_id": "tiles-api", "code": ["tiles"], "framework": "fastapi"},
            {"unit_id": "map-web", "code": ["web"], "framework": "fastapi"},
        ],
        files={"tiles/app.py": "from fastapi import FastAPI\napp = FastAPI()\n", "web/app.py": "x = 1\n"},
        sdd=sdd,
        contracts={
            "tiles-api": {
                "unit_id": "tiles-api",
                "exports": {
                    "http": [{"method": "GET", "path": "/tiles", "responses": {"200": "tiles", "400": "bad zoom"}}]
                },
            },
            "map-web": {
                "unit_id": "map-web",
                "exports": {
                    "http": [{"method": "GET", "path": "/map", "responses": {"200": "map", "502": "no tiles"}}]
                },
                "consumes": [consumes],
            },
        },  # fmt: skip
        failure={
            "case": "street-level",
            "description": "the map at street level shows its tiles",
            "involves": ["map-web", "tiles-api"],
            "request": {"method": "GET", "path": "/map?zoom=20"},
            "expected": {"status": 200},
            "got": {"status": 502, "body": {"error": "no tiles"}},
        },
        trace=[
            {
                "case": "street-level",
                "step": 0,
                "unit_id": "tiles-api",
                "method": "GET",
                "url": "http://127.0.0.1:4500/tiles?zoom=20",
                "status": 400,
                "response_body": {"error": "bad zoom"},
            },
            {
                "case": "street-level",
                "step": 0,
                "unit_id": "map-web",
                "method": "GET",
                "url": "http://127.0.0.1:4501/map?zoom=20",
                "status": 502,
                "response_body": {"error": "no tiles"},
            },
        ],  # fmt: skip
    )
    finding = classify(load_run(project, RUN_ID))
    assert finding.affected == ["tiles-api"] and finding.rule.endswith("limit_violated")
    assert finding.confidence < 0.8  # the refusal may have another reason than the bound


def test_a_limit_and_the_success_it_refines_are_not_rival_statements(tmp_path):
    sdd = (
        "# Library\n\n## loans-api\n\n`POST /loans` lends the next book to a reader and answers 201 `{loan_id}`.\n\n"
        "| what | allowed | past it |\n|---|---|---|\n| loans per reader, each week | 2 | 409 `loan_cap` |\n"
    )
    project = build_project(
        tmp_path / "library",
        units=[{"unit_id": "loans-api", "code": ["loans"], "framework": "fastapi"}],
        files={"loans/app.py": "from fastapi import FastAPI\napp = FastAPI()\n"},
        sdd=sdd,
        contracts={
            "loans-api": {
                "unit_id": "loans-api",
                "exports": {
                    "http": [{"method": "POST", "path": "/loans", "responses": {"201": "lent", "409": "loan_cap"}}]
                },
            }
        },  # fmt: skip
        failure={
            "case": "third-loan-this-week",
            "description": "a reader who borrowed twice this week is turned down on the next book",
            "involves": ["loans-api"],
            "request": {"method": "POST", "path": "/loans", "body": {"reader": "r-7", "book": "b-3"}},
            "expected": {"status": 409},
            "got": {"status": 201, "body": {"loan_id": "l-3"}},
        },
        trace=[
            {
                "case": "third-loan-this-week",
                "step": 0,
                "unit_id": "loans-api",
                "method": "POST",
                "url": "http://127.0.0.1:4600/loans",
                "status": 201,
                "response_body": {"loan_id": "l-3"},
            },
        ],  # fmt: skip
    )
    finding = classify(load_run(project, RUN_ID))
    assert (finding.category, finding.affected) == ("impl_bug", ["loans-api"]), finding.root_cause


def test_a_value_written_in_another_form_the_sdd_never_mentions_is_a_question_for_a_person(tmp_path):
    sdd = (
        "# Members\n\n## members-api\n\n`POST /members {name, phone}` answers 201 `{member_id}`.\n\n"
        "A phone number already on file is refused with 409 `phone_taken`.\n"
    )
    entry = {"unit_id": "members-api", "method": "POST", "url": "http://127.0.0.1:4700/members"}
    project = build_project(
        tmp_path / "members",
        units=[{"unit_id": "members-api", "code": ["members"], "framework": "fastapi"}],
        files={"members/app.py": "from fastapi import FastAPI\napp = FastAPI()\n"},
        sdd=sdd,
        contracts={"members-api": {"unit_id": "members-api", "exports": {"http": [
            {"method": "POST", "path": "/members", "responses": {"201": "joined", "409": "phone_taken"}}]}}},
        failure={
            "case": "rejoin-with-dialling-code",
            "description": "someone already signed up signs up again with the number as printed on the card",
            "involves": ["members-api"],
            "request": {"method": "POST", "path": "/members", "body": {"name": "Ada", "phone": "+44 20 7946 0958"}},
            "expected": {"status": 409},
            "got": {"status": 201, "body": {"member_id": "m-9"}},
        },
        trace=[
            {**entry, "case": "rejoin", "step": 1, "request_body": {"name": "Bo", "phone": "442079460001"},
             "status": 409, "response_body": {"error": "phone_taken"}},
            {**entry, "case": "rejoin-with-dialling-code", "step": 0,
             "request_body": {"name": "Ada", "phone": "+44 20 7946 0958"}, "status": 201,
             "response_body": {"member_id": "m-9"}},
        ],
    )  # fmt: skip
    finding = classify(load_run(project, RUN_ID))
    assert finding.category == "spec_ambiguous" and finding.confidence <= 0.5, finding.root_cause
    assert "phone's marks" in finding.root_cause
