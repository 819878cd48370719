"""Does the SDD decide the failing case? (docs/triage.md, "When the SDD decides the case")

When no side of the interface disagrees, a failure is an implementation bug if the SDD states a rule that covers
the case's distinguishing inputs and gives the outcome the case expects, and a question for a person if the SDD
never covers them or covers them both ways. The SDD is read with the markdown parser, one statement at a time (a
paragraph, a list item, a table row, under the heading of the unit whose section it is); the case is read as
literal values, never as words:

- the case's literals: its description's quoted strings, numbers, times, `NAME=value` settings and marked tokens
  (`Europe/Berlin`, `f-12`), and its request's path segments, query values, body values and header values — less
  those a traced request of another case to the same endpoint carried too (they do not set the case apart);
- the outcome's literals: the values of the expected answer the run did not get (a description that repeats one
  states the outcome, not an input);
- the run's literals: those of the answer it got (and its message) that the case's expectation lacks.

A statement *covers* a literal when it holds it as a token (a number by its value, in an enumeration or an
example; a code span by its text). It decides the case when it covers one of the case's inputs and, with the
outcome's literals, two or more values, at least one set as a value (a code span, a number, a marked token)
rather than a plain word, and it states none of the run's literals. Two statements that cover
the case as well, one with a run's literal, are a contradiction: a person decides. A run whose message names a
closed range for a quantity (`day-of-week 7 not in 0..6`) that the SDD gives another closed range holding the
case's value (`day-of-week 0-7`) is decided too. "Up to", "at most", "under" are never read as closed ranges, and
a number a statement states only after them covers nothing: whether the bound is included is what such a case
asks.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import parse_qsl, urlsplit

from .cite import Citer
from .findings import Finding
from .interface_sdd import markdown_tokens, unit_named
from .run_context import RunContext
from .rundir import IntegrationFailure, Observation
from .verdict_helpers import describe, short, squash

# the literals of a text: quoted strings, NAME=value, dates, numbers with grouping (`1'234.50`), closed ranges,
# marked tokens (times, identifiers), words
_LEX = re.compile(
    r"""(?P<quoted>'[^'\n]{1,80}'|"[^"\n]{1,80}")
      |(?P<setting>\b[A-Z][A-Z0-9_]{2,}=[^\s,;)]+)
      |(?P<date>\d{4}-\d{2}-\d{2}(?:T[\d:.]+(?:Z|[+-]\d{2}:\d{2})?)?)
      |(?P<grouped>(?<![\w.,'’])\d{1,3}(?:[,.'’]\d{3})+(?:[.,]\d+)?(?![\w]))
      |(?P<range>(?<![\w.])(?P<lo>-?\d+(?:\.\d+)?)\s*(?:\.\.|-|–)\s*(?P<hi>-?\d+(?:\.\d+)?)(?![\w.-]))
      |(?P<token>[\w][\w:./+-]*[\w]|\w)""",
    re.VERBOSE,
)
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_IDENT_NUMBER = re.compile(r"[A-Za-z]+[-_](?P<n>\d+)")
_MARKED = re.compile(r"\d|[^\w\s]")  # a value written with digits or marks, not a plain word
# bounds whose inclusion everyday language leaves open
_OPEN_BOUND = re.compile(r"\b(?:up to|at most|under|below|over|above|more than|less than|fewer than)\s+$", re.I)
_COMMON = frozenset(
    "a an the and or of in on at to is are be by for with as it its this that when if not no yes from per "
    "get post put patch delete http https api true false null none".split()
)  # words every statement shares; `true` / `false` still count set in a code span or a setting


@dataclass(frozen=True)
class Statement:
    """One paragraph, list item or table row of the SDD, in the section of `unit`."""

    doc: str
    line: int
    text: str
    unit: str | None
    spans: frozenset[str]  # its code spans, lower-cased


@dataclass(frozen=True)
class Decision:
    """The SDD statement that decides the failing case, or two that decide it both ways."""

    kind: Literal["decided", "contradicted"]
    statement: Statement
    covered: tuple[str, ...]  # the case's literals it covers, as the case writes them
    rival: Statement | None = None  # the statement that gives the run's outcome (a contradiction)
    run_literal: str | None = None  # the run's literal the rival states
    quote_anchor: str = ""


def statements(docs: list[tuple[str, str]], unit_ids: list[str]) -> list[Statement]:
    """Every paragraph, list item and table row of the SDD documents, with the unit whose section holds it."""
    out: list[Statement] = []
    for rel, text in docs:
        sections: list[tuple[int, str | None]] = []
        tokens = markdown_tokens(text)
        row: list[Any] = []
        for i, tok in enumerate(tokens):
            if tok.type == "heading_open":
                level = int(tok.tag[1:])
                while sections and sections[-1][0] >= level:
                    sections.pop()
                sections.append((level, unit_named(tokens[i + 1].content, unit_ids)))
                continue
            unit = next((u for _lvl, u in reversed(sections) if u), None)
            if tok.type == "tr_open":
                row = [tok]
            elif tok.type == "inline" and row:
                row.append(tok)
            elif tok.type == "tr_close" and row:
                cells = row[1:]
                line = (row[0].map[0] + 1) if row[0].map else 1
                out.append(_statement(rel, line, " | ".join(c.content for c in cells), unit, cells))
                row = []
            elif tok.type == "inline" and tok.map and i > 0 and tokens[i - 1].type == "paragraph_open":
                out.append(_statement(rel, tok.map[0] + 1, tok.content, unit, [tok]))
    return out


def _statement(rel: str, line: int, text: str, unit: str | None, inlines: list[Any]) -> Statement:
    spans = frozenset(c.content.strip().lower() for t in inlines for c in (t.children or []) if c.type == "code_inline")
    return Statement(rel, line, text, unit, spans)


# -- literals ------------------------------------------------------------------------------------------------


def literals(text: str, *, words: bool = True) -> set[str]:
    """The literal values a text writes: quoted strings (and their tokens), settings, numbers, marked tokens, and
    (with `words`) plain words. A number inside an identifier (`f-12`) is a literal of its own."""
    out: set[str] = set()
    kept: set[str] = set()  # a setting's parts are values even when they are common words (`false`)
    for m in _LEX.finditer(text):
        kind, value = m.lastgroup, m.group()
        if kind == "quoted":
            inner = value[1:-1].strip()
            out.add(inner.lower())
            out |= literals(inner, words=words)
        elif kind == "setting":
            name, _eq, val = value.partition("=")
            kept |= {value.lower(), name.lower(), val.lower()}
        elif kind == "range":
            out |= {m.group("lo").lstrip("-"), m.group("hi").lstrip("-")}
        elif _MARKED.search(value):
            out.add(_normal(value))
            ident = _IDENT_NUMBER.fullmatch(value)  # `f-12`, `u_31`: the number it carries
            out |= {ident.group("n")} if ident else set()
        elif words:
            out.add(value.lower())
    return {x for x in out if x and x not in _COMMON} | kept


def _normal(value: str) -> str:
    """A literal as compared: lower-cased, a plain number by its value (`35.0` is `35`)."""
    if _NUMBER.fullmatch(value):
        return f"{float(value):g}" if abs(float(value)) < 1e15 else value
    return value.lower()


def _leaves(value: Any, *, keys: bool = True) -> list[str]:
    if isinstance(value, dict):
        return [x for k, v in value.items() for x in [*([str(k)] if keys else []), *_leaves(v, keys=keys)]]
    if isinstance(value, list):
        return [x for v in value for x in _leaves(v, keys=keys)]
    if value is None:
        return []
    return [json.dumps(value) if isinstance(value, bool) else str(value)]


def _value_literals(value: str) -> set[str]:
    """A request value as a literal: the whole value when short (a locale `pl`, a flag `false`), and the marked
    tokens inside it; never the plain words of a longer text (a query, a sentence)."""
    whole = {_normal(value.strip())} if 0 < len(value.strip()) <= 40 and " " not in value.strip() else set()
    return whole | literals(value, words=False)


def _request_literals(url: str | None, headers: Any, body: Any) -> set[str]:
    if not url:
        return set()
    parts = urlsplit(url)
    out: set[str] = set()
    for seg in (parts.path or "").split("/"):
        out |= _value_literals(seg)
    for _k, v in parse_qsl(parts.query):
        out |= _value_literals(v)
    for v in headers.values() if isinstance(headers, dict) else []:
        out |= literals(str(v), words=False)
    for leaf in _leaves(body, keys=False):
        out |= _value_literals(leaf)
    return out


def _observation_literals(obs: Observation) -> set[str]:
    return {x for part in (obs.body, obs.value, obs.error) for leaf in _leaves(part) for x in _value_literals(leaf)}


def case_literals(ctx: RunContext, failure: IntegrationFailure) -> set[str]:
    """What the case states about its situation, less what a traced request of another case carried too."""
    req = failure.request
    mine = literals(failure.description, words=False)  # the description's words are no values
    if req is not None:
        mine |= _request_literals(req.path, req.headers, req.body)
    shared: set[str] = set()
    for _line, e in ctx.trace:
        if e.case != failure.case:
            shared |= _request_literals(e.url, e.request_headers, e.request_body)
    units = {u.lower() for u in ctx.units.ids()}
    return {x for x in mine - shared - units if _kept(x)}


def _kept(literal: str) -> bool:
    """A literal long enough to mean something: a number, or two characters and more."""
    return len(literal) > 1 or literal.isdigit()


def expected_literals(failure: IntegrationFailure) -> set[str]:
    """The values of the outcome the case expects that the run did not get."""
    return {x for x in _observation_literals(failure.expected) - _observation_literals(failure.got) if _kept(x)}


def run_literals(failure: IntegrationFailure) -> set[str]:
    """What the run got that the case's expectation (its observation and its description) does not say."""
    said = _observation_literals(failure.expected) | literals(failure.description, words=False)
    if failure.request is not None:
        said |= _request_literals(failure.request.path, None, failure.request.body)
    got = _observation_literals(failure.got) | literals(failure.message, words=False)
    return {x for x in got - said if _kept(x)}


# -- coverage ------------------------------------------------------------------------------------------------


def _tokens(st: Statement) -> set[str]:
    return literals(st.text) | st.spans


def _ranges(text: str) -> list[tuple[float, float, str, str]]:
    """The closed ranges a text states (`0-7`, `12..14`): bounds, the words before, the range as written. A bound
    in words ("up to 12") is skipped."""
    out: list[tuple[float, float, str, str]] = []
    for m in _LEX.finditer(text):
        if m.lastgroup != "range":
            continue
        before = text[max(0, m.start() - 40) : m.start()]
        if _OPEN_BOUND.search(before):
            continue
        lo, hi = float(m.group("lo")), float(m.group("hi"))
        if lo <= hi:
            out.append((lo, hi, before, m.group()))
    return out


def covered(st: Statement, case: set[str]) -> list[str]:
    """The case's literals the statement holds as tokens (a number by its digits, a code span by its text)."""
    toks = _tokens(st)
    return sorted(x for x in case if x in toks)


def _as_value(st: Statement, lit: str) -> bool:
    """The statement sets the literal as a value (a code span, a number, a marked token), not as a plain word."""
    return lit in st.spans or bool(_MARKED.search(lit))


def decide(ctx: RunContext, failure: IntegrationFailure) -> Decision | None:
    """The SDD statement of an involved unit's section that decides the failing case (module docstring)."""
    unit_ids = ctx.units.ids()
    sts = [s for s in statements([(d.rel, d.text) for d in ctx.sdd_docs], unit_ids) if len(s.text) < 2000]
    case, run = case_literals(ctx, failure) - _path_words(sts), run_literals(failure)
    if not case:
        return None
    involved = set(failure.involves) or set(unit_ids)
    ranged = _range_refused(sts, failure, case, involved)
    if ranged is not None:
        return ranged
    wanted = expected_literals(failure)
    case -= wanted  # a value the description repeats from the expected answer is the outcome, not an input
    best: tuple[int, Statement, list[str]] | None = None
    stating: list[tuple[Statement, set[str], str]] = []  # statements that give the run's outcome
    for st in sts:
        if st.unit not in involved:
            continue
        toks = _tokens(st)
        given = {x for x in case & toks if not _bound_in_words(st.text, x)}
        stated = sorted(run & toks)
        if given and stated:
            stating.append((st, given, stated[0]))
        hits = sorted(given | (wanted & toks))
        if not given or len(hits) < 2 or not any(_as_value(st, x) for x in hits) or stated:
            continue
        if best is None or len(hits) > best[0]:
            best = (len(hits), st, hits)
    if best is None:
        return None
    _n, st, hits = best
    rival = next((r for r in stating if case & _tokens(st) <= r[1]), None)  # covers what `st` covers, both ways
    if rival is not None:
        return Decision("contradicted", st, tuple(hits), rival[0], rival[2], quote_anchor=hits[0])
    return Decision("decided", st, tuple(hits), quote_anchor=next(x for x in hits if _as_value(st, x)))


def _bound_in_words(text: str, literal: str) -> bool:
    """`literal` is a number the text states only as a bound in words ("up to 12"): whether a case on the bound
    lies inside is what the case asks, so the text does not decide it."""
    if not _NUMBER.fullmatch(literal):
        return False
    spots = [m for m in _LEX.finditer(text) if m.lastgroup == "token" and _normal(m.group()) == literal]
    return bool(spots) and all(_OPEN_BOUND.search(text[max(0, m.start() - 40) : m.start()]) for m in spots)


def _path_words(sts: list[Statement]) -> set[str]:
    """The constant parts of the paths the SDD writes (`/console/migrations/:id`): a request's path repeats them."""
    return {
        part
        for st in sts
        for tok in st.spans | literals(st.text)
        if "/" in tok
        for part in re.split(r"[/\s]", tok)
        if part and not part.startswith((":", "{", "<"))
    }


def _range_refused(sts: list[Statement], failure: IntegrationFailure, case: set[str],
                   involved: set[str]) -> Decision | None:  # fmt: skip
    """The run's answer names a closed range for a quantity that leaves out the case's value, and the SDD gives
    the same quantity a closed range that holds it."""
    told = " ".join(_leaves(failure.got.body) + _leaves(failure.got.error) + [failure.message or ""])
    numbers = {float(x) for x in case if _NUMBER.fullmatch(x)}
    for lo, hi, before, _said in _ranges(told):
        name = _quantity(before)
        outside = [n for n in numbers if not lo <= n <= hi and f"{n:g}" in before]
        if not name or not outside:
            continue
        for st in sts:
            if st.unit not in involved:
                continue
            for slo, shi, sbefore, said in _ranges(st.text):
                if _quantity(sbefore) == name and all(slo <= n <= shi for n in outside):
                    shown = [f"{n:g}" for n in outside]
                    return Decision("decided", st, (*shown, f"{name} {said}"), quote_anchor=said)
    return None


def _quantity(before: str) -> str | None:
    """The name of the quantity a range is stated for: the last marked or hyphenated word before it."""
    words = re.findall(r"[A-Za-z][\w-]*", before)
    named = [w.lower() for w in words if "-" in w or "_" in w]
    return named[-1] if named else None


# -- the verdict ---------------------------------------------------------------------------------------------

DECIDED_CONFIDENCE = 0.7  # the statement covers the case by its values; no trace proves which unit departed
CONTRADICTED_CONFIDENCE = 0.55
FALLBACK_RULES = frozenset({"spec:value", "spec:unspecified"})  # "the SDD does not say": the verdicts it re-asks
PICKED_BY_WORDS = frozenset({"impl:value"})  # a unit picked by the words a case shares with the SDD: re-asked


def sdd_decides(ctx: RunContext, failure: IntegrationFailure, cite: Citer, fallback: Finding) -> Finding:
    """The fallback verdict `fallback`, or the verdict of the SDD statement that decides the case."""
    if fallback.rule not in FALLBACK_RULES | PICKED_BY_WORDS:
        return fallback
    found = decide(ctx, failure)
    if found is None:
        return fallback
    st = found.statement
    quote = _quote(cite, st, found.quote_anchor)
    inputs = ", ".join(found.covered)
    said = f'{st.doc}:{st.line}: "{squash(st.text)[:160]}"'
    if found.kind == "contradicted" and found.rival is not None:
        rv = found.rival
        root = (
            f"The SDD covers the case's inputs ({inputs}) in two statements that point both ways: {said} does not "
            f'state what the run got, {rv.doc}:{rv.line}: "{squash(rv.text)[:160]}" states {found.run_literal}; the '
            f"case expects {_shown(failure.expected)}, the run got {_shown(failure.got)}"
        )
        evidence = [x for x in (quote, _quote(cite, rv, found.run_literal or "")) if x]
        return Finding(
            "spec_ambiguous", [], CONTRADICTED_CONFIDENCE, root, evidence, "spec:contradiction",
            l3_question=f"Which statement decides {inputs}: {said} or {rv.doc}:{rv.line}?",
        )  # fmt: skip
    unit = st.unit if st.unit in failure.involves else None
    if unit is None or quote is None or fallback.affected == [unit]:
        return fallback
    root = (
        f"The SDD decides the case by the values that set it apart ({inputs}): {said} is in {unit}'s section and "
        f"states none of what only the run got; so {unit} departs from it: case {failure.case} step {failure.step} expected "
        f"{_shown(failure.expected)}, got {_shown(failure.got)}"
    )
    return Finding("impl_bug", [unit], DECIDED_CONFIDENCE, root, [quote, *fallback.evidence], "impl:sdd_decides")


def _shown(o: Observation) -> str:
    """An observation with its answer: `200 {"zone": "outer"}`."""
    return describe(o) if o.body is None or o.error else f"{describe(o)} {short(o.body)}"


def _quote(cite: Citer, st: Statement, anchor: str) -> str | None:
    """The statement's line that holds `anchor` (a list item or paragraph may span lines), cited verbatim."""
    lines = cite.lines(st.doc)
    for n in range(st.line, min(st.line + st.text.count("\n") + 1, len(lines)) + 1):
        if anchor and anchor.lower() in lines[n - 1].lower():
            at = lines[n - 1].lower().find(anchor.lower())
            return cite.line(st.doc, n, lines[n - 1][at : at + len(anchor)])
    return cite.line(st.doc, st.line)


__all__ = [
    "Decision",
    "FALLBACK_RULES",
    "Statement",
    "sdd_decides",
    "case_literals",
    "covered",
    "decide",
    "literals",
    "run_literals",
    "statements",
]
