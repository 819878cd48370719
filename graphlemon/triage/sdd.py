"""The SDD as clauses (for the call-level mechanisms), and path templates.

A clause is a table row, or a sentence of a bullet or paragraph, split again at `;`. Its unit comes from the
innermost heading naming a unit id (or an HTML `<section data-unit-id=...>`). `raw` is a verbatim slice of the
file starting on `line`, so a clause can be cited as evidence as it is.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")
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
class Clause:
    doc: str
    line: int
    raw: str
    units: frozenset[str]
    section: str = ""  # the innermost heading above the clause, as written ("3 Integration")


def sdd_clauses(docs: list[tuple[str, str]], unit_ids: list[str]) -> list[Clause]:
    """All clauses of the SDD documents."""
    return [c for rel, text in docs for c in _parse_doc(rel, text, unit_ids)]


# -- parsing -------------------------------------------------------------------------------


@dataclass
class _Section:
    level: int
    units: frozenset[str]
    title: str = ""


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
                stack.append(_Section(level, _heading_units(heading.group(2), unit_ids), _title(heading.group(2))))
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
    title = stack[-1].title if stack else ""
    out = []
    pieces = [(0, raw)] if is_row else _split(raw, _SENTENCE_END)
    breaks = [i for i, c in enumerate(raw) if c == "\n"]  # a clause's line: the breaks before it (bisect)
    for offset, sentence in pieces:
        for sub_offset, piece in [(0, sentence)] if is_row else _split(sentence, re.compile(r";\s+")):
            if piece.strip():
                out.append(Clause(rel, line + bisect_left(breaks, offset + sub_offset), piece, units, title))
    return out


def _split(text: str, pattern: re.Pattern[str]) -> list[tuple[int, str]]:
    """Pieces of `text` split at `pattern`, each with its offset (pieces are verbatim slices)."""
    pieces, start = [], 0
    for m in pattern.finditer(text):
        pieces.append((start, text[start : m.start()]))
        start = m.end()
    pieces.append((start, text[start:]))
    return [(o, p) for o, p in pieces if p.strip()]
