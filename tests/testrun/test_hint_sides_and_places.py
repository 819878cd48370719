"""Issue 46, heldout11's three wrong hints, each on constructed runner output: pytest's operand order is not a side,
a length of printed bytes is not "off by one", and Go's printed `<nil>` is text where the other side is text (its
place the first failing check, not a t.Log line above it)."""

from __future__ import annotations

import pytest

from graphlemon.testrun.hints import hint_for
from graphlemon.testrun.parsers.common import make_failure


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
