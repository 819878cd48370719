"""The unit or format of an answer's field, compared by structure: the SDD vs the provider's contract vs the
consumer's (a duration in minutes vs seconds, a size in MiB vs bytes, a date as YYYY-MM-DD vs DD/MM/YYYY).

Each side is read with a parser:

- the SDD (markdown): a table row whose first cell is the field's code span, or a paragraph / list item whose only
  field-like code span is the field, that states exactly one measure;
- a contract.json: the field's type descriptor in a response body, or a response description that names the field
  (a CSV's columns) and states exactly one measure;
- the trace: the answer's fields (JSON leaves, or a CSV's header read by `csv`); a date column's values are parsed
  with each side's format, so a verdict on a date format needs the values to fit the departing side's format and
  not the SDD's.

A measure is a unit of time or size (the words for them, from milliseconds to days and bytes to GiB) or a date
pattern written with Y, M and D (`YYYY-MM-DD`). The side that departs from the SDD is blamed (`measure_differs`,
confirmed when the other contract agrees with the SDD).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from .interface import Quote
from .interface_diff import InterfaceFinding
from .interface_sdd import markdown_tokens
from .matching import Call, consumed, exported
from .nullability import contract_line, leaves, tokens
from .run_context import RunContext
from .rundir import IntegrationFailure

Measure = tuple[str, str]  # (dimension, the unit or format), e.g. ("time", "minutes"), ("date", "%d/%m/%Y")
_UNITS: dict[str, Measure] = {
    **dict.fromkeys(("ms", "millisecond", "milliseconds"), ("time", "milliseconds")),
    **dict.fromkeys(("sec", "secs", "second", "seconds"), ("time", "seconds")),
    **dict.fromkeys(("min", "mins", "minute", "minutes"), ("time", "minutes")),
    **dict.fromkeys(("hr", "hrs", "hour", "hours"), ("time", "hours")),
    **dict.fromkeys(("day", "days"), ("time", "days")),
    **dict.fromkeys(("byte", "bytes"), ("size", "bytes")),
    **dict.fromkeys(("kb", "kib", "kilobytes"), ("size", "KiB")),
    **dict.fromkeys(("mb", "mib", "megabytes"), ("size", "MiB")),
    **dict.fromkeys(("gb", "gib", "gigabytes"), ("size", "GiB")),
}
_DATE_PARTS = {"YYYY": "%Y", "YY": "%y", "MM": "%m", "DD": "%d"}
_DATE_CHARS = frozenset("YMD")
_DATE_SEPARATORS = frozenset("-/.")
_MAX_TEXT = 200_000


def measure_findings(ctx: RunContext, failure: IntegrationFailure, calls: list[Call]) -> list[InterfaceFinding]:
    stated = sdd_measures(ctx)
    if not stated:
        return []
    out: list[InterfaceFinding] = []
    for call in calls:
        provided = exported(ctx, call.provider, call.method, call.path) if call.provider else None
        if provided is None:
            continue
        answered = _answered(call.body)
        for unit in failure.involves:
            wanted = consumed(ctx, unit, call.method, call.path) if unit != call.provider else None
            if wanted is None:
                continue
            for name, values in answered.items():
                if name not in stated:
                    continue
                found = _judge(
                    ctx, call, unit, name, values, stated[name], _declared(provided, name), _declared(wanted, name)
                )
                if found is not None:
                    out.append(found)
    return out


def measure_of(text: str) -> Measure | None:
    """The one measure a text states (a unit word or a date pattern), else None."""
    if len(text) > _MAX_TEXT:
        return None
    found = {_UNITS[w.lower()] for w in tokens(text) if w.lower() in _UNITS}
    found |= {("date", f) for f in _date_patterns(text)}
    return found.pop() if len(found) == 1 else None


def sdd_measures(ctx: RunContext) -> dict[str, tuple[Measure, Quote]]:
    """field → (measure, where) for every field the SDD gives one measure (two different ones: none)."""
    seen: dict[str, list[tuple[Measure, Quote]]] = {}
    for doc in ctx.sdd_docs:
        if len(doc.text) > _MAX_TEXT:
            continue
        for name, measure, line in _sdd_fields(doc.text):
            seen.setdefault(name, []).append((measure, Quote(doc.rel, line)))
    return {n: xs[0] for n, xs in seen.items() if len({m for m, _q in xs}) == 1}


def _judge(ctx: RunContext, call: Call, consumer: str, name: str, values: list[Any], spec: tuple[Measure, Quote],
           mine: Measure | None, theirs: Measure | None) -> InterfaceFinding | None:  # fmt: skip
    says, at = spec
    endpoint = f"{call.method} {call.path}"
    if (
        mine is not None
        and mine[0] == says[0]
        and mine != says
        and theirs in (None, says)
        and _fits(values, mine, says)
    ):
        rel = ctx.contract_rel(call.provider or "")
        return InterfaceFinding(
            "measure_differs", "contract_mismatch", (call.provider or "",), endpoint, name,
            "spec", at, f"{name} is in {_shown(says)}",
            "contract", Quote(rel, contract_line(ctx, rel, name)), f"{call.provider} gives {name} in {_shown(mine)}",
            agree=("consumer",) if theirs == says else (),
        )  # fmt: skip
    if (
        theirs is not None
        and theirs[0] == says[0]
        and theirs != says
        and mine in (None, says)
        and _fits(values, says, theirs)
    ):
        rel = ctx.contract_rel(consumer)
        return InterfaceFinding(
            "measure_differs", "contract_mismatch", (consumer,), endpoint, name,
            "spec", at, f"{name} is in {_shown(says)}",
            "consumer", Quote(rel, contract_line(ctx, rel, name)), f"{consumer} reads {name} in {_shown(theirs)}",
            agree=("contract",) if mine == says else (),
        )  # fmt: skip
    return None


def _fits(values: list[Any], used: Measure, instead: Measure) -> bool:
    """The traced values are what `used` gives: numbers for a unit; for a date format, every value parses with
    `used` and at least one does not with `instead`."""
    if not values:
        return False
    if used[0] != "date":
        return all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)
    return all(_parses(v, used[1]) for v in values) and not all(_parses(v, instead[1]) for v in values)


def _parses(value: Any, fmt: str) -> bool:
    try:
        datetime.strptime(str(value), fmt)
    except ValueError:
        return False
    return True


def _answered(body: Any) -> dict[str, list[Any]]:
    """field → its values in an answer: a JSON body's leaves, or a CSV text's columns."""
    out: dict[str, list[Any]] = {}
    if isinstance(body, dict | list):
        for name, value in leaves(body):
            out.setdefault(name, []).append(value)
    elif isinstance(body, str) and "\n" in body and len(body) <= _MAX_TEXT:
        try:
            rows = list(csv.DictReader(io.StringIO(body)))
        except csv.Error:
            return {}
        for row in rows[:1000]:
            for name, value in row.items():
                if isinstance(name, str) and name.strip() and value is not None:
                    out.setdefault(name.strip(), []).append(value.strip())
    return out


def _declared(endpoint: Any, name: str) -> Measure | None:
    """The measure a contract's endpoint states for `name`: its type descriptor in a body, else a response
    description that names the field."""
    for response in endpoint.responses.values():
        for field, descriptor in leaves(response.body):
            if field == name and isinstance(descriptor, str):
                return measure_of(descriptor)
        if name in tokens(response.description):
            found = measure_of(response.description)
            if found is not None:
                return found
    return None


def _date_patterns(text: str) -> Iterator[str]:
    """strftime formats of the date patterns a text writes (`YYYY-MM-DD` → `%Y-%m-%d`)."""
    run = ""
    for ch in [*text, " "]:
        if ch in _DATE_CHARS or (ch in _DATE_SEPARATORS and run):
            run += ch
            continue
        fmt = _date_format(run.rstrip("".join(_DATE_SEPARATORS)))
        if fmt is not None:
            yield fmt
        run = ""


def _date_format(run: str) -> str | None:
    separators = {c for c in run if c in _DATE_SEPARATORS}
    if len(separators) != 1:
        return None
    sep = separators.pop()
    parts = run.split(sep)
    if any(p not in _DATE_PARTS for p in parts) or sorted(p[0] for p in parts) != ["D", "M", "Y"]:
        return None
    return sep.join(_DATE_PARTS[p] for p in parts)


def _sdd_fields(text: str) -> Iterator[tuple[str, Measure, int]]:
    """(field, measure, line): a table row whose first cell is a field's code span; a paragraph or list item whose
    only field-like code span is the field."""
    row: list[Any] | None = None
    row_line = 0
    for tok in markdown_tokens(text):
        if tok.type == "tr_open":
            row, row_line = [], (tok.map[0] + 1 if tok.map else 1)
        elif tok.type == "tr_close" and row is not None:
            names = _fields(row[0]) if row else []
            measure = measure_of(" ".join(t.content for t in row[1:]))
            if len(names) == 1 and measure is not None:
                yield names[0], measure, row_line
            row = None
        elif tok.type == "inline" and row is not None:
            row.append(tok)
        elif tok.type == "inline" and tok.map:
            names, measure = _fields(tok), measure_of(tok.content)
            if len(names) == 1 and measure is not None:
                yield names[0], measure, tok.map[0] + 1


def _fields(tok: Any) -> list[str]:
    spans = [c.content.strip() for c in tok.children or [] if c.type == "code_inline"]
    return list(dict.fromkeys(s for s in spans if s.isidentifier() and s.lower() not in _UNITS and s != "null"))


def _shown(measure: Measure) -> str:
    if measure[0] != "date":
        return measure[1]
    return measure[1].replace("%Y", "YYYY").replace("%y", "YY").replace("%m", "MM").replace("%d", "DD")


__all__ = ["measure_findings", "measure_of", "sdd_measures"]
