"""Hint rules over parsed value types: a hint only when a rule's preconditions hold, else the facts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from graphlemon.testrun.detect import detect_framework
from graphlemon.testrun.frameworks.js import mocha_options
from graphlemon.testrun.hint_values import pair_of, value_facts, value_hint
from graphlemon.testrun.hints import hint_for
from graphlemon.testrun.parsers.tap import parse_tap, yaml_block
from graphlemon.testrun.result_models import TestFailure
from graphlemon.testrun.value_types import Obj, parse_value, smallest_difference


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("defaultdict(<class 'list'>, {'a': [1]})", {"a": [1]}),
        ("Counter({'x': 2})", {"x": 2}),
        ("Line(name='pear', qty=6)", Obj("Line", {"name": "pear", "qty": 6})),
        ("<pkg.mod.Item object at 0x7f00>", Obj("Item", address="0x7f00")),
        ("{ a: 1, 'b c': [ 2, 'x' ] }", {"a": 1, "b c": [2, "x"]}),
        ("[ 'one', …(2) ]", ["one", parse_value("[ …(2) ]")[0]]),
        ('[\n  "a"\n  {\n    "k": 1\n  }\n]', ["a", {"k": 1}]),  # mocha's diff form: no commas
        ("undefined", None),
        ("-32768", -32768),
    ],
)
def test_printed_values_parse_to_their_types(text, value):
    assert parse_value(text) == value


def test_addresses_are_ignored_and_the_smallest_difference_is_found():
    a, b = parse_value("<m.Item object at 0x1>"), parse_value("<m.Item object at 0x2>")
    assert a == b  # the address says nothing about the value
    diff = smallest_difference(parse_value("{'k': [1, {'x': 'a'}]}"), parse_value("{'k': [1, {'x': 'b'}]}"))
    assert (diff.where, diff.expected, diff.got) == ("['k'][1]['x']", "a", "b")


@pytest.mark.parametrize(
    ("expected", "got", "must", "must_not"),
    [
        (
            "defaultdict(<class 'list'>, {'f': [1, 2]})",
            "defaultdict(<class 'list'>, {'f': [2, 1]})",
            ["['f']", "order"],
            ["character"],
        ),
        ("<m.Item object at 0x1>", "<m.Item object at 0x2>", ["different `Item` object"], ["0x", "character"]),
        ("None", "<m.Item object at 0x2>", ["`Item` object came back", "None"], []),
        ("{'count': '-32768'}", "{'count': '-32769'}", ["Off by one (numbers written as text)"], ["character"]),
        ("{'size': '9223372036854775808'}", "{'size': '9223372036854775809'}", ["Off by one"], ["rounding"]),  # exact
        ("'-128..127'", "'-129..127'", ["The number -128", "-129", "Off by one"], []),
        ("'abcd'", "'ab\\uffffcd'", ["U+FFFF"], []),
        ("'number'", "'string'", ["a string where a number is expected"], ["character"]),
        ("[ 'a', 'b' ]", "[ 'a', 'b', 'c', …(1) ]", ["2 extra item(s)"], []),
        ("Line(name='p', qty=7)", "Line(name='p', qty=6)", ["`.qty`", "Off by one"], []),
    ],
)
def test_a_rule_speaks_only_when_its_preconditions_hold(expected, got, must, must_not):
    hint = value_hint(pair_of(expected, got))
    assert hint is not None
    for fragment in must:
        assert fragment in hint, hint
    for fragment in must_not:
        assert fragment not in hint, hint


@pytest.mark.parametrize(
    ("expected", "got"),
    [
        ("'bar'", "'cbs'"),  # two unrelated strings: where they differ is a fact, not a cause
        ("12", "40"),  # numbers with no known relation
        ("[1, 2, 3]", "[1, 5, 3]"),  # one element, unrelated numbers
    ],
)
def test_no_rule_holds_so_only_the_facts_are_given(expected, got):
    assert value_hint(pair_of(expected, got)) is None
    failure = TestFailure(name="t", file="tests/t.py", line=3, message="AssertionError", expected=expected, got=got)
    hint = hint_for(failure)
    assert hint.confidence == "facts" and hint.text.startswith("Facts only") and "tests/t.py:3" in hint.text


def test_facts_name_the_smallest_differing_part():
    assert value_facts(pair_of("[1, 5, 3]", "[1, 7, 3]")) == "They differ at `[1]`: 5 expected, 7 produced."


@pytest.mark.parametrize(
    "text",
    ["[" * 5000 + "]" * 5000, "{" * 3000, "\x00\xff\ud800", "<" * 100, "'" + "x" * 300_000 + "'", "<a <b> c>", ""],
)
def test_hostile_values_never_raise(text):
    failure = TestFailure(name="t", message="x", expected=text, got=text + "1")
    assert hint_for(failure).text


def test_tap_yaml_with_refused_characters_and_hash_in_descriptions():
    assert yaml_block("  operator: equal\n  expected: 'abcd'\n  actual:   'ab\uffffcd'\n") == {
        "operator": "equal", "expected": "abcd", "actual": "ab\uffffcd"}  # fmt: skip
    stream = ("TAP version 13\n# hashes\nnot ok 1 counts every # in the text\n  ---\n    operator: equal\n"
              "    expected: 3\n    actual:   2\n    at: Test.<anonymous> (/p/test/t.js:6:5)\n  ...\n"
              "ok 2 skipped one # SKIP not now\n\n1..2\n# tests 2\n# pass  0\n# fail  1\n# skip 1\n")  # fmt: skip
    run = parse_tap(stream)
    assert [c.name for c in run.cases] == ["hashes > counts every # in the text", "hashes > skipped one"]
    assert [c.status for c in run.cases] == ["failed", "skipped"]
    assert (run.failures[0].expected, run.failures[0].got, run.failures[0].line) == ("3", "2", 6)


def test_mocha_keeps_the_projects_options_without_its_spec_paths():
    args = ["-u", "tdd", "--require", "./test/setup.js", "test", "--recursive", "--grep=slow", "-t", "5000", "spec/**"]
    assert mocha_options(args, keep_grep=True) == ["-u", "tdd", "--require", "./test/setup.js", "--recursive",
                                                    "--grep=slow", "-t", "5000"]  # fmt: skip
    assert "--grep=slow" not in mocha_options(args, keep_grep=False)


@pytest.mark.system
def test_python_tests_are_unittest_when_the_projects_interpreter_has_no_pytest(tmp_path: Path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text("import unittest\n")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / ".venv")], check=True)
    assert detect_framework(tmp_path) == ("unittest", tmp_path)
    assert detect_framework(tmp_path, "pytest") == ("pytest", tmp_path)  # asked for by name: as asked


def test_go_got_expected_is_read_as_got_and_want():
    from graphlemon.testrun.parsers.common import make_failure
    from graphlemon.testrun.parsers.go_messages import go_compared

    for message, want, got in (("Count() mismatch: got 3 expected 4", "4", "3"), ("got 500, want 401", "401", "500")):
        failure = make_failure("t", message=message, compared=go_compared(message))
        assert (failure.expected, failure.got, failure.operands.grammar) == (want, got, "go")


def test_a_doctest_report_gives_expected_and_got():
    from graphlemon.testrun.parsers.unittest_text import parse_unittest_text

    output = (
        "F\n======================================================================\n"
        "FAIL: split_at (more_itertools.more)\nDoctest: more_itertools.more.split_at\n"
        "----------------------------------------------------------------------\nTraceback (most recent call last):\n"
        '  File "/usr/lib/python3.11/doctest.py", line 2221, in runTest\n    raise self.failureException(self.format_failure(new.getvalue()))\n'
        "AssertionError: Failed doctest test for more_itertools.more.split_at\n"
        '  File "/p/more_itertools/more.py", line 1500, in split_at\n\n'
        "----------------------------------------------------------------------\n"
        'File "/p/more_itertools/more.py", line 1511, in more_itertools.more.split_at\nFailed example:\n'
        "    list(split_at(range(10), lambda n: n % 2 == 1, maxsplit=2))\nExpected:\n    [[0], [2], [4, 5, 6, 7, 8, 9]]\n"
        "Got:\n    [[0], [2, 3, 4, 5, 6, 7, 8, 9]]\n\n\n"
        "----------------------------------------------------------------------\nRan 1 test in 0.001s\n\nFAILED (failures=1)\n"
    )  # fmt: skip
    failure = parse_unittest_text(output).failures[0]
    assert (failure.expected, failure.got) == ("[[0], [2], [4, 5, 6, 7, 8, 9]]", "[[0], [2, 3, 4, 5, 6, 7, 8, 9]]")


def test_rust_debug_strings_are_read_with_rusts_escapes():
    r"""`"a\u{a0}b"` is Rust's Debug of a no-break space (heldout4's shlex join): read as that text, so the two texts
    differ at character 2, not at the opening quote."""
    from graphlemon.testrun.assertions import balanced
    from graphlemon.testrun.value_types import _rust

    assert _rust('"a\\u{a0}b"') == "a\u00a0b" and _rust('"say \\"hi\\"\\n"') == 'say "hi"\n'
    assert _rust('["x\\u{1F600}", "y"]') == ["x\U0001f600", "y"] and balanced('"a\\u{a0}b"')


def test_one_quotation_mark_for_another_is_not_called_added_or_left_out():
    """heldout4's shlex quote: `'foo bar"` where `"foo bar"` is expected has one mark for another; 'has quotation
    marks the expected text lacks' was false."""
    from graphlemon.testrun.hint_text import _quotes, _quotes_only
    from graphlemon.testrun.hint_values import Pair, typed_pair

    a, b = typed_pair("'\"foo bar\"'", "'\\'foo bar\"'", "python")
    p = Pair(a, b, sided=True, labels=("expected", "got"), ctx=None, path=())
    marks = _quotes_only(p)
    said = _quotes(p, True, marks)
    assert said.startswith("The text has `'` where the expected text has `\"` (quotation marks)"), said
    a, b = typed_pair("'merge \"const\" schemas'", "'merge const schemas'", "python")
    fewer = Pair(a, b, sided=True, labels=("expected", "got"), ctx=None, path=())
    assert _quotes(fewer, True, _quotes_only(fewer)).startswith("The text lacks the quotation marks `\"`")


@pytest.mark.parametrize(
    ("message", "first", "second"),
    [
        ("AssertionError: 1.8 != 1.75 within 7 places (0.050000000000000044 difference)", "1.8", "1.75"),
        ("AssertionError: 10.5 != 10 within 0.1 delta (0.5 difference)", "10.5", "10"),
        ("AssertionError: 4 != 3", "4", "3"),
        # the words inside a quoted value are the value's: no tolerance is cut from a text
        ("AssertionError: 'a' != 'b within 7 places (1 difference)'", "'a'", "'b within 7 places (1 difference)'"),
    ],
)
def test_unittest_almost_equal_values_are_read_without_the_tolerance(message, first, second):
    from graphlemon.testrun.assertions import compared_in

    found = compared_in(message)
    assert found is not None and (found.first, found.second, found.expected_at) == (first, second, None)


@pytest.mark.parametrize(
    ("expected", "got", "labels", "says"),
    [
        ("1.75", "1.8", None, "1.8 (produced) is 1.75 (expected) rounded (to the nearest) to 1 decimal."),
        ("0.16666666666666666", "0.16", None, "0.16 (produced) is 0.16666666666666666 (expected) cut off (not rounded) to 2 decimals."),
        ("1.8", "1.75", ("first", "second"), "1.8 (first) is 1.75 (second) rounded (to the nearest) to 1 decimal."),
        ("1.41", "1.4", None, "1.4 (produced) is 1.41 (expected) rounded (to the nearest) or cut off to 1 decimal."),
        ("'-2.55'", "'-2.5'", None, "-2.5 (produced) is -2.55 (expected) cut off (not rounded) to 1 decimal."),
    ],
)
def test_one_number_is_the_other_to_fewer_decimals(expected, got, labels, says):
    assert value_hint(pair_of(expected, got, labels=labels)) == says


@pytest.mark.parametrize(
    ("expected", "got"),
    [
        ("1.5", "1.4"),  # the same decimals: neither is the other rounded
        ("12.4", "12"),  # an integer: no decimal to round to (a count is no rounded number)
        ("1.75", "1.9"),  # fewer decimals, but neither rounded nor cut off from the other
        ("'1,75'", "'1,8'"),  # not numbers in the test's language
    ],
)
def test_fewer_decimals_needs_one_number_to_be_the_other_rounded_or_cut(expected, got):
    hint = value_hint(pair_of(expected, got)) or ""
    assert "decimal" not in hint


@pytest.mark.parametrize(
    ("expected", "got", "labels", "says"),
    [
        ('"<="', '"=<"', ("left", "right"), "two neighbouring characters swapped at character 1 ('<=' and '=<'): left '<=', right '=<'."),
        ("'4294967295'", "'4249967295'", None, "swapped at character 3 ('94' and '49'): '4249967295' where '4294967295' is expected."),
        ("'abc.abc'", "'cba.cba'", None, "one text is the other reversed"),
    ],
)
def test_the_same_characters_in_another_order(expected, got, labels, says):
    hint = value_hint(pair_of(expected, got, labels=labels)) or ""
    assert says in hint, hint


@pytest.mark.parametrize(
    ("expected", "got"),
    [
        ("'abc'", "'abd'"),  # another character, not a reordering
        ("'aab'", "'abb'"),  # the same letters, not as many of each
        ("'one peso and ten cents'", "'one pesos and ten cent'"),  # the same letters, moved by coincidence
        ("[1, 2]", "[2, 1]"),  # two lists: the items rule speaks, not the characters one
        ("12", "21"),  # two numbers are no texts
    ],
)
def test_reordered_characters_needs_two_texts_with_the_same_characters(expected, got):
    hint = value_hint(pair_of(expected, got)) or ""
    assert "same characters" not in hint, hint


@pytest.mark.parametrize(
    ("message", "expected", "got"),
    [
        ("Person's plural should be People, but got people", "People", "people"),
        ("TOMATOES's singular should be TOMATO, but got TOMATOE\nBuffaloes's singular should be Buffalo, but got x",
         "TOMATO", "TOMATOE"),
        ("the sum should equal 7 but was 8", "7", "8"),
    ],
)  # fmt: skip
def test_should_be_but_got_names_the_sides(message, expected, got):
    from graphlemon.testrun.parsers.common import make_failure
    from graphlemon.testrun.parsers.go_messages import go_compared

    failure = make_failure("t", message=message, compared=go_compared(message))
    assert (failure.expected, failure.got) == (expected, got)


@pytest.mark.parametrize(
    "message",
    [
        "result should be 2 items, but got 3",  # the expected side is words and a number: where its value ends is unknown
        "it should be fine, but was not ready yet",
        "the count should be 3, but got 4 items",  # the produced side is not one whole value
    ],
)
def test_should_be_but_got_needs_one_whole_value_each_side(message):
    from graphlemon.testrun.assertions import compared_in

    assert compared_in(message) is None
