"""Does the whole SDD say anything else about the interface element a contract patch would change?

An SDD patch is applied without a person only when the statement it rests on is the SDD's one statement about
that element. Every SDD document is read block by block with the markdown parser — paragraphs, list items,
table rows, fenced blocks, HTML lines — whatever section, table, changelog or erratum they are in. A block
speaks of the element when

- it names the element's path (any parameter style, with or without a base path before it: `/api/v2/docks/{id}`
  names `/docks/{id}`; a renamed path the finding also names counts as the same element), or lies under a heading
  that names it; or, for a status element, it names no endpoint at all (nor does
  its heading) and lies in the provider unit's section or in no unit's section: a policy in prose ("every booking
  refusal is a 422") may speak of any of the unit's endpoints;
- and, for a status element, it names a status: of any class when it names the path (a decision "an unknown shelf
  answers 200" is about the same situation as the row that says 404; a row of the cited statement's own table
  counts only with a status of the same class, the others being the endpoint's other situations), of the same class (2xx, 4xx: in digits or in words) when it
  names no endpoint, since a changelog line "refusals are now 422" is about the same answer as the row that says 409.

The block the finding cites is not counted; any other is returned, with its line, for the person to read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .findings import Element
from .interface_sdd import markdown_tokens, unit_named
from .sdd import normalize_path, path_matches
from .sdd_terms import status_mentions

_PATHLIKE = re.compile(r"(?<![\w.])/[A-Za-z0-9_{}<>:.\-/*]+")


@dataclass(frozen=True)
class Block:
    rel: str
    first: int  # 1-based line range of the block
    last: int
    text: str
    heading: str  # the innermost heading above it
    unit: str | None  # the unit whose section it is in (the innermost heading naming a unit)
    table: int | None = None  # which table of the document a row is in


def sdd_blocks(rel: str, text: str, unit_ids: list[str]) -> list[Block]:
    """Every statement-sized block of a markdown document, with the heading and the unit section it sits in."""
    out: list[Block] = []
    heading, sections = "", []  # (level, unit) of the open headings
    tokens = markdown_tokens(text)
    lines = text.split("\n")
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open" and i + 1 < len(tokens):
            heading, level = tokens[i + 1].content, int(tok.tag[1:])
            sections = [*(s for s in sections if s[0] < level), (level, unit_named(heading, unit_ids))]
        elif tok.map and tok.type in ("paragraph_open", "tr_open", "fence", "code_block", "html_block"):
            first, last = tok.map[0] + 1, tok.map[1]
            unit = next((u for _l, u in reversed(sections) if u), None)
            table = next((j for j in range(i, -1, -1) if tokens[j].type == "table_open"), None)
            table = table if tok.type == "tr_open" else None
            out.append(Block(rel, first, last, "\n".join(lines[first - 1 : last]), heading, unit, table))
    return out


def other_statements(docs: list[tuple[str, str]], element: Element, unit_ids: list[str]) -> list[Block]:
    """The SDD blocks other than the cited one that speak of the element."""
    cited_rel, _, cited_line = element.statement.rpartition(":")
    cited = cited_block(docs, element, unit_ids)
    paths = [element.path, *element.names]
    out = []
    for rel, text in docs:
        for block in sdd_blocks(rel, text, unit_ids):
            if rel == cited_rel and cited_line.isdigit() and block.first <= int(cited_line) <= block.last:
                continue
            if not _about(block, element, paths):
                continue
            sibling = cited is not None and block.table is not None and (rel, block.table) == (cited.rel, cited.table)
            named = not sibling and (_names_path(block.text, paths) or _names_path(block.heading, paths))
            if element.statuses and not (
                status_mentions(block.text) if named else _same_class(block.text, element.statuses)
            ):
                continue
            out.append(block)
    return out


def cited_block(docs: list[tuple[str, str]], element: Element, unit_ids: list[str]) -> Block | None:
    """The block that holds the statement the finding cites."""
    rel, _, line = element.statement.rpartition(":")
    text = dict(docs).get(rel)
    if text is None or not line.isdigit():
        return None
    return next((b for b in sdd_blocks(rel, text, unit_ids) if b.first <= int(line) <= b.last), None)


def _about(block: Block, element: Element, paths: list[str]) -> bool:
    if _names_path(block.text, paths) or _names_path(block.heading, paths):
        return True
    if not element.statuses or _PATHLIKE.search(block.text) or _PATHLIKE.search(block.heading):
        return False  # a path element is named by its path; a block naming another endpoint is about that one
    return block.unit in (None, element.unit)


def _names_path(text: str, paths: list[str]) -> bool:
    for token in _PATHLIKE.findall(text):
        token = token.rstrip(".:")
        if any(len(normalize_path(p).split("/")) > 1 and _same_endpoint(p, token) for p in paths):
            return True
    return False


def _same_endpoint(path: str, token: str) -> bool:
    """The same path, or one of them under a base path the other leaves out (`/api/v2/docks/{id}` names
    `/docks/{id}`): a statement written with the service's prefix is about the same endpoint."""
    a, b = normalize_path(path).strip("/").split("/"), normalize_path(token).strip("/").split("/")
    if len(a) == len(b):
        return path_matches(path, token)
    short, long = (a, b) if len(a) < len(b) else (b, a)
    tail = long[len(long) - len(short) :]
    return short[0] != "{}" and short[0] == tail[0] and path_matches("/" + "/".join(short), "/" + "/".join(tail))


def _same_class(text: str, statuses: tuple[int, ...]) -> bool:
    classes = {s // 100 for s in statuses}
    return any(m.code // 100 in classes for m in status_mentions(text))
