"""Hints claim only what the runner's output proves (heldout14's defects), each rule on constructed runner output with
the case where its premise is absent: a truth test (`assert x`, `assert not x`, assertTrue/assertFalse, tape's
`t.ok`/`t.notOk`, chai's `.ok`, node's assert.ok) is no equality with True/False, so no value or type rule speaks on a
value that is no boolean; values read alike but printed differently (null, undefined) are named as printed; an
exception is placed where its own traceback raised it, the test's line only as the call; cargo's failed unwrap() is
no assertion and a crate's own doc example is named as one."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphlemon.testrun.hints import hint_for
from graphlemon.testrun.parsers.common import make_failure
from graphlemon.testrun.parsers.tap import parse_tap

# pytest: `assert not result.failed` on a count (munch's README doctest check)
PYTEST_NOT = make_failure(
    "tests/test_readme.py::test_readme", file="tests/test_readme.py", line=16,
    message="assert not 2\n +  where 2 = TestResults(failed=2, attempted=36).failed",
    detail="    def test_readme():\n>       assert not result.failed\nE       assert not 2\n",
)  # fmt: skip

TAPE = """TAP version 13
# counts
not ok 1 should be truthy
  ---
    operator: ok
    expected: true
    actual:   0
    at: Test.<anonymous> (/p/test/index.js:7:5)
    stack: |-
      Error: should be truthy
  ...
not ok 2 should be falsy
  ---
    operator: notOk
    expected: false
    actual:   'x'
    at: Test.<anonymous> (/p/test/index.js:9:5)
    stack: |-
      Error: should be falsy
  ...

1..2
# tests 2
# pass  0
# fail  2
"""


@pytest.mark.parametrize(
    "failure, value, requirement",
    [
        (PYTEST_NOT, "2", "falsy"),
        (make_failure("t", file="t.py", line=3, message="AssertionError: 0 is not true"), "0", "truthy"),
        (make_failure("t", file="t.py", line=3, message="AssertionError: [1] is not false"), "[1]", "falsy"),
        (make_failure("t", file="t.py", line=3, message="assert None"), "None", "truthy"),
        (make_failure("t", file="t.js", line=3, message="AssertionError: expected 0 to be truthy"), "0", "truthy"),
    ],
)
def test_a_truth_test_of_a_value_no_boolean_claims_no_value(failure, value, requirement):
    hint = hint_for(failure)
    assert failure.expected is None and failure.got is None  # no boolean is the expected value
    assert hint.confidence == "facts" and "another type" not in hint.text and "boolean is expected" not in hint.text
    assert f"is {value}, and the test requires it to be {requirement}" in hint.text, hint.text


def test_the_facts_name_the_statement_and_the_expression_tested():
    text = hint_for(PYTEST_NOT).text
    assert "`assert not result.failed` is a truth test" in text
    assert "`TestResults(failed=2, attempted=36).failed`, is 2" in text


def test_tape_ok_and_not_ok_are_truth_tests():
    run = parse_tap(TAPE)
    first, second = run.failures
    assert (first.expected, first.got, second.expected, second.got) == (None, None, None, None)
    assert "is 0, and the test requires it to be truthy" in hint_for(first).text
    assert "is 'x', and the test requires it to be falsy" in hint_for(second).text


NODE_OK = """TAP version 13
not ok 1 - counts
  ---
  duration_ms: 0.5
  failureType: 'testCodeFailure'
  error: |-
    The expression evaluated to a falsy value:
      assert.ok(count)
  code: 'ERR_ASSERTION'
  expected: true
  actual: 0
  operator: '=='
  stack: |-
    TestContext.<anonymous> (/p/test.js:4:10)
  ...
1..1
"""


def test_node_assert_ok_is_a_truth_test_though_its_operator_is_an_equality():
    (failure,) = parse_tap(NODE_OK).failures
    assert (failure.expected, failure.got) == (None, None)
    assert "is 0, and the test requires it to be truthy" in hint_for(failure).text
    equal = parse_tap(NODE_OK.replace("The expression evaluated to a falsy value:", "Expected values to be loosely equal:"))
    assert equal.failures[0].got == "0"  # assert.equal(count, true): an equality, its values kept


def test_a_truth_test_of_a_boolean_still_says_it_came_out_the_other_way():
    failure = make_failure("t", file="t.py", line=3, message="assert False\n +  where False = is_even(4)")
    assert (failure.expected, failure.got) == ("True", "False")
    assert "the other way" in hint_for(failure).text


def test_an_equality_with_a_boolean_keeps_its_type_rule():
    """Without the premise (an equality, not a truth test) the type rule still speaks."""
    failure = make_failure("t", file="t.js", line=3, message="Expected: true\nReceived: 2", expected="true", got="2",
                           grammar="js")  # fmt: skip
    assert "a number where a boolean is expected" in hint_for(failure).text
    equal = make_failure("t", file="t.py", line=3, message="AssertionError: 2 != True\n", compared=None)
    assert equal.operands is not None and equal.operands.truth is None


# --- two values read alike (JavaScript's null and undefined) are named as printed -------------------------------


@pytest.mark.parametrize(
    "expected, got",
    [("null", "undefined"), ("{ a: null }", "{ a: undefined }")],
)
def test_null_and_undefined_are_named_as_printed(expected, got):
    failure = make_failure("t", file="test/index.test.js", line=436, message="should be strictly equal (equal)",
                           expected=expected, got=got, grammar="js")  # fmt: skip
    hint = hint_for(failure)
    assert f"{expected} expected, {got} produced" in hint.text and "null/undefined" not in hint.text, hint.text


def test_values_that_differ_when_read_keep_their_difference():
    """Without the premise (the values read differently) the facts name the differing part, not the whole print."""
    failure = make_failure("t", file="t.js", line=3, message="x", expected="{ a: 1 }", got="{ a: null }", grammar="js")
    assert "each as the runner printed it" not in hint_for(failure).text


# --- where an exception was raised: its own traceback's innermost frame, not the test's call -----------------------

UNITTEST_CHAINED = """Traceback (most recent call last):
  File "/proj/tests/test_parser.py", line 118, in assert_error_message
    self.parser.parse(expression)
  File "/proj/jmespath/parser.py", line 109, in _parse
    self._tokens = list(self.tokenizer)
  File "/proj/jmespath/lexer.py", line 149, in _consume_until
    raise EmptyExpressionError()
jmespath.exceptions.EmptyExpressionError: Invalid JMESPath expression: cannot be empty.

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/proj/tests/test_parser.py", line 162, in test_bad_lexer_values
    self.assert_error_message('foo."bar', error_message,
  File "/proj/tests/test_parser.py", line 123, in assert_error_message
    self.fail(
AssertionError: Unexpected error raised (EmptyExpressionError: cannot be empty.) for bad expression: foo."bar
"""


def _unittest_failure(detail: str):
    return make_failure("tests.test_parser.T.test_bad_lexer_values", file="tests/test_parser.py", line=162,
                        message='AssertionError: Unexpected error raised (EmptyExpressionError: cannot be empty.)',
                        detail=detail)  # fmt: skip


def test_a_chained_error_is_placed_where_it_was_raised_and_the_test_line_is_the_call():
    text = hint_for(_unittest_failure(UNITTEST_CHAINED), Path("/proj")).text
    assert "raised in jmespath/lexer.py:149, called from the test at tests/test_parser.py:162" in text, text
    assert "raised (at tests/test_parser.py:162)" not in text and "raised at tests/test_parser.py:162" not in text


def test_without_a_frame_for_the_error_the_test_line_is_only_the_call():
    """No traceback of the error printed: its raise site is unknown, so the test's line is named as the call."""
    detail = "jmespath.exceptions.EmptyExpressionError: cannot be empty.\n"
    text = hint_for(_unittest_failure(detail), Path("/proj")).text
    assert "EmptyExpressionError was raised during the test's call at tests/test_parser.py:162" in text, text



def test_a_raise_in_the_language_s_own_library_is_named_by_its_file_never_a_machine_path():
    detail = UNITTEST_CHAINED.replace("/proj/jmespath/lexer.py", "/root/.pyenv/versions/3.11.7/lib/python3.11/doctest.py")
    text = hint_for(_unittest_failure(detail), Path("/proj")).text
    assert "raised in doctest.py:149, called from the test at tests/test_parser.py:162" in text, text
    assert "/root/" not in text


PYTEST_LONG = """    def test_parse(valid):
>       parsed = iso8601.parse_date(valid)

iso8601/test_iso8601.py:249:
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _
iso8601/iso8601.py:151: in parse_date
    tzinfo=parse_timezone(groups),
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _

>           raise ParseError(e)
E           iso8601.iso8601.ParseError: offset must be a timedelta

iso8601/iso8601.py:154: ParseError"""


def test_pytest_names_the_raising_entry_by_the_error_s_class_and_a_clipped_text_claims_no_site():
    def failure(detail):
        return make_failure("iso8601/test_iso8601.py::test_parse", file="iso8601/test_iso8601.py", line=249,
                            message="iso8601.iso8601.ParseError: offset must be a timedelta", detail=detail)  # fmt: skip

    whole = hint_for(failure(PYTEST_LONG), Path("/proj")).text
    assert "raised in iso8601/iso8601.py:154, called from the test at iso8601/test_iso8601.py:249" in whole, whole
    clipped = hint_for(failure(PYTEST_LONG.rsplit("\n", 1)[0]), Path("/proj")).text  # its last line cut off
    assert "raised during the test's call at iso8601/test_iso8601.py:249" in clipped, clipped
    assert "iso8601/iso8601.py:151" not in clipped  # an outer entry is no raise site

# --- cargo: an unwrap is no assertion; a crate's own doc example is named as one ----------------------------------


def _doc_output(name: str, panic_line: int, message: str) -> str:
    return (f"running 1 test\ntest {name} ... FAILED\n\nfailures:\n\n---- {name} stdout ----\n"
            f"Test executable failed (exit status: 101).\n\nstderr:\n\nthread 'main' (29697) panicked at "
            f"src/lib.rs:{panic_line}:58:\n{message}\n\n\nfailures:\n    {name}\n\n"
            "test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.11s\n")


@pytest.fixture
def crate(tmp_path):
    lines = ["//! A crate.", "//!", "//! ```", "//! let x = demo::f();", "//! assert_eq!(x, 2);", "//! ```", ""]
    lines += [""] * (20 - len(lines)) + ["/// ```", "/// let s = demo::decode(b\"\\xff\").unwrap();", "/// ```",
                                         "pub fn decode() {}"]  # fmt: skip
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "lib.rs").write_text("\n".join(lines) + "\n")
    return tmp_path


def test_a_failed_unwrap_in_a_doc_example_is_no_assertion(crate):
    from graphlemon.testrun.frameworks.native_hints import CARGO_RULES
    from graphlemon.testrun.parsers.cargo_text import parse_cargo_text

    message = "called `Result::unwrap()` on an `Err` value: Utf8Error { valid_up_to: 7, error_len: None }"
    (failure,) = parse_cargo_text(_doc_output("src/lib.rs - decode (line 21)", 5, message)).failures
    text = hint_for(failure, crate, CARGO_RULES).text
    assert "`Result::unwrap()` met an `Err` value (`Utf8Error { valid_up_to: 7, error_len: None }`)" in text, text
    assert "An assertion" not in text and "no assertion failed" in text
    # without the premise (an assertion's own message) the assertion wording stays
    (checked,) = parse_cargo_text(_doc_output("src/lib.rs - decode (line 21)", 5, "assertion failed: ok")).failures
    assert "The assertion `ok` failed" in hint_for(checked, crate, CARGO_RULES).text


def test_a_crate_doc_example_is_named_as_the_doc_example_not_a_check(crate):
    from graphlemon.testrun.parsers.cargo_text import parse_cargo_text

    output = _doc_output("src/lib.rs - (line 3)", 2, "assertion `left == right` failed\n  left: 3\n right: 2")
    (failure,) = parse_cargo_text(output).failures
    text = hint_for(failure, crate).text
    assert "the doc example at src/lib.rs:3 failed" in text and "the check at" not in text, text


# libtest's #[should_panic(expected = "…")]: another panic message, or no panic at all ------------------------------


def _should_panic_output(body: str) -> str:
    return (f"running 1 test\ntest tests::t - should panic ... FAILED\n\nfailures:\n\n---- tests::t stdout ----\n{body}"
            "\nfailures:\n    tests::t\n\ntest result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 0 filtered "
            "out; finished in 0.01s\n")  # fmt: skip


def test_a_should_panic_whose_panic_lacks_the_expected_string_quotes_both_as_libtest_labels_them():
    """libtest printed the panic message and the expected substring (before: "the code under test returned without
    panicking, and the check prints no values")."""
    from graphlemon.testrun.frameworks.native_hints import CARGO_RULES
    from graphlemon.testrun.parsers.cargo_text import parse_cargo_text

    new = ("\nthread 'tests::t' (18195) panicked at src/lib.rs:12:5:\nassertion failed: Some(\"-AB\") does not match\n"
           "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n"
           "note: panic did not contain expected string\n"
           "      panic message: \"assertion failed: Some(\\\"-AB\\\") does not match\"\n"
           " expected substring: \"assertion failed: `Some(\\\"-AB\\\")`\"\n")  # fmt: skip
    old = ("\nthread 'tests::t' panicked at 'boom', src/lib.rs:12:5\n"
           "note: panic did not contain expected string\n      panic message: `\"boom\"`,\n"
           " expected substring: `\"bang\"`\n")  # fmt: skip (Rust before 1.73)
    for body, message, expected in ((new, '"assertion failed: Some(\\"-AB\\") does not match"',
                                     '"assertion failed: `Some(\\"-AB\\")`"'), (old, '"boom"', '"bang"')):
        (failure,) = parse_cargo_text(_should_panic_output(body)).failures
        hint = hint_for(failure, None, CARGO_RULES)
        assert hint.confidence == "specific", hint
        assert (f"the panic did not contain the expected string: panic message {message}, expected substring "
                f"{expected}") in hint.text, hint.text
        assert "without panicking" not in hint.text and "not panic" not in hint.text and "src/lib.rs:12" in hint.text
    # no panic at all: libtest says so, and this rule does not fire
    (none,) = parse_cargo_text(_should_panic_output("note: test did not panic as expected at src/lib.rs:9:4\n")).failures
    said = hint_for(none, None, CARGO_RULES).text
    assert "panic message" not in said and "expected substring" not in said, said
