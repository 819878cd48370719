"""One interface model for every side that describes an HTTP endpoint: the SDD, a unit's contract.json (what it
exports, what it consumes), its code's routes, and what the run's trace shows.

An `Operation` is one side's statement about one endpoint (method + path template): the statuses it answers,
the response fields per status, and the limits it states (a count, and the status beyond it). Every fact keeps
the line it was read from (`Quote`), so a disagreement between two sides can be cited as the two lines that
disagree. The extractors live in `interface_sdd.py` (markdown, OpenAPI / JSON blocks) and
`interface_sides.py` (contract.json, code, trace); the comparison in `interface_diff.py`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from .sdd import normalize_path, path_matches

Side = Literal["spec", "contract", "consumer", "code", "trace"]
SIDE_NAMES: dict[str, str] = {
    "spec": "the SDD",
    "contract": "the provider's contract.json",
    "consumer": "the consumer's contract.json",
    "code": "the code",
    "trace": "the trace",
}
ANY_STATUS = 0  # fields stated without a status


@dataclass(frozen=True)
class Quote:
    """Where a fact was read: a file relative to the project and a 1-based line."""

    rel: str
    line: int


@dataclass(frozen=True)
class Limit:
    """ "at most N" calls to the endpoint, with the status answered beyond N (None when the SDD names none);
    `statement` is the block's text, `written` the words that state the limit."""

    count: float
    status: int | None
    at: Quote
    statement: str = ""
    written: str = ""


_NESTING = 4  # how deep an answer's objects are read for field paths
_PATHS = 500  # and how many paths at most (a huge answer is not read whole)


def field_paths(body: dict) -> list[str]:
    """An answer's fields: its keys, and `parent.child` for the keys of an object-valued field (the nested field
    `reading.humidity` is a field of the interface like `house_id`). A list's items are a field's value."""
    out: list[str] = []
    stack: list[tuple[str, dict, int]] = [("", body, 0)]
    while stack and len(out) < _PATHS:
        prefix, obj, depth = stack.pop(0)
        for key, value in obj.items():
            name = f"{prefix}{key}"
            out.append(name)
            if isinstance(value, dict) and depth + 1 < _NESTING:
                stack.append((f"{name}.", value, depth + 1))
    return out[:_PATHS]


@dataclass
class Operation:
    side: Side
    unit: str | None  # the unit the statement belongs to (the provider; for "consumer", the consuming unit)
    provider: str | None  # the unit that serves the endpoint, when the side says so
    method: str | None
    path: str  # as written
    at: Quote
    statuses: dict[int, Quote] = field(default_factory=dict)
    fields: dict[int, dict[str, Quote]] = field(default_factory=dict)  # status (or ANY_STATUS) -> field -> line
    limits: list[Limit] = field(default_factory=list)
    listed: dict[tuple[int, int], set[str]] = field(default_factory=dict)  # (status, statement) -> its fields

    @property
    def template(self) -> str:
        return normalize_path(self.path)

    def serves(self, method: str | None, path: str) -> bool:
        return (self.method is None or method is None or self.method == method) and path_matches(self.path, path)

    def fields_for(self, status: int) -> dict[str, Quote]:
        """The fields stated for `status`; fields stated without a status count for every success status."""
        out = dict(self.fields.get(status, {}))
        if 200 <= status < 300:
            for name, at in self.fields.get(ANY_STATUS, {}).items():
                out.setdefault(name, at)
        return out

    def add_status(self, status: int, at: Quote) -> None:
        self.statuses.setdefault(status, at)

    def add_fields(self, status: int, names: list[str], at: Quote, statement: int = 0) -> None:
        """`statement` numbers the SDD statement (a paragraph, a table, a list, a code block) that lists them."""
        bucket = self.fields.setdefault(status, {})
        for name in names:
            bucket.setdefault(name, at)
        self.listed.setdefault((status, statement), set()).update(names)

    def field_lists(self, status: int) -> list[set[str]]:
        """The fields of `status`'s answer as each statement lists them (fields stated without a status count for
        every success status)."""
        keys = [status, ANY_STATUS] if 200 <= status < 300 else [status]
        return [names for (s, _n), names in self.listed.items() if s in keys]

    def signature(self) -> str:
        """`GET /parcels/{parcel_id} → 200 {parcel_id, state, eta}, 404`: the operation in one line."""
        parts = []
        for status in sorted(self.statuses):
            names = self.fields_for(status)
            parts.append(f"{status} {{{', '.join(sorted(names))}}}" if names else str(status))
        answer = ", ".join(parts) or "no status stated"
        return f"{self.method or '*'} {self.path} → {answer}"
