"""SDD clauses (units, endpoints, statuses in numbers and words) and diff_contract_vs_impl for FastAPI / Flask / Express."""

from __future__ import annotations

import json

import pytest

from graphlemon.triage import diff_contract_vs_impl
from graphlemon.triage.codescan import SourceFile, diff_sources
from graphlemon.triage.sdd import normalize_path, path_matches, sdd_clauses
from graphlemon.triage.sdd_terms import status_mentions
from graphlemon.units import Contract

SDD = """# Shop

## orders-be {#unit-orders-be}

`GET /orders/:id` returns 200 with `{order_id, total_cents}`; an unknown id is answered with Not Found.

| case | status |
|---|---|
| order already paid | 409 conflict |

<section data-unit-id="web-fe">

The page calls `GET /orders/:id` and shows "gone" on 404.

</section>

## Conventions

All DELETE endpoints answer 204.
"""


def test_clauses_carry_their_unit_section_and_line():
    clauses = sdd_clauses([("sdd.md", SDD)], ["orders-be", "web-fe"])
    by_text = {c.raw.strip()[:20]: c for c in clauses}
    first = by_text["`GET /orders/:id` re"]
    assert first.units == {"orders-be"} and first.line == 5 and first.section == "orders-be"
    assert by_text["an unknown id is ans"].line == 5  # a sentence split at "; " keeps its line
    assert by_text["| order already paid"].units == {"orders-be"}
    assert next(c for c in clauses if "web-fe" in c.units).raw.startswith("The page calls")
    assert by_text["All DELETE endpoints"].units == frozenset()


def test_status_mentions_skip_units_of_measure_and_years():
    codes = [s.code for s in status_mentions("200 ms later, 500 cents, in 2026, 404 if missing, conflict")]
    assert codes == [404, 409]


@pytest.mark.parametrize(
    "template, path, ok",
    [
        ("/api/users/:id", "/api/users/u404?x=1", True),
        ("/tasks/<int:task_id>", "/tasks/{id}", True),
        ("/orders/{order_id}", "/orders/7/lines", False),
        ("/api/todos/", "/api/todos", True),
    ],
)
def test_path_templates(template, path, ok):
    assert path_matches(template, path) is ok
    assert normalize_path("/a/{x}/<y>/:z") == "/a/{}/{}/{}"


FASTAPI = """from fastapi import APIRouter, FastAPI, HTTPException
router = APIRouter(prefix="/orders")

@router.get("/{order_id}")
async def get_order(order_id: str):
    if order_id not in DB:
        raise HTTPException(status_code=404, detail="order_not_found")
    return DB[order_id]

@router.post("", status_code=201)
def create(body: dict):
    return body

app = FastAPI()
app.include_router(router, prefix="/api")
"""
FLASK = """from flask import Blueprint, abort, jsonify
bp = Blueprint("t", __name__)

@bp.route("/tasks/<int:tid>", methods=["DELETE"])
def delete(tid):
    if tid not in T:
        abort(404)
    return "", 204

def register(app):
    app.register_blueprint(bp, url_prefix="/v1")
"""
EXPRESS_APP = """const express = require('express');
const items = require('./routes/items');
const app = express();
app.use('/cart', items);
app.get('/health', (req, res) => res.json({ ok: true }));
"""
EXPRESS_ROUTES = """const router = require('express').Router();
router.post('/items', (req, res) => {
  if (!req.body.sku) return res.status(400).json({ error: 'sku_required' });
  res.status(201).json({ ok: true });
});
router.delete('/items/:id', (req, res) => res.sendStatus(204));
module.exports = router;
"""


def test_fastapi_routes_with_prefixes_and_statuses():
    diff = diff_sources("orders", [SourceFile("app.py", FASTAPI)], None)
    routes = {(r.method, r.path): set(r.statuses) for r in diff.routes}
    assert diff.framework == "fastapi"
    assert routes == {("GET", "/api/orders/{}"): {200, 404}, ("POST", "/api/orders"): {201}}


def test_flask_routes_with_blueprint_prefix():
    diff = diff_sources("tasks", [SourceFile("tasks.py", FLASK)], None)
    assert [(r.method, r.path, sorted(r.statuses)) for r in diff.routes] == [("DELETE", "/v1/tasks/{}", [204, 404])]


def test_express_routes_with_mounted_router():
    diff = diff_sources(
        "cart", [SourceFile("cart/app.js", EXPRESS_APP), SourceFile("cart/routes/items.js", EXPRESS_ROUTES)], None
    )
    routes = {(r.method, r.path): sorted(r.statuses) for r in diff.routes}
    assert routes == {
        ("GET", "/health"): [200],
        ("POST", "/cart/items"): [201, 400],
        ("DELETE", "/cart/items/{}"): [204],
    }


def test_divergences_between_contract_and_code():
    contract = Contract.model_validate(
        {
            "unit_id": "cart",
            "exports": {
                "http": [
                    {"method": "POST", "path": "/cart/items", "responses": {"201": "ok", "400": "bad", "409": "dup"}},
                    {"method": "GET", "path": "/cart", "responses": {"200": "cart"}},
                ],
                "functions": [{"name": "checkout"}],
            },
        }
    )
    diff = diff_sources(
        "cart", [SourceFile("cart/app.js", EXPRESS_APP), SourceFile("cart/routes/items.js", EXPRESS_ROUTES)], contract
    )
    kinds = sorted((d.kind, d.method, d.path, d.status) for d in diff.divergences)
    assert ("status_not_implemented", "POST", "/cart/items", 409) in kinds
    assert ("missing_route", "GET", "/cart", None) in kinds
    assert ("undeclared_route", "DELETE", "/cart/items/{}", None) in kinds
    assert ("missing_function", None, None, None) in kinds
    assert "POST /cart/items 201" in diff.matches and "POST /cart/items 400" in diff.matches


def test_diff_contract_vs_impl_reads_the_project(project):
    root = project.root
    (root / "svc").mkdir()
    (root / "svc" / "main.py").write_text(FASTAPI)
    state = root / ".graphlemon"
    (state / "units" / "orders").mkdir(parents=True)
    (state / "units.json").write_text(json.dumps({"units": [{"unit_id": "orders", "code": ["svc"]}]}))
    (state / "units" / "orders" / "contract.json").write_text(
        json.dumps(
            {
                "unit_id": "orders",
                "exports": {
                    "http": [{"method": "GET", "path": "/api/orders/{id}", "responses": {"200": "x", "410": "gone"}}]
                },
            }
        )
    )
    diff = diff_contract_vs_impl(project, "orders")
    assert [(d.kind, d.status) for d in diff.divergences] == [
        ("status_not_implemented", 410),
        ("undeclared_status", 404),
        ("undeclared_route", None),
    ]
    from graphlemon.errors import GraphLemonError

    with pytest.raises(GraphLemonError) as err:
        diff_contract_vs_impl(project, "nope")
    assert err.value.code == "UNIT_NOT_FOUND"
