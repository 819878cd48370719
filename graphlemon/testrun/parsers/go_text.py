"""`go test` without -json (a custom command): `--- FAIL/PASS/SKIP:` lines and package verdicts."""

from __future__ import annotations

import re

from ..result_models import ParsedRun, TestCase
from .common import make_failure

_RESULT = re.compile(r"^(?P<indent>\s*)--- (?P<status>PASS|FAIL|SKIP): (?P<name>\S+) \([\d.]+s\)$", re.M)
_LOCATION = re.compile(r"^\s+(?P<file>[\w./-]+\.go):(?P<line>\d+): (?P<message>.*)$", re.M)
_STATUS = {"PASS": "passed", "FAIL": "failed", "SKIP": "skipped"}


def parse_go_text(output: str) -> ParsedRun:
    run = ParsedRun(source="text")
    results = list(_RESULT.finditer(output))
    names = {m["name"] for m in results}
    for i, match in enumerate(results):
        name = match["name"]
        if any(other.startswith(name + "/") for other in names):
            continue  # a parent of subtests
        status = _STATUS[match["status"]]
        run.cases.append(TestCase(name=name, status=status, selector=f".\t{name}"))  # type: ignore[arg-type]
        if status == "failed":
            start = match.end()
            end = results[i + 1].start() if i + 1 < len(results) else len(output)
            body = output[start:end]
            located = _LOCATION.search(body)
            message = located["message"] if located else "failed"
            run.failures.append(make_failure(name, file=located["file"] if located else None,
                                             line=int(located["line"]) if located else None, message=message, detail=body))  # fmt: skip
    return run
