"""Our pytest plugin's JSON lines → cases and failures.

Setup / teardown / collection errors count as failed; skip and xfail as skipped;
an xpass as passed (a strict xpass is reported failed by pytest itself).
"""

from __future__ import annotations

import re
from typing import Any

from ..assertions import Compared, sided
from ..output_text import to_int, to_str
from ..result_models import ParsedRun, TestCase, TestFailure
from .common import error_summary, json_lines, make_failure

_PHASE_ORDER = ("setup", "call", "teardown")


def parse_pytest_report(text: str) -> ParsedRun:
    run = ParsedRun(source="report")
    phases: dict[str, dict[str, dict[str, Any]]] = {}
    order: list[str] = []
    started: dict[str, Any] = {}
    subtests: dict[str, list[dict[str, Any]]] = {}
    for record in json_lines(text):
        event = record.get("event")
        nodeid = to_str(record.get("nodeid"))
        if event == "start" and nodeid:
            started[nodeid] = record.get("location")
        elif event == "test" and nodeid and record.get("when") in _PHASE_ORDER:
            if nodeid not in phases:
                phases[nodeid] = {}
                order.append(nodeid)
            phases[nodeid][record["when"]] = record
        elif event == "collect_error":
            _add_collect_error(run, nodeid, record)
        elif event == "subtest" and nodeid:
            subtests.setdefault(nodeid, []).append(record)
    unfinished = [n for n in started if "teardown" not in phases.get(n, {})]
    if unfinished:  # the test that was running when the run was killed
        nodeid = unfinished[-1]
        location = started[nodeid] if isinstance(started[nodeid], list) else [None, None]
        line = to_int(location[1]) if len(location) > 1 else None
        run.running = TestCase(name=nodeid, file=_file_of(nodeid), line=line + 1 if line is not None else None,
                               status="failed", selector=nodeid)  # fmt: skip
    for nodeid in order:
        if run.running is None or nodeid != run.running.name:
            _add_case(run, nodeid, phases[nodeid], subtests.get(nodeid, []))
    return run


def _add_case(run: ParsedRun, nodeid: str, phases: dict[str, dict[str, Any]], subtests: list[dict[str, Any]]) -> None:
    """One test; its failing subtests are failures of their own (with their parameters), and make it failed."""
    records = [phases[p] for p in _PHASE_ORDER if p in phases]
    failed_subtests = [r for r in subtests if r.get("outcome") == "failed"]
    run.subtests_passed += sum(r.get("outcome") == "passed" for r in subtests)
    run.subtests_failed += len(failed_subtests)
    failed = [r for r in records if r.get("outcome") == "failed"]
    if failed_subtests:  # pytest's own "contains N failed subtest" failure says nothing more
        failed = [r for r in failed if "failed subtest" not in to_str(r.get("longrepr"))[-200:]]
    skipped = any(r.get("outcome") == "skipped" for r in records)
    location = records[0].get("location") if isinstance(records[0].get("location"), list) else None
    file = to_str(location[0]) if location else _file_of(nodeid)
    def_line = to_int(location[1]) if location and len(location) > 1 else None
    def_line = def_line + 1 if def_line is not None else None  # pytest locations are 0-based
    status = "failed" if failed or failed_subtests else "skipped" if skipped else "passed"
    run.cases.append(TestCase(name=nodeid, file=file or None, line=def_line, status=status, selector=nodeid))
    for record in failed_subtests:
        failure = _failure_of(nodeid, record, file, def_line)
        failure.subtest = to_str(record.get("subtest")) or None
        run.failures.append(failure)
    if failed:
        run.failures.append(_failure_of(nodeid, failed[0], file, def_line, "\n\n".join(_phase_text(r) for r in failed)))


def _failure_of(
    nodeid: str, first: dict[str, Any], file: str | None, def_line: int | None, detail: str = ""
) -> TestFailure:
    """The failure a phase (or subtest) record describes: crash message, line in the test file."""
    detail = detail or to_str(first.get("longrepr"))
    crash = first.get("crash") if isinstance(first.get("crash"), dict) else {}
    message = _without_pytest_advice(to_str(crash.get("message"))) or error_summary(to_str(first.get("longrepr")))
    if first.get("when") not in ("call", None):
        message = f"error in {first.get('when')}: {message}"
    values = first.get("values") if isinstance(first.get("values"), dict) else {}
    line = (
        to_int(values.get("line"))
        or _last_line_in(to_str(first.get("longrepr")), file)
        or _crash_line(crash, file)
        or def_line
    )
    return make_failure(nodeid, file=file, line=line, message=message, detail=detail, compared=_compared(values))


def _compared(values: Any) -> Compared | None:
    """The operands our plugin recorded: a doctest's wanted and printed output, or the two sides of a failing
    `assert left == right` (whole values): no side is expected unless the assertion pytest printed settles
    it (`make_failure`); pytest's own diff calls the right side "expected" only by its position."""
    if not isinstance(values, dict) or values.get("op") != "==":
        return None
    left, right = to_str(values.get("left")), to_str(values.get("right"))
    if not (left and right):
        return None
    if values.get("source") == "doctest":
        return sided(left, right, "python")
    data = tuple(str(n) for n in values.get("data") or () if isinstance(n, str))
    return Compared(left, right, ("left", "right"), None, "python", data_names=data)


def _add_collect_error(run: ParsedRun, nodeid: str, record: dict[str, Any]) -> None:
    longrepr = to_str(record.get("longrepr"))
    file = _file_of(nodeid) or _file_of_error(longrepr)
    name = nodeid or file or "collection"
    crash = record.get("crash") if isinstance(record.get("crash"), dict) else {}
    line = _crash_line(crash, file) or _syntax_error_line(longrepr)
    message = "collection error: " + error_summary(longrepr)
    run.cases.append(TestCase(name=name, file=file, line=line, status="failed", selector=nodeid or file))
    run.failures.append(make_failure(name, file=file, line=line, message=message, detail=longrepr))


_ADVICE = re.compile(
    r"^\s*(?:Use -v+ to get (?:more|the full) diff|Omitting \d+ identical items, use -vv to show|Full diff:)\s*$"
)


def _without_pytest_advice(message: str) -> str:
    """pytest's assertion text without its own advice lines and blank padding."""
    lines = [ln for ln in message.splitlines() if ln.strip() and not _ADVICE.match(ln)]
    return "\n".join(lines)


def _phase_text(record: dict[str, Any]) -> str:
    return f"[{record.get('when')}]\n{to_str(record.get('longrepr'))}"


def _file_of(nodeid: str) -> str | None:
    path = nodeid.split("::", 1)[0]
    return path or None


def _file_of_error(longrepr: str) -> str | None:
    match = re.search(r"(?:test module|conftest) '([^']+)'", longrepr)
    return match.group(1) if match else None


def _last_line_in(longrepr: str, file: str | None) -> int | None:
    """The last traceback line inside the test's own file (`tests/test_x.py:12: in ...`)."""
    if not file or not longrepr:
        return None
    found = re.findall(rf"^{re.escape(file)}:(\d+):", longrepr, re.M)
    return int(found[-1]) if found else None


def _crash_line(crash: dict[str, Any], file: str | None) -> int | None:
    path, line = to_str(crash.get("path")), to_int(crash.get("lineno"))
    if file and path and line and path.replace("\\", "/").endswith(file):
        return line
    return None


def _syntax_error_line(longrepr: str) -> int | None:
    match = re.search(r'File "[^"]+", line (\d+)', longrepr)
    return int(match.group(1)) if match else None
