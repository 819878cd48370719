"""vitest 1.x output, the `--json` contract's compaction (output_tail only when needed, value windows), and the
CLI's test-only start-up path."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from graphlemon.cli import full_app, lean_test_app
from graphlemon.testrun.parsers.jest_json import parse_jest_json
from graphlemon.testrun.parsers.vitest_text import parse_vitest_text
from graphlemon.testrun.result_models import TestFailure, TestRunResult
from graphlemon.testrun.value_window import SHOWN_CHARS, shorten_values

from .helpers import FIXTURES

SAMPLES = FIXTURES / "reports"
# @tanstack/form-core 0.10.0 under vitest 1.0.4 with a planted bug (tests/testrun/test_real_suites.py)
FAILING = {
    ("src/tests/FieldApi.spec.ts", "field api > should swap a value from an array value correctly"),
    ("src/tests/FormApi.spec.ts", "form api > should swap an array field's value"),
}


def test_vitest_1_text_names_each_failure_from_its_fail_section():
    """vitest 1.x lists a failed test only as `❯ FILE > suite > name` (no `×` line, two spaces before the
    file's count): the `FAIL  FILE > suite > name` sections name every failure, with its line and values."""
    run = parse_vitest_text((SAMPLES / "vitest1.output.txt").read_text())
    assert run.counts is not None and (run.counts.passed, run.counts.failed, run.counts.total) == (54, 2, 56)
    assert {(f.file, f.name) for f in run.failures} == FAILING
    swap = next(f for f in run.failures if f.file == "src/tests/FieldApi.spec.ts")
    assert swap.line == 154 and swap.expected == "[ 'two', 'one' ]" and swap.got == "[ 'two', 'one', 'one', 'two' ]"


def test_vitest_1_report_drops_the_unnamed_file_suite_from_names():
    """vitest 1.0's JSON puts an empty title first in ancestorTitles (['', 'field api']): no leading ` > `."""
    run = parse_jest_json((SAMPLES / "vitest1.report.txt").read_text())
    assert {(f.file.removeprefix("/project/"), f.name) for f in run.failures} == FAILING  # made relative later
    assert not any(c.name.startswith((" ", ">")) for c in run.cases) and len(run.cases) == 56


def _result(**changes) -> TestRunResult:
    failure = TestFailure(name="t", file="a.py", line=3, message="assert 1 == 2", expected="2", got="1", hint="h")
    fields = dict(ok=False, framework="pytest", command="pytest", exit_code=1, duration_ms=5, failures=[failure],
                  output_tail="raw output", counts_source="report")  # fmt: skip
    return TestRunResult(**{**fields, **changes})


def test_the_json_leaves_out_the_tail_only_when_the_result_explains_itself():
    assert json.loads(_result().contract_json())["output_tail"] == ""
    assert json.loads(_result(ok=True, exit_code=0, failures=[]).contract_json())["output_tail"] == ""
    # a green run whose counts were reconciled: its warning says all a reader needs, not 3 kB of output
    green = _result(ok=True, exit_code=0, failures=[], warnings=["the report counted 9 but mocha says 10"])
    assert json.loads(green.contract_json())["output_tail"] == ""
    kept = [
        _result(crashed=True), _result(unparsed=True), _result(timed_out=True), _result(counts_source="none"),
        _result(failures=[]),  # a failing run with no failure named
        _result(failures=[TestFailure(name="t", message="failed")]),  # a parser's placeholder, not a reason
        _result(warnings=["mocha printed 5 failing, 4 were reported"]),
    ]  # fmt: skip
    for result in kept:
        assert json.loads(result.contract_json())["output_tail"] == "raw output", result
    assert _result().output_tail == "raw output"  # the Python result (ledger, integrator) keeps it


def test_values_are_windows_around_the_difference_and_the_message_beside_them_is_shorter():
    exp = "x" * 1000 + "EXPECTED" + "y" * 1000
    got = "x" * 1000 + "GOT" + "y" * 1000
    failure = TestFailure(name="t", message="m" * 600, expected=exp, got=got)
    shorten_values(failure)
    assert len(failure.expected) <= SHOWN_CHARS and "EXPECTED" in failure.expected and "GOT" in failure.got
    assert failure.difference_at == 1001 and len(failure.message) <= 300
    alone = TestFailure(name="t", message="m" * 600)
    shorten_values(alone)
    assert len(alone.message) == 600  # no values: the message is all there is


def test_the_test_command_runs_on_an_app_that_holds_only_it():
    small, full = lean_test_app(), full_app()
    assert [c.name for c in small.registered_commands] == ["test"] and not small.registered_groups
    assert len(full.registered_commands) > 5 and full.registered_groups


@pytest.mark.system
def test_graphlemon_test_help_and_errors_are_the_full_apps(tmp_path: Path):
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "graphlemon", *args], capture_output=True, text=True)

    fast = run("test", "--help")
    code = "import sys; from graphlemon.cli import full_app; full_app()(['test', '--help'], prog_name='graphlemon')"
    full = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert fast.returncode == 0 and fast.stdout == full.stdout and "--last-failed" in fast.stdout
    bad = run("test", "--project", str(tmp_path), "--no-such-option")
    assert bad.returncode == 2 and "error[INVALID_PARAM]" in bad.stderr and "Traceback" not in bad.stderr
    assert "init" in run("--help").stdout  # anything else: every command
