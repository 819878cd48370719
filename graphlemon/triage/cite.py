"""Evidence the deterministic triager writes: verbatim slices of project files, with line numbers.

Every item is `path:line: quote` where the quote is copied from that line, so it
verifies by construction (and `verify_all` still checks it).
"""

from __future__ import annotations

import re

from .evidence_check import MIN_LINE_QUOTE_CHARS, cite
from .run_context import RunContext
from .rundir import IntegrationFailure

MAX_QUOTE = 220


class Citer:
    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx
        self._cache: dict[str, list[str]] = {}

    def lines(self, rel: str) -> list[str]:
        if rel not in self._cache:
            try:
                self._cache[rel] = self.ctx.file_text(rel).split("\n")
            except OSError:
                self._cache[rel] = []
        return self._cache[rel]

    def line(self, rel: str, lineno: int, anchor: str | None = None) -> str | None:
        """Cite line `lineno` of `rel` (a window around `anchor` when the line is long)."""
        lines = self.lines(rel)
        if not 1 <= lineno <= len(lines):
            return None
        text = lines[lineno - 1]
        if len(text.strip()) > MAX_QUOTE:
            at = text.find(anchor) if anchor else -1
            start = max(0, at - 60) if at >= 0 else len(text) - len(text.lstrip())
            text = text[start : start + MAX_QUOTE]
        text = text.strip()
        return cite(rel, lineno, text) if len(text) >= MIN_LINE_QUOTE_CHARS else None

    def find(self, rel: str, needle: str, start: int = 1) -> int | None:
        for i, text in enumerate(self.lines(rel)[start - 1 :], start):
            if needle in text:
                return i
        return None

    def failure(self, failure: IntegrationFailure) -> list[str]:
        """result.json: the failing case, and what it expected and got."""
        rel = f"{self.ctx.run_rel}/result.json"
        at = self.find(rel, f'"{failure.case}"') or 1
        out = [self.line(rel, at, f'"{failure.case}"')]
        for key in ('"got"', '"expected"'):
            line = self.find(rel, key, at)
            if line and self.lines(rel)[line - 1].rstrip().endswith("{"):  # `"got": {` shows nothing: its first value
                line = line + 1 if line < len(self.lines(rel)) else line
            if line:
                out.append(self.line(rel, line, key))
        return [x for x in out if x]

    def trace(self, lineno: int) -> str | None:
        """A trace line from its method and URL through its status (or error)."""
        rel = f"{self.ctx.run_rel}/http-trace.ndjson"
        lines = self.lines(rel)
        if not 1 <= lineno <= len(lines):
            return None
        text = lines[lineno - 1]
        start = max(text.find('"method"'), 0)
        end = re.search(r'"(?:status|error)":\s*("[^"]*"|\d+)', text[start:])
        if end and end.end() <= MAX_QUOTE + 100:
            return cite(rel, lineno, text[start : start + end.end()].strip())
        return self.line(rel, lineno, '"status"' if '"status"' in text else '"error"')
