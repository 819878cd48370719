"""`python -m unittest` output → failures and counts (its text is its only report).

unittest prints one `FAIL:` / `ERROR:` block per failing test or subtest (a subtest's block ends
its title with the parameters, `(i=1)`), then `Ran N tests` and `OK` / `FAILED (failures=F,
errors=E, skipped=S, expected failures=X, unexpected successes=U)`. Counted as tests: a test with
failing subtests is one failed test (each failing subtest is still a failure of its own, with its
parameters); errors and unexpected successes are failed; skips and expected failures skipped.
"""

from __future__ import annotations

import re

from ...test_counts import TestSummary
from ..result_models import ParsedRun, TestCase
from .common import error_summary, make_failure

_RAN = re.compile(r"^Ran (?P<n>\d+) tests? in [\d.]+s\s*$", re.M)
_RESULT = re.compile(r"^(?P<word>OK|FAILED)(?: \((?P<body>[^)]*)\))?\s*$", re.M)
_BLOCK = re.compile(
    r"^={50,}\n(?P<kind>FAIL|ERROR|UNEXPECTED SUCCESS): (?P<method>\S+) \((?P<id>[^)\s]+)\)(?: (?P<params>[(\[][^\n]*))?\n"
    r"(?:-{50,}\n)?(?P<body>.*?)(?=^={50,}\n|^-{50,}\nRan \d+ test|\Z)",
    re.M | re.S,
)
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)', re.M)


def parse_unittest_text(output: str) -> ParsedRun:
    run = ParsedRun(source="text")
    ran = list(_RAN.finditer(output))
    if not ran:
        return run
    failed_ids: dict[str, str | None] = {}
    for block in _BLOCK.finditer(output):
        test_id = block["id"]
        body = block["body"].strip()
        frames = [m for m in _FRAME.finditer(body) if m["func"] == block["method"]] or list(_FRAME.finditer(body))
        file = frames[-1]["file"] if frames else None
        line = int(frames[-1]["line"]) if frames else None
        message = (
            error_summary(_exception_lines(body), 4) if block["kind"] != "UNEXPECTED SUCCESS" else "unexpected success"
        )
        failure = make_failure(test_id, file=file, line=line, message=message, detail=body)
        if block["params"]:
            failure.subtest = block["params"].strip()
        run.failures.append(failure)
        failed_ids.setdefault(test_id, file)
    for test_id, file in failed_ids.items():
        run.cases.append(TestCase(name=test_id, file=file, status="failed", selector=test_id))
    total = int(ran[-1]["n"])
    words = _result_words(output[ran[-1].end() :])
    skipped = words.get("skipped", 0) + words.get("expected failures", 0)
    failed = len(failed_ids) or min(total, sum(words.get(k, 0) for k in ("failures", "errors", "unexpected successes")))
    passed = max(0, total - failed - skipped)
    run.counts = TestSummary(total=passed + failed + skipped, passed=passed, failed=failed, skipped=skipped)
    run.summary_counts = run.counts
    run.summary_label = "unittest's `Ran N tests` summary"
    run.subtests_failed = sum(1 for f in run.failures if f.subtest)
    return run


def _result_words(text: str) -> dict[str, int]:
    result = _RESULT.search(text)
    if not result or not result["body"]:
        return {}
    return {key.strip(): int(value) for key, value in re.findall(r"([a-z ]+)=(\d+)", result["body"])}


def _exception_lines(body: str) -> str:
    """The exception lines after the traceback (not the quoted source lines inside it)."""
    lines = body.splitlines()
    last_frame = max((i for i, ln in enumerate(lines) if _FRAME.match(ln)), default=-1)
    tail = lines[last_frame + 2 :] if last_frame >= 0 else lines
    return "\n".join(tail) or body
