"""pytest's human output → failures and counts (fallback when our plugin did not report)."""

from __future__ import annotations

import re

from ...test_counts import TestSummary
from ..result_models import ParsedRun, TestCase
from .common import error_summary, make_failure

_VERBOSE = re.compile(r"^(?P<id>\S+::\S.*?) (?P<status>PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\b", re.M)
_SHORT = re.compile(r"^(?P<status>FAILED|ERROR) (?P<id>\S.*?)(?: - (?P<msg>.*))?$", re.M)
_SECTION = re.compile(r"^_{3,} (?P<title>.+?) _{3,}$", re.M)
_COUNT = re.compile(r"(\d+) (passed|failed|skipped|xfailed|xpassed|errors?|deselected|warnings?)")
# `==== 1 failed, 2 passed in 0.1s ====`, or with -q the same words unframed
_SUMMARY = re.compile(
    r"^(?:=+ )?(?P<body>\d+ (?:passed|failed|skipped|error|errors|xfailed|xpassed|deselected|warnings?)\b.*?|no tests ran)"
    r" in [\d.]+s\b.*$", re.M,
)
_STATUS = {
    "PASSED": "passed",
    "XPASS": "passed",
    "FAILED": "failed",
    "ERROR": "failed",
    "SKIPPED": "skipped",
    "XFAIL": "skipped",
}


def parse_pytest_text(output: str) -> ParsedRun:
    run = ParsedRun(source="text")
    sections = _failure_sections(output)
    for match in _VERBOSE.finditer(output):
        run.cases.append(
            TestCase(
                name=match["id"], file=match["id"].split("::")[0], status=_STATUS[match["status"]], selector=match["id"]
            )
        )  # type: ignore[arg-type]
    seen: set[str] = set()
    for match in _SHORT.finditer(output):
        nodeid = match["id"].strip()
        if nodeid in seen:
            continue
        seen.add(nodeid)
        file = nodeid.split("::")[0]
        parts = nodeid.split("::")
        body = sections.get(".".join(parts[1:])) or sections.get(parts[-1]) or sections.get(file, "")
        line_match = re.search(rf"^{re.escape(file)}:(\d+):", body, re.M)
        message = _message(match["msg"] or "", body)
        if match["status"] == "ERROR" and "::" not in nodeid:
            message = "collection error: " + message
        run.failures.append(
            make_failure(
                nodeid, file=file, line=int(line_match[1]) if line_match else None, message=message, detail=body
            )
        )
        if not any(c.name == nodeid for c in run.cases):
            run.cases.append(TestCase(name=nodeid, file=file, status="failed", selector=nodeid))
    run.counts = _counts(output)
    return run


def _message(short: str, body: str) -> str:
    """The failure's message: the short summary's (`FAILED id - msg`), unless pytest cut it to the terminal's width
    (`- Asser...`: its first line, shortened, `...` appended) or left it out; then the section's own lines (`E ...`)."""
    short = short.strip()
    if short and not short.endswith("..."):
        return short
    return error_summary(body) or short


def _failure_sections(output: str) -> dict[str, str]:
    """Title (test name) → body of each `____ title ____` section."""
    matches = list(_SECTION.finditer(output))
    sections: dict[str, str] = {}
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(output)
        body = output[match.end() : end]
        cut = re.search(r"^=+ ", body, re.M)
        title = match["title"]
        for prefix in ("ERROR at setup of ", "ERROR at teardown of ", "ERROR collecting "):
            title = title.removeprefix(prefix)
        sections.setdefault(title.strip(), body[: cut.start()] if cut else body)
    return sections


def _counts(output: str) -> TestSummary | None:
    found = list(_SUMMARY.finditer(output))
    if not found:
        return None
    numbers: dict[str, int] = {}
    for count, word in _COUNT.findall(found[-1]["body"]):
        numbers[word.rstrip("s") if word.startswith("error") else word] = int(count)
    passed = numbers.get("passed", 0) + numbers.get("xpassed", 0)
    failed = numbers.get("failed", 0) + numbers.get("error", 0)
    skipped = numbers.get("skipped", 0) + numbers.get("xfailed", 0)
    return TestSummary(total=passed + failed + skipped, passed=passed, failed=failed, skipped=skipped)
