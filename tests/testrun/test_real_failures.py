"""Issues 21/23 on minimal projects: true values and hints, unittest, TAP, npm script chains, the unparsed state."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from graphlemon.testrun import run_tests
from graphlemon.testrun.npm_scripts import script_of_command, script_runners
from graphlemon.testrun.parsers.mocha_text import parse_mocha_text
from graphlemon.testrun.parsers.tap import parse_tap
from graphlemon.testrun.value_window import first_difference, window

from .helpers import by_name


def _project(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return tmp_path


PYTEST_PROJECT = {
    "conftest.py": "",
    "tests/__init__.py": "",
    "tests/helpers.py": """
        def assert_equal(expected, result):
            assert expected == result

        def check(flag):
            assert flag
    """,
    "tests/test_items.py": """
        import pytest
        from tests.helpers import assert_equal, check

        def is_ready():
            return False

        def test_import_guard_then_helper_check():
            try:
                import json  # noqa: F401
            except ImportError:
                pytest.skip("no json")
            check(is_ready())

        def test_helper_values():
            assert_equal("alpha", "beta")

        def test_long_strings():
            result = "x" * 400 + "b"
            assert result == "x" * 400 + "c"

        def test_long_lists():
            result = list(range(100))
            assert result == list(range(99)) + [1000]
    """,
}


@pytest.mark.system
def test_pytest_hints_and_values_come_from_what_happened(tmp_path: Path):
    result = run_tests(_project(tmp_path, PYTEST_PROJECT))
    assert (result.summary.total, result.summary.failed) == (4, 4)

    guard = by_name(result, "tests/test_items.py::test_import_guard_then_helper_check")
    assert "ImportError" not in guard.hint  # the guard is quoted source, nothing raised it
    assert "`assert flag`" in guard.hint and "tests/helpers.py:6" in guard.hint and "not reported" in guard.hint

    helper = by_name(result, "tests/test_items.py::test_helper_values")  # a module pytest does not rewrite
    assert (helper.expected, helper.got) == ("'alpha'", "'beta'")  # by the helper's parameter names

    strings = by_name(result, "tests/test_items.py::test_long_strings")
    assert "character 401" in strings.hint
    assert strings.difference_at == 402  # in the shown repr, after its opening quote
    assert len(strings.expected) <= 300 and strings.expected.endswith("c'") and strings.got.endswith("b'")

    lists = by_name(result, "tests/test_items.py::test_long_lists")
    assert lists.expected != lists.got and "1000" in lists.expected and "99]" in lists.got
    assert "letter case" not in lists.hint and "1000" in lists.hint


def test_values_window_keeps_the_first_difference():
    a, b = "x" * 400 + "b", "x" * 400 + "c"
    assert first_difference(a, b) == 400
    shown = window(a, 400)
    assert len(shown) <= 300 and shown.startswith("…") and shown.endswith("b")
    assert window("short", 0) == "short"


UNITTEST_PROJECT = {
    "tests/__init__.py": "",
    "tests/test_calc.py": """
        import unittest

        class Calc(unittest.TestCase):
            def test_add(self):
                self.assertEqual(1 + 1, 2)

            def test_even(self):
                for i in range(4):
                    with self.subTest(i=i):
                        self.assertEqual(i % 2, 0)

            @unittest.skip("later")
            def test_later(self):
                pass

            @unittest.expectedFailure
            def test_known_bug(self):
                self.assertEqual(1, 2)
    """,
}


@pytest.mark.system
def test_unittest_runs_counts_tests_and_lists_failing_subtests(tmp_path: Path):
    project = _project(tmp_path, UNITTEST_PROJECT)
    result = run_tests(project, command=f"{sys.executable} -m unittest discover -s tests -t .")
    assert result.framework == "unittest" and not result.ok
    assert (result.summary.total, result.summary.passed, result.summary.failed, result.summary.skipped) == (4, 1, 1, 2)
    assert [f.subtest for f in result.failures] == ["(i=1)", "(i=3)"]
    assert all(f.name == "tests.test_calc.Calc.test_even" for f in result.failures)
    assert result.failures[0].file == "tests/test_calc.py" and result.failures[0].line == 11
    assert (result.failures[0].expected, result.failures[0].got) == ("0", "1")
    assert result.subtests is not None and result.subtests.failed == 2


@pytest.mark.system
def test_unittest_green_suite_is_ok_with_its_count(tmp_path: Path):
    project = _project(tmp_path, {"tests/__init__.py": "", "tests/test_ok.py": UNITTEST_PROJECT["tests/test_calc.py"]})
    (project / "tests/test_ok.py").write_text(
        "import unittest\n\nclass T(unittest.TestCase):\n" + "".join(f"    def test_{i}(self):\n        pass\n" for i in range(7))
    )  # fmt: skip
    result = run_tests(project, framework="unittest")
    assert result.ok and result.summary.total == 7 and result.summary.passed == 7
    assert result.counts_source == "text"


@pytest.mark.system
def test_a_green_command_whose_output_cannot_be_read_is_unparsed_not_zero(tmp_path: Path):
    result = run_tests(tmp_path, command="echo 'everything fine'")
    assert result.unparsed and not result.ok and not result.crashed
    assert result.summary.total == 0 and result.warnings and "unknown, not zero" in result.warnings[0]
    assert "everything fine" in result.output_tail


TAP = """\
> pkg@1.0.0 tests-only
> tape 'test/**/*.js'

TAP version 13
# parse numbers
ok 1 should be equal
not ok 2 should be equal
  ---
    operator: equal
    expected: 3
    actual:   4
    at: Test.<anonymous> (/tmp/pkg/test/num.js:10:7)
  ...
# more numbers
not ok 3 should be equal
  ---
    operator: equal
    expected: 5
    actual:   6
    at: Test.<anonymous> (/tmp/pkg/test/num.js:14:7)
  ...
ok 4 later # SKIP

1..4
# tests 4
# pass  1
# skip  1
# fail  2
"""


def test_tap_stream_from_tape_is_read_with_values_and_locations():
    parsed = parse_tap(TAP)
    assert [c.status for c in parsed.cases] == ["passed", "failed", "failed", "skipped"]
    first = parsed.failures[0]
    assert first.name == "parse numbers > should be equal (#2)"  # repeated assertion texts keep their number
    assert (first.file, first.line, first.expected, first.got) == ("/tmp/pkg/test/num.js", 10, "3", "4")
    assert parsed.summary_counts is not None and parsed.summary_counts.failed == 2


def test_npm_script_chains_name_the_runners_they_start(tmp_path: Path):
    scripts = {"eslint": "eslint index.js spec", "test-spec": "mocha spec -R spec",
               "test": "npm run eslint && nyc npm run test-spec", "tests-only": "nyc tape 'test/**/*.js'",
               "pretest": "npm run lint", "lint": "eslint ."}  # fmt: skip
    (tmp_path / "package.json").write_text(json.dumps({"scripts": scripts}))
    assert script_runners(tmp_path, "test") == ["eslint", "mocha"]
    assert script_runners(tmp_path, "tests-only") == ["tape"]
    assert script_of_command("npm run tests-only") == "tests-only" and script_of_command("npm test") == "test"


def test_mocha_text_keeps_relative_paths():
    output = """
  0 passing (5ms)
  1 failing

  1) traverse
       visits every schema:
     AssertionError: expected 1 to equal 2
      at Context.<anonymous> (test/traverse.js:18:12)
      at process.processImmediate (node:internal/timers:476:21)
"""
    parsed = parse_mocha_text(output)
    assert parsed.failures[0].file == "test/traverse.js" and parsed.failures[0].line == 18
