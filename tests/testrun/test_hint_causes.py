"""Issue 46's eight causes of wrong hints, each on real runner output (a real run where the runner is quick,
else the runner's own text captured here), with the hint the premises allow: specific where they hold,
the facts with both operands as the reporter labels them where they do not."""

from __future__ import annotations

import pytest

from graphlemon.testrun import run_tests
from graphlemon.testrun.hints import hint_for
from graphlemon.testrun.parsers.cargo_text import parse_cargo_text
from graphlemon.testrun.parsers.common import make_failure
from graphlemon.testrun.parsers.go_text import parse_go_text
from graphlemon.testrun.parsers.jest_text import parse_jest_text
from graphlemon.testrun.parsers.tap import parse_tap
from graphlemon.testrun.value_types import parse_pair, parse_value

from .helpers import FIXTURES, by_name, copy_fixture


@pytest.fixture(scope="module")
def pytest_run(tmp_path_factory):
    project = copy_fixture("premises_pytest", tmp_path_factory.mktemp("premises"))
    return run_tests(project, timeout=120)


# 1. operand order read, not assumed ------------------------------------------------------------------

CARGO = """
running 2 tests
test tests::doubles ... FAILED
test tests::counts_nothing ... FAILED

failures:

---- tests::doubles stdout ----

thread 'tests::doubles' (24213) panicked at src/lib.rs:15:9:
assertion `left == right` failed
  left: 8
 right: 2
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace

---- tests::counts_nothing stdout ----

thread 'tests::counts_nothing' (24212) panicked at src/lib.rs:20:9:
assertion `left == right` failed
  left: 0
 right: 7


failures:
    tests::counts_nothing
    tests::doubles

test result: FAILED. 0 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s
"""


def test_assert_eq_names_no_expected_side_so_only_the_facts_with_left_and_right():
    for failure in parse_cargo_text(CARGO).failures:
        hint = hint_for(failure)
        assert (failure.expected, failure.got) == (None, None) and failure.operands.labels == ("left", "right")
        assert hint.confidence == "facts", hint.text
        assert "left: " in hint.text and "right: " in hint.text
        for claim in ("doubled", "half", "zero", "Off by one"):
            assert claim not in hint.text


@pytest.mark.system
def test_a_printed_assertion_settles_unittests_sides_and_a_literal_is_the_expected_operand(tmp_path):
    result = run_tests(copy_fixture("premises_unittest", tmp_path), framework="unittest", timeout=60)
    words = by_name(result, "tests.test_banner.BannerTests.test_words")  # self.assertEqual(actual, expected)
    assert (words.expected, words.got) == ("['Welcome', 'to', 'a']", "['Welcome', 'to', 'the']")
    count = by_name(result, "tests.test_banner.BannerTests.test_count")  # assertEqual(len(...), 20): 20 is a literal
    assert (count.expected, count.got) == ("20", "19") and "Off by one" in count.hint  # `len`: a count


# 2. a domain rule only in its domain -----------------------------------------------------------------


@pytest.mark.system
def test_an_error_code_of_a_library_is_no_http_exchange(pytest_run):
    failure = by_name(pytest_run, "tests/test_shop.py::test_default_error_code")
    assert (
        failure.hint_confidence == "facts"
        and "handler" not in failure.hint
        and "500 expected, 400 produced" in failure.hint
    )


@pytest.mark.system
def test_a_status_read_from_a_response_object_is_an_http_exchange(pytest_run):
    failure = by_name(pytest_run, "tests/test_shop.py::test_unknown_user_is_unauthorised")
    assert failure.hint_confidence == "specific" and "500 (a server error) where 401 (a client error)" in failure.hint


# 3. no causal advice from a coincidence --------------------------------------------------------------


@pytest.mark.system
@pytest.mark.parametrize("name", ["test_rounds_half_up", "test_larger_of_two"])
def test_numbers_one_apart_without_a_boundary_are_facts(pytest_run, name):
    failure = by_name(pytest_run, f"tests/test_shop.py::{name}")
    assert failure.hint_confidence == "facts" and "Off by one" not in failure.hint


@pytest.mark.system
def test_numbers_one_apart_in_a_count_are_off_by_one(pytest_run):
    failure = by_name(pytest_run, "tests/test_shop.py::test_counts_words")
    assert failure.hint_confidence == "specific" and "Off by one (2 where 3 is expected)" in failure.hint


DOC_TEST = """
running 1 test
test src/lib.rs - decode_to_slice (line 307) ... FAILED

failures:

---- src/lib.rs - decode_to_slice (line 307) stdout ----
Test executable failed (exit status: 101).

stderr:

thread 'main' panicked at src/lib.rs:7:1:
assertion `left == right` failed
  left: [108, 105, 119, 105]
 right: [107, 105, 119, 105]


failures:
    src/lib.rs - decode_to_slice (line 307)

test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.11s
"""


def _pytest_assert(name: str, statement: str, explanation: str):
    detail = f">       {statement}\nE       AssertionError: {explanation}\n\ntest_x.py:9: AssertionError"
    return make_failure(f"test_x.py::{name}", file="test_x.py", line=9, message=f"AssertionError: {explanation}",
                        detail=detail)  # fmt: skip


def test_a_boundary_word_in_the_tests_name_alone_is_no_boundary():
    """A doc test named `decode_to_slice` compares decoded bytes: 108 for 107 is a wrong byte, not a count; nor is a
    number one apart a count because the test's name says `len` — the failing check must show it."""
    (doc,) = parse_cargo_text(DOC_TEST).failures
    hint = hint_for(doc)
    assert hint.confidence == "facts" and "Off by one" not in hint.text and "108" in hint.text, hint
    named = _pytest_assert("test_slice_len", "assert parse(text) == 3", "assert 2 == 3")
    assert "Off by one" not in hint_for(named).text, hint_for(named)
    counted = _pytest_assert("test_parse", "assert len(parse(text)) == 3", "assert 2 == 3")
    assert "Off by one (2 where 3 is expected)" in hint_for(counted).text, hint_for(counted)


def _jest_equal(expected: str, got: str, frame: str):
    output = ("FAIL dist/a.spec.js\n  case\n    \u2715 version (1 ms)\n\n  \u25cf case \u203a version\n\n"
              "    expect(received).toEqual(expected) // deep equality\n\n"
              f"    Expected: {expected}\n    Received: {got}\n\n      at Object.toEqual ({frame})\n\n"
              "Test Suites: 1 failed, 1 total\nTests:       1 failed, 1 total\n")  # fmt: skip
    return parse_jest_text(output).failures[0]


def test_a_boundary_word_in_a_file_path_or_a_stack_frame_is_no_boundary():
    """jest's message ends with its frame `at Object.toEqual (src/index.spec.ts:16:34)`: `index` there is a file's
    name, not a word of the message, so 11 for 10 (a version's part) is no off by one; a word of the message's own
    text still is."""
    for expected, got in (('"Version 1 2 10"', '"Version 1 2 11"'), ("10", "11")):
        for frame in ("src/index.spec.ts:16:34", "/p/src/index/a.spec.ts:16:34"):
            hint = hint_for(_jest_equal(expected, got, frame))
            assert hint.confidence == "facts" and "Off by one" not in hint.text, hint
    said = make_failure("t", file="src/a.spec.ts", line=3, expected="10", got="11",
                        message="index 10 wanted, got 11\n    at Object.<anonymous> (src/a.spec.ts:3:4)")  # fmt: skip
    assert "Off by one (11 where 10 is expected)" in hint_for(said).text and "(message: index)" in hint_for(said).text


def test_items_of_a_sequence_are_counts_only_when_the_code_names_a_collection_of_counts():
    """A boundary word in the code names the collection (`decode_to_slice(...)`), not its items; `lengths(...)`
    says the items are lengths."""
    data = _pytest_assert("test_it", "assert decode_to_slice(b'6b69') == [107, 105]",
                          "assert [108, 105] == [107, 105]")  # fmt: skip
    assert "Off by one" not in hint_for(data).text, hint_for(data)
    counts = _pytest_assert("test_it", "assert lengths(words) == [3, 4]", "assert [3, 5] == [3, 4]")
    assert "Off by one" in hint_for(counts).text and "code: lengths" in hint_for(counts).text, hint_for(counts)


# 4. each reporter's format read with its own grammar ---------------------------------------------------


@pytest.mark.system
def test_mocha_arrays_are_read_as_arrays(tmp_path):
    project = copy_fixture("premises_mocha", tmp_path)
    (project / "node_modules").symlink_to(FIXTURES / "mocha_project" / "node_modules", target_is_directory=True)
    result = run_tests(project, timeout=120)
    assert result.framework == "mocha"  # npm test is mocha; vitest is only listed in devDependencies
    assert "Same items in a different order" in by_name(result, "charsets lists UTF-8 first").hint
    assert "The list lacks 'UTF-16'" in by_name(result, "charsets lists every charset").hint


def test_mochas_diff_form_and_python_reprs_never_join_adjacent_strings():
    exp, got = parse_pair('[\n  "UTF-8"\n  "ISO-8859-1"\n]', '[\n  "ISO-8859-1"\n  "UTF-8"\n]', "mocha")
    assert (exp, got) == (["UTF-8", "ISO-8859-1"], ["ISO-8859-1", "UTF-8"])
    assert parse_pair("[1, 2]", "[2, 1]", "mocha") == ([1, 2], [2, 1])
    assert parse_pair("plain text", "other text", "mocha") == ("plain text", "other text")  # raw strings
    assert not isinstance(parse_value('["ISO-8859-1" "UTF-8"]', "python"), list)  # not a repr: no concatenation
    assert not isinstance(parse_value("1,000", "python"), tuple) and not isinstance(parse_value("1_000", "python"), int)


@pytest.mark.system
def test_unittests_abbreviated_values_are_read_whole_from_its_diff_and_sided_by_the_call(tmp_path):
    """unittest abbreviates both (`'Welc[34 chars]…'`) and prints them whole in its diff below; the quoted call
    `assertEqual(banner("Ada"), "Welcome…soon!")` settles the sides (the literal is expected)."""
    result = run_tests(copy_fixture("premises_unittest", tmp_path), framework="unittest", timeout=60)
    failure = by_name(result, "tests.test_banner.BannerTests.test_banner")
    assert "[34 chars]" in failure.message
    assert failure.expected.endswith("come back again soon!'") and failure.got.endswith("come back again soon.'")
    assert "'.' where '!' is expected" in failure.hint and "not known" not in failure.hint


TAPE = """TAP version 13
# quotes
not ok 1 keeps the quote
  ---
    operator: equal
    expected: 'it\\'s there'
    actual:   'it\\'s here'
    at: Test.<anonymous> (/p/test/q.js:3:5)
    stack: |-
      Error: keeps the quote
          at Test.<anonymous> (/p/test/q.js:3:5)
  ...
not ok 2 thousands
  ---
    operator: equal
    expected: '1,000'
    actual:   '1_000'
    at: Test.<anonymous> (/p/test/q.js:5:5)
  ...

1..2
# tests 2
# pass  0
# fail  2
"""


def test_tapes_values_are_object_inspect_text_not_yaml():
    quote, thousands = parse_tap(TAPE).failures
    assert (quote.file, quote.line, quote.expected, quote.got) == ("/p/test/q.js", 3, "'it\\'s there'", "'it\\'s here'")
    assert (thousands.expected, thousands.got, thousands.line) == ("'1,000'", "'1_000'", 5)
    hint = hint_for(thousands)  # two texts (never a number and a tuple) that differ in one separator
    assert hint.confidence == "specific" and "number" not in hint.text and "list" not in hint.text
    assert "The separator is '_' where ',' is expected (one place: '1_000' where '1,000' is expected)" in hint.text


TAPE_THROWS = """TAP version 13
# bad values
not ok 1 undefined is not an object
  ---
    operator: throws
    expected: |-
      [Function: TypeError]
    actual: |-
      undefined
    at: Test.<anonymous> (/p/test/impl.js:13:15)
  ...
not ok 2 a string thrown
  ---
    operator: throws
    expected: |-
      [Function: TypeError]
    actual: |-
      'undefined'
    at: Test.<anonymous> (/p/test/impl.js:14:15)
  ...
not ok 3 should not throw
  ---
    operator: throws
    expected: undefined
    actual: |-
      [RangeError: bad]
    at: Test.<anonymous> (/p/test/impl.js:15:15)
  ...

1..3
# tests 3
# pass  0
# fail  3
"""


def test_a_throws_checks_undefined_actual_is_nothing_thrown_not_a_returned_value():
    """tape's `throws` prints what was thrown as `actual`: a bare `undefined` is nothing thrown (the call's return
    value is not printed), so "the code produced nothing" would be false; a quoted 'undefined' is a thrown string, and
    doesNotThrow's actual (same operator) is the error it caught: facts there, not "a value came back"."""
    nothing, thrown_string, caught = parse_tap(TAPE_THROWS).failures
    hint = hint_for(nothing)
    assert hint.confidence == "specific", hint
    assert hint.text.startswith("Nothing was thrown where the test expects an exception ([Function: TypeError])"), hint
    assert "produced nothing" not in hint.text and "/p/test/impl.js:13" in hint.text
    for other in (thrown_string, caught):  # what should be thrown and what was: no rule over two values speaks
        assert hint_for(other).confidence == "facts", hint_for(other)


# 5. numbers only where the test's language reads numbers -------------------------------------------------

GO = """=== RUN   TestThousands
    format_test.go:9: Thousands(1000) = 1,00, want 1,000
--- FAIL: TestThousands (0.00s)
=== RUN   TestSeparator
    format_test.go:15: Thousands(1000) = 1_000, want 1,000
--- FAIL: TestSeparator (0.00s)
FAIL
exit status 1
FAIL	example.com/format	0.002s
"""


def test_grouped_numerals_in_text_are_text():
    thousands, separator = parse_go_text(GO).failures
    assert (thousands.expected, thousands.got) == ("1,000", "1,00")
    first = hint_for(thousands).text
    assert "zero" not in first and "number" not in first.lower() and "cut short" in first
    assert "('1,00' where '1,000' is expected)" in first
    second = hint_for(separator)
    assert second.confidence == "specific" and "list" not in second.text and "number" not in second.text.lower()
    assert second.text.startswith("The separator is '_' where ',' is expected"), second.text


# 6. locations from the failure's own frame -----------------------------------------------------------


@pytest.mark.system
def test_a_chained_key_error_is_placed_where_it_was_raised(pytest_run):
    failure = by_name(pytest_run, "tests/test_shop.py::test_pounds_convert")
    assert "KeyError" not in failure.message  # the test failed with the exception that wraps it
    assert "(at shop/units.py:5)" in failure.hint and "convert.py" not in failure.hint


def test_a_parametrized_argument_is_the_expected_side_whatever_its_name():
    """`assert up(ch) == result` with `result` from @pytest.mark.parametrize: the test gives it, the code does not
    (heldout10's unidecode: the name `result` was read as what the code produced)."""
    import ast

    from graphlemon.testrun.assertions import expected_operand

    def operands(source: str):
        compare = ast.parse(source).body[0].test
        return compare.left, compare.comparators[0]

    assert expected_operand(operands("assert up(ch) == result"), data_names=("ch", "result")) == 1
    assert expected_operand(operands("assert result == up(ch)"), data_names=("ch", "result")) == 0
    assert expected_operand(operands("assert up(ch) == result")) == 0  # not test data: the name is all there is


def test_unittests_abbreviated_strings_are_read_whole_from_the_diff_lines_below_them():
    """`'{"a": 1, [20 chars]3]}' != …` then `- …` / `+ …`: the whole values are printed; "not known" was false."""
    from graphlemon.testrun.parsers.unittest_text import parse_unittest_text

    first, second = '{"a": 1, "c": 5, "tuple": [83, 12, 3]}', '{"tuple": [83, 12, 3], "a": 1, "c": 5}'

    def short(text: str) -> str:
        r = repr(text)
        return f"{r[:10]}[{len(r) - 15} chars]{r[-5:]}"

    body = (f'  File "/p/test_x.py", line 9, in test_keys\n    self.assertEqual(\nAssertionError: {short(first)} != '
            f"{short(second)}\n- {first}\n+ {second}\n")  # fmt: skip
    output = (f"test_keys (test_x.T.test_keys) ... FAIL\n\n{'=' * 70}\nFAIL: test_keys (test_x.T.test_keys)\n"
              f"{'-' * 70}\nTraceback (most recent call last):\n{body}\n{'-' * 70}\nRan 1 test in 0.001s\n\n"
              "FAILED (failures=1)\n")  # fmt: skip
    (failure,) = parse_unittest_text(output).failures
    assert (failure.operands.first, failure.operands.second) == (repr(first), repr(second))
    assert not failure.operands.shortened and "not known" not in hint_for(failure).text
    wrong = output.replace(f"- {first}", f"- {first[:-1]}x")  # the diff line is not the abbreviated value's
    assert parse_unittest_text(wrong).failures[0].operands.shortened
