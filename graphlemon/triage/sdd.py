"""The SDD as clauses: which unit a sentence belongs to, which endpoint it talks about, what status it names.

A clause is a table row, or a sentence of a bullet or paragraph, split again at
`;`. Its unit comes from the innermost heading naming a unit id (or an HTML
`<section data-unit-id=...>`); its endpoint from the clause, its statement, an
earlier sentence of the same section, or the heading. `raw` is a verbatim slice
of the file starting on `line`, so a clause can be cited as evidence as it is.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections import Counter
from dataclasses import dataclass, field

from .sdd_terms import StatusMention, identifiers, status_mentions, terms

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")
_ENDPOINT = re.compile(r"\b(GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS)\b[\s`|*]*(/[^\s`|,;)*\"']*)?")
_BACKTICK_PATH = re.compile(r"`(/[^`\s]*)`")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^(\s*)(?:[-*+]|\d+[.)])\s+")
_TABLE_SEP = re.compile(r"^\s*\|?\s*:?-{2,}")
_SECTION_OPEN = re.compile(r"<section\b[^>]*\bdata-unit-id=[\"']([^\"']+)[\"']", re.IGNORECASE)
_SECTION_CLOSE = re.compile(r"</section\s*>", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?。])\s+(?=[A-Z`\"'(\d*<])")
_PARAM = re.compile(r"^(?:\{[^}]*\}|<[^>]*>|:[A-Za-z_]\w*|\*)$")


def normalize_path(path: str) -> str:
    """`/api/users/:id?x=1` → `/api/users/{}` (every parameter style becomes `{}`)."""
    path = path.split("?", 1)[0].split("#", 1)[0].strip().rstrip("/") or "/"
    segments = [("{}" if _PARAM.match(s) else s) for s in path.split("/")]
    return "/".join(segments)


def path_matches(template: str, path: str) -> bool:
    """Segment-wise match; a `{}` on either side matches any one segment."""
    a, b = normalize_path(template).split("/"), normalize_path(path).split("/")
    return len(a) == len(b) and all(x == y or x == "{}" or y == "{}" for x, y in zip(a, b, strict=True))


@dataclass(frozen=True)
class Endpoint:
    method: str | None  # None: a bare path mention
    path: str  # normalised template

    def matches(self, method: str | None, path: str) -> bool:
        return (self.method is None or method is None or self.method == method) and path_matches(self.path, path)

    def __str__(self) -> str:
        return f"{self.method or ''} {self.path}".strip()


def endpoints_in(text: str) -> tuple[tuple[Endpoint, ...], frozenset[str]]:
    """(endpoints named in `text`, methods named without a path — "all DELETE endpoints")."""
    found: list[tuple[int, Endpoint]] = []
    bare: set[str] = set()
    covered: list[tuple[int, int]] = []
    for m in _ENDPOINT.finditer(text):
        if m.group(2):
            found.append((m.start(), Endpoint(m.group(1), normalize_path(m.group(2)))))
            covered.append(m.span(2))
        else:
            bare.add(m.group(1))
    for m in _BACKTICK_PATH.finditer(text):
        if not any(s <= m.start(1) < e for s, e in covered):
            found.append((m.start(), Endpoint(None, normalize_path(m.group(1)))))
    return tuple(dict.fromkeys(e for _, e in sorted(found, key=lambda x: x[0]))), frozenset(bare)


@dataclass(frozen=True)
class Clause:
    doc: str
    line: int
    raw: str
    units: frozenset[str]
    endpoints: tuple[Endpoint, ...]  # named in the clause
    statement_endpoints: tuple[Endpoint, ...]  # named elsewhere in the same bullet / row / sentence
    context_endpoints: tuple[Endpoint, ...]  # named earlier in the section, or by its heading
    methods: frozenset[str]
    statuses: tuple[StatusMention, ...]
    fields: tuple[str, ...]
    terms: frozenset[str]
    section: str = ""  # the innermost heading above the clause, as written ("3 Integration")

    @property
    def status_codes(self) -> frozenset[int]:
        return frozenset(s.code for s in self.statuses)

    def relevance(self, method: str | None, path: str | None, unit_id: str | None) -> float | None:
        """How surely this clause is about (method, path) of `unit_id`: 2 named, 1 by context, None: not about it."""
        if path is None:  # not an HTTP step: the unit's own sections, then general text
            if unit_id in self.units:
                return 1.0
            return 0.25 if not self.units else None
        if self.units and unit_id not in self.units:
            return None  # another unit's section: how it uses the endpoint, not the endpoint's spec
        named = self.endpoints or self.statement_endpoints
        if named and named[0].matches(method, path):  # the clause's subject (later ones are what it calls)
            return 2.0
        if named:
            return None
        if self.context_endpoints:
            return 1.0 if any(e.matches(method, path) for e in self.context_endpoints) else None
        if self.methods:
            return 1.0 if method in self.methods else None
        return 0.5 if self.units else 0.25


@dataclass
class Sdd:
    """All clauses of the SDD documents, and how common each term is (for weighting)."""

    clauses: list[Clause] = field(default_factory=list)
    df: Counter = field(default_factory=Counter)

    @classmethod
    def parse(cls, docs: list[tuple[str, str]], unit_ids: list[str]) -> Sdd:
        sdd = cls()
        for rel, text in docs:
            sdd.clauses.extend(_parse_doc(rel, text, unit_ids))
        for clause in sdd.clauses:
            sdd.df.update(clause.terms)
        return sdd

    def weight(self, term: str) -> float:
        """1 / (number of clauses using the term): rare words say more about a specific situation."""
        return 1.0 / max(self.df.get(term, 0), 1)

    def mentions(self, term: str) -> bool:
        return self.df.get(term, 0) > 0


# -- parsing -------------------------------------------------------------------------------


@dataclass
class _Section:
    level: int
    units: frozenset[str]
    endpoints: tuple[Endpoint, ...]
    title: str = ""
    last_endpoints: tuple[Endpoint, ...] = ()


def _heading_units(text: str, unit_ids: list[str]) -> frozenset[str]:
    return frozenset(u for u in unit_ids if re.search(rf"(?<![A-Za-z0-9_]){re.escape(u)}(?![A-Za-z0-9_-])", text))


def _parse_doc(rel: str, text: str, unit_ids: list[str]) -> list[Clause]:
    lines = text.split("\n")
    stack: list[_Section] = []
    html_units: list[frozenset[str]] = []
    statements: list[tuple[int, str, bool]] = []  # (first line, raw, is_table_row)
    out: list[Clause] = []
    in_fence = False

    def flush() -> None:
        for line, raw, is_row in statements:
            out.extend(_clauses(rel, line, raw, is_row, stack, html_units))
        statements.clear()

    current: list[str] | None = None
    start = 0
    for i, line in enumerate(lines, 1):
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        heading = _HEADING.match(line)
        opened, closed = _SECTION_OPEN.search(line), _SECTION_CLOSE.search(line)
        bullet = _BULLET.match(line)
        is_row = line.lstrip().startswith("|")
        if current is not None and (
            not line.strip() or heading or opened or closed or bullet or is_row or _is_paragraph_break(current, line)
        ):
            statements.append((start, "\n".join(current), False))
            current = None
        if heading or opened or closed:
            flush()
            if heading:
                level = len(heading.group(1))
                while stack and stack[-1].level >= level:
                    stack.pop()
                eps, _ = endpoints_in(heading.group(2))
                stack.append(_Section(level, _heading_units(heading.group(2), unit_ids), eps, _title(heading.group(2))))
            if opened:
                html_units.append(frozenset({opened.group(1)}))
            if closed and html_units:
                html_units.pop()
            continue
        if not line.strip():
            continue
        if is_row:
            if not _TABLE_SEP.match(line):
                statements.append((i, line.strip(), True))
            continue
        if bullet:
            current, start = [line[bullet.end() :]], i
            continue
        if current is None:
            current, start = [line.strip()], i
        else:
            current.append(line.strip())
    if current is not None:
        statements.append((start, "\n".join(current), False))
    flush()
    return out


def _title(heading: str) -> str:
    """A heading without its anchor (`{#unit-x}`) and markup."""
    return " ".join(re.sub(r"\{#[^}]*\}|[`*]", "", heading).split())


def _is_paragraph_break(current: list[str], line: str) -> bool:
    return line.lstrip().startswith("<") and not current[-1].rstrip().endswith(",")


def _clauses(rel: str, line: int, raw: str, is_row: bool, stack: list[_Section], html_units: list) -> list[Clause]:
    units = html_units[-1] if html_units else next((s.units for s in reversed(stack) if s.units), frozenset())
    section = stack[-1] if stack else None
    heading_eps = tuple(e for s in stack for e in s.endpoints)
    out = []
    pieces = [(0, raw)] if is_row else _split(raw, _SENTENCE_END)
    breaks = [i for i, c in enumerate(raw) if c == "\n"]  # a clause's line: the breaks before it (bisect)
    for offset, sentence in pieces:
        statement_eps, statement_methods = endpoints_in(sentence)
        context = (section.last_endpoints if section and section.last_endpoints else ()) or heading_eps
        for sub_offset, piece in [(0, sentence)] if is_row else _split(sentence, re.compile(r";\s+")):
            if not piece.strip():
                continue
            eps, methods = endpoints_in(piece)
            statuses = tuple(status_mentions(piece))
            at = offset + sub_offset
            out.append(
                Clause(
                    doc=rel,
                    line=line + bisect_left(breaks, at),
                    raw=piece,
                    units=units,
                    endpoints=eps,
                    statement_endpoints=tuple(e for e in statement_eps if e not in eps),
                    context_endpoints=context,
                    methods=methods | statement_methods,
                    statuses=statuses,
                    fields=tuple(identifiers(piece[statuses[0].start :] if statuses else piece)),
                    terms=terms(piece),
                    section=section.title if section else "",
                )
            )
        if statement_eps and section is not None:
            section.last_endpoints = statement_eps
    return out


def _split(text: str, pattern: re.Pattern[str]) -> list[tuple[int, str]]:
    """Pieces of `text` split at `pattern`, each with its offset (pieces are verbatim slices)."""
    pieces, start = [], 0
    for m in pattern.finditer(text):
        pieces.append((start, text[start : m.start()]))
        start = m.end()
    pieces.append((start, text[start:]))
    return [(o, p) for o, p in pieces if p.strip()]
