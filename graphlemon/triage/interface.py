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


Measure = Literal["count", "bytes", "length", "value"]


@dataclass(frozen=True)
class Limit:
    """ "at most N ..." with the status answered beyond N (None when the SDD names none).

    `measure` says what is limited: "count" (calls to the endpoint, or a number the statement names), "bytes" (a
    request's size: `count` is in bytes, `count_max` the largest reading of a unit like MB, 10^6 or 2^20), "length"
    (characters of a text input the statement names), "value" (a numeric input the statement names). `bound` is
    the side of N that is allowed; `strict` excludes N itself. `statement` is the block's text, which names the
    limited input; `unit_wide` marks a limit stated in a unit's section outside any endpoint's statement."""

    count: float
    status: int | None
    at: Quote
    measure: Measure = "count"
    bound: Literal["max", "min"] = "max"
    strict: bool = False
    statement: str = ""
    count_max: float | None = None
    unit_wide: bool = False
    written: str = ""  # the quantity as the SDD writes it ("longer than 2 MB")
    amount: str = ""  # its number and unit ("2 MB")

    def allows(self, quantity: float) -> bool | None:
        """Whether `quantity` is on the allowed side; None when the unit's readings disagree about it."""
        verdicts = {self._allows(quantity, n) for n in (self.count, self.count_max or self.count)}
        return verdicts.pop() if len(verdicts) == 1 else None

    def _allows(self, quantity: float, n: float) -> bool:
        if self.bound == "max":
            return quantity < n if self.strict else quantity <= n
        return quantity > n if self.strict else quantity >= n

    def says(self) -> str:
        """`at most 280 characters ("longer than 280 characters")`: the allowed side, in the SDD's unit."""
        rel = {("max", False): "at most", ("max", True): "under", ("min", False): "at least", ("min", True): "over"}
        unit = {"bytes": " bytes", "length": " characters"}.get(self.measure, "")
        amount = self.amount or f"{number_text(self.count)}{unit}"
        return f"{rel[(self.bound, self.strict)]} {amount}" + (f' ("{self.written}")' if self.written else "")


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


def number_text(n: float) -> str:
    """`3` for 3.0, `1.5` for 1.5."""
    return str(int(n)) if float(n).is_integer() else str(n)


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


def same_interface(a: Operation, b: Operation) -> bool:
    """Two statements describe the same interface: endpoint, statuses, fields per status and limits."""
    return (
        (a.method, a.template) == (b.method, b.template)
        and set(a.statuses) == set(b.statuses)
        and {s: set(a.fields_for(s)) for s in a.statuses} == {s: set(b.fields_for(s)) for s in b.statuses}
        and {(x.count, x.status, x.measure) for x in a.limits} == {(x.count, x.status, x.measure) for x in b.limits}
    )


__all__ = [
    "ANY_STATUS",
    "SIDE_NAMES",
    "Limit",
    "field_paths",
    "Measure",
    "Operation",
    "Quote",
    "Side",
    "number_text",
    "same_interface",
]
