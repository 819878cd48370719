"""Hints speak only in the voice the evidence has (issue 46, hints3): an error the unit raised on purpose or the test
expected is not the runtime's diagnosis; a reporter's value is parsed by its grammar or not claimed; facts-only
hints carry what the runner printed; the kind of difference between two established values is named."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphlemon.testrun import run_tests
from graphlemon.testrun.assertions import compared_in, whole_value
from graphlemon.testrun.hints import hint_for
from graphlemon.testrun.parsers.node_text import parse_node_text
from graphlemon.testrun.result_models import TestFailure

from .helpers import by_name, copy_fixture


def _hint(message: str, detail: str = "", *, root: Path | None = None, file: str | None = None,
          line: int | None = None, **values: str) -> tuple[str, str]:  # fmt: skip
    failure = TestFailure(name="t", file=file, line=line, message=message, detail=detail, **values)
    hint = hint_for(failure, root)
    return hint.text, hint.confidence


def test_a_thrown_message_compared_by_assert_throws_is_not_a_division_by_zero():
    diff = ("AssertionError [ERR_ASSERTION]: Expected values to be strictly deep-equal:\n+ actual - expected\n\n"
            "  Comparison {\n+   message: 'Division by zero',\n-   message: 'Division by Zero',\n    name: 'Error'\n  }")
    text, confidence = _hint(diff.splitlines()[0], diff)
    assert "divisor" not in text and "Division by zero (" not in text
    assert "letter case" in text and confidence == "specific"


def test_the_units_own_raise_is_not_the_runtimes_voice(tmp_path):
    (tmp_path / "calc.py").write_text("def mean(xs):\n    if not xs:\n        raise ZeroDivisionError('no items')\n")
    (tmp_path / "other.py").write_text("def mean(xs):\n    return sum(xs) / len(xs)\n")
    for module, line, speaks in (("calc.py", 3, False), ("other.py", 2, True)):
        detail = (f'Traceback (most recent call last):\n  File "{tmp_path}/test_calc.py", line 4, in test_mean\n'
                  f'    mean([])\n  File "{tmp_path}/{module}", line {line}, in mean\n    x\n'
                  "ZeroDivisionError: no items")  # fmt: skip
        text, _ = _hint("ZeroDivisionError: no items", detail, root=tmp_path, file="test_calc.py", line=4)
        assert ("Division by zero" in text) is speaks, (module, text)


def test_words_of_a_thrown_error_are_not_the_runtimes_diagnosis():
    # the unit's own message says "division by zero", in words no runtime uses: no runtime rule reads it
    text, confidence = _hint("Error: division by zero is not allowed here")
    assert "Division by zero" not in text and confidence == "facts"


def test_an_error_the_tests_own_statement_expects_is_the_units_voice(tmp_path):
    (tmp_path / "t.test.js").write_text("const x = 1;\nassert.throws(() => fetchIt(), /timed out/);\n")
    text, _ = _hint("Error: request timed out", root=tmp_path, file="t.test.js", line=2)
    assert "time limit" not in text


LOCALE_JS = """function notFound(offset) {
  return new RangeError(`locale table timeout: offset ${offset} not found in index`);
}
function lookup(offset) {
  throw notFound(offset);
}
module.exports = { lookup };
"""
TIMEOUT_TEST_JS = """const { lookup } = require("../src/locale");

test("looks up an offset", () => {
  expect(lookup(10)).toBe("x");
});

test("waits for a promise that never settles", () => new Promise(() => {}), 300);
"""


@pytest.mark.system
def test_a_timeout_hint_rests_on_the_runners_own_report_not_a_word_of_a_thrown_error(tmp_path):
    # jest for real: the code throws at once with "timeout" in its own message (no time limit was involved; made by an
    # error factory, so no raise statement gives the voice away), and a test jest itself stops at its 300 ms limit
    project = copy_fixture("jest_project", tmp_path)
    (project / "src" / "locale.js").write_text(LOCALE_JS)
    (project / "__tests__" / "locale.test.js").write_text(TIMEOUT_TEST_JS)
    result = run_tests(project, ["__tests__/locale.test.js"], timeout=120)
    assert result.framework == "jest" and result.summary.failed == 2, result
    thrown = by_name(result, "looks up an offset")
    assert "time limit" not in thrown.hint and "timeout report" not in thrown.hint, thrown.hint
    assert "RangeError" in thrown.hint and "locale table timeout" in thrown.hint, thrown.hint
    stopped = by_name(result, "waits for a promise that never settles")
    assert stopped.hint_confidence == "specific", stopped.hint
    assert stopped.hint.startswith("A step did not finish within its time limit (300 ms: the runner's own timeout "
                                   "report)"), stopped.hint  # fmt: skip


NESTED = """TAP version 13
# Subtest: keeps the first
not ok 1 - keeps the first
  ---
  duration_ms: 1.2
  location: '/p/test/index.test.js:131:11'
  failureType: 'testCodeFailure'
  error: |-
    Expected values to be loosely deep-equal:
  code: 'ERR_ASSERTION'
  name: 'AssertionError'
  expected:
    charset: 'utf-8'
  actual:
    charset: 'latin1'
  operator: 'deepEqual'
  ...
# Subtest: throws
not ok 2 - throws
  ---
  duration_ms: 0.5
  location: '/p/test/index.test.js:212:11'
  error: 'bad'
  name: 'AssertionError'
  expected:
  error: 'invalid parameter format'
  name: 'TypeError'
  actual:
  error: 'invalid parameter format'
  name: 'RangeError'
  operator: 'throws'
  ...
1..2
"""


def test_node_tap_yaml_is_read_by_a_yaml_parser_and_a_block_that_repeats_keys_gives_no_values():
    run = parse_node_text(NESTED)
    nested, repeated = run.failures
    assert (nested.expected, nested.got) == ('{"charset": "utf-8"}', '{"charset": "latin1"}')
    assert nested.line == 131
    assert repeated.expected is None and repeated.got is None and repeated.line == 212
    assert "name: 'RangeError'" in repeated.message  # the block as printed is the message
    text, confidence = _hint(repeated.message, repeated.detail)
    assert confidence == "facts" and "TypeError was raised" not in text and "RangeError" in text


def test_a_sentence_gives_its_values_only_when_each_is_one_whole_value():
    ram = "RAMInBytes(\"32k\") -> expected '32768' but got '32000' with error '<nil>'"
    assert compared_in(ram) is None
    text, confidence = _hint(ram)
    assert confidence == "facts" and "with error '<nil>'" in text  # the whole message is the fact
    found = compared_in("Expected '2 hours' but got 'About an hour'")
    assert found is not None and (found.first, found.second) == ("'2 hours'", "'About an hour'")
    assert whole_value("[1 2 [3]]") and not whole_value("[1] [2]") and not whole_value("'a' 'b'")


def test_nodes_legacy_equal_message_has_the_actual_argument_first():
    found = compared_in("AssertionError [ERR_ASSERTION]: '1  3/7' == '1 3/7'")
    assert found is not None and (found.first, found.second) == ("'1  3/7'", "'1 3/7'")
    # argument positions, not sides: which one is expected is the test's source's to show (js_source)
    assert found.expected_at is None and found.labels == ("actual argument", "expected argument")
    assert compared_in("AssertionError [ERR_ASSERTION]: one two == three") is None


def test_facts_carry_the_exception_message_and_every_message():
    text, _ = _hint("TypeError: %d format: a real number is required, not str")
    assert "%d format: a real number is required, not str" in text
    two = "Expected '2 hours' but got 'About an hour'\nExpected '4 hours' but got '3 hours'"
    text, _ = _hint(two)
    assert "'4 hours' but got '3 hours'" in text


def test_kinds_of_difference_are_named():
    cases = {
        ("'3.00 x 10\u207b\u00b9'", "'3.00 x 10-\u00b9'"): "U+207B SUPERSCRIPT MINUS",
        ("'vingt-cinq'", "'vingt cinq'"): "U+0020 SPACE",
        ("'one, two and three'", "'one, three and two'"): "same words in another order",
        ("2", "0.5"): "reciprocal",
        ("1024", "1"): "1/1024 of",
        ("'1.024kB'", "'1.0240kB'"): "1.0240 where 1.024 is expected",
    }
    for (expected, got), said in cases.items():
        text, confidence = _hint("AssertionError", expected=expected, got=got)
        assert said in text and confidence == "specific", text
    big = _hint("AssertionError", expected="'-9223372036854775808'", got="'-9223372036854775809'")[0]
    assert "written another way" not in big  # equal as floats, not as numbers
    assert "times" not in _hint("AssertionError", expected="1000000000", got="10000000001")[0]
    text, confidence = _hint("AssertionError", expected="443", got="433")
    assert confidence == "facts" and "443" in text and "433" in text


def test_a_check_that_expected_an_exception_says_none_was_raised():
    for message in ("AssertionError [ERR_ASSERTION]: Missing expected exception (Error).",
                    "Failed: DID NOT RAISE <class 'ValueError'>", "AssertionError: ValueError not raised"):  # fmt: skip
        text, confidence = _hint(message, file="t.js", line=3)
        assert "without raising" in text and "(at t.js:3)" in text and confidence == "specific", text
