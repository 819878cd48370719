"""Whether an answer's field may be null, compared by structure: the SDD vs the provider's contract vs the consumer's.

Each side's stance on a field is read with a parser, never from the words around it:

- the SDD: a GraphQL schema in a fenced ```graphql block, read by a small tokenizer (`field: Type!` is non-null,
  `field: Type` nullable, as GraphQL defines), and markdown paragraphs where the field's code span and a `null`
  code span share a line ("`next_cursor` is `null` on the last page": the field is null there);
- a contract.json: the field's type descriptor, tokenized: `null`, `nullable`, `optional` or a `?` make it
  nullable; a type followed by `!`, or an empty literal (`""`, `[]`) named as its stand-in, make it non-null.

A field the SDD gives a stance on, whose provider's contract states the other and whose traced answer did what that
contract says (null where the SDD says never, a value where the SDD says null), is the provider's
`nullable_differs` (confirmed when the consumer's contract agrees with the SDD); a consumer's contract that departs
from the SDD while the provider's agrees is the consumer's. Two SDD statements that disagree give no stance.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from .interface import Quote
from .interface_diff import InterfaceFinding
from .interface_sdd import markdown_tokens
from .matching import Call, consumed, exported
from .run_context import RunContext
from .rundir import IntegrationFailure

_NULL_WORDS = frozenset({"null", "nullable", "optional", "none", "undefined"})
_EMPTY_STAND_INS = ('""', "[]")
_SDL_DEFINITIONS = frozenset({"type", "interface", "input"})
_MAX_TEXT = 200_000  # a schema or descriptor longer than this is not read


def nullable_findings(ctx: RunContext, failure: IntegrationFailure, calls: list[Call]) -> list[InterfaceFinding]:
    stated = sdd_stances(ctx)
    if not stated:
        return []
    out: list[InterfaceFinding] = []
    for call in calls:
        if call.provider is None or not isinstance(call.body, dict | list):
            continue
        provided = exported(ctx, call.provider, call.method, call.path)
        for unit in failure.involves:
            wanted = consumed(ctx, unit, call.method, call.path) if unit != call.provider else None
            if provided is None or wanted is None:
                continue
            mine, theirs = _declared(provided.responses), _declared(wanted.responses)
            for name, value in leaves(call.body):
                if name not in stated or name not in mine:
                    continue
                found = _judge(ctx, call, unit, name, value, stated[name], mine[name], theirs.get(name))
                if found is not None:
                    out.append(found)
    return out


def stance(descriptor: str) -> bool | None:
    """True: the type admits null; False: it states a non-null value; None: it does not say."""
    if len(descriptor) > _MAX_TEXT:
        return None
    words = tokens(descriptor)
    if any(t.lower() in _NULL_WORDS for t in words) or "?" in words:
        return True
    if len(words) >= 2 and words[0][:1].isalpha() and words[1] == "!":
        return False
    if any(empty in descriptor for empty in _EMPTY_STAND_INS):
        return False
    return None


def sdd_stances(ctx: RunContext) -> dict[str, tuple[bool, Quote]]:
    """field → (nullable, where) for every field the SDD gives one stance on (two stances: none)."""
    seen: dict[str, list[tuple[bool, Quote]]] = {}
    for doc in ctx.sdd_docs:
        if len(doc.text) > _MAX_TEXT:
            continue
        for name, nullable, line in _sdd_fields(doc.text):
            seen.setdefault(name, []).append((nullable, Quote(doc.rel, line)))
    return {n: xs[0] for n, xs in seen.items() if len({x for x, _q in xs}) == 1}


def _judge(ctx: RunContext, call: Call, consumer: str, name: str, value: Any, spec: tuple[bool, Quote],
           mine: tuple[str, int], theirs: tuple[str, int] | None) -> InterfaceFinding | None:  # fmt: skip
    says, at = spec
    p, c = stance(mine[0]), stance(theirs[0]) if theirs else None
    endpoint = f"{call.method} {call.path}"
    word = {True: "may be null", False: "is never null"}
    provider_rel, consumer_rel = ctx.contract_rel(call.provider or ""), ctx.contract_rel(consumer)
    mine = (mine[0], contract_line(ctx, provider_rel, name))
    theirs = (theirs[0], contract_line(ctx, consumer_rel, name)) if theirs else None
    if p is not None and p != says and c in (None, says) and (value is None) == p:
        return InterfaceFinding(
            "nullable_differs", "contract_mismatch", (call.provider or "",), endpoint, name,
            "spec", at, f"{name} {word[says]}",
            "contract", Quote(provider_rel, mine[1]), f"{call.provider} declares {name} as {mine[0]!r}",
            agree=("consumer",) if c == says else (),
        )  # fmt: skip
    if theirs is not None and c is not None and c != says and p in (None, says):
        return InterfaceFinding(
            "nullable_differs", "contract_mismatch", (consumer,), endpoint, name,
            "spec", at, f"{name} {word[says]}",
            "consumer", Quote(consumer_rel, theirs[1]), f"{consumer} expects {name} as {theirs[0]!r}",
            agree=("contract",) if p == says else (),
        )  # fmt: skip
    return None


def contract_line(ctx: RunContext, rel: str, name: str) -> int:
    """The line of a contract.json that declares `name` (`"name":`), else the first that names it, else 1."""
    lines = ctx.file_text(rel).splitlines()
    key = json.dumps(name) + ":"
    declared = next((n for n, x in enumerate(lines, 1) if key in x), None)
    return declared or next((n for n, x in enumerate(lines, 1) if name in tokens(x)), 1)


def _declared(responses: dict) -> dict[str, tuple[str, int]]:
    """field → (type descriptor, line in contract.json) of every response body a contract declares."""
    out: dict[str, tuple[str, int]] = {}
    for response in responses.values():
        for name, descriptor in leaves(response.body):
            if isinstance(descriptor, str):
                out.setdefault(name, (descriptor, 0))
    return out


def leaves(value: Any, depth: int = 0) -> Iterator[tuple[str, Any]]:
    """(field name, value) of every field of a JSON value that is not itself an object or a list."""
    if depth > 20:
        return
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        if isinstance(item, dict | list):
            yield from leaves(item, depth + 1)
        elif isinstance(key, str):
            yield key, item


def tokens(text: str) -> list[str]:
    """Identifiers and single punctuation marks, whitespace dropped."""
    out: list[str] = []
    word = ""
    for ch in text:
        if ch.isalnum() or ch == "_":
            word += ch
            continue
        if word:
            out.append(word)
            word = ""
        if not ch.isspace():
            out.append(ch)
    return [*out, word] if word else out


def _sdd_fields(text: str) -> Iterator[tuple[str, bool, int]]:
    for tok in markdown_tokens(text):
        if tok.type == "fence" and tok.info.strip().lower() in ("graphql", "gql") and tok.map:
            yield from sdl_fields(tok.content, tok.map[0] + 2)
        elif tok.type == "inline" and tok.map:
            yield from _null_spans(tok, tok.map[0] + 1)


def _null_spans(tok: Any, first_line: int) -> Iterator[tuple[str, bool, int]]:
    """A field's code span and a `null` code span on one line of a paragraph: the field is null there."""
    line, spans = first_line, []
    for child in tok.children or []:
        if child.type in ("softbreak", "hardbreak"):
            yield from _null_on_line(spans, line)
            line, spans = line + 1, []
        elif child.type == "code_inline":
            spans.append(child.content.strip())
    yield from _null_on_line(spans, line)


def _null_on_line(spans: list[str], line: int) -> Iterator[tuple[str, bool, int]]:
    if "null" in spans:
        for span in spans:
            if span != "null" and span.isidentifier():
                yield span, True, line


def sdl_fields(schema: str, first_line: int) -> Iterator[tuple[str, bool, int]]:
    """(field, nullable, line) of each field of each object, interface and input type of a GraphQL schema."""
    tokens = list(_sdl_tokens(schema, first_line))
    i, depth, pending, in_type = 0, 0, False, False
    while i < len(tokens):
        text, line = tokens[i]
        if depth == 0 and text in _SDL_DEFINITIONS:
            pending = True
        elif text in ("{", "(", "["):
            in_type = in_type or (text == "{" and depth == 0 and pending)
            depth += 1
        elif text in ("}", ")", "]"):
            depth = max(depth - 1, 0)
            if depth == 0:
                pending = in_type = False
        elif in_type and depth == 1 and text[:1].isalpha():
            j = _skip_arguments(tokens, i + 1)
            end = _type_end(tokens, j + 1) if j < len(tokens) and tokens[j][0] == ":" else j
            if end > j + 1:
                yield text, not (end < len(tokens) and tokens[end][0] == "!"), line
                i = end
                continue
        i += 1


def _skip_arguments(tokens: list[tuple[str, int]], i: int) -> int:
    if i >= len(tokens) or tokens[i][0] != "(":
        return i
    depth = 0
    for j in range(i, len(tokens)):
        depth += {"(": 1, ")": -1}.get(tokens[j][0], 0)
        if depth == 0:
            return j + 1
    return len(tokens)


def _type_end(tokens: list[tuple[str, int]], i: int) -> int:
    """The index just past a type reference (`Int`, `[Room!]`), before its own `!`."""
    if i < len(tokens) and tokens[i][0][:1].isalpha():
        return i + 1
    if i < len(tokens) and tokens[i][0] == "[":
        depth = 0
        for j in range(i, len(tokens)):
            depth += {"[": 1, "]": -1}.get(tokens[j][0], 0)
            if depth == 0:
                return j + 1
    return i


def _sdl_tokens(schema: str, first_line: int) -> Iterator[tuple[str, int]]:
    """GraphQL names and punctuators with their lines; comments and strings skipped."""
    i, line, n = 0, first_line, len(schema)
    while i < n:
        ch = schema[i]
        if ch == "\n":
            line += 1
            i += 1
        elif ch.isspace() or ch == ",":
            i += 1
        elif ch == "#":
            while i < n and schema[i] != "\n":
                i += 1
        elif ch == '"':
            quote = '"""' if schema.startswith('"""', i) else '"'
            end = schema.find(quote, i + len(quote))
            end = n if end < 0 else end + len(quote)
            line += schema.count("\n", i, end)
            i = end
        elif ch.isalnum() or ch == "_":
            j = i
            while j < n and (schema[j].isalnum() or schema[j] == "_"):
                j += 1
            yield schema[i:j], line
            i = j
        else:
            yield ch, line
            i += 1


__all__ = ["contract_line", "leaves", "nullable_findings", "sdd_stances", "sdl_fields", "stance", "tokens"]
