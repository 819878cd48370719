"""jest's human output (stderr) → failures and counts; the fallback when the JSON report is missing."""

from __future__ import annotations

import re

from ...test_counts import TestSummary
from ..result_models import ParsedRun, TestCase
from .common import UNNAMED, error_summary, first_paragraph, make_failure, summary_from_words

_FILE = re.compile(r"^(?P<status>PASS|FAIL) (?P<file>\S+)", re.M)
_BULLET = re.compile(r"^  ● (?P<name>.+)$", re.M)
_VERBOSE = re.compile(r"^\s+(?P<mark>[✓✕○✎]) (?:(?:skipped|todo) )?(?P<name>.+?)(?: \(\d+ m?s\))?$", re.M)
# jest's own lines after the last failure's block: its run summary, the recap it prints for several files, the
# coverage table (`----|---` rule or its `File | % Stmts` header)
_RUN_END = re.compile(r"^(?:Test Suites: |Summary of all failing tests$|-+\|-|File\s+\| % Stmts)", re.M)
_TOTALS = re.compile(r"^Tests:\s+(?P<body>.*\d+ total)\s*$", re.M)
_MARKS = {"✓": "passed", "✕": "failed", "○": "skipped", "✎": "skipped"}


def parse_jest_text(output: str) -> ParsedRun:
    run = ParsedRun(source="text")
    files = [(m.start(), m["file"]) for m in _FILE.finditer(output)]
    bullets = list(_BULLET.finditer(output))
    for i, bullet in enumerate(bullets):
        file = next((f for start, f in reversed(files) if start < bullet.start()), None)
        end = min(
            [b.start() for b in bullets[i + 1 :]]
            + [m.start() for m in _FILE.finditer(output, bullet.end())]
            + [m.start() for m in _RUN_END.finditer(output, bullet.end())][:1]
            + [len(output)]
        )
        body = output[bullet.end() : end]
        given = bullet["name"].rstrip("\r")  # verbatim: a test named " -> " keeps its spaces
        name = given.replace(" › ", " > ") if given.strip() else UNNAMED
        line = re.search(rf"{re.escape(file)}:(\d+)", body) if file else None
        if name == "Test suite failed to run":
            name, message = file or "(test file)", "suite failed to run: " + first_paragraph(body)
        else:
            message = error_summary(body, 4)
        run.cases.append(
            TestCase(name=name, file=file, status="failed", selector=f"{file}\t{name.replace(' > ', ' ')}")
        )
        run.failures.append(
            make_failure(name, file=file, line=int(line.group(1)) if line else None, message=message, detail=body)
        )
    named = {c.name for c in run.cases}
    for match in _VERBOSE.finditer(output):
        status = _MARKS[match["mark"]]
        if status != "failed" and match["name"] not in named:
            run.cases.append(TestCase(name=match["name"].strip() or UNNAMED, status=status))  # type: ignore[arg-type]
    run.counts = _totals(output)
    return run


def _totals(output: str) -> TestSummary | None:
    found = list(_TOTALS.finditer(output))
    return summary_from_words(found[-1]["body"]) if found else None
