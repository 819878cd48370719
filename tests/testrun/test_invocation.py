"""The project's own test command: `scripts.test` decides the runner and where it runs (the package root),
a framework only in devDependencies does not override it, and a non-zero exit no failing test explains is
always a failure of the run carrying the lines that say why (issue 46's three invocation defects)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from graphlemon.testrun import run_tests
from graphlemon.testrun.detect import detect_framework
from graphlemon.testrun.frameworks import get_framework
from graphlemon.testrun.process import ProcessOutcome
from graphlemon.testrun.reconcile import reconcile
from graphlemon.testrun.result_models import ParsedRun

from .helpers import FIXTURES, copy_fixture


def write(path: Path, text: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# --- which runner, and where -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("package", "expected"),
    [
        ({"scripts": {"test": "mocha"}, "devDependencies": {"mocha": "10", "vitest": "3"}}, "mocha"),  # vitest for benchmarks
        ({"scripts": {"test": "npm run lint && nyc npm run spec", "spec": "mocha -R spec", "lint": "eslint ."},
          "devDependencies": {"vitest": "3", "jest": "29"}}, "mocha"),
        ({"scripts": {"test": "c8 node --test"}, "devDependencies": {"jest": "29"}}, "node"),
        ({"scripts": {"test": "tape test/*.js"}, "devDependencies": {"vitest": "3"}}, "npm-test"),
        ({"scripts": {"test": "node scripts/run-tests.js"}, "devDependencies": {"mocha": "10"}}, "npm-test"),
        ({"devDependencies": {"mocha": "10", "vitest": "3"}}, "vitest"),  # no test script: the dependencies decide
    ],
)  # fmt: skip
def test_the_test_script_decides_the_runner_not_the_dev_dependencies(tmp_path, package, expected):
    write(tmp_path / "package.json", json.dumps(package))
    assert detect_framework(tmp_path) == (expected, tmp_path)


def test_a_named_js_framework_runs_in_the_package_root_not_its_test_folder(tmp_path):
    write(tmp_path / "package.json", json.dumps({"scripts": {"test": "tape test/*.js"}}))
    write(tmp_path / "test" / "cwd.test.js")
    assert detect_framework(tmp_path, "node") == ("node", tmp_path)
    write(tmp_path / "packages" / "web" / "package.json", json.dumps({"devDependencies": {"vitest": "3"}}))
    assert detect_framework(tmp_path, "vitest") == ("vitest", tmp_path / "packages" / "web")


@pytest.mark.system
def test_node_tests_that_read_the_working_directory_pass_as_under_npm_test(tmp_path):
    project = tmp_path / "pkg"
    write(project / "package.json", json.dumps({"scripts": {"test": "tape test/*.js"}}))
    write(project / "fixtures.json", '{"ok": true}')
    write(project / "test" / "cwd.test.js", (
        "const test = require('node:test');\nconst assert = require('node:assert');\nconst fs = require('node:fs');\n"
        "test('reads its fixture from the package root', () => {\n"
        "  assert.strictEqual(JSON.parse(fs.readFileSync('fixtures.json', 'utf8')).ok, true);\n});\n"
    ))  # fmt: skip
    result = run_tests(project, framework="node", timeout=60)
    assert result.framework == "node" and result.ok, (result.failures, result.output_tail)
    assert (result.summary.passed, result.summary.failed) == (1, 0)


@pytest.fixture
def mocha_with_vitest_listed(tmp_path):
    """The mocha fixture whose package.json also lists vitest (not installed: only listed, for benchmarks)."""
    project = copy_fixture("mocha_project", tmp_path)
    package = json.loads((project / "package.json").read_text())
    package["devDependencies"]["vitest"] = "^3.2.4"
    (project / "package.json").write_text(json.dumps(package))
    return project


@pytest.mark.system
def test_npm_test_is_mocha_even_with_vitest_in_dev_dependencies(mocha_with_vitest_listed):
    result = run_tests(mocha_with_vitest_listed, timeout=120)
    assert result.framework == "mocha" and result.command == "npm test"
    assert result.summary.total > 0 and result.summary.failed >= 1 and not result.crashed


# --- a non-zero exit no failing test explains ----------------------------------------------------------


def test_no_test_files_found_with_a_failing_exit_is_a_failure_of_the_run():
    output = (
        " RUN  v3.2.4 /p\n\nNo test files found, exiting with code 1\n\ninclude: **/*.{test,spec}.?(c|m)[jt]s?(x)\n"
    )
    outcome = ProcessOutcome(exit_code=1, duration_ms=10)
    result = reconcile(ParsedRun(), outcome, get_framework("vitest"), output, framework="vitest", command="vitest run",
                       timeout=60)  # fmt: skip
    assert not result.ok and result.summary.failed == 1 and len(result.failures) == 1
    failure = result.failures[0]
    assert failure.name == "vitest: run failed" and "No test files found" in failure.message


def test_no_tests_with_a_zero_exit_stays_a_run_that_is_not_ok_without_a_failure():
    outcome = ProcessOutcome(exit_code=0, duration_ms=10)
    output = "No test files found"
    result = reconcile(ParsedRun(), outcome, get_framework("vitest"), output, framework="vitest", command="vitest run",
                       timeout=60)  # fmt: skip
    assert not result.ok and result.failures == [] and result.summary.total == 0


@pytest.fixture
def jest_with_threshold(tmp_path):
    """A jest project with a 100% line-coverage threshold, one module half tested (jest from the fixture's modules)."""
    project = tmp_path / "cov"
    write(project / "package.json", json.dumps({
        "name": "cov", "private": True, "scripts": {"test": "jest"},
        "jest": {"collectCoverage": True, "coverageThreshold": {"global": {"lines": 100}}},
    }))  # fmt: skip
    write(project / "src" / "math.js", "function add(a, b) {\n  return a - b;\n}\nfunction sub(a, b) {\n  return a - b;\n}\n"
          "module.exports = { add, sub };\n")  # fmt: skip
    write(project / "__tests__" / "add.test.js", "const { add } = require('../src/math');\n"
          "test('adds', () => { expect(add(2, 3)).toBe(5); });\n")  # fmt: skip
    write(project / "__tests__" / "sub.test.js", "const { sub } = require('../src/math');\n"
          "test('subtracts', () => { expect(sub(3, 2)).toBe(1); });\n")  # fmt: skip
    (project / "node_modules").symlink_to(FIXTURES / "jest_project" / "node_modules", target_is_directory=True)
    return project


@pytest.mark.system
def test_last_failed_under_a_coverage_threshold_keeps_the_line_that_says_why(jest_with_threshold):
    project = jest_with_threshold
    first = run_tests(project, timeout=120)
    assert first.framework == "jest" and [f.name for f in first.failures] == ["adds"], first.output_tail
    math = project / "src" / "math.js"
    math.write_text(math.read_text().replace("return a - b;\n}\nfunction sub", "return a + b;\n}\nfunction sub"))
    rerun = run_tests(project, last_failed=True, timeout=120)
    assert rerun.exit_code != 0 and rerun.summary.passed == 1 and not rerun.ok
    failure = rerun.failures[-1]
    assert failure.name == "jest: run failed"
    assert "coverage threshold for lines (100%) not met" in failure.message, failure.message
    assert failure.hint_confidence == "specific" and "threshold (100%)" in failure.hint


@pytest.fixture(autouse=True)
def _node_modules_present():
    for name in ("jest_project", "mocha_project"):
        if not (FIXTURES / name / "node_modules").is_dir():
            pytest.fail(f"JS fixture dependencies missing in {name}: run scripts/install-fixtures.sh (make test does)")
    if shutil.which("node") is None:
        pytest.fail("node is not installed")
