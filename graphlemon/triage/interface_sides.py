"""The interface as the other sides state it: contract.json (exports, consumes), the code's routes, the trace.

contract.json is JSON, read through its model (`graphlemon.units.Contract`); a fact's line is the line of the
file that holds the endpoint's path, then its status key, then its field key. The code's routes come from
`handlers.py` (Python's `ast`, tree-sitter); the trace's operations are the calls the run made, one each.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from functools import cached_property
from urllib.parse import parse_qsl, urlsplit

from .cite import Citer
from .interface import Operation, Quote, field_paths
from .run_context import RunContext
from .rundir import HttpTraceEntry


@dataclass
class Interfaces:
    """Every side's operations for one run, built once."""

    ctx: RunContext

    @cached_property
    def _citer(self) -> Citer:
        return Citer(self.ctx)

    @cached_property
    def spec(self) -> list[Operation]:
        return self.ctx.spec_operations

    @cached_property
    def contracts(self) -> list[Operation]:
        """Exports (side "contract") and consumes (side "consumer") of every unit's contract.json."""
        out = []
        for unit_id, contract in self.ctx.contracts.items():
            rel = self.ctx.contract_rel(unit_id)
            for ep in contract.exports.http:
                out.append(self._contract_op("contract", unit_id, unit_id, ep, rel))
            for ep in contract.consumes:
                out.append(self._contract_op("consumer", unit_id, ep.unit_id, ep, rel))
        return out

    @cached_property
    def code(self) -> list[Operation]:
        out = []
        for unit_id in self.ctx.units.ids():
            for route in self.ctx.code_diff(unit_id).routes:
                op = Operation("code", unit_id, unit_id, route.method, route.path, Quote(route.file, route.line))
                for status, line in route.statuses.items():
                    op.add_status(status, Quote(route.file, line))
                out.append(op)
        return out

    def trace_op(self, line: int, entry: HttpTraceEntry) -> Operation:
        rel = f"{self.ctx.run_rel}/http-trace.ndjson"
        at = Quote(rel, line)
        op = Operation("trace", entry.unit_id, entry.unit_id, entry.method, urlsplit(entry.url).path or "/", at)
        if entry.status is not None:
            op.add_status(entry.status, at)
            if isinstance(entry.response_body, dict):
                op.add_fields(entry.status, field_paths(entry.response_body), at)
        return op

    def of(self, side: str, provider: str | None, method: str | None, path: str) -> list[Operation]:
        """The operations of `side` about `provider`'s endpoint that serves (method, path)."""
        pool = self.spec if side == "spec" else self.code if side == "code" else self.contracts
        return [
            op
            for op in pool
            if op.side == side and op.serves(method, path) and (provider is None or op.provider in (provider, None))
        ]

    def provided_by(self, side: str, provider: str, method: str | None) -> list[Operation]:
        pool = self.spec if side == "spec" else self.code if side == "code" else self.contracts
        return [
            op
            for op in pool
            if op.side == side and op.provider == provider and (method is None or op.method in (method, None))
        ]

    def _contract_op(self, side, unit_id: str, provider: str | None, ep, rel: str) -> Operation:
        lines = self._citer.lines(rel)
        at = _find(lines, f'"{ep.path}"', 1)
        op = Operation(side, unit_id, provider, ep.method, ep.path, Quote(rel, at))
        for status, response in ep.responses.items():
            s_at = _find(lines, f'"{status}"', at)
            op.add_status(status, Quote(rel, s_at))
            if isinstance(response.body, dict):
                for name in field_paths(response.body):
                    leaf = name.rsplit(".", 1)[-1]
                    op.add_fields(status, [name], Quote(rel, _find(lines, f'"{leaf}"', s_at)))
        return op


def request_inputs(entry_url: str, headers: dict[str, str] | None, body: object) -> dict[str, str]:
    """The inputs of one request as `name → value` strings: query parameters, headers, body fields and their JSON
    types, the marks (non-alphanumeric characters) of their text values, and for a text
    body its first character when invisible (a byte-order mark is an input too) and the punctuation of its first line."""
    out = {f"query {k}": v for k, v in parse_qsl(urlsplit(entry_url).query, keep_blank_values=True)}
    out.update({f"header {k.lower()}": str(v) for k, v in (headers or {}).items()})
    if isinstance(body, dict):
        out.update({f"body field {k}": repr(v) for k, v in body.items()})
        out.update({f"body field {k}'s type": _json_type(v) for k, v in body.items()})
        # the characters a text value carries besides letters and digits: a grouped or punctuated form of it
        out.update({f"body field {k}'s marks": _marks(v) for k, v in body.items() if isinstance(v, str) and v})
    elif isinstance(body, str) and body:
        if not body[0].isprintable():  # an invisible prefix: a byte-order mark, a control character
            out["body's first character"] = f"U+{ord(body[0]):04X}"
        first_line = body.lstrip("\ufeff").split("\n", 1)[0]
        marks = "".join(sorted({c for c in first_line if c in string.punctuation}))
        if marks:  # what separates a text body's fields: commas, semicolons, tabs, pipes
            out["body's separators"] = marks
    return out


def _marks(text: str) -> str:
    return "".join(sorted({c for c in text if not c.isalnum()})) or "none"


def _json_type(value: object) -> str:
    """The JSON type of a decoded value: a number sent as a string is another input than the number."""
    if isinstance(value, bool) or value is None:
        return "boolean" if isinstance(value, bool) else "null"
    return {int: "number", float: "number", str: "string", list: "array", dict: "object"}.get(type(value), "unknown")


def _find(lines: list[str], needle: str, start: int) -> int:
    for i in range(max(start, 1), len(lines) + 1):
        if needle in lines[i - 1]:
            return i
    return max(start, 1)


__all__ = ["Interfaces", "request_inputs"]
