"""Issue 46, heldout11's three wrong hints, each on constructed runner output: pytest's operand order is not a side,
a length of printed bytes is not "off by one", and Go's printed `<nil>` is text where the other side is text (its
place the first failing check, not a t.Log line above it)."""

from __future__ import annotations

import pytest

from graphlemon.testrun.go_source import settle_go_location
from graphlemon.testrun.hints import hint_for
from graphlemon.testrun.parsers.common import make_failure
from graphlemon.testrun.parsers.go_text import parse_go_text
from graphlemon.testrun.parsers.node_text import parse_node_text


def _pytest_failure(statement: str, explanation: str):
    """A failing `assert` as pytest reports it: the message, and the longrepr with the statement marked `>`."""
    detail = f">       {statement}\nE       AssertionError: {explanation}\n\ntest_x.py:9: AssertionError"
    return make_failure("test_x.py::test_it", file="test_x.py", line=9, message=f"AssertionError: {explanation}",
                        detail=detail)  # fmt: skip


# 1. operand order assumed -------------------------------------------------------------------------------


def test_two_calls_compared_name_no_expected_side():
    """`assert six.u("\\u1234") == six.unichr(0x1234)`: the code under test is on the right, and pytest's diff calls
    the right side "expected" only by position: nothing settles the sides, so none is named expected."""
    failure = _pytest_failure('assert six.u("\\u1234") == six.unichr(0x1234)', "assert 'ሴ' == 'ስ'\n  - ስ\n  + ሴ")
    assert failure.expected is None and failure.got is None
    text = hint_for(failure).text
    assert "is expected" not in text and "U+1234" in text and "U+1235" in text, text
    numbers = hint_for(_pytest_failure("assert parse(a) == parse(b)", "assert 5 == 6"))
    assert numbers.confidence == "facts" and "does not say which one is expected" in numbers.text, numbers.text


@pytest.mark.parametrize(
    ("statement", "explanation", "expected", "got"),
    [
        ('assert six.unichr(0x1234) == "\\u1234"', "assert 'ስ' == 'ሴ'", "'ሴ'", "'ስ'"),  # a literal on the right
        ('assert "\\u1234" == six.unichr(0x1234)', "assert 'ሴ' == 'ስ'", "'ሴ'", "'ስ'"),  # a literal on the left
        ("assert six.MAXSIZE == size_of(x)", "assert 7 == 8", "7", "8"),  # a constant against a call
        ('assert six.indexbytes(b"hello", 3) == ord("l")', "assert 111 == 108", "108", "111"),  # a builtin of a literal
        ('assert count_words("a a") == defaultdict(int, {"a": 2})', "assert 1 == 2", "2", "1"),  # a stdlib value type
        ("assert parse(s) == datetime.datetime(2011, 2, 1, tzinfo=None)", "assert 1 == 2", "2", "1"),
        ("assert result == expected", "assert 8 == 7", "7", "8"),  # names
    ],
)
def test_a_literal_a_constant_or_a_name_settles_the_sides(statement, explanation, expected, got):
    failure = _pytest_failure(statement, explanation)
    assert (failure.expected, failure.got) == (expected, got)


def test_a_constant_against_a_plain_name_settles_nothing():
    assert _pytest_failure("assert value == LIMIT", "assert 7 == 8").expected is None


# 2. a domain rule outside its domain --------------------------------------------------------------------


def test_the_length_of_printed_bytes_is_their_encoding_not_off_by_one():
    """`len(b'\\xc3\\xbf')` is 2 where 1 is expected: the bytes are printed, and they are 'ÿ' in UTF-8."""
    text = hint_for(_pytest_failure("assert len(data) == 1", "assert 2 == 1\n +  where 2 = len(b'\\xc3\\xbf')")).text
    assert "off by one" not in text.lower(), text
    assert "UTF-8 encoding of 'ÿ' (U+00FF" in text and "2 bytes for 1 character (1 is expected)" in text, text
    chars = hint_for(_pytest_failure("assert len(name) == 2", "assert 1 == 2\n +  where 1 = len('é')")).text
    assert "1 character, 2 bytes in UTF-8 (2 is expected)" in chars and "off by one" not in chars.lower(), chars


def test_a_printed_length_the_encoding_does_not_explain_is_facts():
    """`len(b'ab')` is 2 where 3 is expected: the content is printed whole, nothing about counting is shown."""
    hint = hint_for(_pytest_failure("assert len(data) == 3", "assert 2 == 3\n +  where 2 = len(b'ab')"))
    assert hint.confidence == "facts" and "off by one" not in hint.text.lower(), hint.text
    counted = hint_for(_pytest_failure("assert len(data) == 3", "assert 2 == 3\n +  where 2 = len(data)")).text
    assert "Off by one" in counted, counted  # the content is not printed: the count is the code's


# 3. a reporter's format misread + wrong location --------------------------------------------------------

GO_SOURCE = """package p

func TestFormatter(t *testing.T) {
\tt.Logf("Running %d tests", len(cases))
\tfor i, c := range cases {
\t\tif got := format(c); got != c.want {
\t\t\tt.Errorf("Formatter #%d got: %s want: %s", i, got, c.want)
\t\t}
\t}
}
"""
GO_OUTPUT = """=== RUN   TestFormatter
    format_test.go:4: Running 756 tests
    format_test.go:7: Formatter #3 got: <Nil> want: <nil>
    format_test.go:7: Formatter #7 got: (*int8)<Nil> want: (*int8)<nil>
--- FAIL: TestFormatter (0.00s)
FAIL
"""


def test_go_printed_nil_is_text_where_the_other_side_is_text():
    failure = parse_go_text(GO_OUTPUT).failures[0]
    hint = hint_for(failure)
    assert hint.confidence == "specific" and "'<Nil>' where '<nil>' is expected" in hint.text, hint.text
    assert "nil expected" not in hint.text, hint.text
    nothing = parse_go_text(GO_OUTPUT.replace("got: <Nil> want: <nil>", "got: <nil> want: 5")).failures[0]
    assert "produced nothing" in hint_for(nothing).text  # a number on the other side: `<nil>` is Go's nil


def test_a_go_failure_is_placed_at_its_first_failing_check_not_a_log_line(tmp_path):
    (tmp_path / "format_test.go").write_text(GO_SOURCE)
    failure = parse_go_text(GO_OUTPUT).failures[0]
    assert (failure.file, failure.line) == ("format_test.go", 4)  # the output alone: the first line go printed
    settle_go_location(failure, tmp_path)
    assert (failure.file, failure.line) == ("format_test.go", 7)
    unread = parse_go_text(GO_OUTPUT).failures[0]
    settle_go_location(unread, tmp_path / "elsewhere")  # the source cannot be read: the first line stays
    assert unread.line == 4
    (tmp_path / "spew").mkdir()  # `go test ./...` as text names the file only: the one file of that name is read
    (tmp_path / "format_test.go").rename(tmp_path / "spew" / "format_test.go")
    settle_go_location(nested := parse_go_text(GO_OUTPUT).failures[0], tmp_path)
    assert (nested.file, nested.line) == ("format_test.go", 7)
    (tmp_path / "format_test.go").write_text(GO_SOURCE.replace("t.Logf(", "check(t, "))
    settle_go_location(helper := parse_go_text(GO_OUTPUT).failures[0], tmp_path)
    assert helper.line == 4  # not a log call (a helper reporting at its caller's line): the first line stays


def test_a_go_first_message_whose_source_is_unread_is_not_called_a_check(tmp_path):
    """Without the source, the first of several messages may be a t.Log line: the facts do not call it a check."""
    output = GO_OUTPUT.replace("<Nil> want: <nil>", "bad").replace("(*int8)<Nil> want: (*int8)<nil>", "worse")
    unread = hint_for(parse_go_text(output).failures[0], tmp_path).text
    assert "its first message at format_test.go:4" in unread and "the check at" not in unread, unread
    (tmp_path / "format_test.go").write_text(GO_SOURCE)
    failure = parse_go_text(output).failures[0]
    settle_go_location(failure, tmp_path)
    assert "the check at format_test.go:7 failed" in hint_for(failure, tmp_path).text


def _node_tap(stack: str) -> str:
    return ("TAP version 13\n# Subtest: one set to undefined\nnot ok 1 - one set to undefined\n  ---\n"
            "  duration_ms: 0.2\n  location: '/p/test/index.test.js:32:1'\n  failureType: 'testCodeFailure'\n"
            "  error: \"'hey null' == 'hey undefined'\"\n  code: 'ERR_ASSERTION'\n  name: 'AssertionError'\n"
            "  expected: 'hey undefined'\n  actual: 'hey null'\n  operator: '=='\n  stack: |-\n"
            + "".join(f"    {frame}\n" for frame in stack.splitlines()) + "  ...\n1..1\n# tests 1\n# fail 1\n")  # fmt: skip


def test_node_tests_location_is_its_declaration_and_the_failing_check_is_its_stack_frame_in_the_test_file():
    """node:test's TAP `location:` is where the test is declared (line 32); the failing `t.assert.equal` is the
    first frame of its `stack:` in the test file (line 37). Without such a frame, the hint names the declaration
    as one, never as the check."""
    own = _node_tap("assert.<computed> [as equal] (node:internal/test_runner/test:242:18)\n"
                    "TestContext.<anonymous> (/p/test/index.test.js:37:12)\nTest.run (node:internal/test_runner/test:796:25)")
    (failure,) = parse_node_text(own).failures
    assert (failure.file, failure.line, failure.declared) == ("/p/test/index.test.js", 37, False)
    assert "the check at /p/test/index.test.js:37 failed" in hint_for(failure).text, hint_for(failure)
    (elsewhere,) = parse_node_text(_node_tap("helper (/p/lib/check.js:5:3)\nTest.run (node:internal/test_runner/test:796:25)")).failures
    text = hint_for(elsewhere).text
    assert elsewhere.line == 32 and "the test declared at /p/test/index.test.js:32 failed" in text, text
    assert "the check at" not in text, text
