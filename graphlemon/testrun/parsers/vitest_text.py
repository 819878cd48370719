"""vitest's default (non-TTY) output → cases, failures, counts; and its unhandled-error sections.

Used as the fallback when the JSON report is missing (killed run, custom command),
and always for unhandled errors, which the JSON report does not carry.
"""

from __future__ import annotations

import re

from ...test_counts import TestSummary
from ..result_models import ParsedRun, TestCase, TestFailure
from .common import UNNAMED, error_summary, make_failure, summary_from_words

_FILE = re.compile(r"^ (?P<mark>[✓❯×↓]) (?P<file>\S+) +\((?P<body>\d+ tests?[^)]*)\)", re.M)  # 1.x: two spaces
_TEST = re.compile(r"^   (?P<mark>[✓×↓]) (?P<name>.+?)(?: \d+ms)?$", re.M)
_FAIL_HEAD = re.compile(r"^ FAIL  (?P<file>\S+) > (?P<name>.+)$", re.M)
_RULE = re.compile(r"^⎯{3,}.*$", re.M)
_LOCATION = re.compile(r"❯ (?P<file>[^\s:]+):(?P<line>\d+):\d+")
_TOTALS = re.compile(r"^\s+Tests\s+(?P<body>.*\(\d+\))\s*$", re.M)
_UNHANDLED = re.compile(r"^⎯+ (?P<kind>Unhandled (?:Rejection|Error|Exception)) ⎯+$", re.M)
_ORIGIN = re.compile(r'This error originated in "(?P<file>[^"]+)" test file')
_MARKS = {"✓": "passed", "×": "failed", "↓": "skipped"}


def parse_vitest_text(output: str) -> ParsedRun:
    run = ParsedRun(source="text")
    current_file: str | None = None
    files = [(m.start(), m["file"]) for m in _FILE.finditer(output)]
    details = _failure_details(output)
    for match in _TEST.finditer(output):
        current_file = next((f for start, f in reversed(files) if start < match.start()), None)
        name = match["name"].strip() or UNNAMED
        status = _MARKS[match["mark"]]
        run.cases.append(_case(name, current_file, status))
        if status == "failed":
            run.failures.append(_failure(name, current_file, details.get((current_file, name), "")))
    # vitest 1.x lists a failed test only as `   ❯ FILE > suite > name` under its file: its
    # `FAIL  FILE > suite > name` section names it (and every failure has one)
    listed = {(f.file, f.name) for f in run.failures}
    for (file, name), body in details.items():
        if (file, name) not in listed:
            run.cases.append(_case(name, file, "failed"))
            run.failures.append(_failure(name, file, body))
    run.counts = _totals(output) or _file_counts(output)
    return run


def _file_counts(output: str) -> TestSummary | None:
    """The per-file counts vitest printed as each file finished (`✓ test/a.test.js (40 tests) 5ms`,
    `❯ test/b.test.js (5 tests | 1 failed)`): what a run stopped before its closing summary proves."""
    passed = failed = skipped = 0
    for match in _FILE.finditer(output):
        words = summary_from_words(match["body"])  # `40 tests | 1 failed | 2 skipped`
        total = int(match["body"].split(" ", 1)[0])
        failed += words.failed
        skipped += words.skipped
        passed += max(0, total - words.failed - words.skipped)
    if not (passed or failed or skipped):
        return None
    return TestSummary(total=passed + failed + skipped, passed=passed, failed=failed, skipped=skipped)


def _case(name: str, file: str | None, status: str) -> TestCase:
    selector = f"{file}\t{name.replace(' > ', ' ')}"
    return TestCase(name=name, file=file, status=status, selector=selector)  # type: ignore[arg-type]


def _failure(name: str, file: str | None, body: str) -> TestFailure:
    location = _LOCATION.search(body)
    line = int(location["line"]) if location and location["file"] == file else None
    return make_failure(name, file=file, line=line, message=error_summary(body, 4) if body else "failed", detail=body)


def unhandled_errors(output: str) -> list[TestFailure]:
    """One failure per `⎯ Unhandled Rejection ⎯` / `⎯ Unhandled Error ⎯` section."""
    failures = []
    for match in _UNHANDLED.finditer(output):
        rest = output[match.end() :]
        end = _RULE.search(rest)
        body = rest[: end.start()] if end else rest[:4000]
        origin = _ORIGIN.search(body)
        location = _LOCATION.search(body)
        file = origin["file"] if origin else (location["file"] if location else None)
        line = int(location["line"]) if location and location["file"] == file else None
        first = next((ln.strip() for ln in body.splitlines() if ln.strip()), "")
        kind = match["kind"].lower()
        failures.append(
            make_failure(
                f"vitest: {kind}" + (f" in {file}" if file else ""),
                file=file,
                line=line,
                message=f"{kind}: {first}",
                detail=body,
            )
        )
    return failures


def _failure_details(output: str) -> dict[tuple[str | None, str], str]:
    heads = list(_FAIL_HEAD.finditer(output))
    found: dict[tuple[str | None, str], str] = {}
    for head in heads:
        rest = output[head.end() :]
        end = _RULE.search(rest)
        found.setdefault((head["file"], head["name"].strip()), rest[: end.start()] if end else rest[:4000])
    return found


def _totals(output: str) -> TestSummary | None:
    found = list(_TOTALS.finditer(output))
    return summary_from_words(found[-1]["body"]) if found else None
