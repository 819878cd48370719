"""Hints that read more of the runner's own evidence (issue 46, after the held-out split's freeze): the sides a
structured source establishes, an exception read where it was raised and against the test's own code, the
edit two texts differ by, and a doc test placed at its example. Real runs where the runner is quick (pytest,
node:test), else the runner's own text captured here."""

from __future__ import annotations

import shutil

import pytest

from graphlemon.testrun import run_tests
from graphlemon.testrun.frameworks.native_hints import CARGO_RULES
from graphlemon.testrun.hints import hint_for
from graphlemon.testrun.parsers.cargo_text import parse_cargo_text
from graphlemon.testrun.parsers.common import make_failure
from graphlemon.testrun.parsers.go_text import parse_go_text
from graphlemon.testrun.parsers.tap import parse_tap

from .helpers import by_name, copy_fixture


@pytest.fixture(scope="module")
def words(tmp_path_factory):
    project = copy_fixture("evidence_pytest", tmp_path_factory.mktemp("evidence"))
    return run_tests(project, timeout=120)


# sides from a structured source -------------------------------------------------------------------------


@pytest.mark.system
def test_a_parametrized_value_is_the_expected_side_against_a_call(words):
    # `assert ordinalized == f"{number}{ordinal(number)}"`: the left operand is the test's own data (a direct
    # parametrize argument), the right one calls the code, so pytest's convention (right = expected) is overruled
    hint = by_name(words, "tests/test_words.py::test_ordinal[13-13th]")
    assert hint.hint_confidence == "specific"
    assert hint.hint.startswith("The text ends in 'rd' where 'th' is expected ('13rd' where '13th' is expected"), hint.hint


@pytest.mark.system
def test_an_indirect_parameter_is_not_the_tests_data(words):
    # `indirect=True`: the value went through a fixture, so nothing overrules pytest's convention
    hint = by_name(words, "tests/test_words.py::test_indirect_parameter[abc]").hint
    assert hint.startswith("The text is cut short ('ABC' where 'ABCD' is expected)"), hint


def test_a_boolean_check_of_referee_names_both_values():
    failure = make_failure("orders", message="AssertionError: [assert.isTrue] Expected false to be true")
    hint = hint_for(failure)
    assert hint.confidence == "specific" and "(false where true is expected)" in hint.text, hint.text


def test_gos_call_equals_want_without_spaces_names_the_sides():
    output = """=== RUN   TestWordSeries
    words_test.go:73: WordSeries(["foo" "bar"], "and")="foo, and bar"; want: "foo and bar"
--- FAIL: TestWordSeries (0.00s)
=== RUN   TestBytes
    common_test.go:14: On bytes(9999), expected '10 kB', but got '9.9 kB'
--- FAIL: TestBytes (0.00s)
FAIL
"""
    series, size = parse_go_text(output).failures
    assert (series.expected, series.got) == ('"foo and bar"', '"foo, and bar"')
    assert hint_for(series).text.startswith("The text has ',' added after 'foo' ('foo, and bar' where 'foo and bar'")
    # the test's own quotes are not part of the values; 9.9 is 10 cut off at one decimal
    text = hint_for(size).text
    assert "The number 10 in '10 kB' came out as 9.9 ('9.9 kB')" in text and "rounded down" in text, text


# exceptions read where they were raised and against the test's own code ----------------------------------


@pytest.mark.system
def test_another_exception_than_the_test_expects(words):
    hint = by_name(words, "tests/test_words.py::test_unknown_color").hint
    assert hint.startswith("KeyError ('#123456') is raised (at words/__init__.py:24) where the test expects ValueError")


@pytest.mark.system
def test_a_method_used_as_a_value(words):
    hint = by_name(words, "tests/test_words.py::test_capitalize").hint
    assert "(at words/__init__.py:15): a function or method (builtin_function_or_method) is used as a value" in hint


@pytest.mark.system
def test_an_error_raised_inside_a_library_names_the_projects_call(words):
    failure = by_name(words, "tests/test_words.py::test_dasherize")
    assert failure.hint.startswith("re.error: invalid group reference 1 at position 2 — raised inside the standard "
                                   "library (`re`)")  # fmt: skip
    assert "called from the project's code at words/__init__.py:19" in failure.hint
    assert "does not hold" not in failure.hint  # the library's `raise` line is no check of the test


@pytest.mark.system
def test_a_thrown_errors_field_is_read_from_nodes_diff(tmp_path):
    if shutil.which("node") is None:
        pytest.fail("node is not installed: run scripts/install-fixtures.sh (make test does)")
    result = run_tests(copy_fixture("evidence_node", tmp_path), framework="node", timeout=120)
    failure = by_name(result, "throws a merge error for different consts")
    # the error's printed stack is not a compared value; node's diff says which field differs, with its sides
    assert failure.got is None and failure.hint_confidence == "specific"
    assert failure.hint.startswith("At `.message`: The text lacks the quotation marks `\"` the expected text has")
    assert "'Failed to merge const keyword schemas.' where 'Failed to merge \"const\" keyword schemas.'" in failure.hint


# names and places ----------------------------------------------------------------------------------------


def test_a_tap_description_keeps_its_own_leading_dash():
    tap = "TAP version 13\n# numbers\nok 1 - 1000\nnot ok 2 -1000, separator\n  ---\n    operator: equal\n" \
          "    expected: '-1_000'\n    actual:   '-1,000'\n    at: Test.<anonymous> (/p/test/n.js:5:5)\n  ...\n1..2\n"  # fmt: skip
    (failure,) = parse_tap(tap).failures
    assert failure.name == "numbers > -1000, separator"
    assert hint_for(failure).text.startswith("The separator is ',' where '_' is expected")


CARGO_DOC = """
running 1 test
test src/lib.rs - normalized (line 4) ... FAILED
test src/lib.rs - hamming (line 9) ... FAILED

failures:

---- src/lib.rs - normalized (line 4) stdout ----
Test executable failed (exit status: 101).

stderr:

thread 'main' (5697) panicked at src/lib.rs:7:1:
assertion failed: (normalized("kitten", "sitting") - 0.57142).abs() < 0.00001

---- src/lib.rs - hamming (line 9) stdout ----
Test executable failed (exit status: 101).

stderr:

thread 'main' (5628) panicked at src/lib.rs:7:1:
assertion `left == right` failed
  left: Ok(3)
 right: Ok(6)

failures:
    src/lib.rs - normalized (line 4)

test result: FAILED. 0 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.20s
"""


def test_a_doc_test_is_placed_at_its_example_and_is_a_check_of_the_test(tmp_path):
    (tmp_path / "src").mkdir()
    # rustdoc reports the example's own panic at a line of its code block (here line 7, the example opens at 4)
    (tmp_path / "src" / "lib.rs").write_text(
        "//! Similarity.\n\n/// Normalized.\n/// ```\n/// use strsim::normalized;\n///\n"
        "/// assert!((normalized(\"kitten\", \"sitting\") - 0.57142).abs() < 0.00001);\n/// ```\n"
        "pub fn normalized(a: &str, b: &str) -> f64 {\n    0.0\n}\n"
    )  # fmt: skip
    normalized, hamming = parse_cargo_text(CARGO_DOC).failures
    assert (normalized.file, normalized.line) == ("src/lib.rs", 4)  # the example's line, not the panic's
    text = hint_for(normalized, tmp_path, CARGO_RULES).text
    assert text.startswith("The assertion `(normalized(\"kitten\", \"sitting\") - 0.57142).abs() < 0.00001` failed in "
                           "the doc test of `normalized` (its example at src/lib.rs:4)"), text  # fmt: skip
    assert "code under test panicked" not in text
    # without the source, nothing shows the panic is the example's own: the facts only
    assert hint_for(normalized, None, CARGO_RULES).confidence == "facts"
    facts = hint_for(hamming, tmp_path, CARGO_RULES)
    assert facts.confidence == "facts" and "the doc test of `hamming` (its example at src/lib.rs:9) failed" in facts.text


CARGO_LITERAL = """
running 2 tests
test tests::literal_left ... FAILED
test tests::no_literal ... FAILED

failures:

---- tests::literal_left stdout ----

thread 'tests::literal_left' (1) panicked at src/lib.rs:6:9:
assertion `left == right` failed
  left: 1100000
 right: 900000

---- tests::no_literal stdout ----

thread 'tests::no_literal' (2) panicked at src/lib.rs:10:9:
assertion `left == right` failed
  left: 1024
 right: 1536

test result: FAILED. 0 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s
"""
CARGO_LITERAL_SOURCE = """pub fn add(a: u64, b: u64) -> u64 { a - b }
#[cfg(test)]
mod tests {
    #[test]
    fn literal_left() {
        assert_eq!(1_100_000u64, super::add(1_000_000, 100_000));
    }
    #[test]
    fn no_literal() {
        assert_eq!(super::add(1024, 0), (1.5 * 1024.0) as u64);
    }
}
"""


def test_assert_eq_is_sided_only_where_the_tests_source_writes_a_literal(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "lib.rs").write_text(CARGO_LITERAL_SOURCE)
    literal, computed = parse_cargo_text(CARGO_LITERAL).failures
    assert "They differ: 1100000 expected, 900000 produced" in hint_for(literal, tmp_path).text
    text = hint_for(computed, tmp_path).text
    assert "(the reporter does not say which one is expected): left: 1024, right: 1536" in text, text
    # without the source the sides stay unknown
    assert "left: 1100000, right: 900000" in hint_for(literal).text


def test_assert_eq_sides_come_from_one_rule_a_literal_against_a_computed_operand(tmp_path):
    """`assert_eq!(10, from_hex_digit(b'a').unwrap())`: the literal 10 is expected (libtest's `left: 10` / `right:
    11` name no side; the source does). `assert_eq!(*decode_binary(..), b"%%s%1G"[..])`: a sliced byte string is
    not a literal as written, so the same rule names no side there."""
    from graphlemon.testrun.rust_source import literal_operand

    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "lib.rs").write_text(
        "#[test]\nfn misc() {\n    assert_eq!(10, from_hex_digit(b'a').unwrap());\n"
        '    assert_eq!(*decode_binary(b"%25%s%1G"), b"%%s%1G"[..]);\n}\n'
    )
    assert literal_operand(tmp_path, "src/lib.rs", 3) == 0
    assert literal_operand(tmp_path, "src/lib.rs", 4) is None
