"""Agents' and people's text, made readable in the console and never live: markdown rendered to HTML by markdown-it
(CommonMark and tables) with raw HTML off, images off and links only to http(s); a unified diff read into numbered
lines. Every character of the input reaches the page as text (markdown-it escapes it), bidi and control characters
shown as their code point (`wording.printable`)."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Literal

from pydantic import BaseModel

from ..wording import printable

SAFE_SCHEMES = ("http://", "https://")


@lru_cache(maxsize=1)
def _markdown():
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"]).disable("image")
    md.validateLink = lambda url: url.strip().lower().startswith(SAFE_SCHEMES)  # a refused link stays text
    return md


def markdown_html(text: str | None) -> str:
    """Markdown as safe HTML: no tag, attribute or script of the input survives as markup."""
    html = _markdown().render(printable(text or ""))
    return html.replace("<a href=", '<a rel="noopener noreferrer nofollow" target="_blank" href=')


LineKind = Literal["file", "meta", "hunk", "add", "del", "ctx"]
_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")  # the unified diff format's own hunk header


class DiffLine(BaseModel):
    kind: LineKind
    text: str
    old: int | None = None  # the line's number before the change (removed and context lines)
    new: int | None = None  # ... and after it (added and context lines)


def diff_lines(text: str) -> list[DiffLine]:
    """A unified diff (`git diff`) line by line: file headers, hunk headers, and each added, removed or context line
    with its numbers on both sides. Text that is not a diff comes back as context lines numbered from 1."""
    out: list[DiffLine] = []
    old = new = None
    in_hunk = False
    for raw in printable(text).split("\n"):
        hunk = _HUNK.match(raw)
        if hunk:
            old, new, in_hunk = int(hunk.group(1)), int(hunk.group(2)), True
            out.append(DiffLine(kind="hunk", text=raw))
        elif raw.startswith("diff --git ") or (not in_hunk and raw.startswith(("--- ", "+++ "))):
            in_hunk = in_hunk and not raw.startswith("diff --git ")
            out.append(DiffLine(kind="file" if raw.startswith(("diff ", "+++ ")) else "meta", text=raw))
        elif in_hunk and raw.startswith("+"):
            out.append(DiffLine(kind="add", text=raw[1:], new=new))
            new += 1
        elif in_hunk and raw.startswith("-"):
            out.append(DiffLine(kind="del", text=raw[1:], old=old))
            old += 1
        elif in_hunk and raw.startswith(" "):
            out.append(DiffLine(kind="ctx", text=raw[1:], old=old, new=new))
            old, new = old + 1, new + 1
        elif raw or not in_hunk:
            out.append(DiffLine(kind="meta", text=raw))
    if not any(line.kind in ("hunk", "file") for line in out):  # not a diff: numbered plain lines
        return [DiffLine(kind="ctx", text=line, old=i, new=i) for i, line in enumerate(printable(text).split("\n"), 1)]
    while out and out[-1].kind == "meta" and not out[-1].text:
        out.pop()
    return out


def artifact_view(artifact_type: str, path_suffix: str, text: str) -> dict:
    """What the artifact page shows: a diff as numbered lines, markdown as safe HTML, anything else as text."""
    if artifact_type == "code_diff" or path_suffix in (".diff", ".patch"):
        return {"kind": "diff", "lines": [line.model_dump() for line in diff_lines(text)]}
    if path_suffix in (".md", ".markdown"):
        return {"kind": "markdown", "html": markdown_html(text)}
    return {"kind": "text", "text": printable(text)}
