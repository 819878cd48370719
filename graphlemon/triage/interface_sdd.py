"""The SDD's interface, read with a markdown parser (markdown-it-py): `Operation`s of side "spec".

The document is walked as markdown-it's block tokens, never as lines:
- a heading that names a unit id opens that unit's section (the innermost such heading wins);
- a paragraph or list item is read as inline text: `GET /path` (or a back-quoted `/path`) opens an operation,
  a status code after it (in digits, or in words: "not found") is one of its statuses, `{a, b, c}` lists the response fields of the status before it
  (or of its success status; braces before any status are the request's), "at most N" / "N <things> per <period>" is a limit, answered with the 4xx that
  follows it in the same block;
- a table row is read the same way, one row at a time; a table whose rows name no endpoint and whose first
  column holds identifiers lists the fields of the section's current operation;
- a heading that names an endpoint (`### POST /appointments`) opens it for the blocks under it;
- a bullet list right after text that named a status, each item opening with a code-span identifier, lists
  that answer's fields;
- a fenced code block that parses as JSON or YAML is read as OpenAPI (`paths:`, local `$ref`s followed), or, after
  text that named a status of the current operation, as an example answer of that status (its keys are the
  answer's fields); a quantity with a unit ("up to 5 MB") or a range is neither a call count nor a status.
An operation mentioned again in the same section (the same method and path) gathers the new facts.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

import yaml
from markdown_it import MarkdownIt

from .interface import ANY_STATUS, Limit, Operation, Quote
from .sdd import METHODS
from .sdd_terms import KNOWN_STATUSES, denied, status_mentions

# A lexer for the inline text of one block: each alternative is one token kind.
_NUMBER_WORDS = {
    w: i
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
        "seventeen eighteen nineteen twenty".split()
    )
}
_NUMBER = r"(\d{1,6}|\b(?:" + "|".join(_NUMBER_WORDS) + r"))"
_TOKENS = re.compile(
    r"(?P<endpoint>\b(?:" + "|".join(METHODS) + r")\b[\s`*|]*/[^\s`|,;)*\"']*)"
    r"|`(?P<path>/[^`\s]*)`"
    r"|(?P<fields>\{[^{}\n]*\})"
    r"|(?P<listed>\b(?:containing|contains|carrying|carries|including|includes|(?:with )?(?:the )?(?:fields?|keys?|properties))"
    r"\s*:?\s+`[A-Za-z_]\w*`(?:\s*(?:,\s*(?:and\s+)?|and\s+|&\s*)`[A-Za-z_]\w*`)*"
    r"|\b(?:fields|keys|properties)\s*:?\s+[A-Za-z_]\w*(?:\s*(?:,\s*(?:and\s+)?|and\s+)[A-Za-z_]\w*)+)"
    r"|(?P<limit>(?:\bat most|\bno more than|\bup to|\bmaximum(?: of)?|\bmax\.?|\blimit(?:ed)? (?:of|to)|≤|<=)\s+"
    + _NUMBER.replace("(", "(?P<count>", 1)
    + r"\b|\b"
    + _NUMBER.replace("(", "(?P<per_count>", 1)
    + r"\s+(?!(?:with|and|or|if|when|for|to|on|in|of|is|are|but)\b)[a-z]+\s+(?:per|a|an|each|every)\s+[a-z]+)"
    r"|(?P<status>(?<![\w/.:#-])[1-5]\d\d(?![\w/-]|:\S|\.\d))",
    re.IGNORECASE,
)
# A quantity with a unit ("up to 2 MB", "longer than 80 characters") or a range: its number is no call count and
# no status (the quantities themselves are not compared: only counts of calls are).
# A block that introduces what follows it as the answer, or as the request (document structure, not the case).
_ANSWER_LABEL = re.compile(r"\b(?:response|answer|returns|responds|reply|result|output)\b", re.IGNORECASE)
_REQUEST_LABEL = re.compile(r"\b(?:request|payload|send|sends|sent|submit|input|body to post)\b", re.IGNORECASE)
_UNIT = r"(?:bytes?|[kmg]i?b|b|kilobytes?|megabytes?|gigabytes?|characters?|chars?|letters?|code points?)"
_AT_MOST = r"at most|no more than|not more than|up to|maximum(?: of)?|max\.?|limit(?:ed)? (?:of|to)|≤|<="
_BEYOND = r"more than|over|above|larger than|greater than|longer than|bigger than|exceed(?:s|ing)?|beyond"
_BELOW = r"less than|fewer than|smaller than|shorter than|under|below"
_AT_LEAST = r"at least|minimum(?: of)?|min\.?|≥|>="
_QUANTITY = re.compile(
    rf"(?:\b(?P<rel>{_AT_MOST}|{_BEYOND}|{_BELOW}|{_AT_LEAST})\s+)?(?<![\w.,/-])(?P<n>{_NUMBER}(?:\.\d+)?)"
    rf"(?:\s*(?P<unit>{_UNIT})\b)?"
    r"(?:\s+or\s+(?P<trail>less|fewer|smaller|shorter|more|longer|larger|bigger))?"
    rf"|\bbetween\s+(?P<lo>{_NUMBER})\s*(?:{_UNIT}\s+)?and\s+(?P<hi>{_NUMBER})(?:\s*(?P<unit2>{_UNIT})\b)?",
    re.IGNORECASE,
)
# The info strings of a code block that holds text, not a program or data: a signature may be written there.
_PLAIN = frozenset({"", "text", "txt", "plain", "http"})
_LEADING_FIELD = re.compile(r"^`([A-Za-z_][A-Za-z0-9_]*)`(?:\s|$)")
_IDENT = re.compile(r"^`?([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)`?\??$")  # `reading.humidity`: nested
_FIELD_ITEM = re.compile(r"^\s*\"?([A-Za-z_][A-Za-z0-9_]*)\"?\s*\??\s*(?::.*)?$")


@dataclass
class _Section:
    level: int
    unit: str | None


@cache
def _markdown() -> MarkdownIt:
    return MarkdownIt("commonmark").enable("table")


def markdown_tokens(text: str) -> list[Any]:
    """The block and inline tokens of a markdown text (CommonMark with tables)."""
    return _markdown().parse(text)


def sdd_operations(docs: list[tuple[str, str]], unit_ids: list[str]) -> list[Operation]:
    """Every operation the SDD documents `docs` ((rel, text) pairs) state."""
    out: list[Operation] = []
    for rel, text in docs:
        out.extend(_Reader(rel, unit_ids).read(text))
    return out


def unit_named(heading: str, unit_ids: list[str]) -> str | None:
    """The unit a heading names (the longest id, when one contains another)."""
    named = [u for u in unit_ids if re.search(rf"(?<![\w-]){re.escape(u)}(?![\w-])", heading)]
    return max(named, key=len) if named else None


class _Reader:
    def __init__(self, rel: str, unit_ids: list[str]) -> None:
        self.rel, self.unit_ids = rel, unit_ids
        self.sections: list[_Section] = []
        self.ops: list[Operation] = []
        self.current: Operation | None = None
        self.last_status: int | None = None  # the status the block just read speaks for: its success, else its last
        self.document: Any = None  # the structured code block being read (for `$ref`s)
        self.statement = 0  # which statement of the document is being read
        self.labels_answer = False  # the block just read introduces an answer ("Response:", "returns:")

    @property
    def unit(self) -> str | None:
        return next((s.unit for s in reversed(self.sections) if s.unit), None)

    def read(self, text: str) -> list[Operation]:
        tokens = _markdown().parse(text)
        i = 0
        while i < len(tokens):
            tok = tokens[i]
            self.statement += tok.type in ("heading_open", "table_open", "bullet_list_open", "paragraph_open", "fence")
            if tok.type == "heading_open":
                self._heading(int(tok.tag[1:]), tokens[i + 1].content, (tok.map[0] + 1) if tok.map else 1)
            elif tok.type == "table_open":
                end = next(j for j in range(i, len(tokens)) if tokens[j].type == "table_close")
                self._table(tokens[i:end])
                i = end
            elif tok.type == "bullet_list_open" and self._field_list(tokens, i):
                i = next(
                    j
                    for j in range(i, len(tokens))
                    if tokens[j].type == "bullet_list_close" and tokens[j].level == tok.level
                )
            elif tok.type == "inline" and tok.map and tokens[i - 1].type in ("paragraph_open",):
                self._block(tok.content, tok.map[0] + 1)
            elif tok.type in ("fence", "code_block") and tok.map:
                self._code(tok.content, tok.map[0] + (2 if tok.type == "fence" else 1), tok.info)
            i += 1
        return self.ops

    def _heading(self, level: int, text: str, line: int) -> None:
        while self.sections and self.sections[-1].level >= level:
            self.sections.pop()
        self.sections.append(_Section(level, unit_named(text, self.unit_ids)))
        self.current, self.last_status = None, None
        self._block(text, line)  # a heading that names an endpoint opens it for the blocks below

    # -- inline text ----------------------------------------------------------------------------------------

    def _block(self, text: str, first_line: int) -> None:
        """One paragraph, list item or table row: its tokens in order of appearance."""
        last_status: int | None = None
        self.last_status = None  # only the block right before a list or a code block speaks for it
        self.labels_answer = bool(_ANSWER_LABEL.search(text)) and not _REQUEST_LABEL.search(text)
        pending: list[tuple[int, str, Quote]] = []  # limits waiting for their status
        breaks = [i for i, c in enumerate(text) if c == "\n"]  # a fact's line: the breaks before it (bisect)
        for start, kind, value in _events(text):
            at = Quote(self.rel, first_line + bisect_left(breaks, start))
            if kind in ("endpoint", "path"):
                self.current = self._operation(value, at)
                last_status = self.last_status = None
            elif kind == "status" and self.current is not None:
                last_status = int(value)
                if self.last_status is None or not 200 <= self.last_status < 300:
                    self.last_status = last_status  # a success the block names speaks for what follows it
                self.current.add_status(last_status, at)
                if 400 <= last_status < 500:
                    for count, written, where in pending:
                        self.current.limits.append(Limit(count, last_status, where, statement=text, written=written))
                    pending = []
            elif kind == "listed" and self.current is not None and 200 <= (last_status or self._success()) < 300:
                self.current.add_fields(last_status or self._success(), _listed(value), at, self.statement)
            elif kind == "fields" and self.current is not None and (last_status or self._success()):
                names = _field_names(value)  # braces before any status are the request's, not an answer's
                if names:
                    self.current.add_fields(last_status or self._success(), names, at, self.statement)
            elif kind == "limit" and self.current is not None:
                number, written = value
                pending.append((int(number) if number.isdigit() else _NUMBER_WORDS[number.lower()], written, at))
        for count, written, where in pending:
            if self.current is not None:
                self.current.limits.append(Limit(count, None, where, statement=text, written=written))

    def _field_list(self, tokens: list[Any], start: int) -> bool:
        """A bullet list right after text that named a status, each item opening with a code-span identifier
        (an item like "`tracking_no` — the carrier's number"), lists that answer's fields. Whether it was read so."""
        if self.current is None or not self.last_status:
            return False
        level = tokens[start].level
        items = []
        for tok in tokens[start + 1 :]:
            if tok.type == "bullet_list_close" and tok.level == level:
                break
            if tok.type == "inline" and tok.level == level + 3 and tok.map:  # an item's own paragraph
                m = _LEADING_FIELD.match(tok.content)
                if m is None:
                    return False
                items.append((m.group(1), Quote(self.rel, tok.map[0] + 1)))
        for name, at in items:
            self.current.add_fields(self.last_status, [name], at, self.statement)
        return bool(items)

    def _operation(self, mention: str, at: Quote) -> Operation:
        parts = mention.replace("`", " ").replace("*", " ").replace("|", " ").split()
        method = parts[0].upper() if parts[0].upper() in METHODS else None
        path = parts[-1].rstrip(".:")
        for op in self.ops:
            if (
                op.unit == self.unit
                and op.method == method
                and op.template == Operation("spec", None, None, None, path, at).template
            ):
                return op
        op = Operation("spec", self.unit, self.unit, method, path, at)
        self.ops.append(op)
        return op

    def _success(self) -> int:
        assert self.current is not None
        return min((s for s in self.current.statuses if 200 <= s < 300), default=ANY_STATUS)

    # -- tables ---------------------------------------------------------------------------------------------

    def _table(self, tokens: list[Any]) -> None:
        rows = list(_rows(tokens))
        body = [(line, cells) for line, cells, head in rows if not head]
        if body and not any(_TOKENS.search(" ".join(c)) and _names_endpoint(" ".join(c)) for _, c in body):
            names = [(_IDENT.match(cells[0].strip()), line) for line, cells in body if cells]
            if self.current is not None and names and all(n for n, _ in names):
                status = self._success()
                for n, line in names:
                    self.current.add_fields(status, [n.group(1)], Quote(self.rel, line), self.statement)
                return
        for line, cells, head in rows:
            if not head:
                self._block(" | ".join(cells), line)

    # -- code blocks ----------------------------------------------------------------------------------------

    def _code(self, text: str, first_line: int, language: str = "") -> None:
        doc = self.document = structured(text)
        lines = text.split("\n")
        if not isinstance(doc, dict | list) and language.strip().lower() in _PLAIN and _names_route(text):
            self._block(text, first_line)  # a signature set off as a code block: `GET /p  ->  200 {a, b}`
            return
        if isinstance(doc, dict) and isinstance(doc.get("paths"), dict):
            for path, item in doc["paths"].items():
                if not isinstance(item, dict):
                    continue
                for method, spec in item.items():
                    if str(method).upper() in METHODS and isinstance(spec, dict):
                        self._openapi(str(path), str(method).upper(), spec, lines, first_line)
            return
        status = self.last_status or (self._success() if self.labels_answer else None)
        if self.current is None or not status or not isinstance(doc, dict) or not doc:
            return
        # after text that named a status (or labelled what follows the answer, "Response:", for the endpoint's
        # success): an example of its answer, whose keys are the answer's fields
        names = [str(k) for k in doc]
        for name in names:
            at = Quote(self.rel, first_line + _line_of(lines, name, 0))
            self.current.add_fields(status, [name], at, self.statement)

    def _openapi(self, path: str, method: str, spec: dict, lines: list[str], first_line: int) -> None:
        start = _line_of(lines, path, 0)
        op = self._operation(f"{method} {path}", Quote(self.rel, first_line + start))
        for code, response in (spec.get("responses") or {}).items():
            if not str(code).isdigit():
                continue
            at = _line_of(lines, str(code), start)
            op.add_status(int(code), Quote(self.rel, first_line + at))
            for name in _response_fields(response, self.document):
                op.add_fields(
                    int(code), [name], Quote(self.rel, first_line + _line_of(lines, name, at)), self.statement
                )


def _events(text: str) -> list[tuple[int, str, Any]]:
    """(offset, kind, value) of the block's tokens; statuses also when written in words ("not found")."""
    out = []
    for m in _TOKENS.finditer(text):
        kind = m.lastgroup or ""
        if kind == "limit":
            out.append(
                (m.start(), kind, (m.group("count") or m.group("per_count"), m.group(0)))
            )  # the two spellings' numbers
        elif kind == "fields":
            outer = _outer_braces(text, m.start())
            if outer is None:
                out.append((m.start(), kind, m.group(kind)))
            elif not any(e[0] == outer[0] for e in out):  # a nested object is a field's value, not the answer
                out.append((outer[0], kind, outer[1]))
        elif kind != "status" or int(m.group(0)) in KNOWN_STATUSES and not denied(text, m.start(), m.end()):
            out.append((m.start(), kind, m.group(kind)))
    quantities = [(m.start(), m.end(), m) for m in _QUANTITY.finditer(text) if _is_quantity(m)]
    starts = [a for a, _b, _m in quantities]  # in order and apart (finditer): the one before an offset may hold it

    def in_quantity(offset: int) -> bool:
        i = bisect_right(starts, offset) - 1
        return i >= 0 and offset < quantities[i][1]

    out = [e for e in out if not (e[1] in ("limit", "status") and in_quantity(e[0]))]
    out += [(a, "quantity", m) for a, _b, m in quantities]  # type: ignore[misc]
    numeric = {int(v) for _s, k, v in out if k == "status"}
    out += [(s.start, "status", str(s.code)) for s in status_mentions(text)
            if s.prose and s.code not in numeric and not denied(text, s.start, s.start)]  # fmt: skip
    return sorted(out, key=lambda e: e[0])


def _outer_braces(text: str, start: int) -> tuple[int, str] | None:
    """The outermost `{...}` around offset `start` on its line, its nested values emptied
    (`{bib, splits: [{km, t}]}` → `{bib, splits: []}`); None when `start` is not nested."""
    line_start = text.rfind("\n", 0, start) + 1
    depth, opened = 0, None
    for i in range(line_start, start):
        if text[i] in "{[":
            opened = i if depth == 0 and text[i] == "{" else opened
            depth += 1
        elif text[i] in "}]":
            depth = max(0, depth - 1)
            opened = None if depth == 0 else opened
    if opened is None:
        return None
    kept, depth = [], 0
    for ch in text[opened:]:
        if ch == "\n":
            return None
        if ch in "{[":
            depth += 1
        if depth <= 1 or (depth == 2 and ch in "{[]}"):
            kept.append(ch)
        if ch in "}]":
            depth -= 1
        if depth == 0:
            return opened, "".join(kept)
    return None


def _listed(phrase: str) -> list[str]:
    """The field names of a listing phrase: its code spans, else the words after "fields" / "keys" / "properties"."""
    spans = re.findall(r"`([A-Za-z_]\w*)`", phrase)
    if spans:
        return spans
    rest = re.split(r"\b(?:fields|keys|properties)\b\s*:?", phrase, maxsplit=1, flags=re.IGNORECASE)[-1]
    return [w for w in re.findall(r"[A-Za-z_]\w*", rest) if w.lower() != "and"]


def _is_quantity(m: re.Match[str]) -> bool:
    """A number with a unit, a range, or a bare number bounded by words other than "at most" (which, bare, counts
    calls: the `limit` token) that is not a status ("over 100" is a quantity, "answers 404" is not)."""
    if m.group("lo") is not None or m.group("unit"):
        return True
    rel, number = (m.group("rel") or "").lower(), m.group("n")
    if not rel or re.fullmatch(_AT_MOST, rel):
        return False
    return not number[0].isdigit() or float(number) not in KNOWN_STATUSES


def _rows(tokens: list[Any]) -> Iterator[tuple[int, list[str], bool]]:
    """(1-based line, cell texts, is a header row) for each row of a table's tokens."""
    head, line, cells = False, 0, []
    for tok in tokens:
        if tok.type == "thead_open":
            head = True
        elif tok.type == "tbody_open":
            head = False
        elif tok.type == "tr_open":
            line, cells = (tok.map[0] + 1 if tok.map else 0), []
        elif tok.type == "inline":
            cells.append(tok.content)
        elif tok.type == "tr_close":
            yield line, cells, head


def _names_route(text: str) -> bool:
    """The text names a method and a path (`GET /crossings/{route}`), not only a path."""
    return any(m.lastgroup == "endpoint" for m in _TOKENS.finditer(text))


def _names_endpoint(text: str) -> bool:
    return any(m.lastgroup in ("endpoint", "path") for m in _TOKENS.finditer(text))


def _field_names(group: str) -> list[str]:
    items = [x for x in group.strip("{}").split(",") if x.strip() and x.strip() not in ("...", "…")]
    names = [_FIELD_ITEM.match(x) for x in items]
    return [n.group(1) for n in names if n] if names and all(names) else []


def structured(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return None


def _response_fields(response: Any, document: Any) -> list[str]:
    """Field names of an OpenAPI / contract-style response: schema properties (through a `$ref` into the same
    document), an example, or a `body` object."""
    if not isinstance(response, dict):
        return []
    for schema in _schemas(response):
        schema = _resolve(schema, document)
        props = schema.get("properties")
        if isinstance(props, dict):
            return [str(k) for k in props]
    for key in ("example", "body"):
        if isinstance(response.get(key), dict):
            return [str(k) for k in response[key]]
    return []


def _resolve(schema: dict, document: Any, depth: int = 0) -> dict:
    """Follow a local JSON pointer (`{"$ref": "#/components/schemas/Address"}`), at most a few hops."""
    ref = schema.get("$ref")
    if not isinstance(ref, str) or not ref.startswith("#/") or depth > 8:
        return schema
    node: Any = document
    for part in ref[2:].split("/"):
        node = node.get(part.replace("~1", "/").replace("~0", "~")) if isinstance(node, dict) else None
    return _resolve(node, document, depth + 1) if isinstance(node, dict) else schema


def _schemas(response: dict) -> Iterator[dict]:
    if isinstance(response.get("schema"), dict):
        yield response["schema"]
    for media in (response.get("content") or {}).values() if isinstance(response.get("content"), dict) else []:
        if isinstance(media, dict) and isinstance(media.get("schema"), dict):
            yield media["schema"]


def _line_of(lines: list[str], needle: str, start: int) -> int:
    """0-based index of the first line at or after `start` that contains `needle` as a key or value."""
    for i in range(start, len(lines)):
        if needle in lines[i]:
            return i
    return start
