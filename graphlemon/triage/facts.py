"""Declared facts of an interface, read from every side that states them: subject → declared value.

A fact is what one side says about one subject of the interface — an answer's or a message's field, a protobuf
field, an object key layout — with the line it was read from. Sides:

- the SDD (markdown, read with the parser `interface_sdd.py` uses): a table row whose first cell names the subject
  (the rest of the row declares it); a clause (a paragraph or list item, split at `;` and at sentence ends) whose
  first code span is the subject (the clause up to the next subject's code span declares it; an example after
  "e.g." declares nothing); a fenced ```` ```proto ```` block (`int32 battery_pct = 4;`: a type and a field
  number); a fenced block that parses as JSON / YAML (an OpenAPI or JSON Schema property: `type`, `enum`,
  `minimum` / `maximum`, `format`); and any text of a block that writes a key template with placeholders
  (`exports/{yyyy}/{mm}/{dd}/{tenant}.csv.gz`);
- a unit's contract.json, read as JSON whatever its shape: a string under a key is that key's declaration
  (`"amount_minor": "integer (cents)"`), a list of strings under a key is an enumeration; free text (a
  description, a signature) declares field numbers (`rssi_dbm=4 (sint32)`) and key templates.

A declaration is normalized into `Declared` aspects: the JSON type (integer refines number), the unit of its
dimension (time, size, money's minor or major unit, a ratio as percent or fraction, temperature, length, angle),
a date pattern, an enumeration (its values with their case), a numeric range (`0..100`), a field number, a
template (its literal segments and placeholders). Two declarations contradict when an aspect both state differs;
an aspect only one side states refines the other (`"number"` vs `"number (0..1)"`), never a contradiction.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .interface import Quote
from .interface_sdd import markdown_tokens, structured
from .measures import measure_of
from .nullability import tokens

MAX_TEXT = 200_000
_MAX_DEPTH = 12

_TYPES = {
    **dict.fromkeys(
        "int integer int32 int64 sint32 sint64 uint32 uint64 long short fixed32 fixed64".split(), "integer"
    ),
    **dict.fromkeys(("number", "float", "double", "decimal", "numeric", "real", "f32", "f64"), "number"),
    **dict.fromkeys(("string", "str", "text", "varchar"), "string"),
    **dict.fromkeys(("bool", "boolean"), "boolean"),
}
_NON_VALUES = frozenset({*_TYPES, "null", "none", "nil", "optional", "nullable", "true", "false"})
# A unit of a dimension other than time and size (those and date patterns are `measures.measure_of`'s).
_UNITS: dict[str, tuple[str, str]] = {
    **dict.fromkeys(("cent", "cents", "pence", "penny", "minor"), ("money", "minor unit")),
    **dict.fromkeys(("euro", "euros", "dollar", "dollars", "pound", "pounds", "major"), ("money", "major unit")),
    **dict.fromkeys(("percent", "percentage", "%"), ("ratio", "percent")),
    **dict.fromkeys(("fraction",), ("ratio", "fraction")),
    **dict.fromkeys(("celsius", "°c"), ("temperature", "celsius")),
    **dict.fromkeys(("fahrenheit", "°f"), ("temperature", "fahrenheit")),
    **dict.fromkeys(("kelvin",), ("temperature", "kelvin")),
    **dict.fromkeys(("mm", "millimetres", "millimeters"), ("length", "millimetres")),
    **dict.fromkeys(("cm", "centimetres", "centimeters"), ("length", "centimetres")),
    **dict.fromkeys(("metres", "meters"), ("length", "metres")),
    **dict.fromkeys(("km", "kilometres", "kilometers"), ("length", "kilometres")),
    **dict.fromkeys(("degrees", "deg"), ("angle", "degrees")),
    **dict.fromkeys(("radians", "rad"), ("angle", "radians")),
}
_META_KEYS = frozenset({"description", "signature", "summary", "notes", "note", "title", "example", "examples"})
_SKIP_KEYS = frozenset({"unit_id", "method", "path", "name", "framework", "url", "ref", "$ref"})
_EXAMPLE = re.compile(r"\b(?:e\.g\.|eg\.|for example|for instance|such as)", re.IGNORECASE)
_RANGE = re.compile(r"(-?\d+(?:\.\d+)?)\s*(?:\.\.|…|–)\s*(-?\d+(?:\.\d+)?)")
_TEMPLATE = re.compile(r"[\w.:/-]*\{[\w-]+\}[\w.{}/-]*")
_HEADER = re.compile(r"(?<![\w,.])[A-Za-z_]\w*(?:,[A-Za-z_]\w*){2,}(?![\w,])")
_FILLER = frozenset({"is", "a", "an", "(", ")", ":", ",", "—", "–", "-", "|"})
_LAYOUT_BLOCKS = ("", "text", "txt", "csv", "tsv", "xml", "http")  # a program's code block never declares one
_PROTO_FIELD = re.compile(r"^\s*(?:repeated\s+|optional\s+)?([\w.]+)\s+(\w+)\s*=\s*(\d+)\s*[;\[]", re.MULTILINE)
_TAGGED = re.compile(r"(\w+)\s*=\s*(\d+)\b(?:\s*\((\w+)\))?")


@dataclass(frozen=True)
class Declared:
    """What one statement declares about a subject, normalized: each aspect None when the statement is silent."""

    type: str | None = None  # integer | number | string | boolean
    unit: tuple[str, str] | None = None  # (dimension, unit)
    enum: tuple[str, ...] | None = None  # the values as written, with their case
    range: tuple[float, float] | None = None
    tag: int | None = None  # a field number (protobuf, Thrift)
    template: tuple[str, ...] | None = None  # literal segments and `{}` placeholders of a key template
    sequence: tuple[str, ...] | None = None  # the order of a positional layout's columns (a CSV header)
    version: str | None = None  # the version segment of a versioned name (`urn:parcel:tracking:v2`)

    def empty(self) -> bool:
        aspects = (self.type, self.unit, self.enum, self.range, self.tag, self.template, self.sequence, self.version)
        return all(v is None for v in aspects)

    def contradicts(self, other: Declared) -> str | None:
        """The aspect on which the two statements contradict each other (neither refines the other), else None."""
        if self.type and other.type and self.type != other.type and {self.type, other.type} != {"integer", "number"}:
            return "type"
        if self.unit and other.unit and self.unit[0] == other.unit[0] and self.unit != other.unit:
            return "unit"
        if self.enum and other.enum and _enums_contradict(self.enum, other.enum):
            return "enum"
        if self.range and other.range and self.range != other.range:
            return "range"
        if self.tag is not None and other.tag is not None and self.tag != other.tag:
            return "tag"
        if self.template and other.template and not _prefix(self.template, other.template):
            return "template"
        if self.sequence and other.sequence and self.sequence != other.sequence:
            return "sequence"
        if self.version and other.version and self.version != other.version:
            return "version"
        return None

    def fits(self, value: Any) -> bool | None:
        """Whether a traced value is what this declaration allows (None: nothing here to check it by)."""
        checks: list[bool] = []
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if self.type == "integer":
            checks.append(number and float(value).is_integer())
        elif self.type == "number":
            checks.append(number)
        elif self.type == "string":
            checks.append(isinstance(value, str))
        elif self.type == "boolean":
            checks.append(isinstance(value, bool))
        if self.enum and isinstance(value, str):
            checks.append(value in self.enum)
        if self.range and number:
            checks.append(self.range[0] <= value <= self.range[1])
        return all(checks) if checks else None

    def says(self) -> str:
        parts = [
            self.type or "",
            f"in {self.unit[1]}" if self.unit else "",
            f"one of {'|'.join(self.enum)}" if self.enum else "",
            f"within {_num(self.range[0])}..{_num(self.range[1])}" if self.range else "",
            f"field number {self.tag}" if self.tag is not None else "",
            f"laid out as {''.join(self.template)}" if self.template else "",
            f"in the order {','.join(self.sequence)}" if self.sequence else "",
            f"version {self.version}" if self.version else "",
        ]
        return " ".join(p for p in parts if p)


@dataclass(frozen=True)
class Fact:
    subject: str  # a field's name, `key <first segment>` for a key template, `columns <names>` for a header
    declared: Declared
    at: Quote
    text: str = field(default="", compare=False)  # the declaration as written


def declared(text: str, *, prose: bool = False) -> Declared:
    """The aspects a free-text declaration states (`"decimal (euros)"`, `"ENABLED|DISABLED"`, `"number, 0..1"`).
    In `prose` (an SDD's sentence or table row) a type is only the declaration's first word: "the carrier's
    tracking number" names no type, "(number): how far it has run" does."""
    if len(text) > MAX_TEXT:
        return Declared()
    text = _EXAMPLE.split(text)[0]
    words = _unquantified([w for w in tokens(text) if w.strip()])
    lower = [w.lower() for w in words]
    leading = [w for w in lower if w not in _FILLER][:1] if prose else lower
    types = {_TYPES[w] for w in leading if w in _TYPES}
    units = {_UNITS[w] for w in lower if w in _UNITS}
    measured = measure_of(text)
    if measured is not None and measured[0] != "date":
        measured = measure_of(" ".join(words))
    if measured is not None:
        units.add(measured)
    if any(u[0] == "temperature" for u in units):  # "degrees Celsius" is a temperature, not an angle
        units.discard(("angle", "degrees"))
    by_dimension: dict[str, set[tuple[str, str]]] = {}
    for u in units:
        by_dimension.setdefault(u[0], set()).add(u)
    unit = (
        next((next(iter(us)) for us in by_dimension.values() if len(us) == 1), None) if len(by_dimension) == 1 else None
    )
    ranges = {(float(a), float(b)) for a, b in _RANGE.findall(text)}
    enum = _enum(text)
    if enum is not None:  # the values are names, not a type, unit or range
        return Declared(enum=enum)
    return Declared(
        type=types.pop() if len(types) == 1 else None,
        unit=unit,
        range=ranges.pop() if len(ranges) == 1 else None,
    )


def _unquantified(words: list[str]) -> list[str]:
    """The words less each unit that follows a number: "5 cm deep", "3600 seconds" state a quantity, not the
    unit of the field (a range's unit, "0..100 percent", stays)."""
    out: list[str] = []
    for n, w in enumerate(words):
        quantity = n and _is_number(words[n - 1]) and not (n > 1 and words[n - 2] == ".")
        if not (quantity and (w.lower() in _UNITS or measure_of(w) is not None)):
            out.append(w)
    return out


def _is_number(word: str) -> bool:
    return word.replace(".", "", 1).isdigit()


def _enum(text: str) -> tuple[str, ...] | None:
    """An enumeration written `A|B|C` (at least two values, none a type word or null)."""
    stripped = text.strip()
    if "|" not in stripped or any(c.isspace() for c in stripped.replace(" | ", "|")):
        return None
    values = tuple(v.strip().strip("'\"") for v in stripped.split("|"))
    if len(values) < 2 or any(not v or v.lower() in _NON_VALUES or not _name_like(v) for v in values):
        return None
    return values


def _value_like(text: str) -> bool:
    return all(c.isalnum() or c in "_-." for c in text)


def _enums_contradict(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """Two enumerations contradict when neither's values are among the other's (exactly, with their case)."""
    sa, sb = set(a), set(b)
    return not (sa <= sb or sb <= sa)


def template_of(text: str) -> tuple[str, ...] | None:
    """A key template's segments: literal runs and `{}` for each placeholder (`{yyyy-mm-dd}` is one placeholder
    per date part, so `{yyyy}-{mm}-{dd}` reads the same). A scheme and bucket (`s3://bucket/`) are dropped."""
    if "{" not in text or "/" not in text or text.startswith("/"):
        return None
    if "://" in text:
        rest = text.split("://", 1)[1]
        text = rest.split("/", 1)[1] if "/" in rest else ""
    out: list[str] = []
    literal = ""
    i = 0
    while i < len(text):
        if text[i] == "{" and "}" in text[i:]:
            end = text.index("}", i)
            if literal:
                out.append(literal)
                literal = ""
            parts = [p for p in re.split(r"[-_]", text[i + 1 : end]) if p] or ["x"]
            for n, part in enumerate(parts):
                if n:
                    out.append("-")
                out.append("{" + ("date:" + part[0].lower() if set(part.lower()) <= set("ymd") else "") + "}")
            i = end + 1
            continue
        literal += text[i]
        i += 1
    if literal:
        out.append(literal)
    return tuple(out) if any(s.startswith("{") for s in out) else None


def template_subject(template: tuple[str, ...]) -> str:
    first = template[0] if template and not template[0].startswith("{") else ""
    return "key " + (first.split("/")[0] or "{}") + "/"


def _prefix(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """One template is the other or lists a prefix of it (a reader listing `exports/{yyyy}/` of the writer's keys)."""
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    return "".join(long).startswith("".join(short))


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


# -- the SDD --------------------------------------------------------------------------------------------------------


def sdd_facts(rel: str, text: str, subjects: set[str]) -> list[Fact]:
    """The facts an SDD document states about `subjects` (the names the units' contracts declare), and every key
    template it writes."""
    if len(text) > MAX_TEXT:
        return []
    out: list[Fact] = []
    row: list[Any] | None = None
    row_line = 0
    for tok in markdown_tokens(text):
        line = tok.map[0] + 1 if tok.map else 1
        if tok.type == "tr_open":
            row, row_line = [], line
        elif tok.type == "tr_close" and row is not None:
            out += _row_fact(rel, row, row_line, subjects)
            row = None
        elif tok.type == "inline" and row is not None:
            row.append(tok)
        elif tok.type == "inline":
            out += _clause_facts(rel, tok, line, subjects)
            out += _templates(rel, tok.content, line)
        elif tok.type in ("fence", "code_block"):
            out += _code_facts(rel, tok, line + (1 if tok.type == "fence" else 0), subjects)
    return out


def _row_fact(rel: str, row: list[Any], line: int, subjects: set[str]) -> list[Fact]:
    if len(row) < 2:
        return []
    name = row[0].content.strip().strip("`").strip()
    if name not in subjects:
        return []
    children = [c for cell in row[1:] for c in [_Text(" "), *(cell.children or [])]]
    value = _inline_declared(children)
    text = " | ".join(c.content for c in row[1:])
    return [] if value.empty() else [Fact(name, value, Quote(rel, line), text)]


def _clause_facts(rel: str, tok: Any, line: int, subjects: set[str]) -> list[Fact]:
    """A clause whose first code span is a subject declares it: the words and code spans up to the next subject's
    code span."""
    out: list[Fact] = []
    for clause, at in _clauses(tok.children or [], line):
        spans = [i for i, c in enumerate(clause) if c.type == "code_inline"]
        if not spans or clause[spans[0]].content.strip() not in subjects:
            continue
        name = clause[spans[0]].content.strip()
        body: list[Any] = []
        for c in clause[spans[0] + 1 :]:
            if c.type == "code_inline" and c.content.strip() in subjects:
                break
            body.append(c)
        value = _inline_declared(body)
        if not value.empty():
            out.append(Fact(name, value, Quote(rel, at), tok.content.splitlines()[at - line] if tok.content else ""))
    return out


def _inline_declared(children: list[Any]) -> Declared:
    """A declaration written in markdown: its words, and its code spans (two or more names in code are an
    enumeration); nothing after "e.g." counts."""
    kept: list[Any] = []
    for c in children:
        if c.type == "text" and _EXAMPLE.search(c.content):
            kept.append(_Text(_EXAMPLE.split(c.content)[0]))
            break
        kept.append(c)
    spans = [c.content.strip() for c in kept if c.type == "code_inline"]
    listed = tuple(v for v in spans if _name_like(v) and v.lower() not in _NON_VALUES)
    words = (
        " ".join(c.content for c in kept if c.type == "text") + " " + " ".join(v for v in spans if not _name_like(v))
    )
    value = declared(words, prose=True)
    return Declared(value.type, value.unit, listed, value.range) if len(listed) >= 2 else value


def _name_like(text: str) -> bool:
    return _value_like(text) and any(c.isalpha() for c in text)


def _clauses(children: list[Any], line: int) -> Iterator[tuple[list[Any], int]]:
    """An inline's children split at `;` and sentence ends (in plain text), each with its line."""
    current: list[Any] = []
    start = at = line
    for c in children:
        if c.type in ("softbreak", "hardbreak"):
            at += 1
            continue
        if c.type != "text":
            current.append(c)
            continue
        pieces = re.split(r";|(?<=[a-z0-9)])\.\s|\.$", c.content)
        for n, piece in enumerate(pieces):
            if n:
                yield current, start
                current, start = [], at
            if piece.strip():
                current.append(_Text(piece))
    if current:
        yield current, start


@dataclass(frozen=True)
class _Text:
    content: str
    type: str = "text"


def _templates(rel: str, text: str, line: int) -> list[Fact]:
    return [Fact(*found, Quote(rel, line + n)) for n, row in enumerate(text.splitlines()) for found in layouts(row)]


def layouts(text: str) -> list[tuple[str, Declared]]:
    """(subject, declaration) of each layout a text writes: a key template (`exports/{yyyy}/{tenant}.csv`, its
    subject the first segment) and a column header (`sku,qty,warehouse`: three or more names joined by commas, its
    subject the set of names, so two headers of the same columns compare by their order), and a versioned name
    (`urn:parcel:tracking:v2`, `application/vnd.acme.order.v1+json`: its subject the name less its version)."""
    out: list[tuple[str, Declared]] = []
    for written in _TEMPLATE.findall(text):
        template = template_of(written)
        if template is not None:
            out.append((template_subject(template), Declared(template=template)))
    for written in _HEADER.findall(text):
        names = tuple(written.split(","))
        if len(set(names)) == len(names) and all(any(c.isalpha() for c in n) for n in names):
            out.append(("columns " + ",".join(sorted(names)), Declared(sequence=names)))
    for word in text.split():
        found = versioned(word.strip("`*_'\"<>()[]{},;"))
        if found is not None:
            out.append((f"name {found[0]}", Declared(version=found[1])))
    return out


def versioned(name: str) -> tuple[str, str] | None:
    """(the name with its version as `v*`, the version) of a name with exactly one version segment among two or
    more named ones (`urn:parcel:tracking:v2`); an HTTP path is an endpoint, not a name."""
    if name.startswith("/") or "{" in name:
        return None
    parts = re.split(r"([:/.+])", name)
    at = [i for i, p in enumerate(parts) if re.fullmatch(r"v\d+", p)]
    named = [p for p in parts if any(c.isalpha() for c in p) and not re.fullmatch(r"v\d+", p)]
    if len(at) != 1 or len(named) < 2:
        return None
    return "".join("v*" if i == at[0] else p for i, p in enumerate(parts)), parts[at[0]]


def _code_facts(rel: str, tok: Any, first: int, subjects: set[str]) -> list[Fact]:
    info = (tok.info or "").strip().lower() if tok.type == "fence" else ""
    if info in ("proto", "protobuf", "proto3"):
        return list(_proto_facts(rel, tok.content, first, subjects))
    parsed = structured(tok.content) if info in ("", "json", "yaml", "yml", "jsonc") else None
    if isinstance(parsed, dict | list):
        return list(_schema_facts(rel, tok.content, first, parsed, subjects))
    return _templates(rel, tok.content, first) if info in _LAYOUT_BLOCKS else []


def _proto_facts(rel: str, code: str, first: int, subjects: set[str]) -> Iterator[Fact]:
    for m in _PROTO_FIELD.finditer(code):
        kind, name, number = m.groups()
        if name in subjects:
            value = Declared(type=_TYPES.get(kind.lower()), tag=int(number))
            yield Fact(name, value, Quote(rel, first + code.count("\n", 0, m.start(2))), m.group(0).strip())


def _schema_facts(rel: str, code: str, first: int, doc: Any, subjects: set[str], depth: int = 0) -> Iterator[Fact]:
    """JSON Schema / OpenAPI properties: a subject whose value is an object with `type`, `enum`, `minimum` /
    `maximum` or `format`."""
    if depth > _MAX_DEPTH:
        return
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for key, value in items:
        if isinstance(key, str) and key in subjects and isinstance(value, dict):
            found = schema_declared(value)
            if not found.empty():
                yield Fact(key, found, Quote(rel, first + _line_of(code, key)), json.dumps(value)[:200])
        if isinstance(value, dict | list):
            yield from _schema_facts(rel, code, first, value, subjects, depth + 1)


def schema_declared(schema: dict) -> Declared:
    """A JSON Schema property as a declaration (its description's words too)."""
    text = " ".join(str(schema.get(k, "")) for k in ("type", "format", "description"))
    found = declared(text)
    enum = schema.get("enum")
    values = tuple(str(v) for v in enum if v is not None) if isinstance(enum, list) else None
    low, high = schema.get("minimum"), schema.get("maximum")
    bounds = (float(low), float(high)) if isinstance(low, int | float) and isinstance(high, int | float) else None
    return Declared(
        found.type, found.unit, values if values and len(values) >= 2 else found.enum, bounds or found.range
    )


def _line_of(code: str, key: str) -> int:
    quoted = json.dumps(key)
    lines = code.splitlines()
    return next((n for n, x in enumerate(lines) if quoted in x or x.strip().startswith(key + ":")), 0)


# -- a contract.json ------------------------------------------------------------------------------------------------


def contract_facts(rel: str, text: str) -> list[Fact]:
    """Every fact a contract.json states, whatever its shape (unparseable: none)."""
    if len(text) > MAX_TEXT:
        return []
    try:
        doc = json.loads(text)
    except ValueError:
        return []
    lines = text.splitlines()
    out: list[Fact] = []
    for key, value in walk(doc):
        if key in _META_KEYS and isinstance(value, str):
            out += _free_text_facts(rel, lines, value)
        elif isinstance(value, str) and key not in _SKIP_KEYS and not key.isdigit():
            found = declared(value)
            laid_out = layouts(value)
            if laid_out:
                out += [Fact(subject, d, _at(rel, lines, value), value) for subject, d in laid_out]
            elif not found.empty():
                out.append(Fact(key, found, _at(rel, lines, json.dumps(key) + ":"), value))
        elif isinstance(value, list) and value and all(isinstance(v, str) for v in value) and key not in _SKIP_KEYS:
            listed = tuple(v for v in value if _name_like(v))
            if len(listed) == len(value) >= 2:
                out.append(Fact(key, Declared(enum=listed), _at(rel, lines, json.dumps(key) + ":"), "|".join(value)))
    return out


def walk(doc: Any, depth: int = 0) -> Iterator[tuple[str, Any]]:
    if depth > _MAX_DEPTH:
        return
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for key, value in items:
        if isinstance(key, str):
            yield key, value
        if isinstance(value, dict) or (isinstance(value, list) and not all(isinstance(v, str) for v in value)):
            yield from walk(value, depth + 1)


def _free_text_facts(rel: str, lines: list[str], text: str) -> list[Fact]:
    """Field numbers (`rssi_dbm=4 (sint32)`) and key templates a description or signature writes."""
    at = _at(rel, lines, json.dumps(text)[1:40])
    out = [
        Fact(name, Declared(type=_TYPES.get(kind.lower()) if kind else None, tag=int(number)), at, f"{name}={number}")
        for name, number, kind in _TAGGED.findall(text)
        if not name.isdigit()
    ]
    return out + [Fact(subject, d, at, text) for subject, d in layouts(text)]


def _at(rel: str, lines: list[str], needle: str) -> Quote:
    return Quote(rel, next((n for n, x in enumerate(lines, 1) if needle in x), 1))


__all__ = [
    "Declared",
    "Fact",
    "contract_facts",
    "declared",
    "layouts",
    "schema_declared",
    "sdd_facts",
    "template_of",
    "versioned",
    "walk",
]
