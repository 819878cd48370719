"""Turn what was parsed plus how the process ended into the final result.

Counting: setup/teardown/collection errors are failed cases, skip/xfail/todo
skipped, total = passed + failed + skipped. A non-zero exit that no failing test
explains becomes a synthetic failure carrying the runner's error text; `crashed`
means the runner produced no test result at all. A timeout adds a failure for the
test that was running (when known). ok = exit 0, nothing failed, something ran,
no timeout.
"""

from __future__ import annotations

from ..models import TestSummary
from .frameworks import Framework
from .models import FrameworkName, ParsedRun, TestCase, TestFailure, TestRunResult
from .parsers.common import error_summary, make_failure
from .process import ProcessOutcome


def reconcile(
    parsed: ParsedRun,
    outcome: ProcessOutcome,
    variant: Framework | None,
    output: str,
    *,
    framework: FrameworkName | None,
    command: str,
    timeout: float,
) -> TestRunResult:
    cases = list(parsed.cases)
    failures = list(parsed.failures)
    summary = _summary(cases, parsed.counts, len(failures))
    ran_something = summary.total > 0
    crashed = False
    if outcome.start_error is not None:
        crashed = True
        _add(cases, failures, make_failure("could not start the test command", message=outcome.start_error))
    elif outcome.timed_out:
        running = parsed.running or TestCase(name=f"{framework or 'test command'}: run", status="failed")
        message = f"did not finish within {timeout:g} s; the process group was killed"
        _add(cases, failures, make_failure(running.name, file=running.file, line=running.line, message=message),
             selector=running.selector)  # fmt: skip
    elif outcome.exit_code not in (0, None) and summary.failed == 0 and not outcome.cancelled:
        if not (summary.total == 0 and variant is not None and variant.no_tests(output, outcome.exit_code)):
            crashed = not ran_something
            _add(cases, failures, _runner_failure(variant, output, outcome.exit_code))
    summary = _summary(cases, parsed.counts, len(failures))
    ok = outcome.exit_code == 0 and summary.failed == 0 and summary.total > 0 and not outcome.timed_out
    return TestRunResult(
        ok=ok, framework=framework, command=command, exit_code=outcome.exit_code, duration_ms=outcome.duration_ms,
        timed_out=outcome.timed_out, crashed=crashed, summary=summary, failures=failures, cases=cases,
    )  # fmt: skip


def _summary(cases: list[TestCase], counts: TestSummary | None, failure_count: int) -> TestSummary:
    passed = sum(c.status == "passed" for c in cases)
    failed = sum(c.status == "failed" for c in cases)
    skipped = sum(c.status == "skipped" for c in cases)
    if counts is not None:  # a summary line counts tests the output did not name one by one
        passed, failed, skipped = max(passed, counts.passed), max(failed, counts.failed), max(skipped, counts.skipped)
    failed = max(failed, failure_count)
    return TestSummary(total=passed + failed + skipped, passed=passed, failed=failed, skipped=skipped)


def _add(cases: list[TestCase], failures: list[TestFailure], failure: TestFailure, selector: str | None = None) -> None:
    failures.append(failure)
    cases.append(TestCase(name=failure.name, file=failure.file, line=failure.line, status="failed", selector=selector))


def _runner_failure(variant: Framework | None, output: str, exit_code: int | None) -> TestFailure:
    if variant is not None:
        return variant.runner_error(output, exit_code)
    summary = error_summary(output) or f"the command exited with code {exit_code}"
    return make_failure("test command failed", message=summary, detail=output[-8000:])
