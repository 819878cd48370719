"""Turn what was parsed plus how the process ended into the final result.

Counting: setup/teardown/collection errors are failed cases, skip/xfail/todo
skipped, total = passed + failed + skipped. A non-zero exit that no failing test
explains is always a synthetic failure carrying the lines that say why (a coverage threshold, "no
test files found", an error) and the runner's last lines; `crashed`
means the runner produced no test result at all. A timeout adds a failure for the
test that was running (when known). ok = exit 0, nothing failed, something ran,
no timeout.
"""

from __future__ import annotations

from ..test_counts import TestSummary
from .frameworks import Framework
from .parsers.common import make_failure, run_failure_message
from .process import ProcessOutcome
from .result_models import CountsSource, FrameworkName, ParsedRun, SubtestCounts, TestCase, TestFailure, TestRunResult


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
    summary = _summary(cases, parsed.counts, failures)
    warnings: list[str] = []
    counts_source: CountsSource = parsed.source if summary.total > 0 else "none"
    if parsed.summary_counts is not None and parsed.summary_counts.total > 0:
        settled = _settle(summary, parsed.summary_counts, failures)
        if settled != summary:
            if summary.total:
                warnings.append(_disagreement(summary, settled, parsed.summary_label))
            counts_source = "summary"
        summary = settled
    ran_something = summary.total > 0
    crashed = unnamed = False
    if outcome.start_error is not None:
        crashed = True
        _add(cases, failures, make_failure("could not start the test command", message=outcome.start_error))
    elif outcome.timed_out:
        running = parsed.running or TestCase(name=f"{framework or 'test command'}: run", status="failed")
        message = f"did not finish within {timeout:g} s; the process group was killed"
        _add(cases, failures, make_failure(running.name, file=running.file, line=running.line, message=message),
             selector=running.selector)  # fmt: skip
    elif outcome.exit_code not in (0, None) and summary.failed == 0 and not outcome.cancelled:
        # always a failure of the run, "no tests found" included: the exit says the run failed and no test says why
        crashed = not ran_something
        # an output that names no test (a plain `node test.js` stopping at its first failed assert) does not say
        # how many checks ran before it stopped: not complete, unless the runner said it found no test
        unnamed = crashed and not (variant is not None and variant.no_tests(output, outcome.exit_code))
        _add(cases, failures, _runner_failure(variant, output, outcome.exit_code))
    added = len(failures) - len(parsed.failures)  # synthetic failures: each one more failed case
    if added:
        summary = TestSummary(total=summary.total + added, passed=summary.passed, failed=summary.failed + added,
                              skipped=summary.skipped)  # fmt: skip
    unparsed = (
        not ran_something and outcome.start_error is None and not outcome.timed_out and not outcome.cancelled
        and outcome.exit_code == 0 and not (variant is not None and variant.no_tests(output, outcome.exit_code))
    )  # fmt: skip
    if unparsed:
        warnings.append("the command succeeded but no test result could be read from its output: the counts are "
                        "unknown, not zero (see output_tail); pass --framework or a --command whose runner is known")  # fmt: skip
    complete = not (outcome.timed_out or outcome.cancelled or outcome.start_error is not None
                    or (outcome.exit_code is not None and outcome.exit_code < 0))  # fmt: skip
    if not complete and ran_something:
        warnings.append("the run stopped before it finished: the counts are the tests its output proves (a file's "
                        "tests count once the runner reported that file); tests that never reported are not counted")  # fmt: skip
    elif parsed.stopped and ran_something:
        complete = False
        warnings.append(f"{parsed.stopped} before the run finished: the counts are the tests its output proves; "
                        "whether tests after the stopped one were left unrun is not printed")  # fmt: skip
    elif parsed.unreported and ran_something:
        complete = False
        warnings.append(f"{parsed.unreported}: the number of passed tests is unknown; `passed` counts only the tests "
                        "the output names")  # fmt: skip
    elif unnamed:
        complete = False
        warnings.append("the output names no test, so how many tests or checks ran (and passed) before the run failed "
                        "is unknown: `passed` counts only the tests the output names")  # fmt: skip
    ok = outcome.exit_code == 0 and summary.failed == 0 and summary.total > 0 and not outcome.timed_out
    subtests = None
    if parsed.subtests_failed or parsed.subtests_passed:
        subtests = SubtestCounts(passed=parsed.subtests_passed, failed=parsed.subtests_failed)
    return TestRunResult(
        ok=ok, framework=framework, command=command, exit_code=outcome.exit_code, duration_ms=outcome.duration_ms,
        timed_out=outcome.timed_out, crashed=crashed, summary=summary, failures=failures, cases=cases,
        counts_source=counts_source, unparsed=unparsed, warnings=warnings, subtests=subtests,
        complete=complete,
    )  # fmt: skip


def _settle(counted: TestSummary, printed: TestSummary, failures: list[TestFailure]) -> TestSummary:
    """The runner's own totals (printed last) win over what was counted, but never fewer failures than
    the failing tests named, and never a total of 0 when tests were counted."""
    if counted == printed or printed.total == 0:
        return counted
    failed = max(printed.failed, len(_failing_names(failures)))
    passed, skipped = printed.passed, printed.skipped
    return TestSummary(total=passed + failed + skipped, passed=passed, failed=failed, skipped=skipped)


def _disagreement(counted: TestSummary, settled: TestSummary, label: str) -> str:
    def show(s: TestSummary) -> str:
        return f"{s.total} total ({s.passed} passed, {s.failed} failed, {s.skipped} skipped)"

    return f"the test report counted {show(counted)} but {label or 'the runner'} says {show(settled)}: using the runner's totals"


def _failing_names(failures: list[TestFailure]) -> set[str]:
    return {f.name for f in failures}


def _summary(cases: list[TestCase], counts: TestSummary | None, failures: list[TestFailure]) -> TestSummary:
    passed = sum(c.status == "passed" for c in cases)
    failed = sum(c.status == "failed" for c in cases)
    skipped = sum(c.status == "skipped" for c in cases)
    if counts is not None:  # a summary line counts tests the output did not name one by one
        passed, failed, skipped = max(passed, counts.passed), max(failed, counts.failed), max(skipped, counts.skipped)
    failed = max(failed, len(_failing_names(failures)))  # failing subtests of one test count once
    return TestSummary(total=passed + failed + skipped, passed=passed, failed=failed, skipped=skipped)


def _add(cases: list[TestCase], failures: list[TestFailure], failure: TestFailure, selector: str | None = None) -> None:
    failures.append(failure)
    cases.append(TestCase(name=failure.name, file=failure.file, line=failure.line, status="failed", selector=selector))


def _runner_failure(variant: Framework | None, output: str, exit_code: int | None) -> TestFailure:
    if variant is not None:
        return variant.runner_error(output, exit_code)
    return make_failure("test command failed", message=run_failure_message(output, exit_code), detail=output[-8000:])
