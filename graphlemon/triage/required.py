"""Whether a request field is required, compared by structure: the SDD's table of the request's fields vs the
provider's contract vs the traced refusal.

The SDD states it in a markdown table whose header has a "required" column (`yes` / `no`, `true` / `false`,
`required` / `optional`) and whose first column holds the fields' code spans. A traced call of the failing step that
was refused (4xx) although its JSON body carried every field the SDD marks required, whose answer names a field the
SDD marks optional and the body left out, was refused for leaving out an optional field: the provider departs from
the SDD. Its contract decides the category: a contract.json that states the field required (names it in the
endpoint's description or a 4xx answer's) → `contract_mismatch` for the provider; one that does not → `impl_bug`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from .interface import Quote
from .interface_diff import InterfaceFinding
from .interface_sdd import markdown_tokens
from .matching import exported
from .nullability import tokens
from .run_context import RunContext
from .rundir import IntegrationFailure

_YES = frozenset({"yes", "y", "true", "required", "mandatory"})
_NO = frozenset({"no", "n", "false", "optional"})
_MAX_TEXT = 200_000


def required_findings(ctx: RunContext, failure: IntegrationFailure) -> list[InterfaceFinding]:
    stated = sdd_required(ctx)
    if not stated:
        return []
    out: list[InterfaceFinding] = []
    for line, entry in ctx.trace:
        if (entry.case, entry.step) != (failure.case, failure.step) or not isinstance(entry.request_body, dict):
            continue
        if entry.status is None or not 400 <= entry.status < 500 or entry.unit_id not in failure.involves:
            continue
        sent = set(entry.request_body)
        if any(required and name not in sent for name, (required, _q) in stated.items()):
            continue  # a required field is missing: the refusal may be right
        named = set(tokens(json.dumps(entry.response_body, default=str)[:_MAX_TEXT]))
        left_out = [n for n, (required, _q) in stated.items() if not required and n not in sent and n in named]
        if left_out:
            out.append(_finding(ctx, entry, line, left_out[0], stated[left_out[0]][1]))
    return out


def sdd_required(ctx: RunContext) -> dict[str, tuple[bool, Quote]]:
    """request field → (required, where) from the SDD's tables with a "required" column (two stances: none)."""
    seen: dict[str, list[tuple[bool, Quote]]] = {}
    for doc in ctx.sdd_docs:
        if len(doc.text) <= _MAX_TEXT:
            for name, required, line in _table_rows(doc.text):
                seen.setdefault(name, []).append((required, Quote(doc.rel, line)))
    return {n: xs[0] for n, xs in seen.items() if len({r for r, _q in xs}) == 1}


def _finding(ctx: RunContext, entry: Any, line: int, name: str, at: Quote) -> InterfaceFinding:
    provider = entry.unit_id or ""
    path = entry.url.split("://", 1)[-1].split("/", 1)[-1].split("?", 1)[0]
    endpoint = f"{entry.method} /{path}"
    trace = Quote(f"{ctx.run_rel}/http-trace.ndjson", line)
    says = f"{name} is optional in the request to {endpoint}"
    ep = exported(ctx, provider, entry.method, f"/{path}")
    texts = [ep.description, *(r.description for s, r in ep.responses.items() if 400 <= s < 500)] if ep else []
    if any(name in tokens(t) for t in texts):
        rel = ctx.contract_rel(provider)
        return InterfaceFinding(
            "required_differs", "contract_mismatch", (provider,), endpoint, name, "spec", at, says,
            "contract", Quote(rel, _naming(ctx, rel, name)), f"{provider} requires {name}", with_b=("trace",),
        )  # fmt: skip
    return InterfaceFinding(
        "required_differs", "impl_bug", (provider,), endpoint, name, "spec", at, says,
        "trace", trace, f"{provider} refused a request without {name} ({entry.status})",
    )  # fmt: skip


def _naming(ctx: RunContext, rel: str, name: str) -> int:
    """The first line of the contract that names the field (its description says it is required)."""
    return next((n for n, x in enumerate(ctx.file_text(rel).splitlines(), 1) if name in tokens(x)), 1)


def _table_rows(text: str) -> Iterator[tuple[str, bool, int]]:
    column, header, row, row_line, in_head = None, [], None, 0, False
    for tok in markdown_tokens(text):
        if tok.type == "thead_open":
            in_head, header = True, []
        elif tok.type == "thead_close":
            in_head = False
            column = next((i for i, h in enumerate(header) if "required" in (w.lower() for w in tokens(h))), None)
        elif tok.type == "table_close":
            column = None
        elif tok.type == "tr_open" and not in_head:
            row, row_line = [], (tok.map[0] + 1 if tok.map else 1)
        elif tok.type == "tr_close" and row is not None:
            if column is not None and 0 < column < len(row):
                names = [
                    c.content for c in row[0].children or [] if c.type == "code_inline" and c.content.isidentifier()
                ]
                words = {w.lower() for w in tokens(row[column].content)}
                stance = (
                    True if words & _YES and not words & _NO else False if words & _NO and not words & _YES else None
                )
                if len(names) == 1 and stance is not None:
                    yield names[0], stance, row_line
            row = None
        elif tok.type == "inline" and in_head:
            header.append(tok.content)
        elif tok.type == "inline" and row is not None:
            row.append(tok)


__all__ = ["required_findings", "sdd_required"]
