"""mocha's spec reporter → failures and counts (custom commands, killed runs)."""

from __future__ import annotations

import re

from ...test_counts import TestSummary
from ..result_models import ParsedRun, TestCase
from .common import UNNAMED, error_summary, make_failure, summary_from_words

_COUNTS = re.compile(r"^\s+(\d+) (passing|failing|pending)\b", re.M)
_NOT_PROJECT = re.compile(r"node_modules|^node:|^internal/")
_NUMBERED = re.compile(r"^  \d+\) (.*)$")
# absolute or relative (`test/traverse.js:18`); not a frame inside node_modules or node's internals
_FILE_LINE = re.compile(r"(?:file://)?(?<![\w.-])((?:\.{0,2}/)?(?:[\w@.+-]+/)*[\w@.+-]+\.[cm]?[jt]sx?):(\d+)")


def parse_mocha_text(output: str) -> ParsedRun:
    run = ParsedRun(source="text")
    counts = _COUNTS.findall(output)
    if not counts:
        return run
    run.counts = summary_from_words(" ".join(f"{n} {w}" for n, w in counts))
    failing_at = output.find(" failing\n")
    if failing_at < 0:
        return run
    for title_lines, body in _blocks(output[failing_at:].splitlines()[1:]):
        name = " ".join(part.strip() for part in title_lines).rstrip(":").strip() or UNNAMED
        location = next((m for m in _FILE_LINE.finditer(body) if not _NOT_PROJECT.search(m.group(1))), None)
        file = location.group(1) if location else None
        line = int(location.group(2)) if location else None
        run.cases.append(TestCase(name=name, file=file, line=line, status="failed", selector=f"{file}\t{name}"))
        run.failures.append(make_failure(name, file=file, line=line, message=error_summary(body, 4), detail=body))
    return run


def mocha_text_counts(output: str) -> TestSummary | None:
    """The totals of mocha's closing summary (summed over the mocha runs in the output)."""
    counts = _COUNTS.findall(output)
    return summary_from_words(" ".join(f"{n} {w}" for n, w in counts)) if counts else None


def _blocks(lines: list[str]) -> list[tuple[list[str], str]]:
    """`  1) suite` + indented title lines ending in `:` + the error body, per numbered failure."""
    blocks: list[tuple[list[str], list[str]]] = []
    for line in lines:
        numbered = _NUMBERED.match(line)
        if numbered:
            blocks.append(([numbered.group(1)], []))
        elif blocks:
            title, body = blocks[-1]
            if not body and not title[-1].endswith(":"):
                title.append(line)
            else:
                body.append(line)
    return [(title, "\n".join(body)) for title, body in blocks]
