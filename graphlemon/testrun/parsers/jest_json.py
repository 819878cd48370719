"""The JSON report of jest (`--json --outputFile`) and vitest (`--reporter=json`), one shape for both.

`testResults[]` per file, `assertionResults[]` per test (ancestorTitles, title,
status, failureMessages, location; jest adds failureDetails[].matcherResult).
A file whose suite failed to run (import error, module not found) with no failed
test becomes one failed case named after the file.
"""

from __future__ import annotations

from typing import Any

from ..output_text import to_int, to_str
from ..result_models import ParsedRun, TestCase
from .common import UNNAMED, first_paragraph, load_json, make_failure
from .js_common import check_line, line_in_file, message_of, value_text

_STATUS = {"passed": "passed", "failed": "failed"}  # pending, skipped, todo, disabled, focused → skipped


def parse_jest_json(text: str) -> ParsedRun:
    data = load_json(text)
    run = ParsedRun(source="report")
    if not isinstance(data, dict) or not isinstance(data.get("testResults"), list):
        return run
    for file_result in data["testResults"]:
        if isinstance(file_result, dict):
            _parse_file(run, file_result)
    return run


def _parse_file(run: ParsedRun, file_result: dict[str, Any]) -> None:
    file = to_str(file_result.get("name")) or to_str(file_result.get("testFilePath")) or None
    assertions = file_result.get("assertionResults")
    assertions = [a for a in assertions if isinstance(a, dict)] if isinstance(assertions, list) else []
    for assertion in assertions:
        _parse_assertion(run, assertion, file)
    suite_failed = to_str(file_result.get("status")) == "failed" or bool(file_result.get("testExecError"))
    if suite_failed and not any(a.get("status") == "failed" for a in assertions):
        message = to_str(file_result.get("message")) or to_str(file_result.get("failureMessage"))
        exec_error = file_result.get("testExecError")
        if not message and isinstance(exec_error, dict):
            message = to_str(exec_error.get("message")) or to_str(exec_error.get("stack"))
        name = file or "(test file)"
        body = message.replace("● Test suite failed to run", "").strip()
        run.cases.append(TestCase(name=name, file=file, status="failed", selector=f"{file}\t" if file else None))
        run.failures.append(
            make_failure(
                name,
                file=file,
                line=line_in_file(body, file),
                message="suite failed to run: " + first_paragraph(body),
                detail=body,
            )
        )


def _parse_assertion(run: ParsedRun, assertion: dict[str, Any], file: str | None) -> None:
    titles = assertion.get("ancestorTitles")
    # vitest 1.0 puts the file's unnamed suite first: ['', 'describe', ...]
    titles = [to_str(t) for t in titles if to_str(t).strip()] if isinstance(titles, list) else []
    given = to_str(assertion.get("title")) or to_str(assertion.get("fullName"))
    title = given if given.strip() else UNNAMED  # kept verbatim: a test named " -> " keeps its spaces
    name = " > ".join([*titles, title])
    full_name = to_str(assertion.get("fullName")) or " ".join([*titles, title])
    location = assertion.get("location") if isinstance(assertion.get("location"), dict) else {}
    status = _STATUS.get(to_str(assertion.get("status")), "skipped")
    run.cases.append(
        TestCase(
            name=name, file=file, line=to_int(location.get("line")), status=status, selector=f"{file}\t{full_name}"
        )
    )
    if status != "failed":
        return
    messages = assertion.get("failureMessages")
    detail = "\n".join(to_str(m) for m in messages) if isinstance(messages, list) else ""
    expected, got = _matcher_values(assertion.get("failureDetails"))
    at, declared = check_line(detail, file, to_int(location.get("line")))
    run.failures.append(
        make_failure(
            name, file=file, line=at, declared=declared,
            message=message_of(detail) or "failed", detail=detail, expected=expected, got=got, grammar="json",
        )
    )  # fmt: skip


def _matcher_values(details: Any) -> tuple[str | None, str | None]:
    """jest's failureDetails[].matcherResult.{expected, actual}, when the matcher recorded them."""
    if not isinstance(details, list):
        return None, None
    for detail in details:
        result = detail.get("matcherResult") if isinstance(detail, dict) else None
        if isinstance(result, dict) and "expected" in result and "actual" in result:
            expected, actual = value_text(result.get("expected")), value_text(result.get("actual"))
            if expected is not None or actual is not None:
                return expected, actual
    return None, None
